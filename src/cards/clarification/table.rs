//! The card's part of a `table` widget (`templates/widgets/clarification/table.html`).

use askama::Template;
use serde_json::Value;
use widgetd_domain::widgets::kinds::clarification::table::*;

use super::{Mode, Part};
use crate::cards::{self};
use widgetd_domain::Result;

pub(super) fn render(params: &TableWidget, part: &Part<'_>) -> Result<String> {
    let answered = match part.mode {
        Mode::Answered(structured) => Some(structured),
        _ => None,
    };
    let edited = answered.map(|s| edits(params, s));
    let rows = (0..params.rows.len())
        .map(|r| {
            let row = answered
                .and_then(|s| s["rows"].get(r))
                .unwrap_or(&Value::Null);
            params
                .columns
                .iter()
                .enumerate()
                .map(|(c, column)| {
                    let value = row.get(&column.key).unwrap_or(&params.rows[r][&column.key]);
                    cell_view(part.id, r, c, column, value, &params.rows[r][&column.key])
                })
                .collect()
        })
        .collect();
    cards::render(&TablePart {
        form: matches!(part.mode, Mode::Form),
        headings: params.columns.iter().map(|c| c.label.clone()).collect(),
        rows,
        edited: edited.map(|e| e.len()),
    })
}

/// A cell as shown: its text, and for an editable one in the form, its
/// control.
struct CellView {
    text: String,
    editable: bool,
    kind: ColumnType,
    /// `cell.{row}.{key}`.
    name: String,
    input_id: String,
    /// The control's accessible name: "Owner, row 3".
    aria: String,
    checked: bool,
    /// A select's options, with whether each is the cell's value.
    options: Vec<(String, bool)>,
    /// Once answered: the person changed it.
    changed: bool,
}

fn cell_view(
    id: &str,
    r: usize,
    c: usize,
    column: &TableColumn,
    value: &Value,
    was: &Value,
) -> CellView {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        _ => String::new(),
    };
    let current = value.as_str();
    CellView {
        editable: column.editable,
        kind: column.kind,
        name: format!("{FIELD}{r}.{}", column.key),
        input_id: format!("w-{id}-r{r}-c{c}"),
        aria: format!("{}, row {}", column.label, r + 1),
        checked: *value == Value::Bool(true),
        options: column
            .options
            .iter()
            .flatten()
            .map(|o| (o.clone(), current == Some(o.as_str())))
            .collect(),
        changed: value != was,
        text,
    }
}

#[derive(Template)]
#[template(path = "widgets/clarification/table.html")]
struct TablePart {
    /// The controls (else a read-only table, or the answer).
    form: bool,
    headings: Vec<String>,
    rows: Vec<Vec<CellView>>,
    /// Once answered: how many cells the person changed.
    edited: Option<usize>,
}
