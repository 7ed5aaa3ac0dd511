//! What makes a widget kind: the two traits a kind module implements, what
//! a stored widget is once its kind read it ([`Loaded`]), and [`ForKind`],
//! what the registry of kinds (`widgets/kinds/mod.rs`) runs for the kind
//! of a stored widget.
//!
//! A kind module declares everything that differs between kinds — the
//! agent's input and its validation ([`Request`]), what a person's answer
//! is, what it does and what it yields, the resume prompt and the badge
//! ([`Kind`]) — and nothing else; its card is the server's
//! (`src/cards/`). Routes, MCP plumbing, the lifecycle (`transition`,
//! expiry, cancel, dismiss), events, audit, notices and `wait_seconds`
//! live in the engine and are the same for all.
//! `docs/widgets.md` ("Adding a kind") walks through adding one.

use std::any::Any;
use std::future::Future;

use bytes::Bytes;
use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sqlx::AnyConnection;

use super::badge::Badge;
use super::row::WidgetStatus;
use crate::Core;
use crate::db::Dialect;
use crate::error::{Error, Result};
use crate::ids::{SessionId, UserId};
use crate::input::parse_json;
use crate::sessions::Session;

/// The validated parameters of a kind.
pub type ParamsOf<R> = <<R as Request>::Kind as Kind>::Params;

/// How an agent asks for a widget: one MCP tool and its REST twin.
pub trait Request: Send + Sync + 'static {
    /// What this request creates; its `NAME` is stored as `widgets.kind`.
    type Kind: Kind;
    /// The `widgets.kind` of what it creates.
    const NAME: &'static str;
    /// The agent's arguments: the MCP tool's input schema and the REST body.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;

    /// Validates the agent's input: a refusal has a stable code and never
    /// quotes what was sent.
    fn parse(input: Self::Input) -> Result<ParamsOf<Self>>;

    /// The input's `wait_seconds`; requests without one answer at once.
    fn wait_seconds(_input: &Self::Input) -> Option<u64> {
        None
    }

    /// Brings the agent's arguments, as JSON, to the shape `Input` reads,
    /// before it reads them: where the spelling of another specification
    /// cannot be a serde alias. Default: nothing.
    fn normalise(_args: &mut serde_json::Map<String, Value>) {}
}

/// A stored widget's behaviour: what a person answers, what the answer
/// does and yields, the resume prompt and the card.
pub trait Kind: Send + Sync + 'static {
    /// The `widgets.kind` values this kind reads.
    const NAMES: &'static [&'static str];
    /// The validated request, stored as `widgets.params` (JSON). Never a value.
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// A person's answer as read from the form or JSON body, before it is
    /// checked against the params.
    type Answer: Send;

    /// Whether [`Kind::born`] reads anything but what [`Kind::born_ahead`]
    /// gave (an approval: its rules and quorum). Such a kind is never
    /// created on a guess (`store/guess.rs`), whose guard checks only the
    /// session, the cap, and `born_ahead` for the names asked for. A kind
    /// that overrides `born` must say so here.
    const BORN_READS: bool = false;

    /// What [`Kind::born`] reads that can come with the session's row, in
    /// the statement that reads it (one statement fewer per creation): a
    /// scalar subquery over that row, aliased `s`, giving text or NULL, in
    /// `dialect`'s SQL. `None`, the default: nothing is read ahead.
    fn born_ahead(_dialect: Dialect) -> Option<&'static str> {
        None
    }

    /// The result when there is nothing to ask: the widget is born
    /// `already_present` with it (and its prompt queued at once). `ahead`
    /// is what [`Kind::born_ahead`] read with the session (`None` for NULL,
    /// or when it reads nothing).
    fn born(
        _tx: &mut AnyConnection,
        _session: &Session,
        _params: &Self::Params,
        _ahead: Option<&str>,
    ) -> impl Future<Output = Result<Option<Value>>> + Send {
        async { Ok(None) }
    }

    /// Reads an answer, before anything is looked up (a malformed one is
    /// refused without touching the widget).
    fn read(body: AnswerBody) -> Result<Self::Answer>;

    /// Checks `answer` against the params and does what it implies inside
    /// the answer's transaction (stores values, keeps a rule); returns the
    /// widget's result. An error rolls everything back.
    fn apply(
        cx: &mut Answering<'_>,
        params: &Self::Params,
        answer: Self::Answer,
    ) -> impl Future<Output = Result<Value>> + Send;

    /// The resume prompt once the widget reached `to` with `result` (a
    /// dismissal's note is added by the engine).
    fn prompt(tag: &str, params: &Self::Params, to: WidgetStatus, result: &Value) -> String;

    /// The result of a widget that ended without an answer.
    fn unanswered(_params: &Self::Params) -> Value {
        json!({})
    }

    /// The env var names the widget is about, for events, audit rows and
    /// webhook notices.
    fn env_names(_params: &Self::Params) -> Option<Vec<String>> {
        None
    }

    /// What a badge calls the widget: "Question", "Request for A_KEY".
    fn subject(params: &Self::Params) -> String;

    /// The badge of a widget `submitted` or born `already_present`; the
    /// other ends share their wording (see `badge::ended_badge`).
    fn answered_badge(
        params: &Self::Params,
        status: WidgetStatus,
        result: &Value,
        when: &str,
    ) -> Badge;

    /// Takes out of the stored params (as JSON) what the agent's view of
    /// the widget leaves out. Default: nothing.
    fn public_params(_params: &mut Value) {}
}

/// A person's answer as it arrived at `POST /widgets/{id}/submit`.
pub enum AnswerBody {
    /// A urlencoded form's fields (CSRF token removed), wrapped as secrets
    /// until a kind says they are not.
    Form(Vec<(String, SecretString)>),
    /// A JSON body.
    Json(Bytes),
}

impl AnswerBody {
    /// Fields that are not secrets (they go back to the agent): a form's, or
    /// a JSON object's whose values are strings or arrays of strings
    /// (`{"answer.0": "Postgres", "answer.1": ["EU", "US"]}`).
    pub fn plain_fields(self) -> Result<Vec<(String, String)>> {
        match self {
            Self::Form(fields) => Ok(fields
                .into_iter()
                .map(|(k, v)| (k, v.expose_secret().to_owned()))
                .collect()),
            Self::Json(body) => json_fields(&body),
        }
    }
}

fn json_fields(body: &[u8]) -> Result<Vec<(String, String)>> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum StringOrMany {
        One(String),
        Many(Vec<String>),
    }
    let map: std::collections::BTreeMap<String, StringOrMany> = parse_json(body)?;
    Ok(map
        .into_iter()
        .flat_map(|(k, v)| match v {
            StringOrMany::One(v) => vec![(k, v)],
            StringOrMany::Many(vs) => vs.into_iter().map(|v| (k.clone(), v)).collect(),
        })
        .collect())
}

/// Who answers a widget.
#[derive(Clone, Copy)]
pub enum Answerer<'a> {
    /// A person, logged in to widgetd's pages.
    Person(&'a UserId),
    /// The agent's MCP client, in form mode, for the agent session whose
    /// token it holds. It cannot be told from the agent: it answers only
    /// the kinds in [`AGENT_CLIENT_KINDS`], never as the person.
    AgentClient(&'a SessionId),
    /// The agent's client answering in an MCP App (`io.modelcontextprotocol/ui`)
    /// for the agent session whose token it holds: like [`Self::AgentClient`],
    /// the agent's side, recorded as [`MCP_APP`](super::badge::MCP_APP).
    AgentApp(&'a SessionId),
}

impl<'a> Answerer<'a> {
    /// The agent session whose client answers, for an answer from the
    /// agent's side (form mode or an MCP App); `None` for a person.
    pub fn agent_side(self) -> Option<&'a SessionId> {
        match self {
            Self::Person(_) => None,
            Self::AgentClient(agent) | Self::AgentApp(agent) => Some(agent),
        }
    }
}

/// The kinds the agent's MCP client may answer in form mode: questions.
/// Never env vars (a value would pass through the agent's side) nor
/// approvals (the agent would decide what it may run).
pub const AGENT_CLIENT_KINDS: &[&str] = &["ask", "ask_user", "clarification", "fields"];

/// What a kind's [`Kind::apply`] may use: the answer's transaction, the
/// widget's session and who answers.
pub struct Answering<'a> {
    pub conn: &'a mut AnyConnection,
    pub state: &'a Core,
    pub session: &'a Session,
    /// The answering person; the session's creator for an answer of the
    /// agent's MCP client (whose kinds never use it).
    pub user: &'a UserId,
    /// The answering person's name, for `answered_by` / `submitted_by`;
    /// [`MCP_CLIENT`](super::badge::MCP_CLIENT) for the agent's MCP client, [`MCP_APP`](super::badge::MCP_APP) for an MCP App.
    pub by: &'a str,
    /// The answer came from the agent's side (its MCP client).
    pub from_agent: bool,
    /// The widget answered, as read in the answer's transaction.
    pub widget: &'a crate::widgets::engine::row::WidgetRow,
    /// Set by [`Kind::apply`] to keep the widget pending: the answer was
    /// one of several needed (an approval's quorum), and what `apply`
    /// returns is the widget's pending `result` so far.
    pub stay_pending: bool,
}

impl Answering<'_> {
    /// `422 answer_contains_secret` if a text the person typed in widgetd's
    /// page holds one of the session creator's stored values (free text goes
    /// to the agent). An answer from the agent's side is not checked: its
    /// text is already on the agent's side, so the check would protect
    /// nothing and its refusal would tell the agent whether a guess is a
    /// stored value (an oracle).
    pub async fn refuse_secrets(&mut self, texts: &[&str]) -> Result<()> {
        if self.from_agent {
            return Ok(());
        }
        crate::secrets::refuse_stored_values(
            self.conn,
            &self.state.keyring,
            &self.session.creator_id,
            texts,
        )
        .await
    }
}

/// A stored widget's kind with its parameters read: what the engine and
/// the pages use, whatever the kind.
pub trait Loaded: Send + Sync {
    fn prompt(&self, tag: &str, to: WidgetStatus, result: &Value) -> String;
    fn unanswered(&self) -> Value;
    fn env_names(&self) -> Option<Vec<String>>;
    fn badge(&self, status: WidgetStatus, result: &Value, when: &str) -> Option<Badge>;
    /// The kind's params (`K::Params`), for whoever draws its card; `()`
    /// for a widget that cannot be read.
    fn params(&self) -> &dyn Any;
}

/// The parameters of a widget of kind `K`.
pub(crate) struct Stored<K: Kind>(pub K::Params);

impl<K: Kind> Loaded for Stored<K> {
    fn prompt(&self, tag: &str, to: WidgetStatus, result: &Value) -> String {
        K::prompt(tag, &self.0, to, result)
    }

    fn unanswered(&self) -> Value {
        K::unanswered(&self.0)
    }

    fn env_names(&self) -> Option<Vec<String>> {
        K::env_names(&self.0)
    }

    fn badge(&self, status: WidgetStatus, result: &Value, when: &str) -> Option<Badge> {
        match status {
            WidgetStatus::Pending => None,
            WidgetStatus::Submitted | WidgetStatus::AlreadyPresent => {
                Some(K::answered_badge(&self.0, status, result, when))
            }
            _ => Some(super::badge::ended_badge(
                &K::subject(&self.0),
                status,
                result,
                when,
            )),
        }
    }

    fn params(&self) -> &dyn Any {
        &self.0
    }
}

/// A widget of a kind this version does not know (written by a newer one),
/// or whose parameters cannot be read: it can still expire or be cancelled,
/// and is shown as an "Unsupported widget" card.
pub(crate) struct Lapsed;

impl Loaded for Lapsed {
    fn prompt(&self, tag: &str, to: WidgetStatus, _result: &Value) -> String {
        match to {
            WidgetStatus::Cancelled => format!(
                "{tag} A request was cancelled because the session was archived; nothing was given."
            ),
            _ => format!(
                "{tag} A request ended without an answer ({}); nothing was given.",
                to.as_str()
            ),
        }
    }

    fn unanswered(&self) -> Value {
        json!({})
    }

    fn env_names(&self) -> Option<Vec<String>> {
        None
    }

    fn badge(&self, _: WidgetStatus, _: &Value, _: &str) -> Option<Badge> {
        None
    }

    fn params(&self) -> &dyn Any {
        &()
    }
}

/// Something done with a kind known only by its stored name (loading a
/// widget, answering one): the registry (`kinds::Known::with`) runs it for
/// the kind's type.
pub trait ForKind {
    type Output;
    fn run<K: Kind>(self) -> Self::Output;
}

/// Longest a caller may wait for the answer.
pub const MAX_WAIT_SECS: u64 = 300;

/// Validates `wait_seconds`: `422 wait_too_long` above [`MAX_WAIT_SECS`].
pub fn check_wait(wait: Option<u64>) -> Result<u64> {
    match wait.unwrap_or(0) {
        w if w > MAX_WAIT_SECS => Err(Error::invalid(
            "wait_too_long",
            format!("`wait_seconds` is at most {MAX_WAIT_SECS}; it is {w}"),
        )),
        w => Ok(w),
    }
}
