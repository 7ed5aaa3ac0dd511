//! The arguments of `ask_user` and `ask`, as agents send them (and as the
//! tools' schemas show them).

use crate::error::Error;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// One choice of a question.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskOption {
    /// What the person sees (1 to 80 characters).
    pub label: String,
    /// What the agent receives when this is picked (1 to 200 characters);
    /// the label when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// What choosing it means (at most 300 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Optional markdown shown as a preview of this choice (at most 4000 characters).
    /// Also accepted as `markdown` (Claude Code's AskUserQuestion).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "markdown")]
    pub preview_markdown: Option<String>,
}

impl AskOption {
    pub(super) fn plain(label: String, value: Option<String>) -> Self {
        Self {
            label,
            value,
            description: None,
            preview_markdown: None,
        }
    }

    /// The answer the agent receives for this choice.
    pub fn answer(&self) -> &str {
        self.value.as_deref().unwrap_or(&self.label)
    }
}

/// One question of `ask_user`, or one simple widget of `ask`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The full question (1 to 500 characters); answers are keyed by it.
    pub question: String,
    /// A short chip shown above it, e.g. "Database" (1 to 12 characters).
    pub header: String,
    /// 2 to 4 choices; a free-text "Other" answer is always offered too.
    pub options: Vec<AskOption>,
    /// Whether several choices may be picked (answered as an array).
    /// Also accepted as `multiSelect` (Claude Code's AskUserQuestion).
    #[serde(default, alias = "multiSelect")]
    pub multi_select: bool,
    /// Set for the simple widgets of `ask`: how the question is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub kind: Option<SimpleKind>,
    /// A preselected choice (its label), for the simple widgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub default: Option<String>,
    /// Whether a free-text answer is offered; `ask_user` always offers one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub allow_freeform: Option<bool>,
}

/// The arguments of `ask_user`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserInput {
    /// 1 to 4 questions, answered together in one form.
    pub questions: Vec<Question>,
    /// Claude Code's AskUserQuestion `metadata` (for tracking, never
    /// shown): accepted and left unread.
    #[serde(default)]
    #[schemars(skip)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// wick's `ask_user`: one question, instead of `questions`.
    #[serde(default)]
    #[schemars(skip)]
    pub question: Option<String>,
    /// wick's `ask_user`: its choices (`{label, value}`).
    #[serde(default)]
    #[schemars(skip)]
    pub options: Option<Vec<SimpleOption>>,
    /// wick's `ask_user`: whether a typed answer is offered.
    #[serde(default)]
    #[schemars(skip)]
    pub allow_freeform: Option<bool>,
    /// wick's `ask_user`: the name of the agent asking, shown on the card.
    #[serde(default)]
    #[schemars(skip)]
    pub agent_name: Option<String>,
    /// Wait up to this many seconds (at most 300) for the answer and return
    /// it; past that the call returns `pending` and the answer arrives as a
    /// queued prompt. Default 0: return at once.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// How a simple question is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SimpleKind {
    /// Yes / No (or the given options) as buttons.
    #[default]
    Confirm,
    /// One button per option.
    Buttons,
    /// A drop-down list.
    Select,
    /// Radio buttons.
    Radio,
    /// Check boxes: several may be picked, answered as an array.
    Checkbox,
}

/// A choice of a simple widget: a label (which is also the answer), or a
/// label with the `value` the agent receives instead.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SimpleOption {
    Label(String),
    Labelled(LabelledOption),
}

/// A choice whose answer differs from what the person sees.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelledOption {
    /// What the person sees (1 to 80 characters).
    pub label: String,
    /// What the agent receives (1 to 200 characters).
    pub value: String,
}

/// One simple widget: in `ask` itself, or one of its `items`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimpleItem {
    /// The question (1 to 500 characters).
    #[serde(default)]
    pub question: Option<String>,
    /// A short label shown above it in a form of several items (at most 40 characters).
    #[serde(default)]
    pub label: Option<String>,
    /// `confirm` (default), `buttons`, `select`, `radio` or `checkbox`.
    #[serde(default)]
    pub widget: Option<SimpleKind>,
    /// The choices (2 to 10): labels, or `{label, value}`; `confirm` defaults to Yes / No.
    #[serde(default)]
    pub options: Option<Vec<SimpleOption>>,
    /// A preselected choice (its label); must be one of the options.
    #[serde(default)]
    pub default: Option<String>,
    /// Offer a free-text answer besides the options (default false).
    #[serde(default)]
    pub allow_freeform: bool,
}

/// The arguments of `ask`: one simple question, or several (`items`)
/// answered in one form.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskInput {
    /// The question (1 to 500 characters); leave out when giving `items`.
    /// Also accepted as `prompt` or `text` (nebo's `ask`).
    #[serde(default, alias = "prompt", alias = "text")]
    pub question: Option<String>,
    /// nebo's `ask`: the one widget (`type`, `label`, `options`,
    /// `default`), instead of `widget`, `options` and `default`.
    #[serde(default)]
    #[schemars(skip)]
    pub widgets: Option<Vec<NeboWidget>>,
    /// `confirm` (default), `buttons`, `select`, `radio` or `checkbox`.
    #[serde(default)]
    pub widget: Option<SimpleKind>,
    /// The choices (2 to 10): labels, or `{label, value}`; `confirm` defaults to Yes / No.
    #[serde(default)]
    pub options: Option<Vec<SimpleOption>>,
    /// A preselected choice (its label); must be one of the options.
    #[serde(default)]
    pub default: Option<String>,
    /// Offer a free-text answer besides the options (default false).
    #[serde(default)]
    pub allow_freeform: bool,
    /// Instead of `question`: 1 to 6 simple widgets answered together in
    /// one form, each with its own `label`.
    #[serde(default)]
    pub items: Option<Vec<SimpleItem>>,
    /// As for `ask_user`.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// A widget of nebo's `ask` (`widgets[]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeboWidget {
    #[serde(rename = "type")]
    pub kind: SimpleKind,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub options: Option<Vec<SimpleOption>>,
    #[serde(default)]
    pub default: Option<String>,
}

impl AskInput {
    /// nebo's `widgets` as our own fields: its one widget's `type`,
    /// `options` and `default`; its `label` goes above the question. More
    /// than one is `422 widgets_count` (several questions are `items`).
    fn nebo(&self) -> Result<Option<SimpleItem>> {
        let Some(widgets) = &self.widgets else {
            return Ok(None);
        };
        if self.widget.is_some() || self.options.is_some() || self.default.is_some() {
            return Err(Error::invalid(
                "ambiguous_ask",
                "give either `widgets` or `widget` with `options` and `default`, not both",
            ));
        }
        let [w] = widgets.as_slice() else {
            return Err(Error::invalid(
                "widgets_count",
                format!(
                    "`widgets` holds one widget here; there are {}. Ask several questions with `items`",
                    widgets.len()
                ),
            ));
        };
        Ok(Some(SimpleItem {
            question: self.question.clone(),
            label: w.label.clone(),
            widget: Some(w.kind),
            options: w.options.clone(),
            default: w.default.clone(),
            allow_freeform: self.allow_freeform,
        }))
    }

    /// The widgets asked: `items`, or the one given at the top level.
    pub(super) fn simple_items(&self) -> Result<Vec<SimpleItem>> {
        if let Some(item) = self.nebo()? {
            if self.items.is_some() {
                return Err(Error::invalid(
                    "ambiguous_ask",
                    "give either `question` (with `widget`, `options`, …) or `items`, not both",
                ));
            }
            return Ok(vec![item]);
        }
        let top_level = self.question.is_some()
            || self.widget.is_some()
            || self.options.is_some()
            || self.default.is_some()
            || self.allow_freeform;
        match (&self.items, top_level) {
            (Some(_), true) => Err(Error::invalid(
                "ambiguous_ask",
                "give either `question` (with `widget`, `options`, …) or `items`, not both",
            )),
            (Some(items), false) => Ok(items.clone()),
            (None, _) => Ok(vec![SimpleItem {
                question: self.question.clone(),
                label: None,
                widget: self.widget,
                options: self.options.clone(),
                default: self.default.clone(),
                allow_freeform: self.allow_freeform,
            }]),
        }
    }
}
