// Clarifications with a `ranking` (served as part of app.js, after it):
// items are dragged by their handle, or moved with the keyboard on it —
// up and down (Home, End) in a ranking, left and right between tiers —
// each move announced to screen readers. The hidden position or tier
// selects follow every move, so the form sends what is shown; without
// this file those selects are the form.
(() => {
  const FORMS = "form.clarification.type-ranking";
  const NOT_PLACED = "Not placed";
  let dragging = null;

  const labelOf = (item) => item.querySelector(".rank-text strong").textContent;
  const selectOf = (item) => item.querySelector("select");
  const fieldsetOf = (item) => item.closest("fieldset.ranking");
  const tiered = (fieldset) => fieldset.classList.contains("tiered");

  // A lane per tier, "Not placed" first (where every item starts), built
  // from the tier select's options (their text is set, never parsed).
  function buildLanes(fieldset) {
    const list = fieldset.querySelector(".rank-list");
    const lanes = document.createElement("div");
    lanes.className = "tier-lanes";
    for (const option of selectOf(list.querySelector("li.rank-item")).options) {
      const lane = document.createElement("section");
      lane.className = "tier-lane";
      lane.dataset.tier = option.value;
      const heading = document.createElement("h3");
      heading.textContent = option.value === "" ? NOT_PLACED : option.value;
      const items = document.createElement("ul");
      items.className = "rank-list";
      lane.append(heading, items);
      lanes.append(lane);
    }
    for (const item of [...list.querySelectorAll("li.rank-item")]) {
      const value = selectOf(item).value;
      const lane = [...lanes.children].find((l) => l.dataset.tier === value);
      lane.querySelector("ul").append(item);
    }
    list.replaceWith(lanes);
  }

  // The grip drawn as SVG: no glyph that needs a symbol font.
  function gripIcon() {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    for (const [name, value] of [["class", "icon"], ["viewBox", "0 0 24 24"], ["width", "16"],
      ["height", "16"], ["aria-hidden", "true"], ["focusable", "false"], ["fill", "currentColor"]]) {
      svg.setAttribute(name, value);
    }
    for (const [cx, cy] of [[9, 6], [15, 6], [9, 12], [15, 12], [9, 18], [15, 18]]) {
      const dot = document.createElementNS(ns, "circle");
      dot.setAttribute("cx", cx);
      dot.setAttribute("cy", cy);
      dot.setAttribute("r", "1.7");
      svg.append(dot);
    }
    return svg;
  }

  function enhance(fieldset) {
    if (tiered(fieldset)) buildLanes(fieldset);
    for (const item of fieldset.querySelectorAll("li.rank-item")) {
      const handle = document.createElement("button");
      handle.type = "button";
      handle.className = "rank-handle";
      handle.append(gripIcon());
      item.prepend(handle);
      item.querySelector("label.rank-control").hidden = true;
    }
    fieldset.querySelector(".rank-help").hidden = false;
    sync(fieldset);
  }

  // The selects and the handles' names follow the order shown.
  function sync(fieldset) {
    const items = [...fieldset.querySelectorAll("li.rank-item")];
    items.forEach((item, at) => {
      const handle = item.querySelector(".rank-handle");
      if (tiered(fieldset)) {
        const tier = item.closest(".tier-lane").dataset.tier;
        selectOf(item).value = tier;
        handle.setAttribute("aria-label", `Move ${labelOf(item)}, now in ${tier === "" ? NOT_PLACED : tier}`);
      } else {
        selectOf(item).value = String(at + 1);
        handle.setAttribute("aria-label", `Move ${labelOf(item)}, position ${at + 1} of ${items.length}`);
      }
    });
  }

  function announce(item) {
    const fieldset = fieldsetOf(item);
    const live = fieldset.querySelector(".rank-live");
    if (tiered(fieldset)) {
      const tier = item.closest(".tier-lane").dataset.tier;
      live.textContent = `${labelOf(item)}: ${tier === "" ? NOT_PLACED : tier}`;
    } else {
      const items = [...fieldset.querySelectorAll("li.rank-item")];
      live.textContent = `${labelOf(item)}: position ${items.indexOf(item) + 1} of ${items.length}`;
    }
  }

  function moved(item) {
    const fieldset = fieldsetOf(item);
    sync(fieldset);
    announce(item);
    update(fieldset.form);
  }

  function update(form) {
    const changed = [...form.querySelectorAll("fieldset.ranking select")].some((select) => {
      const initial = Math.max(0, [...select.options].findIndex((o) => o.defaultSelected));
      return select.selectedIndex !== initial;
    });
    const typed = form.querySelector("textarea[name=freeform]").value.trim() !== "";
    const send = form.querySelector("button[type=submit]:not([form])");
    if (send) send.disabled = !changed && !typed;
  }

  // The keyboard: the handle keeps the focus as its item moves.
  function keyMove(item, key) {
    const fieldset = fieldsetOf(item);
    if (tiered(fieldset)) {
      const lanes = [...fieldset.querySelectorAll(".tier-lane")];
      const at = lanes.indexOf(item.closest(".tier-lane"));
      const to = key === "ArrowRight" ? at + 1 : key === "ArrowLeft" ? at - 1 : -1;
      if (to < 0 || to >= lanes.length) return false;
      lanes[to].querySelector("ul").append(item);
    } else {
      const list = item.parentElement;
      if (key === "ArrowUp" && item.previousElementSibling) item.previousElementSibling.before(item);
      else if (key === "ArrowDown" && item.nextElementSibling) item.nextElementSibling.after(item);
      else if (key === "Home") list.prepend(item);
      else if (key === "End") list.append(item);
      else return ["ArrowUp", "ArrowDown"].includes(key);
    }
    item.querySelector(".rank-handle").focus();
    moved(item);
    return true;
  }

  document.addEventListener("keydown", (event) => {
    const handle = event.target.closest(`${FORMS} .rank-handle`);
    if (handle && keyMove(handle.closest("li.rank-item"), event.key)) event.preventDefault();
  });

  // Dragging, with pointer events (mouse, pen and touch alike): the item
  // follows the pointer over the other items, and over an empty lane.
  document.addEventListener("pointerdown", (event) => {
    const handle = event.target.closest(`${FORMS} .rank-handle`);
    if (!handle || event.button !== 0) return;
    event.preventDefault();
    handle.focus();
    dragging = handle.closest("li.rank-item");
    dragging.classList.add("dragging");
  });
  document.addEventListener("pointermove", (event) => {
    if (!dragging) return;
    const fieldset = fieldsetOf(dragging);
    const under = document.elementFromPoint(event.clientX, event.clientY);
    if (!under || !fieldset.contains(under)) return;
    const over = under.closest("li.rank-item");
    if (over && over !== dragging) {
      const box = over.getBoundingClientRect();
      if (event.clientY < box.top + box.height / 2) over.before(dragging);
      else over.after(dragging);
    } else if (!over && tiered(fieldset)) {
      const lane = under.closest(".tier-lane");
      if (lane && dragging.closest(".tier-lane") !== lane) lane.querySelector("ul").append(dragging);
    }
  });
  function drop() {
    if (!dragging) return;
    const item = dragging;
    dragging = null;
    item.classList.remove("dragging");
    item.querySelector(".rank-handle").focus();
    moved(item);
  }
  document.addEventListener("pointerup", drop);
  document.addEventListener("pointercancel", drop);

  typeScripts.push((root) => {
    for (const form of root.querySelectorAll(FORMS)) {
      const fieldset = form.querySelector("fieldset.ranking");
      if (!form.dataset.enhanced) {
        form.dataset.enhanced = "1";
        enhance(fieldset);
      }
      update(form);
    }
  });
})();
