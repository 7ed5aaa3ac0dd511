//! A person's answer to an `env_vars` widget: typed values, names whose
//! saved global value is reused, and the scope; stored in the session
//! creator's vault in the answer's transaction.

use std::collections::{BTreeMap, BTreeSet};

use secrecy::SecretString;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{EnvVarsParams, ScopeChoice};
use crate::error::{Error, Result};
use crate::secrets::{self, EnvVarName, SecretValue, Target};
use crate::widgets::engine::kind::Answering;

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

fn parse_field_name(raw: &str) -> Result<EnvVarName> {
    EnvVarName::parse(raw).map_err(|_| {
        Error::invalid(
            "names_mismatch",
            "the form names a variable that is not valid",
        )
    })
}

impl Submission {
    /// From the JSON body.
    pub fn from_json(body: SubmissionJson) -> Result<Self> {
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
    pub fn from_form(fields: Vec<(String, SecretString)>) -> Result<Self> {
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
                        return Err(Error::invalid(
                            "invalid_scope",
                            "`scope` is `session` or `global`",
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
    pub fn check_names(&self, params: &EnvVarsParams) -> Result<()> {
        let mut given = BTreeSet::new();
        for name in self.values.iter().map(|(n, _)| n).chain(&self.use_saved) {
            if !given.insert(name) {
                return Err(Error::invalid(
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
            return Err(Error::invalid(
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

/// Checks `submission` against the request and stores its values in the
/// session creator's vault. The agent learns names and scope only.
pub(super) async fn store(
    cx: &mut Answering<'_>,
    params: &EnvVarsParams,
    submission: Submission,
) -> Result<Value> {
    submission.check_names(params)?;
    let submission = submission.with_meant_line_ends(params);
    let owner = &cx.session.creator_id;
    for name in &submission.use_saved {
        if !secrets::has_global(cx.conn, owner, name).await? {
            return Err(Error::invalid(
                "no_saved_value",
                format!("there is no saved global value for {name}; type one"),
            ));
        }
    }
    // Reused values stay global whatever the form's scope said; when every
    // name was reused, the answer is a global one.
    let scope = match submission.values.is_empty() {
        true => ScopeChoice::Global,
        false => submission.scope.unwrap_or(params.default_scope),
    };
    let target = match scope {
        ScopeChoice::Global => Target::Global,
        ScopeChoice::Session => Target::Session(cx.session.id.clone()),
    };
    let keyring = &cx.state.keyring;
    for (name, value) in &submission.values {
        secrets::set_value(cx.conn, keyring, owner, &target, name, value, cx.user).await?;
        if target == Target::Global {
            // Otherwise an older session value would still win in this
            // session's env, while the prompt says the answer was given.
            let session = Target::Session(cx.session.id.clone());
            secrets::delete_if_present(cx.conn, owner, &session, name).await?;
        }
    }
    Ok(json!({ "names": params.names, "scope": scope.as_str(), "submitted_by": cx.by }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widgets::kinds::env_vars::input;

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
            Err(Error::Invalid {
                code: "names_mismatch",
                ..
            })
        ));
        let empty = Submission::from_form(vec![field("value.A_KEY", "")]);
        assert!(matches!(
            empty,
            Err(Error::Invalid {
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
            Err(Error::Invalid {
                code: "ambiguous_value",
                ..
            })
        ));
    }
}
