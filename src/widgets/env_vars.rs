//! The `env_vars` widget: what an agent may ask for, and what a person may
//! answer. Agent input is untrusted: it is parsed into [`EnvVarsParams`] or
//! refused with a code that says what to fix.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};
use crate::secrets::{EnvVarName, SecretValue};

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

fn invalid(code: &'static str, message: String) -> AppError {
    AppError::invalid(code, message)
}

fn check_len(text: &str, max: usize, code: &'static str, what: &str) -> AppResult<()> {
    let len = text.chars().count();
    if len > max {
        return Err(invalid(
            code,
            format!("{what} has {len} characters; the limit is {max}"),
        ));
    }
    Ok(())
}

impl EnvVarsParams {
    /// Validates agent input (DESIGN §4).
    pub fn parse(input: RequestEnvVarsInput) -> AppResult<Self> {
        if input.names.is_empty() || input.names.len() > MAX_NAMES {
            return Err(invalid(
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
                return Err(invalid(
                    "duplicate_name",
                    format!("`{raw}` is requested twice; list each name once"),
                ));
            }
        }
        let reason = input.reason.trim();
        if reason.is_empty() {
            return Err(invalid(
                "invalid_reason",
                "`reason` is empty: say why you need the values".into(),
            ));
        }
        check_len(reason, MAX_REASON_CHARS, "invalid_reason", "`reason`")?;
        if reason
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            return Err(invalid(
                "invalid_reason",
                "`reason` is plain text: no control characters".into(),
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
        let metadata = input.variable_metadata.unwrap_or_default();
        for (name, meta) in &metadata {
            if !names.iter().any(|n| n.as_str() == name) {
                return Err(invalid(
                    "unknown_metadata_name",
                    format!(
                        "`variable_metadata` has an entry for `{name}`, which is not in `names`"
                    ),
                ));
            }
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

/// A person's answer to an `env_vars` widget: typed values, names for which
/// the stored global value is reused, and the scope to store under.
#[derive(Debug, Default)]
pub struct Submission {
    pub scope: Option<ScopeChoice>,
    pub values: Vec<(EnvVarName, SecretValue)>,
    pub use_saved: Vec<EnvVarName>,
    /// Whether it came from the browser form (whose line ends are CRLF).
    pub from_form: bool,
}

/// The JSON shape of a submission.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmissionJson {
    #[serde(default)]
    pub scope: Option<ScopeChoice>,
    #[serde(default)]
    pub values: BTreeMap<String, SecretString>,
    #[serde(default)]
    pub use_saved: Vec<String>,
}

/// Field names of the browser form: `value.NAME`, `use_saved.NAME`, `scope`.
pub const VALUE_FIELD: &str = "value.";
pub const USE_SAVED_FIELD: &str = "use_saved.";

fn parse_field_name(raw: &str) -> AppResult<EnvVarName> {
    EnvVarName::parse(raw).map_err(|_| {
        invalid(
            "names_mismatch",
            "the form names a variable that is not valid".into(),
        )
    })
}

impl Submission {
    /// From the JSON body.
    pub fn from_json(body: SubmissionJson) -> AppResult<Self> {
        let mut sub = Submission {
            scope: body.scope,
            ..Default::default()
        };
        for name in body.use_saved {
            sub.use_saved.push(parse_field_name(&name)?);
        }
        for (name, value) in body.values {
            let name = parse_field_name(&name)?;
            sub.values
                .push((name.clone(), SecretValue::parse(&name, value)?));
        }
        Ok(sub)
    }

    /// From the browser form's fields. A value left empty next to a ticked
    /// "use the saved value" box is not an answer; any other empty value is.
    pub fn from_form(fields: Vec<(String, SecretString)>) -> AppResult<Self> {
        use secrecy::ExposeSecret;
        let mut sub = Submission {
            from_form: true,
            ..Default::default()
        };
        let mut typed = Vec::new();
        for (key, value) in fields {
            if key == "scope" {
                sub.scope = Some(match value.expose_secret() {
                    "global" => ScopeChoice::Global,
                    "session" => ScopeChoice::Session,
                    _ => {
                        return Err(invalid(
                            "invalid_scope",
                            "`scope` is `session` or `global`".into(),
                        ));
                    }
                });
            } else if let Some(name) = key.strip_prefix(USE_SAVED_FIELD) {
                sub.use_saved.push(parse_field_name(name)?);
            } else if let Some(name) = key.strip_prefix(VALUE_FIELD) {
                typed.push((parse_field_name(name)?, value));
            }
        }
        for (name, value) in typed {
            if value.expose_secret().is_empty() && sub.use_saved.contains(&name) {
                continue;
            }
            sub.values
                .push((name.clone(), SecretValue::parse(&name, value)?));
        }
        Ok(sub)
    }

    /// The values as the person meant them: a browser sends the line ends
    /// of a multi-line field as CRLF, so those become LF. Values typed into
    /// single-line fields, and JSON submissions, are kept byte for byte.
    pub fn with_meant_line_ends(mut self, params: &EnvVarsParams) -> Self {
        if !self.from_form {
            return self;
        }
        let multiline = |name: &EnvVarName| {
            params
                .variable_metadata
                .get(name.as_str())
                .is_some_and(|m| m.multiline)
        };
        self.values = self
            .values
            .into_iter()
            .map(|(name, value)| match multiline(&name) {
                true => (name, value.with_lf_line_ends()),
                false => (name, value),
            })
            .collect();
        self
    }

    /// Checks that the answer covers exactly the requested names, each once.
    pub fn check_names(&self, params: &EnvVarsParams) -> AppResult<()> {
        let mut given = BTreeSet::new();
        for name in self.values.iter().map(|(n, _)| n).chain(&self.use_saved) {
            if !given.insert(name) {
                return Err(invalid(
                    "ambiguous_value",
                    format!(
                        "{name} is answered twice: type a value or use the saved one, not both"
                    ),
                ));
            }
        }
        let requested: BTreeSet<&EnvVarName> = params.names.iter().collect();
        if given != requested {
            let missing: Vec<&str> = requested.difference(&given).map(|n| n.as_str()).collect();
            let extra: Vec<&str> = given.difference(&requested).map(|n| n.as_str()).collect();
            return Err(invalid(
                "names_mismatch",
                format!(
                    "answer exactly the requested names; missing: [{}], not requested: [{}]",
                    missing.join(", "),
                    extra.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(names: &[&str]) -> RequestEnvVarsInput {
        RequestEnvVarsInput {
            names: names.iter().map(|n| n.to_string()).collect(),
            reason: "to call the API".into(),
            instructions: None,
            default_scope: None,
            variable_metadata: None,
        }
    }

    fn code(result: AppResult<EnvVarsParams>) -> &'static str {
        match result {
            Err(AppError::Invalid { code, .. }) => code,
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
    fn form_submissions_cover_exactly_the_requested_names() {
        let params = EnvVarsParams::parse(input(&["A_KEY", "B_KEY"])).unwrap();
        let field = |k: &str, v: &str| (k.to_owned(), SecretString::from(v));
        let sub = Submission::from_form(vec![
            field("scope", "global"),
            field("value.A_KEY", " keep spaces "),
            field("value.B_KEY", ""),
            field("use_saved.B_KEY", "on"),
        ])
        .unwrap();
        sub.check_names(&params).unwrap();
        assert_eq!(sub.values[0].1.expose(), " keep spaces ");
        assert_eq!(sub.scope, Some(ScopeChoice::Global));

        let missing = Submission::from_form(vec![field("value.A_KEY", "v")]).unwrap();
        assert!(matches!(
            missing.check_names(&params),
            Err(AppError::Invalid {
                code: "names_mismatch",
                ..
            })
        ));
        let empty = Submission::from_form(vec![field("value.A_KEY", "")]);
        assert!(matches!(
            empty,
            Err(AppError::Invalid {
                code: "empty_value",
                ..
            })
        ));
        let both = Submission::from_form(vec![
            field("value.A_KEY", "v"),
            field("use_saved.A_KEY", "on"),
            field("value.B_KEY", "w"),
        ])
        .unwrap();
        assert!(matches!(
            both.check_names(&params),
            Err(AppError::Invalid {
                code: "ambiguous_value",
                ..
            })
        ));
    }
}
