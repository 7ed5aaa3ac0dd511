// The MCP App (the `io.modelcontextprotocol/ui` extension, SEP-1865,
// stable 2026-01-26): this document runs in the host's sandboxed iframe,
// after app.js and the clarification scripts, and speaks the app side of
// the extension's JSON-RPC over postMessage with the host. It shows the
// widget named by the tool result (the card rendered by widgetd, as in the
// transcript), sends an answer with the app-only tool `app_widget_answer`
// where widgetd allows it, and otherwise offers widgetd's own page. While
// the widget is pending it asks `get_widget_status` now and then, and shows
// the card again once the widget ended. It never reaches the network, and
// nothing in it navigates its own frame: every link opens through the host
// (`ui/open-link`), or is shown as text where the host refuses.
"use strict";
(() => {
  const PROTOCOL = "2026-01-26";
  const POLL_MS = 3000;
  const app = document.getElementById("app");
  let nextId = 1;
  const waiting = new Map();
  let shown = null;
  let pollTimer = null;

  function post(message) {
    window.parent.postMessage(message, "*");
  }
  function request(method, params) {
    const id = nextId++;
    post({ jsonrpc: "2.0", id, method, params });
    return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
  }
  function notify(method, params) {
    post({ jsonrpc: "2.0", method, params });
  }
  async function callTool(name, args) {
    const result = await request("tools/call", { name, arguments: args });
    if (result.isError) {
      const text = (result.content || []).map((c) => c.text || "").join(" ");
      let message = text;
      try {
        message = JSON.parse(text).error.message;
      } catch (_) { /* not widgetd's error body */ }
      throw new Error(message || "The request was refused.");
    }
    return result.structuredContent;
  }

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (!message.method && message.id !== undefined) {
      const call = waiting.get(message.id);
      if (!call) return;
      waiting.delete(message.id);
      if (message.error) call.reject(new Error(message.error.message || "error"));
      else call.resolve(message.result);
      return;
    }
    switch (message.method) {
      case "ui/notifications/tool-result":
        onToolResult(message.params || {});
        break;
      case "ui/notifications/tool-cancelled":
        say("The request was cancelled.");
        break;
      case "ui/resource-teardown":
        stopPolling();
        if (message.id !== undefined) post({ jsonrpc: "2.0", id: message.id, result: {} });
        break;
      case "ping":
        if (message.id !== undefined) post({ jsonrpc: "2.0", id: message.id, result: {} });
        break;
      default:
        if (message.id !== undefined) {
          post({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } });
        }
    }
  });

  function say(text) {
    const p = document.createElement("p");
    p.className = "muted";
    p.textContent = text;
    app.replaceChildren(p);
  }

  function onToolResult(result) {
    const widget = result.structuredContent && result.structuredContent.widget_id;
    if (result.isError || typeof widget !== "string") {
      say("Nothing to answer here.");
      return;
    }
    show(widget);
  }

  function stopPolling() {
    if (pollTimer) clearTimeout(pollTimer);
    pollTimer = null;
  }

  // The widget's card: widgetd's own HTML (escaped where it renders the
  // agent's text), with the form only where the app may answer.
  async function show(id) {
    stopPolling();
    let view;
    try {
      view = await callTool("app_widget_view", { widget_id: id });
    } catch (err) {
      say(err.message);
      return;
    }
    shown = view;
    const template = document.createElement("template");
    template.innerHTML = view.html;
    for (const link of template.content.querySelectorAll("a[href]")) {
      link.removeAttribute("target");
      link.setAttribute("draggable", "false");
    }
    app.replaceChildren(template.content);
    if (view.image) {
      for (const img of app.querySelectorAll("img.annotation-image")) img.src = view.image;
    }
    if (view.status === "pending" && !view.answer_here) offerPage(view);
    updateForms(app);
    humaneTimes(app);
    if (view.status === "pending") pollTimer = setTimeout(() => poll(id), POLL_MS);
  }

  // Env vars, approvals, and questions where the app may not answer: the
  // person answers on widgetd's page, logged in.
  function offerPage(view) {
    const box = document.createElement("p");
    box.className = "open-page";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "open-in-widgetd";
    button.textContent = "Open in widgetd to answer";
    button.addEventListener("click", () => openLink(view.page_url, button));
    box.append(button);
    app.append(box);
  }

  // Opens `url` through the host. A host that refuses (an error, or a
  // result with `isError`) leaves the URL shown as text beside `beside`,
  // for the person to copy: never a dead button or link.
  async function openLink(url, beside) {
    let opened = false;
    try {
      const result = await request("ui/open-link", { url });
      opened = !(result && result.isError);
    } catch (_) { /* refused: shown below */ }
    if (!opened) showUrl(url, beside);
  }

  function showUrl(url, beside) {
    const next = beside.nextElementSibling;
    if (next && next.classList.contains("link-fallback") && next.dataset.url === url) return;
    const note = document.createElement("span");
    note.className = "link-fallback hint";
    note.dataset.url = url;
    note.setAttribute("role", "status");
    note.append(" The chat did not open it; copy this address into your browser: ");
    const text = document.createElement("code");
    text.textContent = url;
    note.append(text);
    beside.after(note);
  }

  // The agent's links (a clarification option's markdown, a preview, an
  // env var's instructions) never navigate this frame: in the host, the
  // outside page would stand in the chat where the card was. Every click,
  // middle click and Enter on a link goes to the host instead, caught
  // before anything else sees it. No policy does this: `navigate-to` never
  // shipped in browsers, and `<base target>` only picks which frame goes.
  function follow(event) {
    const link = event.target instanceof Element ? event.target.closest("a[href]") : null;
    if (!link) return;
    event.preventDefault();
    event.stopPropagation();
    if (event.type === "auxclick" && event.button !== 1) return;
    let url = null;
    try {
      url = new URL(link.getAttribute("href"), document.baseURI);
    } catch (_) { /* not a URL: nothing to open */ }
    if (url && (url.protocol === "https:" || url.protocol === "http:")) openLink(url.href, link);
  }
  document.addEventListener("click", follow, true);
  document.addEventListener("auxclick", follow, true);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter") follow(event);
  }, true);

  async function poll(id) {
    pollTimer = null;
    if (!shown || shown.widget_id !== id) return;
    try {
      const status = await callTool("get_widget_status", { widget_id: id });
      if (status.status !== "pending") {
        show(id);
        return;
      }
    } catch (_) { /* try again later */ }
    pollTimer = setTimeout(() => poll(id), POLL_MS);
  }

  function showError(form, text) {
    let box = form.querySelector(".app-error");
    if (!box) {
      box = document.createElement("p");
      box.className = "form-error app-error";
      box.setAttribute("role", "alert");
      form.prepend(box);
    }
    box.textContent = text;
  }

  // The page's forms post to widgetd; here they go through the host as the
  // app-only tool's call. Hosts sandbox the app, usually without
  // `allow-forms`, where a form is never submitted (no `submit` event): so
  // the send button's click and Enter in a field send it, and a `submit`
  // that does happen is turned into the same. Dismissing is for the
  // person, on widgetd's page.
  async function send(form, submitter) {
    if (!shown || form.dataset.sending || !form.classList.contains("widget-form")) return;
    form.dataset.sending = "1";
    if (submitter) {
      submitter.setAttribute("aria-busy", "true");
      submitter.classList.add("busy");
    }
    const data = new FormData(form, submitter);
    const fields = [];
    for (const [name, value] of data) {
      if (typeof value === "string") fields.push([name, value]);
    }
    try {
      await callTool("app_widget_answer", { widget_id: shown.widget_id, fields });
      await show(shown.widget_id);
    } catch (err) {
      delete form.dataset.sending;
      delete form.dataset.busy;
      for (const button of form.querySelectorAll("button.busy")) {
        button.classList.remove("busy");
        button.removeAttribute("aria-busy");
      }
      showError(form, err.message);
    }
  }
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[type=submit]");
    if (!button || !button.form || !app.contains(button)) return;
    event.preventDefault();
    send(button.form, button);
  });
  document.addEventListener("keydown", (event) => {
    const field = event.target;
    if (event.defaultPrevented || event.key !== "Enter" || field.tagName !== "INPUT" || !field.form) return;
    event.preventDefault();
    const button = field.form.querySelector("button[type=submit]:not([form])");
    if (button && !button.disabled) send(field.form, button);
  });
  document.addEventListener("submit", (event) => {
    event.preventDefault();
    send(event.target, event.submitter);
  });

  // The host sizes the frame to the document, measured as the extension's
  // own app SDK measures it (@modelcontextprotocol/ext-apps 2.0.4,
  // `src/app.ts`, `App.setupSizeChangedNotifications`): the root's height
  // at `max-content` and the window's width, once per animation frame,
  // sent when either changed. The root's `scrollHeight` never drops below
  // the frame it fills, so a card that got shorter never shrank the frame.
  function watchSize() {
    let queued = false;
    let lastWidth = 0;
    let lastHeight = 0;
    const measure = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        const root = document.documentElement;
        const before = root.style.height;
        root.style.height = "max-content";
        const height = Math.ceil(root.getBoundingClientRect().height);
        root.style.height = before;
        const width = Math.ceil(window.innerWidth);
        if (width === lastWidth && height === lastHeight) return;
        lastWidth = width;
        lastHeight = height;
        notify("ui/notifications/size-changed", { width, height });
      });
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(document.documentElement);
    observer.observe(document.body);
  }

  request("ui/initialize", {
    appInfo: { name: "widgetd", version: "1" },
    appCapabilities: { availableDisplayModes: ["inline"] },
    protocolVersion: PROTOCOL,
  }).then(() => {
    notify("ui/notifications/initialized", {});
    watchSize();
  }).catch(() => say("This host could not start widgetd's app."));
})();
