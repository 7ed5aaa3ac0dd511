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
// Clarifications with a `choice`: "Send answer" waits for a pick or a typed
// answer (the server checks the same rule), and a single choice can be
// cleared again, to answer in words only.
function updateClarificationChoices(root) {
  for (const form of root.querySelectorAll("form.clarification.type-choice")) {
    const picked = form.querySelector("input[name=selected]:checked");
    const typed = form.querySelector("textarea[name=freeform]").value.trim() !== "";
    const send = form.querySelector("button[type=submit]:not([form])");
    if (send) send.disabled = !picked && !typed;
    const clear = form.querySelector("button.clear-choice");
    if (clear) clear.hidden = !picked;
  }
}
document.addEventListener("click", (event) => {
  const clear = event.target.closest("form.clarification button.clear-choice");
  if (!clear) return;
  for (const input of clear.form.querySelectorAll("input[name=selected]")) input.checked = false;
  updateForms(document);
  clear.form.querySelector("textarea[name=freeform]").focus();
});

// Every form's enhancement, run when the page loads, when anything is
// typed or picked, and when a card arrives live. A clarification type
// with a script (static/clarification/TYPE.js, served after this file as
// part of it) pushes its function onto `typeScripts`.
const typeScripts = [];
function updateForms(root) {
  updateChoiceForms(root);
  updateClarificationChoices(root);
  for (const update of typeScripts) update(root);
}
document.addEventListener("input", () => updateForms(document));
document.addEventListener("change", () => updateForms(document));
document.addEventListener("DOMContentLoaded", () => updateForms(document));

// A form being sent shows it and is not sent twice. The button is marked
// busy, not disabled: a disabled submitter would drop its own name=value
// (an approval's decision) from the post.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.dataset.busy) {
    event.preventDefault();
    return;
  }
  form.dataset.busy = "1";
  const button = event.submitter;
  if (button) {
    button.setAttribute("aria-busy", "true");
    button.classList.add("busy");
  }
}, true);
// Back from the next page (bfcache): the form may be sent again.
window.addEventListener("pageshow", () => {
  for (const form of document.querySelectorAll("form[data-busy]")) delete form.dataset.busy;
  for (const button of document.querySelectorAll("button.busy")) {
    button.classList.remove("busy");
    button.removeAttribute("aria-busy");
  }
});

// Humane times: every <time datetime> says how long ago ("3 min ago") in
// words, with the exact time in the person's own time zone on hover. The
// server writes a readable UTC time for browsers without JavaScript.
const exactTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "long" });
const shortDate = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
const longDate = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric" });
function relativeTime(date, now) {
  const seconds = Math.round((now - date) / 1000);
  const future = seconds < 0;
  const s = Math.abs(seconds);
  const say = (n, unit) => (future ? `in ${n} ${unit}` : `${n} ${unit} ago`);
  if (s < 45) return future ? "in a moment" : "just now";
  if (s < 3600) return say(Math.max(1, Math.round(s / 60)), "min");
  if (s < 86400) return say(Math.round(s / 3600), "h");
  const days = Math.round(s / 86400);
  if (!future && days === 1) return "yesterday";
  if (days < 7) return say(days, days === 1 ? "day" : "days");
  return new Date(date).getFullYear() === new Date(now).getFullYear()
    ? shortDate.format(date) : longDate.format(date);
}
function humaneTimes(root) {
  const now = Date.now();
  for (const el of root.querySelectorAll("time[datetime]")) {
    const date = new Date(el.getAttribute("datetime"));
    if (Number.isNaN(date.getTime())) continue;
    el.textContent = relativeTime(date.getTime(), now);
    el.title = exactTime.format(date);
  }
}
document.addEventListener("DOMContentLoaded", () => humaneTimes(document));
setInterval(() => humaneTimes(document), 30000);

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
    updateForms(transcript);
    humaneTimes(transcript);
  }

  function addMessage(data) {
    if (document.getElementById(`m-${data.message_id}`)) return;
    const article = document.createElement("article");
    article.className = `message role-${data.role}`;
    article.id = `m-${data.message_id}`;
    const meta = document.createElement("p");
    meta.className = "meta";
    meta.className = "meta speaker";
    const who = document.createElement("strong");
    who.textContent = data.author || (data.role === "agent" ? "Agent" : "System");
    meta.append(who, " · ");
    const time = document.createElement("time");
    time.setAttribute("datetime", new Date().toISOString());
    meta.append(time);
    const body = document.createElement("p");
    body.className = "body";
    body.textContent = data.text;
    article.append(meta, body);
    transcript.appendChild(article);
    humaneTimes(article);
  }

  // The tab says how many requests wait: "(2) Session title · widgetd".
  const baseTitle = document.title;
  function updateTitle() {
    const waiting = transcript.querySelectorAll("[data-status=pending]").length;
    document.title = waiting ? `(${waiting}) ${baseTitle}` : baseTitle;
  }
  updateTitle();

  // Desktop notifications for new requests, once the person asks for them
  // (browsers only show the permission prompt after a click).
  function offerNotifications() {
    if (!window.Notification || Notification.permission !== "default") return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary small";
    button.id = "notify-me";
    button.textContent = "Notify me of new requests";
    button.addEventListener("click", async () => {
      await Notification.requestPermission();
      button.remove();
    });
    transcript.before(button);
  }
  offerNotifications();
  function notifyNew(id) {
    if (!window.Notification || Notification.permission !== "granted" || !document.hidden) return;
    const note = new Notification("widgetd", { body: "The agent is waiting for your answer.", tag: id });
    note.addEventListener("click", () => { window.focus(); location.hash = `w-${id}`; });
  }

  const events = new EventSource(`/api/v1/sessions/${session}/events`);
  events.addEventListener("widget:created", async (event) => {
    const data = JSON.parse(event.data);
    await refreshWidget(data.widget_id);
    updateTitle();
    if (data.status === "pending") notifyNew(data.widget_id);
  });
  events.addEventListener("widget:resolved", async (event) => {
    await refreshWidget(JSON.parse(event.data).widget_id);
    updateTitle();
  });
  // An approval that needs several people: one of them approved.
  events.addEventListener("widget:updated", async (event) => {
    await refreshWidget(JSON.parse(event.data).widget_id);
  });
  events.addEventListener("message:created", (event) => addMessage(JSON.parse(event.data)));
})();


// The session list follows what happens: every few seconds, while the tab
// is visible, it fetches the same page (same search, same page number) and
// swaps in the list if anything changed; the tab title counts the pending
// requests shown.
(function () {
  const list = document.getElementById("session-list");
  if (!list || !window.fetch) return;
  const baseTitle = document.title;
  function updateTitle() {
    let waiting = 0;
    for (const item of list.querySelectorAll("[data-pending]")) waiting += Number(item.dataset.pending) || 0;
    document.title = waiting ? `(${waiting}) ${baseTitle}` : baseTitle;
  }
  updateTitle();
  async function refresh() {
    if (document.hidden) return;
    let response;
    try {
      response = await fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    } catch (_) {
      return;
    }
    if (!response.ok) return;
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = page.getElementById("session-list");
    if (!fresh) return;
    humaneTimes(fresh);
    if (fresh.innerHTML !== list.innerHTML) {
      list.innerHTML = fresh.innerHTML;
      updateTitle();
    }
  }
  setInterval(refresh, 3000);
  document.addEventListener("visibilitychange", refresh);
})();
