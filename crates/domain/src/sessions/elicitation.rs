//! Which MCP elicitation modes widgetd may use (also `mcp::Elicitation`):
//! the operator's choice (`serve --elicitation`, `url` unless set), narrowed
//! per session (`POST /api/v1/sessions` with `"elicitation"`; `url` unless
//! the host opts in).
//! A mode is used only when both allow it and the agent's MCP client
//! declares it. Form mode is therefore off unless both the operator and
//! the session's host turned it on: a form is answered by the agent's own
//! MCP client, which holds the agent token.

use serde::{Deserialize, Serialize};

/// `off`, `url`, `form` or `both`; `url` by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Elicitation {
    /// Never: every answer is given in widgetd's transcript.
    Off,
    /// URL mode only: `request_env_vars` sends the person to the widget's
    /// own page. The default, for the daemon and for a session.
    #[default]
    Url,
    /// Form mode only: questions may be answered in the client.
    Form,
    /// Both modes.
    Both,
}

crate::db::text_enum!(Elicitation {
    Off => "off",
    Url => "url",
    Form => "form",
    Both => "both",
});

impl Elicitation {
    pub fn from_flags(url: bool, form: bool) -> Self {
        match (url, form) {
            (true, true) => Self::Both,
            (true, false) => Self::Url,
            (false, true) => Self::Form,
            (false, false) => Self::Off,
        }
    }

    pub fn url(self) -> bool {
        matches!(self, Self::Url | Self::Both)
    }

    pub fn form(self) -> bool {
        matches!(self, Self::Form | Self::Both)
    }

    /// What both allow.
    pub fn and(self, other: Self) -> Self {
        Self::from_flags(self.url() && other.url(), self.form() && other.form())
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Url => "url",
            Self::Form => "form",
            Self::Both => "both",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Elicitation::{self, *};

    #[test]
    fn a_mode_is_used_only_when_both_sides_allow_it() {
        let all = [Off, Url, Form, Both];
        for a in all {
            for b in all {
                let both: Elicitation = a.and(b);
                assert_eq!(both.url(), a.url() && b.url(), "{a:?} and {b:?}");
                assert_eq!(both.form(), a.form() && b.form(), "{a:?} and {b:?}");
                assert_eq!(both, b.and(a));
            }
        }
        assert_eq!(Both.and(Url), Url);
        assert_eq!(Url.and(Form), Off);
        assert_eq!(Elicitation::default(), Url);
    }
}
