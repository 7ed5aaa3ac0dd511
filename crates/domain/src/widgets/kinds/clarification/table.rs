//! `table`: the agent shows 1 to 200 rows under 1 to 20 typed columns
//! (`text`, `boolean`, `select`), some of them editable; the person edits
//! editable cells only. `structured` is `{"rows": [...]}`, every row whole,
//! in the table's order. The form has a control per editable cell named
//! `cell.{row}.{key}`; with JavaScript (`static/clarification/table.js`)
//! text cells are edited in place.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::types::{ClarificationType, Structured};
use crate::error::{Error, Result};

const MAX_COLUMNS: usize = 20;
const MAX_ROWS: usize = 200;
const MAX_KEY_CHARS: usize = 40;
const MAX_LABEL_CHARS: usize = 80;
const MAX_OPTIONS: usize = 50;
/// Most characters of a text cell, as given and as edited.
pub const MAX_CELL_CHARS: usize = 500;

/// The form field of an editable cell: `cell.{row}.{key}`, the row
/// counted from 0.
pub const FIELD: &str = "cell.";

/// The `table` type.
pub struct Table;

/// What a column's cells hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    /// One line of plain text (at most 500 characters).
    #[default]
    Text,
    /// `true` or `false`, a check box.
    Boolean,
    /// One of the column's `options`, or `null` for none.
    Select,
}

/// One column.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TableColumn {
    /// The key of this column's cells in each row (1 to 40 letters, digits,
    /// `_` or `-`; unique).
    pub key: String,
    /// The column's heading (1 to 80 characters, one line).
    pub label: String,
    /// Whether the user may edit this column's cells (default false). At
    /// least one column is editable.
    #[serde(default)]
    pub editable: bool,
    /// `text` (default), `boolean` or `select`.
    #[serde(default, rename = "type")]
    pub kind: ColumnType,
    /// `select` only: the 1 to 50 values a cell may take (each 1 to 80
    /// characters, one line, unique).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
}

/// A cell as the agent gives it.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum CellSchema {
    Text(String),
    Boolean(bool),
}

/// A `table` widget, as the agent sends it and as it is stored (stored
/// rows have every column, a missing cell filled as empty).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TableWidget {
    /// 1 to 20 columns, in the order shown.
    pub columns: Vec<TableColumn>,
    /// 1 to 200 rows, each an object of cells by column key: a string for
    /// `text` (missing: ""), a boolean for `boolean` (missing: false), one
    /// of the options or null for `select` (missing: null).
    #[schemars(with = "Vec<std::collections::BTreeMap<String, Option<CellSchema>>>")]
    pub rows: Vec<Map<String, Value>>,
}

/// The `structured` answer: the rows, in the table's order. A row may
/// leave cells out (unchanged); a read-only cell, if given, is as it was.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableAnswer {
    pub rows: Vec<Map<String, Value>>,
}

/// Checks a label-like text (a heading, an option): not blank, at most 80
/// characters, one line. `what` names it by position.
fn check_label(text: &str, what: &str) -> Result<()> {
    let chars = text.chars().count();
    if text.trim().is_empty() {
        return Err(Error::invalid("empty_label", format!("{what} is empty")));
    }
    if chars > MAX_LABEL_CHARS {
        return Err(Error::invalid(
            "label_too_long",
            format!("{what} has {chars} characters; the limit is {MAX_LABEL_CHARS}"),
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(Error::invalid(
            "invalid_label",
            format!("{what} is one line of plain text: no control characters"),
        ));
    }
    Ok(())
}

fn check_column(n: usize, column: &TableColumn, before: &[TableColumn]) -> Result<()> {
    let key = &column.key;
    if key.is_empty()
        || key.chars().count() > MAX_KEY_CHARS
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(Error::invalid(
            "invalid_column_key",
            format!("the key of column {n} needs 1 to {MAX_KEY_CHARS} letters, digits, `_` or `-`"),
        ));
    }
    if let Some(first) = before.iter().position(|c| c.key == *key) {
        return Err(Error::invalid(
            "duplicate_column_key",
            format!("column {n} has the same key as column {}", first + 1),
        ));
    }
    check_label(&column.label, &format!("the label of column {n}"))?;
    match (&column.kind, &column.options) {
        (ColumnType::Select, Some(options)) => {
            if !(1..=MAX_OPTIONS).contains(&options.len()) {
                return Err(Error::invalid(
                    "options_count",
                    format!("select column {n} needs 1 to {MAX_OPTIONS} options"),
                ));
            }
            for (i, option) in options.iter().enumerate() {
                check_label(option, &format!("option {} of column {n}", i + 1))?;
                if options[..i].contains(option) {
                    return Err(Error::invalid(
                        "duplicate_label",
                        format!("column {n} lists option {} twice", i + 1),
                    ));
                }
            }
            Ok(())
        }
        (ColumnType::Select, None) => Err(Error::invalid(
            "options_count",
            format!("select column {n} needs 1 to {MAX_OPTIONS} options"),
        )),
        (_, Some(_)) => Err(Error::invalid(
            "options_not_allowed",
            format!("column {n} has options but is not a select column"),
        )),
        (_, None) => Ok(()),
    }
}

/// A cell's value checked against its column; `where_` names it by
/// position. `null` is a select's "none".
fn check_cell(column: &TableColumn, value: &Value, where_: &str) -> Result<Value> {
    let wrong = || {
        let expected = match column.kind {
            ColumnType::Text => "a string",
            ColumnType::Boolean => "true or false",
            ColumnType::Select => "one of the column's options, or null",
        };
        Error::invalid("invalid_cell", format!("{where_} needs {expected}"))
    };
    match (column.kind, value) {
        (ColumnType::Text, Value::String(text)) => {
            let chars = text.chars().count();
            if chars > MAX_CELL_CHARS {
                return Err(Error::invalid(
                    "cell_too_long",
                    format!("{where_} has {chars} characters; the limit is {MAX_CELL_CHARS}"),
                ));
            }
            if text.chars().any(char::is_control) {
                return Err(Error::invalid(
                    "invalid_cell",
                    format!("{where_} is one line of plain text: no control characters"),
                ));
            }
            Ok(value.clone())
        }
        (ColumnType::Boolean, Value::Bool(_)) | (ColumnType::Select, Value::Null) => {
            Ok(value.clone())
        }
        (ColumnType::Select, Value::String(text)) => {
            let options = column.options.as_deref().unwrap_or_default();
            if options.contains(text) {
                Ok(value.clone())
            } else {
                Err(wrong())
            }
        }
        _ => Err(wrong()),
    }
}

/// A missing cell.
fn empty(column: &TableColumn) -> Value {
    match column.kind {
        ColumnType::Text => Value::from(""),
        ColumnType::Boolean => Value::Bool(false),
        ColumnType::Select => Value::Null,
    }
}

impl TableWidget {
    fn column(&self, key: &str) -> Option<&TableColumn> {
        self.columns.iter().find(|c| c.key == key)
    }
}

impl ClarificationType for Table {
    const TYPE: &'static str = "table";
    type Input = TableWidget;
    type Params = TableWidget;
    type Answer = TableAnswer;

    fn parse(input: TableWidget) -> Result<TableWidget> {
        let count = input.columns.len();
        if !(1..=MAX_COLUMNS).contains(&count) {
            return Err(Error::invalid(
                "columns_count",
                format!("`widget.columns` needs 1 to {MAX_COLUMNS} columns; it has {count}"),
            ));
        }
        for (i, column) in input.columns.iter().enumerate() {
            check_column(i + 1, column, &input.columns[..i])?;
        }
        if !input.columns.iter().any(|c| c.editable) {
            return Err(Error::invalid(
                "no_editable_column",
                "at least one column must be editable",
            ));
        }
        let count = input.rows.len();
        if !(1..=MAX_ROWS).contains(&count) {
            return Err(Error::invalid(
                "rows_count",
                format!("`widget.rows` needs 1 to {MAX_ROWS} rows; it has {count}"),
            ));
        }
        let mut rows = Vec::with_capacity(count);
        for (r, row) in input.rows.iter().enumerate() {
            if row.keys().any(|k| input.column(k).is_none()) {
                return Err(Error::invalid(
                    "unknown_column",
                    format!("row {} has a cell whose key is not a column's", r + 1),
                ));
            }
            let mut full = Map::new();
            for (c, column) in input.columns.iter().enumerate() {
                let value = match row.get(&column.key) {
                    Some(value) => {
                        let at = format!("row {}, column {}", r + 1, c + 1);
                        check_cell(column, value, &at)?
                    }
                    None => empty(column),
                };
                full.insert(column.key.clone(), value);
            }
            rows.push(full);
        }
        Ok(TableWidget {
            columns: input.columns,
            rows,
        })
    }

    fn untouched(params: &TableWidget) -> TableAnswer {
        TableAnswer {
            rows: params.rows.clone(),
        }
    }

    /// `cell.{row}.{key}`: a text, a select's option (empty: none), or for
    /// a boolean `false` (a hidden field) and `true` (the check box, sent
    /// only when ticked). A cell without a field is unchanged.
    fn from_form(params: &TableWidget, fields: &[(String, String)]) -> Result<TableAnswer> {
        let mut rows = params.rows.clone();
        let mut ticked = Vec::new();
        for (name, raw) in fields {
            let Some(rest) = name.strip_prefix(FIELD) else {
                continue;
            };
            let (r, key) = rest.split_once('.').unwrap_or((rest, ""));
            let row = r.parse::<usize>().ok().filter(|&r| r < rows.len());
            let (Some(r), Some(column)) = (row, params.column(key)) else {
                return Err(Error::invalid(
                    "unknown_cell",
                    "a form field names a cell the table does not have",
                ));
            };
            let value = match column.kind {
                ColumnType::Boolean if raw == "true" => {
                    ticked.push((r, key));
                    Value::Bool(true)
                }
                ColumnType::Boolean if ticked.contains(&(r, key)) => continue,
                ColumnType::Boolean => Value::Bool(raw != "false" && !raw.is_empty()),
                ColumnType::Select if raw.is_empty() => Value::Null,
                _ => Value::from(raw.as_str()),
            };
            rows[r].insert(key.to_owned(), value);
        }
        Ok(TableAnswer { rows })
    }

    /// Same rows, in the same order; every cell given is of its column and
    /// a read-only one is as it was. `structured` holds every row whole.
    fn check(params: &TableWidget, answer: TableAnswer) -> Result<Structured> {
        if answer.rows.len() != params.rows.len() {
            return Err(Error::invalid(
                "rows_changed",
                format!(
                    "the answer has {} rows; the table has {}: cells are edited, rows are never added or removed",
                    answer.rows.len(),
                    params.rows.len()
                ),
            ));
        }
        let mut rows = params.rows.clone();
        let mut typed = Vec::new();
        let mut used = false;
        for (r, given) in answer.rows.into_iter().enumerate() {
            for (key, value) in given {
                let Some(c) = params.columns.iter().position(|c| c.key == key) else {
                    return Err(Error::invalid(
                        "unknown_column",
                        format!("row {} has a cell whose key is not a column's", r + 1),
                    ));
                };
                let column = &params.columns[c];
                let at = format!("row {}, column {}", r + 1, c + 1);
                let was = &params.rows[r][&key];
                if *was == value {
                    continue;
                }
                if !column.editable {
                    return Err(Error::invalid(
                        "read_only_cell",
                        format!("{at} is read-only: only editable columns may change"),
                    ));
                }
                let value = check_cell(column, &value, &at)?;
                if let (ColumnType::Text, Value::String(text)) = (column.kind, &value) {
                    typed.push(text.clone());
                }
                used = true;
                rows[r].insert(key, value);
            }
        }
        Ok(Structured {
            value: json!({ "rows": rows }),
            used,
            typed,
        })
    }

    /// Only the edited cells: `{"edited": [{"row", "column", "value"}]}`,
    /// `row` being the index in `rows`.
    fn compact(params: &TableWidget, structured: &Value) -> Value {
        json!({ "edited": edits(params, structured) })
    }
}

/// The cells of `structured` that differ from the table's.
pub fn edits(params: &TableWidget, structured: &Value) -> Vec<Value> {
    let mut found = Vec::new();
    let Some(rows) = structured["rows"].as_array() else {
        return found;
    };
    for (r, (row, was)) in rows.iter().zip(&params.rows).enumerate() {
        for column in &params.columns {
            let value = &row[&column.key];
            if *value != was[&column.key] {
                found.push(json!({ "row": r, "column": column.key, "value": value }));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget(value: Value) -> Result<TableWidget> {
        Table::parse(serde_json::from_value(value).unwrap())
    }

    fn owners() -> TableWidget {
        widget(json!({
            "columns": [
                { "key": "name", "label": "Service" },
                { "key": "owner", "label": "Owner", "editable": true },
                { "key": "on_call", "label": "On call", "editable": true, "type": "boolean" },
                { "key": "tier", "label": "Tier", "editable": true, "type": "select", "options": ["gold", "silver"] },
            ],
            "rows": [
                { "name": "api", "owner": "alice", "tier": "gold" },
                { "name": "web", "on_call": true },
            ],
        }))
        .unwrap()
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::Invalid { code, message }) => {
                assert!(!message.contains("SECRET"), "{message}");
                code
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn missing_cells_are_filled_as_empty() {
        let t = owners();
        assert_eq!(
            Value::from(t.rows[1].clone()),
            json!({ "name": "web", "owner": "", "on_call": true, "tier": null })
        );
    }

    #[test]
    fn columns_and_rows_have_limits_with_codes() {
        let with =
            |columns: Value, rows: Value| widget(json!({ "columns": columns, "rows": rows }));
        let text = json!({ "key": "a", "label": "A", "editable": true });
        let one = json!([{ "a": "x" }]);
        assert_eq!(code(with(json!([]), one.clone())), "columns_count");
        let many: Vec<Value> = (0..21)
            .map(|i| json!({ "key": format!("k{i}"), "label": "L", "editable": true }))
            .collect();
        assert_eq!(code(with(json!(many), one.clone())), "columns_count");
        assert_eq!(code(with(json!([text]), json!([]))), "rows_count");
        let rows: Vec<Value> = (0..201).map(|_| json!({})).collect();
        assert_eq!(code(with(json!([text]), json!(rows))), "rows_count");
        let rows: Vec<Value> = (0..200).map(|_| json!({})).collect();
        assert!(with(json!([text]), json!(rows)).is_ok());
        for key in ["", "a.b", "a b", &"k".repeat(41)] {
            let column = json!({ "key": key, "label": "A", "editable": true });
            assert_eq!(
                code(with(json!([column]), one.clone())),
                "invalid_column_key"
            );
        }
        assert_eq!(
            code(with(json!([text, text]), one.clone())),
            "duplicate_column_key"
        );
        let read_only = json!({ "key": "a", "label": "A" });
        assert_eq!(
            code(with(json!([read_only]), one.clone())),
            "no_editable_column"
        );
        let labelled = |label: &str| json!([{ "key": "a", "label": label, "editable": true }]);
        assert_eq!(code(with(labelled(" "), one.clone())), "empty_label");
        assert_eq!(
            code(with(labelled(&"l".repeat(81)), one.clone())),
            "label_too_long"
        );
        assert_eq!(code(with(labelled("a\nb"), one.clone())), "invalid_label");
        let select = |options: Value| json!([{ "key": "a", "label": "A", "editable": true, "type": "select", "options": options }]);
        assert_eq!(code(with(select(json!([])), json!([{}]))), "options_count");
        let fifty_one: Vec<String> = (0..51).map(|i| format!("o{i}")).collect();
        assert_eq!(
            code(with(select(json!(fifty_one)), json!([{}]))),
            "options_count"
        );
        assert_eq!(
            code(with(select(json!(["x", "x"])), json!([{}]))),
            "duplicate_label"
        );
        let unselect = json!([{ "key": "a", "label": "A", "editable": true }]);
        assert_eq!(
            code(with(
                json!([{ "key": "a", "label": "A", "editable": true, "type": "select" }]),
                json!([{}])
            )),
            "options_count"
        );
        let mut with_options = unselect.clone();
        with_options[0]["options"] = json!(["x"]);
        assert_eq!(code(with(with_options, one.clone())), "options_not_allowed");
        assert_eq!(
            code(with(unselect.clone(), json!([{ "SECRET": "x" }]))),
            "unknown_column"
        );
        for cell in [json!(true), json!(3), json!("a\u{7}"), json!(null)] {
            assert_eq!(
                code(with(unselect.clone(), json!([{ "a": cell }]))),
                "invalid_cell"
            );
        }
        assert_eq!(
            code(with(unselect.clone(), json!([{ "a": "c".repeat(501) }]))),
            "cell_too_long"
        );
        assert_eq!(
            code(with(select(json!(["x"])), json!([{ "a": "SECRET" }]))),
            "invalid_cell"
        );
    }

    #[test]
    fn only_editable_cells_change_and_are_typed_right() {
        let t = owners();
        let edit = |rows: Value| {
            Table::check(
                &t,
                TableAnswer {
                    rows: serde_json::from_value(rows).unwrap(),
                },
            )
        };
        let s = edit(
            json!([{ "owner": "bob", "name": "api" }, { "tier": "silver", "on_call": false }]),
        )
        .unwrap();
        assert_eq!(
            s.value,
            json!({ "rows": [
                { "name": "api", "owner": "bob", "on_call": false, "tier": "gold" },
                { "name": "web", "owner": "", "on_call": false, "tier": "silver" },
            ] })
        );
        assert!(s.used);
        assert_eq!(s.typed, ["bob"]);
        assert_eq!(
            Table::compact(&t, &s.value),
            json!({ "edited": [
                { "row": 0, "column": "owner", "value": "bob" },
                { "row": 1, "column": "on_call", "value": false },
                { "row": 1, "column": "tier", "value": "silver" },
            ] })
        );
        let none = Table::check(&t, Table::untouched(&t)).unwrap();
        assert!(!none.used);
        assert_eq!(Table::compact(&t, &none.value), json!({ "edited": [] }));
        assert_eq!(code(edit(json!([{}]))), "rows_changed");
        assert_eq!(code(edit(json!([{}, {}, {}]))), "rows_changed");
        assert_eq!(
            code(edit(json!([{ "name": "SECRET" }, {}]))),
            "read_only_cell"
        );
        assert_eq!(code(edit(json!([{ "SECRET": "x" }, {}]))), "unknown_column");
        assert_eq!(
            code(edit(json!([{ "on_call": "yes" }, {}]))),
            "invalid_cell"
        );
        assert_eq!(
            code(edit(json!([{ "tier": "SECRET" }, {}]))),
            "invalid_cell"
        );
        assert_eq!(code(edit(json!([{ "owner": 7 }, {}]))), "invalid_cell");
        assert_eq!(
            code(edit(json!([{ "owner": "o".repeat(501) }, {}]))),
            "cell_too_long"
        );
    }

    #[test]
    fn the_form_sends_editable_cells_and_check_boxes_by_a_hidden_false() {
        let t = owners();
        let form = |fields: &[(&str, &str)]| {
            let fields: Vec<(String, String)> = fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Table::from_form(&t, &fields)
        };
        let read = form(&[
            ("cell.0.owner", "carol"),
            ("cell.0.on_call", "false"),
            ("cell.0.on_call", "true"),
            ("cell.1.on_call", "false"),
            ("cell.1.tier", ""),
            ("cell.0.tier", "silver"),
            ("freeform", "x"),
        ])
        .unwrap();
        assert_eq!(read.rows[0]["owner"], "carol");
        assert_eq!(read.rows[0]["on_call"], true);
        assert_eq!(read.rows[1]["on_call"], false);
        assert_eq!(read.rows[1]["tier"], Value::Null);
        assert_eq!(read.rows[0]["tier"], "silver");
        // Only the free text: every cell as it was.
        let words = form(&[("freeform", "x")]).unwrap();
        assert_eq!(words.rows, t.rows);
        for bad in ["cell.2.owner", "cell.0.SECRET", "cell.x.owner", "cell.0"] {
            assert_eq!(code(form(&[(bad, "v")])), "unknown_cell");
        }
        let read_only = form(&[("cell.0.name", "x")]).unwrap();
        assert_eq!(code(Table::check(&t, read_only)), "read_only_cell");
    }
}
