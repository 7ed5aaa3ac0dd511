// Clarifications with a `mapping` (served as part of app.js, after it):
// click-to-connect. The form already works without this file (a select per
// left item); with it, each left item becomes a button: press it, then the
// item on the right it goes to, and a line is drawn between them. Pressing
// the connected right item again takes the connection away. The selects
// stay the form's state (hidden from view, not from the form), so what is
// sent is what the lines show.
(() => {
  const FORMS = "form.clarification.type-mapping fieldset.mapping";

  function rows(set) {
    return [...set.querySelectorAll(".mapping-row")];
  }

  function targets(set) {
    return [...set.querySelectorAll("button.mapping-target")];
  }

  // The label of right item `id`, for a left button's spoken state.
  function rightLabel(set, id) {
    const target = targets(set).find((t) => t.dataset.right === id);
    return target ? target.querySelector(".mapping-name").textContent : "";
  }

  // Each left button says what it is connected to; each right button how
  // many; then the lines.
  function refresh(set) {
    const used = new Map();
    for (const row of rows(set)) {
      const select = row.querySelector("select");
      const source = row.querySelector("button.mapping-source");
      const to = source.querySelector(".mapping-state");
      to.textContent = select.value ? ` → ${rightLabel(set, select.value)}` : " (not connected)";
      source.classList.toggle("connected", select.value !== "");
      if (select.value) used.set(select.value, (used.get(select.value) || 0) + 1);
    }
    for (const target of targets(set)) {
      target.classList.toggle("connected", used.has(target.dataset.right));
    }
    draw(set);
  }

  function draw(set) {
    const board = set.querySelector(".mapping-board");
    const canvas = board.querySelector("canvas.mapping-lines");
    const box = board.getBoundingClientRect();
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(box.width * ratio);
    canvas.height = Math.round(box.height * ratio);
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, box.width, box.height);
    g.lineWidth = 2;
    g.strokeStyle = getComputedStyle(set).getPropertyValue("--accent").trim() || "#2f5bd3";
    let lines = 0;
    for (const row of rows(set)) {
      const value = row.querySelector("select").value;
      const target = targets(set).find((t) => t.dataset.right === value);
      if (!value || !target) continue;
      const a = row.querySelector("button.mapping-source").getBoundingClientRect();
      const b = target.getBoundingClientRect();
      const x1 = a.right - box.left, y1 = a.top + a.height / 2 - box.top;
      const x2 = b.left - box.left, y2 = b.top + b.height / 2 - box.top;
      const bend = (x2 - x1) / 2;
      g.beginPath();
      g.moveTo(x1, y1);
      g.bezierCurveTo(x1 + bend, y1, x2 - bend, y2, x2, y2);
      g.stroke();
      lines += 1;
    }
    canvas.dataset.lines = String(lines);
  }

  function armed(set) {
    return set.querySelector("button.mapping-source[aria-pressed=true]");
  }

  function arm(set, source) {
    for (const other of set.querySelectorAll("button.mapping-source")) {
      other.setAttribute("aria-pressed", String(other === source));
    }
    for (const target of targets(set)) target.disabled = !source;
  }

  // Connects the armed left item to `target` (or, if it already was,
  // takes the connection away). Without many-to-one, the right item's
  // previous left item lets go of it.
  function connect(set, target) {
    const source = armed(set);
    if (!source) return;
    const select = source.closest(".mapping-row").querySelector("select");
    const id = target.dataset.right;
    if (select.value === id) {
      select.value = "";
    } else {
      if (set.dataset.manyToOne !== "true") {
        for (const row of rows(set)) {
          const other = row.querySelector("select");
          if (other !== select && other.value === id) other.value = "";
        }
      }
      select.value = id;
    }
    arm(set, null);
    select.dispatchEvent(new Event("change", { bubbles: true }));
    source.focus();
  }

  function enhance(set) {
    set.classList.add("connect");
    const board = set.querySelector(".mapping-board");
    const canvas = document.createElement("canvas");
    canvas.className = "mapping-lines";
    canvas.setAttribute("aria-hidden", "true");
    board.prepend(canvas);
    set.querySelector(".mapping-right").hidden = false;
    for (const row of rows(set)) {
      const select = row.querySelector("select");
      const source = document.createElement("button");
      source.type = "button";
      source.className = "mapping-source";
      source.id = `${select.id}-source`;
      source.setAttribute("aria-pressed", "false");
      source.textContent = row.querySelector(".mapping-name").textContent;
      const group = row.querySelector("label .hint");
      if (group) source.append(" ", group.cloneNode(true));
      const state = document.createElement("span");
      state.className = "mapping-state sr-only";
      source.append(state);
      // The select stays in the form (hidden by the stylesheet, still sent).
      row.prepend(source);
    }
    for (const target of targets(set)) target.disabled = true;
    refresh(set);
  }

  typeScripts.push((root) => {
    for (const set of root.querySelectorAll(FORMS)) {
      if (set.classList.contains("connect")) refresh(set);
      else enhance(set);
    }
  });

  document.addEventListener("click", (event) => {
    const source = event.target.closest(`${FORMS} button.mapping-source`);
    if (source) {
      const set = source.closest("fieldset.mapping");
      arm(set, source.getAttribute("aria-pressed") === "true" ? null : source);
      return;
    }
    const target = event.target.closest(`${FORMS} button.mapping-target`);
    if (target) connect(target.closest("fieldset.mapping"), target);
  });

  // Escape lets go of a pressed left item.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    const set = event.target.closest && event.target.closest(FORMS);
    if (set && armed(set)) arm(set, null);
  });

  window.addEventListener("resize", () => {
    for (const set of document.querySelectorAll(`${FORMS}.connect`)) draw(set);
  });
})();
