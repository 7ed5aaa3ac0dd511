// Clarifications with a `tree` (served as part of app.js, after it): names
// are edited in place and nodes moved by pressing "Move" and then the node
// to put them under. A name shows as a button; pressing it (or Enter or
// Space on it) swaps in its text field, Enter or leaving the field keeps
// the edit and Escape undoes it. The form's own fields (name fields,
// parent selects, delete boxes) stay the state, so everything works
// without this, and the rows are laid out again from them after each edit.
(() => {
  const FORMS = "form.clarification.type-tree fieldset.tree";

  const rowsOf = (set) => [...set.querySelectorAll("ol.tree-nodes > li.tree-row")];
  const parentField = (row) => row.querySelector(".tree-parent");
  const parentOf = (row) => (parentField(row) ? parentField(row).value.trim() : row.dataset.parent);
  const nameOf = (row) => {
    const input = row.querySelector("input.tree-name");
    return input ? input.value : row.querySelector(".tree-name").textContent;
  };

  function setDepth(row, depth) {
    for (const c of [...row.classList]) if (c.startsWith("depth-")) row.classList.remove(c);
    row.classList.add(`depth-${Math.min(depth, 9)}`);
  }

  // The rows depth first from the current parents, each with its depth and
  // whether it goes (deleted, or under a deleted node).
  function walk(set) {
    const rows = rowsOf(set).sort((a, b) => a.dataset.n - b.dataset.n);
    const byId = new Map(rows.map((r) => [r.dataset.id, r]));
    const children = new Map();
    const roots = [];
    for (const row of rows) {
      const p = parentOf(row);
      if (p && byId.has(p) && p !== row.dataset.id) {
        if (!children.has(p)) children.set(p, []);
        children.get(p).push(row);
      } else {
        roots.push(row);
      }
    }
    const order = [];
    const seen = new Set();
    const visit = (row, depth, gone) => {
      if (seen.has(row)) return;
      seen.add(row);
      const box = row.querySelector(".tree-delete input");
      const removed = gone || Boolean(box && box.checked);
      order.push({ row, depth, removed });
      for (const child of children.get(row.dataset.id) || []) visit(child, depth + 1, removed);
    };
    for (const row of roots) visit(row, 0, false);
    // Rows in a cycle (the server refuses it) are shown at the top level.
    for (const row of rows) visit(row, 0, false);
    return order;
  }

  function layout(set) {
    const list = set.querySelector("ol.tree-nodes");
    const order = walk(set);
    const current = rowsOf(set);
    // Rows are moved only when the order changed: moving a row would take
    // the focus from a field being typed in.
    if (order.some((o, i) => o.row !== current[i])) {
      for (const o of order) list.append(o.row);
    }
    for (const { row, depth, removed } of order) {
      setDepth(row, depth);
      row.classList.toggle("removed", removed);
      const input = row.querySelector("input.tree-name");
      if (input) {
        row.classList.toggle("renamed", input.value !== input.defaultValue);
        const view = row.querySelector("button.tree-name-view");
        if (view && !row.classList.contains("editing")) {
          view.textContent = input.value;
          view.setAttribute("aria-label", `Rename ${input.value}`);
        }
      }
      const field = parentField(row);
      row.classList.toggle("moved", Boolean(field) && field.value.trim() !== row.dataset.parent);
    }
  }

  // The node being moved, if any.
  const moving = (set) => set.querySelector("button.tree-move[aria-pressed=true]");

  // Whether `row` is `from` or under it: it cannot take `from`.
  function under(set, row, from) {
    const byId = new Map(rowsOf(set).map((r) => [r.dataset.id, r]));
    for (let at = row, steps = 0; at && steps <= byId.size; steps += 1) {
      if (at === from) return true;
      at = byId.get(parentOf(at));
    }
    return false;
  }

  function arm(set, button) {
    for (const other of set.querySelectorAll("button.tree-move")) {
      other.setAttribute("aria-pressed", String(other === button));
    }
    const from = button && button.closest("li.tree-row");
    set.classList.toggle("moving", Boolean(from));
    for (const row of rowsOf(set)) {
      const drop = row.querySelector("button.tree-drop");
      if (drop) drop.hidden = !from || under(set, row, from) || parentOf(from) === row.dataset.id;
    }
    const top = set.querySelector("button.tree-drop-top");
    if (top) top.hidden = !from || parentOf(from) === "";
  }

  function moveTo(set, parentId) {
    const button = moving(set);
    if (!button) return;
    const row = button.closest("li.tree-row");
    parentField(row).value = parentId;
    arm(set, null);
    layout(set);
    button.focus();
  }

  function startEditing(row) {
    row.classList.add("editing");
    const input = row.querySelector("input.tree-name");
    input.dataset.before = input.value;
    input.focus();
    input.select();
  }

  // Ends editing a name, keeping it or not; by the keyboard (`refocus`)
  // the focus goes back to the name.
  function stopEditing(row, keep, refocus) {
    if (!row.classList.contains("editing")) return;
    const input = row.querySelector("input.tree-name");
    if (!keep) input.value = input.dataset.before;
    row.classList.remove("editing");
    layout(row.closest("fieldset.tree"));
    if (refocus) row.querySelector("button.tree-name-view").focus();
  }

  function button(className, text) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = `small ${className}`;
    b.textContent = text;
    return b;
  }

  function enhance(set) {
    set.classList.add("live");
    for (const row of rowsOf(set)) {
      const input = row.querySelector("input.tree-name");
      if (input) {
        const view = button("tree-name-view", input.value);
        view.id = `${input.id}-view`;
        input.before(view);
      }
      if (parentField(row)) {
        const move = button("tree-move", "Move");
        move.id = `${row.id}-move`;
        move.setAttribute("aria-pressed", "false");
        move.setAttribute("aria-label", `Move ${nameOf(row)}`);
        const drop = button("tree-drop", "Put here");
        drop.id = `${row.id}-drop`;
        drop.hidden = true;
        drop.setAttribute("aria-label", `Put under ${nameOf(row)}`);
        row.append(move, drop);
      }
    }
    if (set.querySelector(".tree-parent")) {
      const top = button("tree-drop-top", "Move to the top level");
      top.id = `${set.id}-top`;
      top.hidden = true;
      set.querySelector("ol.tree-nodes").before(top);
    }
    layout(set);
  }

  typeScripts.push((root) => {
    for (const set of root.querySelectorAll(FORMS)) {
      if (!set.classList.contains("live")) enhance(set);
      else layout(set);
    }
  });

  document.addEventListener("click", (event) => {
    const set = event.target.closest && event.target.closest(FORMS);
    if (!set) return;
    const view = event.target.closest("button.tree-name-view");
    if (view) return startEditing(view.closest("li.tree-row"));
    const move = event.target.closest("button.tree-move");
    if (move) return arm(set, move.getAttribute("aria-pressed") === "true" ? null : move);
    const drop = event.target.closest("button.tree-drop");
    if (drop) return moveTo(set, drop.closest("li.tree-row").dataset.id);
    if (event.target.closest("button.tree-drop-top")) moveTo(set, "");
  });

  document.addEventListener("keydown", (event) => {
    const set = event.target.closest && event.target.closest(FORMS);
    if (!set) return;
    if (event.target.matches("input.tree-name") && (event.key === "Enter" || event.key === "Escape")) {
      // Enter keeps the name: it never sends the form.
      event.preventDefault();
      stopEditing(event.target.closest("li.tree-row"), event.key === "Enter", true);
    } else if (event.key === "Escape" && moving(set)) {
      arm(set, null);
    }
  });

  document.addEventListener("focusout", (event) => {
    if (event.target.matches && event.target.matches(`${FORMS} input.tree-name`)) {
      const row = event.target.closest("li.tree-row");
      // Leaving the field keeps the edit (after the click that left it).
      setTimeout(() => stopEditing(row, true, false), 0);
    }
  });
})();
