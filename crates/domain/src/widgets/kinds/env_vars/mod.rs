//! The `env_vars` kind (`request_env_vars`): the agent asks for
//! environment variables by name; a person types the values, which go to
//! the session creator's encrypted store and never back to the agent.
//! Agent input is untrusted: it is parsed into [`EnvVarsParams`] or refused
//! with a code that says what to fix. The answer is read in `answer.rs`;
//! its card is the server's (`src/cards/`).

mod answer;

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::AnyConnection;

use crate::db::Dialect;
use crate::error::{Error, Result};
use crate::input::parse_json;
use crate::secrets::{self, EnvVarName};
use crate::sessions::Session;
use crate::widgets::engine::badge::{Badge, who};
use crate::widgets::engine::kind::{AnswerBody, Answering, Kind, Request};
use crate::widgets::engine::row::WidgetStatus;

pub use answer::{Submission, SubmissionJson, USE_SAVED_FIELD, VALUE_FIELD};

const MAX_NAMES: usize = 10;
const MAX_REASON_CHARS: usize = 500;
const MAX_INSTRUCTIONS_CHARS: usize = 4000;
const MAX_DESCRIPTION_CHARS: usize = 200;
const MAX_PLACEHOLDER_CHARS: usize = 120;

/// Where a submitted value is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScopeChoice {
    /// This session only.
    #[default]
    Session,
    /// Every session of the user.
    Global,
}

impl ScopeChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Global => "global",
        }
    }
}

/// How to show one requested variable's input.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VariableMeta {
    /// One line shown under the input (at most 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Placeholder text of the input, e.g. the value's format (at most 120 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// Use a multi-line (still masked) input, e.g. for a key file.
    #[serde(default)]
    pub multiline: bool,
    /// Agor's `format_hint` (at most 80 characters): the placeholder when
    /// none is given, else shown after the description. Never stored.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub format_hint: Option<String>,
    /// Agor's `input_type`: `password` (ours), `textarea` (`multiline`);
    /// `text`, an input that shows the value, is refused. Never stored.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub input_type: Option<AgorInputType>,
}

/// Agor's `variable_metadata.*.input_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgorInputType {
    Password,
    Text,
    Textarea,
}

/// Most characters of Agor's `format_hint`.
const MAX_FORMAT_HINT_CHARS: usize = 80;

impl VariableMeta {
    /// Agor's `format_hint` and `input_type` as our own fields.
    fn absorb_agor(&mut self, name: &str) -> Result<()> {
        match self.input_type.take() {
            Some(AgorInputType::Text) => {
                return Err(Error::invalid(
                    "visible_input_refused",
                    format!(
                        "the input of {name} is always masked: `input_type` is `password` or \
                         `textarea` (a multi-line masked input), never `text`"
                    ),
                ));
            }
            Some(AgorInputType::Textarea) => self.multiline = true,
            Some(AgorInputType::Password) | None => {}
        }
        if let Some(hint) = self.format_hint.take().filter(|h| !h.trim().is_empty()) {
            check_len(
                &hint,
                MAX_FORMAT_HINT_CHARS,
                "format_hint_too_long",
                &format!("the format hint of {name}"),
            )?;
            match (&self.placeholder, &self.description) {
                (None, _) => self.placeholder = Some(hint),
                (Some(_), Some(d)) => self.description = Some(format!("{d} (format: {hint})")),
                (Some(_), None) => self.description = Some(format!("Format: {hint}")),
            }
        }
        Ok(())
    }
}

/// The arguments of `request_env_vars`, as sent by the agent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestEnvVarsInput {
    /// Names of the environment variables you need, e.g. ["HUBSPOT_API_KEY"]:
    /// 1 to 10 unique names matching ^[A-Z_][A-Z0-9_]*$ (at most 128 characters each).
    pub names: Vec<String>,
    /// Why you need them, shown to the user: 1 to 500 characters of plain text.
    pub reason: String,
    /// Optional markdown (at most 4000 characters) telling the user where to
    /// find or how to create the values. Links and emphasis only.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Preselected storage: `session` (default, this session only) or
    /// `global` (all of the user's sessions). The user can change it.
    #[serde(default)]
    pub default_scope: Option<ScopeChoice>,
    /// Optional per-name display hints; keys must be requested names.
    #[serde(default)]
    pub variable_metadata: Option<BTreeMap<String, VariableMeta>>,
    /// Agor's `auto_resume`: `true`, what widgetd always does (every
    /// widget queues its resume prompt); `false` is refused.
    #[serde(default)]
    #[schemars(skip)]
    pub auto_resume: Option<bool>,
}

/// A validated request, as stored in the widget row. Holds no value.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvVarsParams {
    /// Sorted and unique.
    pub names: Vec<EnvVarName>,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    pub default_scope: ScopeChoice,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variable_metadata: BTreeMap<String, VariableMeta>,
}

fn check_len(text: &str, max: usize, code: &'static str, what: &str) -> Result<()> {
    let len = text.chars().count();
    if len > max {
        return Err(Error::invalid(
            code,
            format!("{what} has {len} characters; the limit is {max}"),
        ));
    }
    Ok(())
}

impl EnvVarsParams {
    /// Validates agent input (DESIGN §4).
    pub fn parse(input: RequestEnvVarsInput) -> Result<Self> {
        if input.names.is_empty() || input.names.len() > MAX_NAMES {
            return Err(Error::invalid(
                "names_count",
                format!(
                    "`names` needs 1 to {MAX_NAMES} names; it has {}",
                    input.names.len()
                ),
            ));
        }
        let mut names = BTreeSet::new();
        for raw in &input.names {
            let name = EnvVarName::parse(raw)?;
            if !names.insert(name) {
                return Err(Error::invalid(
                    "duplicate_name",
                    format!("`{raw}` is requested twice; list each name once"),
                ));
            }
        }
        let reason = input.reason.trim();
        if reason.is_empty() {
            return Err(Error::invalid(
                "invalid_reason",
                "`reason` is empty: say why you need the values",
            ));
        }
        check_len(reason, MAX_REASON_CHARS, "invalid_reason", "`reason`")?;
        if reason
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            return Err(Error::invalid(
                "invalid_reason",
                "`reason` is plain text: no control characters",
            ));
        }
        if let Some(instructions) = &input.instructions {
            check_len(
                instructions,
                MAX_INSTRUCTIONS_CHARS,
                "instructions_too_long",
                "`instructions`",
            )?;
        }
        if input.auto_resume == Some(false) {
            return Err(Error::invalid(
                "auto_resume_unsupported",
                "widgetd always queues the resume prompt when the request ends; leave out \
                 `auto_resume` or set it to true",
            ));
        }
        let mut metadata = input.variable_metadata.unwrap_or_default();
        for (name, meta) in &mut metadata {
            if !names.iter().any(|n| n.as_str() == name) {
                return Err(Error::invalid(
                    "unknown_metadata_name",
                    format!(
                        "`variable_metadata` has an entry for `{name}`, which is not in `names`"
                    ),
                ));
            }
            meta.absorb_agor(name)?;
            if let Some(d) = &meta.description {
                check_len(
                    d,
                    MAX_DESCRIPTION_CHARS,
                    "description_too_long",
                    &format!("the description of {name}"),
                )?;
            }
            if let Some(p) = &meta.placeholder {
                check_len(
                    p,
                    MAX_PLACEHOLDER_CHARS,
                    "placeholder_too_long",
                    &format!("the placeholder of {name}"),
                )?;
            }
        }
        Ok(Self {
            names: names.into_iter().collect(),
            reason: reason.to_owned(),
            instructions: input.instructions.filter(|i| !i.trim().is_empty()),
            default_scope: input.default_scope.unwrap_or_default(),
            variable_metadata: metadata,
        })
    }

    pub fn name_strs(&self) -> Vec<&str> {
        self.names.iter().map(EnvVarName::as_str).collect()
    }
}

/// The `env_vars` kind and its request, `request_env_vars`.
pub struct EnvVars;

impl Request for EnvVars {
    type Kind = Self;
    const NAME: &'static str = "env_vars";
    type Input = RequestEnvVarsInput;

    fn parse(input: RequestEnvVarsInput) -> Result<EnvVarsParams> {
        EnvVarsParams::parse(input)
    }
}

impl Kind for EnvVars {
    const NAMES: &'static [&'static str] = &[Self::NAME];
    type Params = EnvVarsParams;
    type Answer = Submission;

    /// The names that resolve in the session's effective env, read with
    /// the session.
    fn born_ahead(dialect: Dialect) -> Option<&'static str> {
        Some(secrets::effective_names_sql(dialect))
    }

    /// Nothing to ask when every name already resolves in the session's
    /// effective env.
    async fn born(
        _tx: &mut AnyConnection,
        _session: &Session,
        params: &EnvVarsParams,
        present: Option<&str>,
    ) -> Result<Option<Value>> {
        let present = secrets::names_in(present);
        let all_present = params.names.iter().all(|n| present.contains(n.as_str()));
        Ok(all_present.then(|| json!({ "names": params.names })))
    }

    fn read(body: AnswerBody) -> Result<Submission> {
        match body {
            AnswerBody::Form(fields) => Submission::from_form(fields),
            AnswerBody::Json(body) => Submission::from_json(parse_json::<SubmissionJson>(&body)?),
        }
    }

    async fn apply(
        cx: &mut Answering<'_>,
        params: &EnvVarsParams,
        submission: Submission,
    ) -> Result<Value> {
        answer::store(cx, params, submission).await
    }

    fn prompt(tag: &str, params: &EnvVarsParams, to: WidgetStatus, result: &Value) -> String {
        prompt(tag, to, &params.name_strs(), result["scope"].as_str())
    }

    fn unanswered(params: &EnvVarsParams) -> Value {
        json!({ "names": params.names })
    }

    fn env_names(params: &EnvVarsParams) -> Option<Vec<String>> {
        Some(params.names.iter().map(|n| n.to_string()).collect())
    }

    fn subject(params: &EnvVarsParams) -> String {
        format!("Request for {}", params.name_strs().join(", "))
    }

    fn answered_badge(
        params: &EnvVarsParams,
        status: WidgetStatus,
        result: &Value,
        when: &str,
    ) -> Badge {
        let names = params.name_strs().join(", ");
        match status {
            WidgetStatus::AlreadyPresent => Badge {
                class: "already-present",
                icon: "check",
                text: format!("{names} already configured"),
            },
            _ => Badge {
                class: "submitted",
                icon: "check-circle",
                text: format!(
                    "{names} saved (scope: {}) by {} at {when}",
                    result["scope"].as_str().unwrap_or("session"),
                    who(result, "submitted_by")
                ),
            },
        }
    }
}

/// The resume prompt of an `env_vars` widget that reached `status`.
/// `scope` is given for submissions only. Built from names and scope only.
pub fn prompt(tag: &str, status: WidgetStatus, names: &[&str], scope: Option<&str>) -> String {
    let list = names.join(", ");
    let several = names.len() > 1;
    let retry =
        "Do not re-request immediately — ask whether to proceed without, or move on to other work.";
    match status {
        WidgetStatus::Submitted => format!(
            "{tag} User submitted {list} (scope: {}). You can now retry the operation that needed it.",
            scope.unwrap_or("session")
        ),
        WidgetStatus::AlreadyPresent => {
            let verb = if several { "were" } else { "was" };
            format!("{tag} {list} {verb} already configured. You can proceed.")
        }
        WidgetStatus::Dismissed => format!("{tag} User dismissed the request for {list}. {retry}"),
        WidgetStatus::Expired => {
            format!(
                "{tag} The request for {list} expired before the user answered; no value was given. {retry}"
            )
        }
        WidgetStatus::Cancelled => format!(
            "{tag} The request for {list} was cancelled because the session was archived; no value was given."
        ),
        WidgetStatus::Pending => unreachable!("pending widgets have no resume prompt"),
    }
}

/// A request for `names`, for tests.
#[cfg(test)]
fn input(names: &[&str]) -> RequestEnvVarsInput {
    RequestEnvVarsInput {
        names: names.iter().map(|n| n.to_string()).collect(),
        reason: "to call the API".into(),
        instructions: None,
        default_scope: None,
        variable_metadata: None,
        auto_resume: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: Result<EnvVarsParams>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn names_are_sorted_and_validated() {
        let p = EnvVarsParams::parse(input(&["B_KEY", "A_KEY"])).unwrap();
        assert_eq!(p.name_strs(), ["A_KEY", "B_KEY"]);
        assert_eq!(p.default_scope, ScopeChoice::Session);
        assert_eq!(code(EnvVarsParams::parse(input(&[]))), "names_count");
        let eleven: Vec<String> = (0..11).map(|i| format!("K{i}")).collect();
        let eleven: Vec<&str> = eleven.iter().map(String::as_str).collect();
        assert_eq!(code(EnvVarsParams::parse(input(&eleven))), "names_count");
        assert_eq!(
            code(EnvVarsParams::parse(input(&["A", "A"]))),
            "duplicate_name"
        );
        assert_eq!(code(EnvVarsParams::parse(input(&["bad"]))), "invalid_name");
        assert_eq!(
            code(EnvVarsParams::parse(input(&["LD_PRELOAD"]))),
            "blocked_name"
        );
    }

    #[test]
    fn reason_instructions_and_metadata_have_limits() {
        let with = |f: &dyn Fn(&mut RequestEnvVarsInput)| {
            let mut i = input(&["KEY"]);
            f(&mut i);
            EnvVarsParams::parse(i)
        };
        assert_eq!(code(with(&|i| i.reason = "  ".into())), "invalid_reason");
        assert_eq!(
            code(with(&|i| i.reason = "x".repeat(501))),
            "invalid_reason"
        );
        assert_eq!(
            code(with(&|i| i.reason = "a\u{7}b".into())),
            "invalid_reason"
        );
        assert!(with(&|i| i.reason = "x".repeat(500)).is_ok());
        assert_eq!(
            code(with(&|i| i.instructions = Some("x".repeat(4001)))),
            "instructions_too_long"
        );
        let meta = |name: &str, m: VariableMeta| Some(BTreeMap::from([(name.to_owned(), m)]));
        assert_eq!(
            code(with(
                &|i| i.variable_metadata = meta("OTHER", VariableMeta::default())
            )),
            "unknown_metadata_name"
        );
        let long_desc = VariableMeta {
            description: Some("d".repeat(201)),
            ..Default::default()
        };
        assert_eq!(
            code(with(
                &|i| i.variable_metadata = meta("KEY", long_desc.clone())
            )),
            "description_too_long"
        );
        let long_ph = VariableMeta {
            placeholder: Some("p".repeat(121)),
            ..Default::default()
        };
        assert_eq!(
            code(with(&|i| i.variable_metadata = meta("KEY", long_ph.clone()))),
            "placeholder_too_long"
        );
    }

    #[test]
    fn prompts_match_the_contract_word_for_word() {
        let one = ["HUBSPOT_API_KEY"];
        assert_eq!(
            prompt("[Agor]", WidgetStatus::Submitted, &one, Some("global")),
            "[Agor] User submitted HUBSPOT_API_KEY (scope: global). You can now retry the operation that needed it."
        );
        assert_eq!(
            prompt("[Agor]", WidgetStatus::AlreadyPresent, &one, None),
            "[Agor] HUBSPOT_API_KEY was already configured. You can proceed."
        );
        assert_eq!(
            prompt("[Agor]", WidgetStatus::AlreadyPresent, &["A", "B"], None),
            "[Agor] A, B were already configured. You can proceed."
        );
        assert_eq!(
            prompt("[Agor]", WidgetStatus::Dismissed, &one, None),
            "[Agor] User dismissed the request for HUBSPOT_API_KEY. Do not re-request immediately — ask whether to proceed without, or move on to other work."
        );
        assert!(
            prompt("[X]", WidgetStatus::Expired, &one, None)
                .starts_with("[X] The request for HUBSPOT_API_KEY expired")
        );
        assert!(
            prompt("[Agor]", WidgetStatus::Cancelled, &one, None).contains("no value was given")
        );
    }
}
