// Clarifications with an `annotation` (served as part of app.js, after it):
// drawing on the image. A canvas lies over it, as large as the image is
// shown (times the screen's pixel ratio, at most 4096 pixels a side), never
// as large as the image itself; drawings are kept in image pixels and
// scaled when painted, so what is drawn is in image pixels whatever size
// the image is shown at.
// Pick a tool, then drag for a rectangle (corner to corner), a circle
// (centre outwards) or an arrow (tail to head), or click to place the text
// typed beside the tools. "Undo" takes the last drawing back. The drawings
// go in the form field `annotations` as JSON; without this file the image
// is there and the answer is in words.
(() => {
  const FIGURES = "form.clarification.type-annotation figure.annotation";
  const COLOUR = "#d92d20";
  const drawings = new WeakMap();

  const list = (fig) => drawings.get(fig) || [];
  const size = (fig) => [Number(fig.dataset.width), Number(fig.dataset.height)];
  const round = (v) => Math.round(v * 10) / 10;
  const tool = (fig) => fig.querySelector("button.annotation-tool[aria-pressed=true]").dataset.tool;

  // The point of `event` in image pixels, inside the image.
  function point(fig, event) {
    const canvas = fig.querySelector("canvas.annotation-canvas");
    const box = canvas.getBoundingClientRect();
    const [w, h] = size(fig);
    const x = ((event.clientX - box.left) * w) / box.width;
    const y = ((event.clientY - box.top) * h) / box.height;
    return [Math.min(Math.max(x, 0), w), Math.min(Math.max(y, 0), h)];
  }

  // The drawing from `a` to `b` with the current tool, or null if too small.
  function shape(fig, a, b) {
    const [w, h] = size(fig);
    const [x1, y1] = a;
    const [x2, y2] = b;
    switch (tool(fig)) {
      case "rectangle": {
        const rw = Math.abs(x2 - x1), rh = Math.abs(y2 - y1);
        if (rw < 2 || rh < 2) return null;
        return { tool: "rectangle", coords: [Math.min(x1, x2), Math.min(y1, y2), rw, rh].map(round) };
      }
      case "circle": {
        const r = Math.min(Math.hypot(x2 - x1, y2 - y1), x1, y1, w - x1, h - y1);
        if (r < 2) return null;
        return { tool: "circle", coords: [x1, y1, Math.floor(r * 10) / 10].map(round) };
      }
      case "arrow":
        if (Math.hypot(x2 - x1, y2 - y1) < 4) return null;
        return { tool: "arrow", coords: [x1, y1, x2, y2].map(round) };
      default: {
        const text = fig.querySelector("input.annotation-text").value.trim();
        if (!text) {
          fig.querySelector("input.annotation-text").focus();
          return null;
        }
        return { tool: "text", coords: [x2, y2].map(round), text };
      }
    }
  }

  function paint(g, d, line) {
    const c = d.coords;
    g.beginPath();
    if (d.tool === "rectangle") g.rect(c[0], c[1], c[2], c[3]);
    if (d.tool === "circle") g.arc(c[0], c[1], c[2], 0, 2 * Math.PI);
    if (d.tool === "arrow") {
      const angle = Math.atan2(c[3] - c[1], c[2] - c[0]);
      const head = line * 5;
      g.moveTo(c[0], c[1]);
      g.lineTo(c[2], c[3]);
      g.moveTo(c[2] - head * Math.cos(angle - 0.5), c[3] - head * Math.sin(angle - 0.5));
      g.lineTo(c[2], c[3]);
      g.lineTo(c[2] - head * Math.cos(angle + 0.5), c[3] - head * Math.sin(angle + 0.5));
    }
    if (d.tool === "text") g.fillText(d.text, c[0], c[1]);
    else g.stroke();
  }

  // Sizes the canvas to the image as shown: an image of 16384 pixels a side
  // must not cost a canvas of a gigabyte.
  function fit(fig) {
    const canvas = fig.querySelector("canvas.annotation-canvas");
    const [w, h] = size(fig);
    const shown = canvas.getBoundingClientRect().width || Math.min(w, 1024);
    const ratio = Math.min(window.devicePixelRatio || 1, 2);
    const scale = Math.min((shown * ratio) / w, 4096 / w, 4096 / h, 1);
    const cw = Math.max(1, Math.round(w * scale));
    const ch = Math.max(1, Math.round(h * scale));
    if (canvas.width !== cw || canvas.height !== ch) {
      canvas.width = cw;
      canvas.height = ch;
    }
  }

  function draw(fig, preview) {
    const canvas = fig.querySelector("canvas.annotation-canvas");
    const [w, h] = size(fig);
    fit(fig);
    const g = canvas.getContext("2d");
    const line = Math.max(2, w / 300);
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.clearRect(0, 0, canvas.width, canvas.height);
    g.setTransform(canvas.width / w, 0, 0, canvas.height / h, 0, 0);
    g.strokeStyle = COLOUR;
    g.fillStyle = COLOUR;
    g.lineWidth = line;
    g.font = `${Math.round(Math.max(14, w / 40))}px system-ui, sans-serif`;
    g.textBaseline = "top";
    for (const d of list(fig)) paint(g, d, line);
    if (preview) {
      g.setLineDash([line * 3, line * 2]);
      paint(g, preview, line);
      g.setLineDash([]);
    }
  }

  // In words, for the list beside the image (and screen readers).
  function words(d) {
    const c = d.coords.join(", ");
    return d.tool === "text" ? `text “${d.text}” at ${c}` : `${d.tool} [${c}]`;
  }

  function changed(fig) {
    const all = list(fig);
    fig.querySelector("input[name=annotations]").value = all.length ? JSON.stringify(all) : "";
    const items = fig.querySelector("ol.annotation-list");
    items.replaceChildren(...all.map((d) => {
      const li = document.createElement("li");
      li.textContent = words(d);
      return li;
    }));
    fig.querySelector("button.annotation-undo").disabled = all.length === 0;
    draw(fig, null);
  }

  function button(className, text) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = `small ${className}`;
    b.textContent = text;
    return b;
  }

  function enhance(fig) {
    fig.classList.add("live");
    drawings.set(fig, []);
    const canvas = document.createElement("canvas");
    canvas.className = "annotation-canvas";
    canvas.id = `${fig.id}-canvas`;
    canvas.width = 1;
    canvas.height = 1;
    canvas.setAttribute("aria-hidden", "true");
    fig.querySelector(".annotation-stage").append(canvas);
    fit(fig);
    if (window.ResizeObserver) new ResizeObserver(() => draw(fig, null)).observe(canvas);

    const bar = document.createElement("div");
    bar.className = "annotation-tools";
    bar.setAttribute("role", "toolbar");
    bar.setAttribute("aria-label", "Drawing tools");
    const tools = fig.dataset.tools.split(",");
    for (const name of tools) {
      const b = button("annotation-tool", name[0].toUpperCase() + name.slice(1));
      b.dataset.tool = name;
      b.id = `${fig.id}-tool-${name}`;
      b.setAttribute("aria-pressed", String(name === tools[0]));
      bar.append(b);
    }
    if (tools.includes("text")) {
      const label = document.createElement("label");
      label.className = "sr-only";
      label.htmlFor = `${fig.id}-text`;
      label.textContent = "Text to place with the Text tool";
      const text = document.createElement("input");
      text.type = "text";
      text.className = "annotation-text";
      text.id = `${fig.id}-text`;
      text.maxLength = 200;
      text.placeholder = "Text to place";
      text.autocomplete = "off";
      bar.append(label, text);
    }
    const undo = button("annotation-undo", "Undo");
    undo.id = `${fig.id}-undo`;
    bar.append(undo);
    fig.querySelector(".annotation-stage").before(bar);
    const items = document.createElement("ol");
    items.className = "annotation-list";
    items.setAttribute("aria-live", "polite");
    fig.querySelector(".annotation-stage").after(items);

    let start = null;
    canvas.addEventListener("pointerdown", (event) => {
      event.preventDefault();
      canvas.setPointerCapture(event.pointerId);
      start = point(fig, event);
    });
    canvas.addEventListener("pointermove", (event) => {
      if (!start || tool(fig) === "text") return;
      draw(fig, shape(fig, start, point(fig, event)));
    });
    canvas.addEventListener("pointerup", (event) => {
      if (!start) return;
      const d = shape(fig, start, point(fig, event));
      start = null;
      if (d) list(fig).push(d);
      changed(fig);
    });
    changed(fig);
  }

  typeScripts.push((root) => {
    for (const fig of root.querySelectorAll(FIGURES)) {
      if (!fig.classList.contains("live")) enhance(fig);
    }
  });

  document.addEventListener("click", (event) => {
    const fig = event.target.closest && event.target.closest(FIGURES);
    if (!fig) return;
    const pick = event.target.closest("button.annotation-tool");
    if (pick) {
      for (const b of fig.querySelectorAll("button.annotation-tool")) {
        b.setAttribute("aria-pressed", String(b === pick));
      }
    } else if (event.target.closest("button.annotation-undo")) {
      list(fig).pop();
      changed(fig);
    }
  });

  // Enter in the text box places nothing and never sends the form.
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target.matches && event.target.matches(`${FIGURES} input.annotation-text`)) {
      event.preventDefault();
    }
  });
})();
