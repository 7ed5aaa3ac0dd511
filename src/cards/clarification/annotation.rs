//! The card's part of a `annotation` widget (`templates/widgets/clarification/annotation.html`).

use askama::Template;
use serde_json::Value;
use widgetd_domain::widgets::kinds::clarification::annotation::*;

use super::{Mode, Part};
use crate::cards::{self};
use widgetd_domain::Result;

pub(super) fn render(params: &AnnotationWidget, part: &Part<'_>) -> Result<String> {
    let drawings = match part.mode {
        Mode::Answered(structured) => Some(described(structured)),
        _ => None,
    };
    cards::render(&AnnotationPart {
        id: part.id,
        form: matches!(part.mode, Mode::Form),
        width: params.image.width,
        height: params.image.height,
        tools: params.tools.iter().map(|t| t.name()).collect(),
        drawings,
    })
}

/// Each drawing of an answer in words: "rectangle at 10, 20, 30 × 40".
fn described(structured: &Value) -> Vec<String> {
    let list = structured["annotations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter()
        .map(|d| {
            let c: Vec<String> = d["coords"]
                .as_array()
                .map(|a| a.iter().map(Value::to_string).collect())
                .unwrap_or_default();
            let tool = d["tool"].as_str().unwrap_or_default();
            let text = d["text"]
                .as_str()
                .map(|t| format!(": {t}"))
                .unwrap_or_default();
            format!("{tool} [{}]{text}", c.join(", "))
        })
        .collect()
}

#[derive(Template)]
#[template(path = "widgets/clarification/annotation.html")]
struct AnnotationPart<'a> {
    id: &'a str,
    form: bool,
    width: u32,
    height: u32,
    tools: Vec<&'static str>,
    /// Once answered: each drawing in words.
    drawings: Option<Vec<String>>,
}
