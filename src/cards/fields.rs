//! The typed-question card (`templates/widgets/fields.html`): one native
//! input per field (a text field, a text area, a number, a check box, an
//! email, URL or date input) with the browser's own checks (`required`,
//! `min`/`max`, lengths), so the form works and checks without JavaScript;
//! the server checks everything again, and a refused answer shows each
//! field's error beside it. Once answered: each label with its answer.

use askama::Template;
use serde_json::Value;

use crate::cards::{self, Card};
use widgetd_domain::Result;
use widgetd_domain::widgets::kinds::fields::check::read_refusal;
use widgetd_domain::widgets::kinds::fields::{FORM_PREFIX, FieldType, FieldsParams};

/// One field as shown.
struct FieldView {
    /// The form field's name, `field.NAME`.
    input_name: String,
    input_id: String,
    label: String,
    description: Option<String>,
    /// `text`, `multiline`, `number`, `integer`, `boolean`, `email`,
    /// `url` or `date`.
    kind: &'static str,
    /// The HTML input type.
    input_type: &'static str,
    required: bool,
    /// `min`/`max` of a number, or `minlength`/`maxlength` of a text.
    min: Option<String>,
    max: Option<String>,
    /// The default as the input's value; a boolean's as `checked`.
    value: String,
    checked: bool,
    /// The refused answer's message for this field.
    error: Option<String>,
    /// The answer, once answered.
    answer: String,
}

#[derive(Template)]
#[template(path = "widgets/fields.html")]
struct FieldsCard<'a> {
    card: &'a Card<'a>,
    question: String,
    fields: Vec<FieldView>,
    /// Some field carries its own error (the form's message is then not
    /// repeated above it).
    per_field: bool,
}

/// A bound as an HTML attribute: a whole number without `.0`.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

fn shown_answer(answer: &Value) -> String {
    match answer {
        Value::Null => "—".to_owned(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The inside of a typed-question card.
pub(super) fn render(params: &FieldsParams, card: &Card<'_>) -> Result<String> {
    let errors = card
        .error
        .map(|e| read_refusal(&e.message))
        .unwrap_or_default();
    let answers = card.result.map(|r| &r["answers"]);
    let fields = params
        .fields
        .iter()
        .map(|f| {
            let t = f.field_type;
            let input_type = match t {
                FieldType::Text | FieldType::Multiline => "text",
                FieldType::Number | FieldType::Integer => "number",
                FieldType::Boolean => "checkbox",
                FieldType::Email => "email",
                FieldType::Url => "url",
                FieldType::Date => "date",
            };
            let max = match (t.is_string(), f.max) {
                (true, None) => Some(t.max_chars().to_string()),
                (_, max) => max.map(number),
            };
            let value = match &f.default {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            FieldView {
                input_name: format!("{FORM_PREFIX}{}", f.name),
                input_id: format!("w-{}-f-{}", card.id, f.name),
                label: f.label.clone(),
                description: f.description.clone(),
                kind: t.as_str(),
                input_type,
                required: f.required,
                min: f.min.map(number),
                max,
                value,
                checked: f.default == Some(Value::Bool(true)),
                error: errors
                    .iter()
                    .find(|(name, _)| name == &f.name)
                    .map(|(_, e)| e.clone()),
                answer: answers
                    .map(|a| shown_answer(&a[&f.name]))
                    .unwrap_or_default(),
            }
        })
        .collect();
    let view = FieldsCard {
        card,
        question: params.question.clone(),
        per_field: !errors.is_empty(),
        fields,
    };
    cards::render(&view)
}
