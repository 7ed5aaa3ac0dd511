//! Tool calls under way at `/mcp`, so that a client's
//! `notifications/cancelled` reaches the call it names.
//!
//! The endpoint is stateless: a cancellation arrives as its own POST, and
//! rmcp drops notifications in that mode. The middleware therefore reads
//! each body's `method` and `id` first: a `tools/call` is registered under
//! (agent session, JSON-RPC id) for as long as its response is being made
//! and sent, and a `notifications/cancelled` from the same session cancels
//! the call it names. A call whose answer was handed over acknowledges the
//! widget's prompt only once its response body has gone out whole and no
//! cancellation came first (see `widgetd_domain::widgets::engine::delivery`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use widgetd_domain::ids::SessionId;
use widgetd_domain::widgets::Answered;

/// The key of one call: the agent's session and the JSON-RPC request id as
/// JSON text (ids are strings or numbers; `1` and `"1"` are different ids).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct CallKey {
    session: SessionId,
    id: String,
}

#[derive(Default)]
struct Call {
    cancel: CancellationToken,
    answered: Option<Answered>,
}

/// Calls under way, shared by the middleware and the tools.
#[derive(Default, Clone)]
pub(super) struct InFlight(Arc<Mutex<HashMap<CallKey, Call>>>);

/// The parts of a JSON-RPC message the middleware looks at.
#[derive(Deserialize)]
pub(super) struct Peek {
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    params: Option<PeekParams>,
}

/// Of `params`, only a cancellation's `requestId` and an initialization's
/// elicitation capability; tool arguments are skipped unread.
#[derive(Deserialize)]
pub(super) struct PeekParams {
    #[serde(default, rename = "requestId")]
    request_id: Option<Value>,
    #[serde(default)]
    capabilities: Option<PeekCapabilities>,
}

#[derive(Deserialize)]
pub(super) struct PeekCapabilities {
    #[serde(default)]
    elicitation: Option<serde::de::IgnoredAny>,
    /// Only whether MCP Apps' extension is among them.
    #[serde(default)]
    extensions: Option<std::collections::BTreeMap<String, serde::de::IgnoredAny>>,
}

/// What a message is, for the middleware.
pub(super) enum Message {
    /// A `tools/call` with this id.
    ToolCall(Value),
    /// `notifications/cancelled` for this request id.
    Cancelled(Value),
    /// An `initialize` (protocols before 2026-07-28) by a client that
    /// declares elicitation or MCP Apps (`super::apps`): it may get an MCP
    /// session (see `super::sessions`), so that later requests are
    /// answered with what it declared.
    Initialize {
        elicitation: bool,
        apps: bool,
    },
    Other,
}

impl Peek {
    pub(super) fn classify(self) -> Message {
        match (self.method.as_deref(), self.id, self.params) {
            (Some("tools/call"), Some(id), _) => Message::ToolCall(id),
            (Some("notifications/cancelled"), None, Some(params)) => match params.request_id {
                Some(id) => Message::Cancelled(id),
                None => Message::Other,
            },
            // `initialize` exists only before 2026-07-28, and its answer
            // always names such a version, whatever the client asked for.
            (Some("initialize"), Some(_), Some(params)) => {
                let (elicitation, apps) = params.capabilities.map_or((false, false), |c| {
                    let apps = c
                        .extensions
                        .is_some_and(|e| e.contains_key(super::apps::EXTENSION));
                    (c.elicitation.is_some(), apps)
                });
                match elicitation || apps {
                    true => Message::Initialize { elicitation, apps },
                    false => Message::Other,
                }
            }
            _ => Message::Other,
        }
    }
}

impl CallKey {
    pub(super) fn new(session: &SessionId, id: &Value) -> Self {
        Self {
            session: session.clone(),
            id: id.to_string(),
        }
    }
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CallKey, Call>> {
        // A panic while holding this lock leaves a valid map behind.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a call; a second call with a key still in use (a client
    /// reusing an id) replaces nothing and gets its own, unlisted token.
    pub(super) fn start(&self, key: &CallKey) {
        self.lock().entry(key.clone()).or_default();
    }

    /// The token a call's wait watches, if the call is registered.
    pub(super) fn token(&self, key: &CallKey) -> Option<CancellationToken> {
        self.lock().get(key).map(|call| call.cancel.clone())
    }

    /// The client gave up on the call: its wait stops and its answer, if
    /// one is on its way, is not acknowledged.
    pub(super) fn cancel(&self, key: &CallKey) {
        if let Some(call) = self.lock().remove(key) {
            call.cancel.cancel();
        }
    }

    /// The call's response carries `answered`'s outcome.
    pub(super) fn answered(&self, key: &CallKey, answered: Answered) {
        if let Some(call) = self.lock().get_mut(key) {
            call.answered = Some(answered);
        }
    }

    /// The call is over; returns the answer to acknowledge if the response
    /// was sent whole and the call was not cancelled before.
    pub(super) fn finish(&self, key: &CallKey) -> Option<Answered> {
        self.lock().remove(key).and_then(|call| call.answered)
    }
}
