// Clarifications with a `curation` (served as part of app.js, after it):
// the search box filters the items as one types (label and columns), and
// each group — or the whole list when it has none — gets a box that ticks
// or unticks every item shown in it (checked, unchecked, or mixed). Counts
// are announced, and "Send answer" waits for a change or typed words. The
// check boxes carry the answer, so everything works without this.
(() => {
  const FORMS = "form.clarification.type-curation";

  function groupBox(fieldset, group) {
    return group.querySelector("input.group-all") || fieldset.querySelector("thead input.group-all");
  }

  function addGroupBox(where, name) {
    const label = document.createElement("label");
    label.className = "group-all";
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "group-all";
    box.setAttribute("aria-label", name === null ? "Keep all shown" : `Keep all shown in ${name}`);
    label.append(box);
    where.prepend(label);
  }

  function enhance(fieldset) {
    const search = fieldset.querySelector(".curation-search");
    if (search) search.hidden = false;
    for (const group of fieldset.querySelectorAll("tbody.curation-group")) {
      const head = group.querySelector("tr.group-head th");
      if (head) addGroupBox(head, head.querySelector(".group-name").textContent);
      else addGroupBox(fieldset.querySelector("th.keep-col"), null);
    }
  }

  const visibleBoxes = (group) =>
    [...group.querySelectorAll("tr.curation-item")].filter((row) => !row.hidden)
      .map((row) => row.querySelector("input[name=keep]"));

  function update(form) {
    const fieldset = form.querySelector("fieldset.curation");
    const search = fieldset.querySelector("input[type=search]");
    const query = search ? search.value.trim().toLowerCase() : "";
    let shown = 0;
    let kept = 0;
    let changed = false;
    const rows = fieldset.querySelectorAll("tr.curation-item");
    for (const row of rows) {
      row.hidden = query !== "" && !row.textContent.toLowerCase().includes(query);
      if (!row.hidden) shown += 1;
      const box = row.querySelector("input[name=keep]");
      if (box.checked) kept += 1;
      if (box.checked !== box.defaultChecked) changed = true;
    }
    for (const group of fieldset.querySelectorAll("tbody.curation-group")) {
      const boxes = visibleBoxes(group);
      const head = group.querySelector("tr.group-head");
      if (head) head.hidden = boxes.length === 0;
      const all = groupBox(fieldset, group);
      const on = boxes.filter((b) => b.checked).length;
      all.checked = boxes.length > 0 && on === boxes.length;
      all.indeterminate = on > 0 && on < boxes.length;
      all.disabled = boxes.length === 0;
    }
    if (search) {
      const status = form.querySelector(`#${search.getAttribute("aria-describedby")}`);
      const text = query === "" ? "" : `${shown} of ${rows.length} shown`;
      if (status.textContent !== text) status.textContent = text;
    }
    const count = fieldset.querySelector(".curation-count");
    const text = `${kept} kept, ${rows.length - kept} removed`;
    if (count.textContent !== text) count.textContent = text;
    const typed = form.querySelector("textarea[name=freeform]").value.trim() !== "";
    const send = form.querySelector("button[type=submit]:not([form])");
    if (send) send.disabled = !changed && !typed;
  }

  // A click (mouse, or Space on the box) reaches here before the input
  // and change events that run `update`.
  document.addEventListener("click", (event) => {
    const all = event.target.closest(`${FORMS} input.group-all`);
    if (!all) return;
    const fieldset = all.closest("fieldset.curation");
    const group = all.closest("tbody.curation-group") || fieldset.querySelector("tbody.curation-group");
    for (const box of visibleBoxes(group)) box.checked = all.checked;
  });
  // Enter in the search box filters; it never sends the form.
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target.matches(`${FORMS} input[type=search]`)) event.preventDefault();
  });

  typeScripts.push((root) => {
    for (const form of root.querySelectorAll(FORMS)) {
      if (!form.dataset.enhanced) {
        form.dataset.enhanced = "1";
        enhance(form.querySelector("fieldset.curation"));
      }
      update(form);
    }
  });
})();
