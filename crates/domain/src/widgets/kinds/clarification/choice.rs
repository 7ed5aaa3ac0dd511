//! `choice`: the agent offers 2 to 10 options (a label, and optionally a
//! description and markdown); the person picks one, or several with
//! `multi_select`. `structured` is `{"selected": [label…]}`, in the
//! options' order. The form is radio buttons or check boxes named
//! `selected`; with JavaScript a single choice can be cleared again.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::types::{ClarificationType, Structured};
use crate::error::{Error, Result};

const MIN_OPTIONS: usize = 2;
const MAX_OPTIONS: usize = 10;
const MAX_LABEL_CHARS: usize = 80;
const MAX_DESCRIPTION_CHARS: usize = 300;
const MAX_MARKDOWN_CHARS: usize = 4000;

/// The form field of a picked option (repeated for several).
pub const FIELD: &str = "selected";

/// The `choice` type.
pub struct Choice;

/// One option.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChoiceOption {
    /// What the person sees and the answer names (1 to 80 characters,
    /// unique, one line).
    pub label: String,
    /// Plain text shown under the label (at most 300 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Markdown shown below the option, sanitized: links, emphasis, code
    /// and lists only (at most 4000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markdown: Option<String>,
}

/// A `choice` widget, as the agent sends it and as it is stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChoiceWidget {
    /// 2 to 10 options.
    pub options: Vec<ChoiceOption>,
    /// Whether several options may be picked (default false: one).
    #[serde(default, alias = "multiSelect")]
    pub multi_select: bool,
}

/// The `structured` answer: the picked labels.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoiceAnswer {
    #[serde(default)]
    pub selected: Vec<String>,
}

/// Checks option `n` (1-based in messages) on its own.
fn check_option(n: usize, o: &ChoiceOption) -> Result<()> {
    let chars = o.label.chars().count();
    if o.label.trim().is_empty() {
        return Err(Error::invalid(
            "empty_label",
            format!("option {n} has an empty label"),
        ));
    }
    if chars > MAX_LABEL_CHARS {
        return Err(Error::invalid(
            "label_too_long",
            format!(
                "the label of option {n} has {chars} characters; the limit is {MAX_LABEL_CHARS}"
            ),
        ));
    }
    if o.label.chars().any(char::is_control) {
        return Err(Error::invalid(
            "invalid_label",
            format!("the label of option {n} is one line of plain text: no control characters"),
        ));
    }
    let too_long =
        |text: &Option<String>, max: usize| text.as_ref().is_some_and(|t| t.chars().count() > max);
    if too_long(&o.description, MAX_DESCRIPTION_CHARS) {
        return Err(Error::invalid(
            "description_too_long",
            format!(
                "the description of option {n} has more than {MAX_DESCRIPTION_CHARS} characters"
            ),
        ));
    }
    if too_long(&o.markdown, MAX_MARKDOWN_CHARS) {
        return Err(Error::invalid(
            "markdown_too_long",
            format!("the markdown of option {n} has more than {MAX_MARKDOWN_CHARS} characters"),
        ));
    }
    Ok(())
}

impl ClarificationType for Choice {
    const TYPE: &'static str = "choice";
    type Input = ChoiceWidget;
    type Params = ChoiceWidget;
    type Answer = ChoiceAnswer;

    fn parse(input: ChoiceWidget) -> Result<ChoiceWidget> {
        let count = input.options.len();
        if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&count) {
            return Err(Error::invalid(
                "options_count",
                format!(
                    "`widget.options` needs {MIN_OPTIONS} to {MAX_OPTIONS} options; it has {count}"
                ),
            ));
        }
        for (i, option) in input.options.iter().enumerate() {
            check_option(i + 1, option)?;
            let label = option.label.trim();
            if let Some(first) = input.options[..i]
                .iter()
                .position(|o| o.label.trim() == label)
            {
                return Err(Error::invalid(
                    "duplicate_label",
                    format!(
                        "option {} has the same label as option {}",
                        i + 1,
                        first + 1
                    ),
                ));
            }
        }
        Ok(input)
    }

    fn untouched(_: &ChoiceWidget) -> ChoiceAnswer {
        ChoiceAnswer::default()
    }

    fn from_form(_: &ChoiceWidget, fields: &[(String, String)]) -> Result<ChoiceAnswer> {
        let selected = fields
            .iter()
            .filter(|(k, v)| k == FIELD && !v.is_empty())
            .map(|(_, v)| v.clone())
            .collect();
        Ok(ChoiceAnswer { selected })
    }

    /// Every pick must be a label; several only with `multi_select`. The
    /// picks come back in the options' order, each once.
    fn check(params: &ChoiceWidget, answer: ChoiceAnswer) -> Result<Structured> {
        let mut picked = Vec::new();
        for label in &answer.selected {
            let Some(at) = params.options.iter().position(|o| o.label == *label) else {
                return Err(Error::invalid(
                    "unknown_option",
                    "a picked label is not one of the options",
                ));
            };
            picked.push(at);
        }
        picked.sort_unstable();
        picked.dedup();
        if !params.multi_select && picked.len() > 1 {
            return Err(Error::invalid(
                "single_answer",
                "pick one option: this choice is not multi-select",
            ));
        }
        let selected: Vec<&str> = picked
            .iter()
            .map(|&at| params.options[at].label.as_str())
            .collect();
        Ok(Structured {
            value: json!({ "selected": selected }),
            used: !selected.is_empty(),
            typed: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget(labels: &[&str], multi: bool) -> ChoiceWidget {
        ChoiceWidget {
            options: labels
                .iter()
                .map(|l| ChoiceOption {
                    label: l.to_string(),
                    description: None,
                    markdown: None,
                })
                .collect(),
            multi_select: multi,
        }
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn options_have_limits_with_codes() {
        assert!(Choice::parse(widget(&["a", "b"], false)).is_ok());
        assert_eq!(code(Choice::parse(widget(&["a"], false))), "options_count");
        let eleven: Vec<String> = (0..11).map(|i| format!("o{i}")).collect();
        let eleven: Vec<&str> = eleven.iter().map(String::as_str).collect();
        assert_eq!(code(Choice::parse(widget(&eleven, false))), "options_count");
        assert_eq!(
            code(Choice::parse(widget(&["a", " "], false))),
            "empty_label"
        );
        let long = "l".repeat(81);
        assert_eq!(
            code(Choice::parse(widget(&["a", &long], false))),
            "label_too_long"
        );
        assert!(Choice::parse(widget(&["a", &"é".repeat(80)], false)).is_ok());
        assert_eq!(
            code(Choice::parse(widget(&["a", "b\nc"], false))),
            "invalid_label"
        );
        assert_eq!(
            code(Choice::parse(widget(&["EU", " EU "], false))),
            "duplicate_label"
        );
        let mut described = widget(&["a", "b"], false);
        described.options[1].description = Some("d".repeat(301));
        assert_eq!(code(Choice::parse(described)), "description_too_long");
        let mut marked = widget(&["a", "b"], false);
        marked.options[0].markdown = Some("m".repeat(4001));
        assert_eq!(code(Choice::parse(marked)), "markdown_too_long");
    }

    #[test]
    fn answers_are_labels_in_option_order() {
        let multi = widget(&["EU", "US", "APAC"], true);
        let answer = |labels: &[&str]| ChoiceAnswer {
            selected: labels.iter().map(|l| l.to_string()).collect(),
        };
        let s = Choice::check(&multi, answer(&["APAC", "EU", "APAC"])).unwrap();
        assert_eq!(s.value, json!({ "selected": ["EU", "APAC"] }));
        assert!(s.used);
        let none = Choice::check(&multi, Choice::untouched(&multi)).unwrap();
        assert_eq!(none.value, json!({ "selected": [] }));
        assert!(!none.used);
        assert_eq!(
            code(Choice::check(&multi, answer(&["eu"]))),
            "unknown_option"
        );
        let single = widget(&["EU", "US"], false);
        assert_eq!(
            code(Choice::check(&single, answer(&["EU", "US"]))),
            "single_answer"
        );
        let fields = [
            ("selected".to_owned(), "US".to_owned()),
            ("selected".to_owned(), String::new()),
            ("freeform".to_owned(), "US".to_owned()),
        ];
        let read = Choice::from_form(&single, &fields).unwrap();
        assert_eq!(read.selected, ["US"]);
    }
}
