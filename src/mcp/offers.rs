//! The elicitations a 2026-07-28 call offered, so that a retry resumes only
//! what this very call offered. The `requestState` a client echoes is
//! untrusted input (SEP-2322): a widget id would let an agent "retry" a
//! call it never made and answer, as its own MCP client, a question or an
//! approval that the host, a Claude Code hook, the REST API or another
//! call created. So each offer gets a fresh random state (256 bits),
//! kept here only as its SHA-256 hash, bound to the agent session whose
//! token made the call and to the widget and tool of the call; a retry
//! takes it (once) or is refused.
//!
//! The map lives in the daemon's memory: behind several daemons, a retry
//! that reaches another daemon is refused like an unknown one, and the
//! question stays open in the transcript.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use widgetd_domain::auth::tokens;
use widgetd_domain::ids::{SessionId, WidgetId};

/// How long an offer may be answered by a retry: as long as an MCP session
/// may idle (a person thinking over a form), after which the question is
/// answered in the transcript.
const TTL: Duration = super::sessions::IDLE;

/// Most offers one agent session keeps; a new one drops its oldest.
const MAX_PER_AGENT: usize = 64;

/// The prefix of a `requestState`, so one is recognisable in a log or a bug
/// report (the random part is never logged).
const PREFIX: &str = "wdr_";

struct Offer {
    agent: SessionId,
    widget: WidgetId,
    tool: &'static str,
    at: Instant,
}

/// The live offers, by the hash of their `requestState`.
#[derive(Clone, Default)]
pub(super) struct Offers {
    by_hash: Arc<Mutex<HashMap<Vec<u8>, Offer>>>,
}

impl Offers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Offer>> {
        self.by_hash
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records that `agent`'s call of `tool` offered `widget`; returns the
    /// `requestState` to send (the only copy of it).
    pub(super) fn offer(&self, agent: &SessionId, tool: &'static str, widget: &WidgetId) -> String {
        let new = tokens::generate(PREFIX);
        let state = secrecy::ExposeSecret::expose_secret(&new.token).to_owned();
        let now = Instant::now();
        let mut offers = self.lock();
        offers.retain(|_, o| now.duration_since(o.at) < TTL);
        let mine: Vec<(Vec<u8>, Instant)> = offers
            .iter()
            .filter(|(_, o)| &o.agent == agent)
            .map(|(h, o)| (h.clone(), o.at))
            .collect();
        if mine.len() >= MAX_PER_AGENT {
            let oldest = mine.into_iter().min_by_key(|(_, at)| *at);
            if let Some((hash, _)) = oldest {
                offers.remove(&hash);
            }
        }
        let offer = Offer {
            agent: agent.clone(),
            widget: widget.clone(),
            tool,
            at: now,
        };
        offers.insert(new.hash, offer);
        state
    }

    /// The widget that `state` was offered for, if `agent`'s call of `tool`
    /// offered it and it has not been taken or lapsed. Taken at most once.
    pub(super) fn take(&self, agent: &SessionId, tool: &str, state: &str) -> Option<WidgetId> {
        let hash = tokens::hash(state);
        let mut offers = self.lock();
        let offer = offers.get(&hash)?;
        if &offer.agent != agent || offer.tool != tool || offer.at.elapsed() >= TTL {
            return None;
        }
        offers.remove(&hash).map(|o| o.widget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_resumes_its_own_offer_once_and_nothing_else() {
        let offers = Offers::default();
        let (alice, bob) = (SessionId::generate(), SessionId::generate());
        let widget = WidgetId::generate();
        let state = offers.offer(&alice, "ask", &widget);
        assert!(state.len() >= PREFIX.len() + 43, "256 random bits");
        assert!(!state.contains(widget.as_str()));
        assert_eq!(offers.take(&bob, "ask", &state), None, "another agent");
        assert_eq!(
            offers.take(&alice, "ask_user", &state),
            None,
            "another tool"
        );
        assert_eq!(offers.take(&alice, "ask", widget.as_str()), None);
        assert_eq!(offers.take(&alice, "ask", &state), Some(widget));
        assert_eq!(offers.take(&alice, "ask", &state), None, "taken once");
        let states: Vec<String> = (0..MAX_PER_AGENT + 1)
            .map(|_| offers.offer(&alice, "ask", &WidgetId::generate()))
            .collect();
        assert!(
            offers.take(&alice, "ask", &states[0]).is_none(),
            "oldest dropped"
        );
        assert!(offers.take(&alice, "ask", &states[MAX_PER_AGENT]).is_some());
        assert!(offers.lock().len() <= MAX_PER_AGENT);
    }

    #[test]
    fn new_offers_keep_the_live_ones_of_every_agent() {
        let offers = Offers::default();
        let (alice, bob) = (SessionId::generate(), SessionId::generate());
        let (first, second) = (WidgetId::generate(), WidgetId::generate());
        let a1 = offers.offer(&alice, "ask", &first);
        let b1 = offers.offer(&bob, "ask", &second);
        let a2 = offers.offer(&alice, "ask", &second);
        // Alice filling her share to the brim drops nothing, hers or bob's.
        let mine: Vec<String> = (0..MAX_PER_AGENT - 2)
            .map(|_| offers.offer(&alice, "ask", &WidgetId::generate()))
            .collect();
        assert_eq!(offers.take(&alice, "ask", &a1), Some(first), "older offer");
        assert_eq!(offers.take(&alice, "ask", &a2), Some(second.clone()));
        assert_eq!(
            offers.take(&bob, "ask", &b1),
            Some(second),
            "another agent's"
        );
        assert!(mine.iter().all(|s| offers.take(&alice, "ask", s).is_some()));
    }
}
