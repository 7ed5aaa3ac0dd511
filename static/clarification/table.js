// Clarifications with a `table` (served as part of app.js, after it): text
// cells are edited in place. An editable text cell shows its value as a
// button; clicking it (or Enter or Space on it) swaps in the text field,
// Enter or leaving the cell keeps the edit and Escape undoes it. Edited
// cells are marked, their count is announced, and "Send answer" waits for
// an edit or a typed answer (the server checks the same rule). The form's
// own fields carry the answer, so everything works without this.
(() => {
  const FORMS = "form.clarification.type-table";

  function viewOf(input) {
    return input.parentElement.querySelector("button.cell-view");
  }

  function show(input) {
    const view = viewOf(input);
    const value = input.value;
    view.textContent = value === "" ? "—" : value;
    view.setAttribute("aria-label", `Edit ${input.getAttribute("aria-label")}: ${value === "" ? "empty" : value}`);
  }

  function enhance(form) {
    for (const input of form.querySelectorAll("td.editable input[type=text]")) {
      const view = document.createElement("button");
      view.type = "button";
      view.className = "cell-view";
      input.before(view);
      input.hidden = true;
      show(input);
    }
    const status = form.querySelector(".table-status");
    if (status) status.dataset.hint = status.textContent;
  }

  function changed(control) {
    if (control.type === "checkbox") return control.checked !== control.defaultChecked;
    if (control.tagName === "SELECT") {
      const initial = Math.max(0, [...control.options].findIndex((o) => o.defaultSelected));
      return control.selectedIndex !== initial;
    }
    return control.value !== control.defaultValue;
  }

  function update(form) {
    let edited = 0;
    for (const cell of form.querySelectorAll("td.editable")) {
      const control = cell.querySelector("input[type=text], input[type=checkbox], select");
      const isEdited = changed(control);
      cell.classList.toggle("edited", isEdited);
      if (isEdited) edited += 1;
    }
    const status = form.querySelector(".table-status");
    if (status) {
      status.textContent = edited === 0 ? status.dataset.hint : `${edited} ${edited === 1 ? "cell" : "cells"} edited`;
    }
    const typed = form.querySelector("textarea[name=freeform]").value.trim() !== "";
    const send = form.querySelector("button[type=submit]:not([form])");
    if (send) send.disabled = edited === 0 && !typed;
  }

  function startEditing(view) {
    const input = view.parentElement.querySelector("input[type=text]");
    input.dataset.before = input.value;
    view.hidden = true;
    input.hidden = false;
    input.focus();
    input.select();
  }

  function stopEditing(input, focusView) {
    if (input.hidden) return;
    input.hidden = true;
    const view = viewOf(input);
    view.hidden = false;
    show(input);
    update(input.form);
    if (focusView) view.focus();
  }

  document.addEventListener("click", (event) => {
    const view = event.target.closest(`${FORMS} button.cell-view`);
    if (view) startEditing(view);
  });
  document.addEventListener("keydown", (event) => {
    const input = event.target.closest(`${FORMS} td.editable input[type=text]`);
    if (!input || input.hidden) return;
    if (event.key === "Enter") {
      // Keeps the edit instead of sending the form.
      event.preventDefault();
      stopEditing(input, true);
    } else if (event.key === "Escape") {
      event.preventDefault();
      input.value = input.dataset.before ?? input.value;
      stopEditing(input, true);
    }
  });
  document.addEventListener("focusout", (event) => {
    const input = event.target.closest(`${FORMS} td.editable input[type=text]`);
    if (input) stopEditing(input, false);
  });

  typeScripts.push((root) => {
    for (const form of root.querySelectorAll(FORMS)) {
      if (!form.dataset.enhanced) {
        form.dataset.enhanced = "1";
        enhance(form);
      }
      update(form);
    }
  });
})();
