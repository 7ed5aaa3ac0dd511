//! The widget kinds: each module declares what differs between kinds (the
//! agent's input and its checks, what a person's answer is, what it does
//! and yields, the resume prompt, the badge) by implementing the engine's
//! `Request` and `Kind` (`engine::kind`), and nothing else. This module is
//! also the registry that finds a stored widget's kind by its name
//! ([`Known`]): a new kind is a module here and a variant of `Known`.

pub mod approval;
pub mod ask;
pub mod clarification;
pub mod env_vars;
pub mod fields;

pub use approval::Approval;
pub use ask::{Ask, AskUser, Questions};
pub use clarification::Clarification;
pub use env_vars::EnvVars;
pub use fields::Fields;

use serde_json::Value;

use crate::error::Error;
use crate::widgets::engine::kind::{ForKind, Kind, Lapsed, Loaded, Stored};

/// Every kind this version knows. A new kind is added here (and gets its
/// route in the server's `src/api/widgets/` and its tool in `src/mcp/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    EnvVars,
    Questions,
    Approval,
    Clarification,
    Fields,
}

impl Known {
    const ALL: [Self; 5] = [
        Self::EnvVars,
        Self::Questions,
        Self::Approval,
        Self::Clarification,
        Self::Fields,
    ];

    /// The kind that reads `widgets.kind = kind`.
    pub fn of(kind: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.with(Names).contains(&kind))
    }

    /// Runs `f` for this kind's type.
    pub fn with<F: ForKind>(self, f: F) -> F::Output {
        match self {
            Self::EnvVars => f.run::<EnvVars>(),
            Self::Questions => f.run::<Questions>(),
            Self::Approval => f.run::<Approval>(),
            Self::Clarification => f.run::<Clarification>(),
            Self::Fields => f.run::<Fields>(),
        }
    }
}

/// A kind's `widgets.kind` values.
struct Names;

impl ForKind for Names {
    type Output = &'static [&'static str];
    fn run<K: Kind>(self) -> Self::Output {
        K::NAMES
    }
}

/// A stored widget's params, read as its kind's.
struct Load<'a>(&'a str);

impl ForKind for Load<'_> {
    type Output = serde_json::Result<Box<dyn Loaded>>;
    fn run<K: Kind>(self) -> Self::Output {
        let params: K::Params = serde_json::from_str(self.0)?;
        Ok(Box::new(Stored::<K>(params)))
    }
}

/// What the agent's view of a widget leaves out of its params.
struct PublicParams<'a>(&'a mut Value);

impl ForKind for PublicParams<'_> {
    type Output = ();
    fn run<K: Kind>(self) {
        K::public_params(self.0);
    }
}

/// The params of a stored widget of kind `kind` as its agent sees them.
pub fn public_params(kind: &str, params: &mut Value) {
    if let Some(known) = Known::of(kind) {
        known.with(PublicParams(params));
    }
}

/// Why a stored widget could not be read.
pub enum Unloadable {
    /// A kind this version does not know.
    UnknownKind,
    /// A known kind whose parameters do not parse.
    Unreadable(serde_json::Error),
}

/// The kind and parameters of a stored widget.
pub fn load(kind: &str, params: &str) -> Result<Box<dyn Loaded>, Unloadable> {
    Known::of(kind)
        .ok_or(Unloadable::UnknownKind)?
        .with(Load(params))
        .map_err(Unloadable::Unreadable)
}

/// As [`load`], with what cannot be read standing in as a lapsed widget
/// (it can still expire or be cancelled, and is shown as unsupported).
pub fn load_or_lapsed(kind: &str, params: &str) -> Box<dyn Loaded> {
    load(kind, params).unwrap_or_else(|_| Box::new(Lapsed))
}

/// `unsupported_widget`, as answering (`422`) or dismissing (`409`) a widget
/// of an unknown kind says it.
pub fn unsupported(kind: &str, conflict: bool) -> Error {
    if conflict {
        Error::Conflict {
            code: "unsupported_widget",
            message: format!("this version of widgetd cannot handle `{kind}` widgets"),
        }
    } else {
        Error::invalid(
            "unsupported_widget",
            format!("`{kind}` widgets cannot be answered here"),
        )
    }
}
