// Typed questions (`ask_fields`): the browser's own check of a field
// (required, a number's range, an email or URL, a date) is shown as text
// beside the field, where the server's refusal of that field is shown too,
// instead of in a bubble that disappears; editing a field clears its
// message. The form works and is checked without this file (the browser's
// bubbles, then the server, which checks everything again).
(() => {
  const errorOf = (input) => {
    const field = input.closest("form.fields .field");
    return field && field.querySelector(".field-error");
  };
  document.addEventListener("invalid", (event) => {
    const input = event.target;
    const error = errorOf(input);
    if (!error) return;
    event.preventDefault();
    error.textContent = input.validationMessage;
    error.hidden = false;
    input.setAttribute("aria-invalid", "true");
    const form = input.form;
    const first = form && form.querySelector(":invalid:not(form)");
    if (first === input) input.focus();
  }, true);
  const clear = (event) => {
    const input = event.target;
    const error = input instanceof Element && errorOf(input);
    if (!error || error.hidden) return;
    error.hidden = true;
    error.textContent = "";
    input.removeAttribute("aria-invalid");
    input.closest(".field").classList.remove("has-error");
  };
  document.addEventListener("input", clear);
  document.addEventListener("change", clear);
})();
