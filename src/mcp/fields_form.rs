//! A typed question (`ask_fields`) as an MCP form: each field one property
//! of the restricted schema of form-mode elicitation (MCP 2025-11-25,
//! `PrimitiveSchemaDefinition`), one to one:
//!
//! | field `type` | property |
//! |---|---|
//! | `text`, `multiline` | `{"type": "string", "minLength", "maxLength"}` |
//! | `email`, `url`, `date` | the same, with `format` `email`, `uri`, `date` |
//! | `number`, `integer` | `{"type": "number"` or `"integer", "minimum", "maximum"}` |
//! | `boolean` | `{"type": "boolean"}` |
//!
//! with `title` (the label), `description` and `default`; required fields
//! are `required`. `pattern` is not part of that schema: the answer is
//! checked against it by widgetd, as every answer is checked again.

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use widgetd_domain::widgets::engine::text::on_one_line;
use widgetd_domain::widgets::kinds::fields::{FieldType, FieldsParams};

/// A bound as JSON: an integer where it is whole (`integer` schemas take
/// only integers).
fn bound(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

/// The message and schema of the form.
pub(super) fn form(params: &FieldsParams) -> Option<(String, JsonObject)> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for f in &params.fields {
        let t = f.field_type;
        let mut p = Map::new();
        let ty = match t {
            FieldType::Number => "number",
            FieldType::Integer => "integer",
            FieldType::Boolean => "boolean",
            _ => "string",
        };
        p.insert("type".into(), json!(ty));
        p.insert("title".into(), json!(on_one_line(&f.label)));
        if let Some(d) = &f.description {
            p.insert("description".into(), json!(on_one_line(d)));
        }
        let format = match t {
            FieldType::Email => Some("email"),
            FieldType::Url => Some("uri"),
            FieldType::Date => Some("date"),
            _ => None,
        };
        if let Some(format) = format {
            p.insert("format".into(), json!(format));
        }
        if t.is_string() {
            if let Some(min) = f.min {
                p.insert("minLength".into(), bound(min));
            }
            let max = f.max.unwrap_or(t.max_chars() as f64);
            p.insert("maxLength".into(), bound(max));
        } else if matches!(t, FieldType::Number | FieldType::Integer) {
            if let Some(min) = f.min {
                p.insert("minimum".into(), bound(min));
            }
            if let Some(max) = f.max {
                p.insert("maximum".into(), bound(max));
            }
        }
        if let Some(default) = &f.default {
            p.insert("default".into(), default.clone());
        }
        if f.required {
            required.push(f.name.clone());
        }
        properties.insert(f.name.clone(), Value::Object(p));
    }
    let schema = json!({ "type": "object", "properties": properties, "required": required });
    match schema {
        Value::Object(map) => Some((on_one_line(&params.question), map)),
        _ => None,
    }
}

/// The answer body (`{"answers": {…}}`) of an accepted form's content:
/// only the fields asked, only primitive values; the kind checks them.
pub(super) fn answer(params: &FieldsParams, content: &Map<String, Value>) -> Value {
    let answers: Map<String, Value> = params
        .fields
        .iter()
        .filter_map(|f| {
            let v = content.get(&f.name)?;
            matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
                .then(|| (f.name.clone(), v.clone()))
        })
        .collect();
    json!({ "answers": answers })
}
