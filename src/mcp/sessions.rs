//! MCP sessions, made only for the clients that need one: a client that
//! negotiates a protocol before 2026-07-28 and declares elicitation can be
//! asked (`elicitation/create`) only over a session, because the request
//! travels on the tool call's response stream and the client's answer comes
//! back as a POST of its own that must reach the waiting call. A client
//! that declares MCP Apps (`super::apps`) gets one too: its `tools/list`
//! and `resources/read` depend on what its `initialize` declared. Every
//! other client stays stateless.
//!
//! Each session is bound to the agent session whose token opened it: a
//! request carrying the `Mcp-Session-Id` of another agent session's client
//! is answered as for an unknown session (404), so an agent token can never
//! answer or read another session's elicitation. An agent session keeps at
//! most [`MAX_PER_AGENT`] MCP sessions; a new one closes its oldest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};

use widgetd_domain::ids::SessionId;

/// Most MCP sessions one agent session keeps open at a time.
pub(super) const MAX_PER_AGENT: usize = 8;

/// An MCP session with no message for this long is closed (the client
/// starts a new one with `initialize`). It is longer than an elicitation
/// may stay open, so a person thinking over a form does not lose it.
pub(super) const IDLE: Duration = Duration::from_secs(20 * 60);

/// The header that names an MCP session.
pub(super) const HEADER: &str = "mcp-session-id";

#[derive(Clone)]
struct Bound {
    agent: SessionId,
    opened: Instant,
}

/// The live MCP sessions and the agent session each belongs to.
#[derive(Clone)]
pub(super) struct Sessions {
    pub(super) manager: Arc<LocalSessionManager>,
    bound: Arc<Mutex<HashMap<String, Bound>>>,
    /// Held by one [`Sessions::bind`] at a time, from its count of an
    /// agent's sessions to its insert, so that concurrent `initialize`s
    /// cannot each see room for one more and leave more than
    /// [`MAX_PER_AGENT`].
    binding: Arc<tokio::sync::Mutex<()>>,
}

impl Default for Sessions {
    fn default() -> Self {
        let mut config = SessionConfig::default();
        config.keep_alive = Some(IDLE);
        let mut manager = LocalSessionManager::default();
        manager.session_config = config;
        Self {
            manager: Arc::new(manager),
            bound: Arc::default(),
            binding: Arc::default(),
        }
    }
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Bound>> {
        self.bound
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `id` is an MCP session opened by `agent`'s token.
    pub(super) fn belongs_to(&self, id: &str, agent: &SessionId) -> bool {
        self.lock().get(id).is_some_and(|b| &b.agent == agent)
    }

    /// Records a session just opened by `agent`, forgetting the sessions
    /// rmcp already closed (idle, or ended by the client) and closing the
    /// agent's oldest beyond [`MAX_PER_AGENT`].
    pub(super) async fn bind(&self, id: String, agent: &SessionId) {
        let _one_at_a_time = self.binding.lock().await;
        let known: Vec<(String, Bound)> = self
            .lock()
            .iter()
            .map(|(id, b)| (id.clone(), b.clone()))
            .collect();
        let mut live = Vec::new();
        for (other, bound) in known {
            if !self
                .manager
                .has_session(&other.clone().into())
                .await
                .unwrap_or(false)
            {
                self.lock().remove(&other);
            } else if &bound.agent == agent {
                live.push((other, bound.opened));
            }
        }
        live.sort_by_key(|(_, opened)| *opened);
        let excess = (live.len() + 1).saturating_sub(MAX_PER_AGENT);
        for (oldest, _) in live.into_iter().take(excess) {
            self.lock().remove(&oldest);
            let _ = self.manager.close_session(&oldest.into()).await;
        }
        self.lock().insert(
            id,
            Bound {
                agent: agent.clone(),
                opened: Instant::now(),
            },
        );
    }

    /// Forgets a session the client ended (`DELETE /mcp`).
    pub(super) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }
}
