// Live updates for the transcript: follow the session's event stream and
// swap in server-rendered widget cards. Everything works without this file;
// it only saves a reload. No values ever travel through the stream.
"use strict";

// Question forms: "Send answer" stays disabled until every question has a
// choice or a typed answer. The server checks the same rule.
function updateChoiceForms(root) {
  for (const form of root.querySelectorAll("form.needs-choice")) {
    const answered = [...form.querySelectorAll("fieldset.question")].every((set) =>
      [...set.querySelectorAll("input, select")].some((el) =>
        (el.type === "radio" || el.type === "checkbox") ? el.checked : el.type !== "hidden" && el.value.trim() !== ""));
    const send = form.querySelector("button[type=submit]:not([form])");
    if (send) send.disabled = !answered;
  }
}
document.addEventListener("input", () => updateChoiceForms(document));
document.addEventListener("change", () => updateChoiceForms(document));
document.addEventListener("DOMContentLoaded", () => updateChoiceForms(document));

(function () {
  const transcript = document.getElementById("transcript");
  if (!transcript || !window.EventSource) return;
  const session = transcript.dataset.session;

  async function refreshWidget(id) {
    const response = await fetch(`/sessions/${session}/widgets/${id}`, { credentials: "same-origin" });
    if (!response.ok) return;
    const template = document.createElement("template");
    template.innerHTML = (await response.text()).trim();
    const card = template.content.firstElementChild;
    if (!card) return;
    const current = document.getElementById(`w-${id}`);
    if (!current) {
      transcript.appendChild(card);
    } else if (current.dataset.status !== card.dataset.status) {
      // Only a change of state replaces a card: never wipe what someone is typing.
      current.replaceWith(card);
    }
    updateChoiceForms(transcript);
  }

  function addMessage(data) {
    if (document.getElementById(`m-${data.message_id}`)) return;
    const article = document.createElement("article");
    article.className = `message role-${data.role}`;
    article.id = `m-${data.message_id}`;
    const meta = document.createElement("p");
    meta.className = "meta";
    meta.textContent = data.role;
    const body = document.createElement("p");
    body.className = "body";
    body.textContent = data.text;
    article.append(meta, body);
    transcript.appendChild(article);
  }

  const events = new EventSource(`/api/v1/sessions/${session}/events`);
  for (const kind of ["widget:created", "widget:resolved"]) {
    events.addEventListener(kind, (event) => refreshWidget(JSON.parse(event.data).widget_id));
  }
  events.addEventListener("message:created", (event) => addMessage(JSON.parse(event.data)));
})();
