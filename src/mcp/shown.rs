//! The questions an MCP App may answer: only those the agent's own widget
//! tool call created, from a host that declared the extension, and so
//! showed in that call's app. `app_widget_answer` is the agent's side
//! speaking (its host's connection, the agent token): without this, an
//! app could answer any pending question of its session, one the host
//! asked over REST included, as `offers.rs` explains for form retries.
//!
//! Each is bound to the agent session whose token made the call and taken
//! once the app's answer is accepted (a refused answer leaves it, so the
//! person can correct the form; the widget's own guarded transition makes
//! one answer win). The map lives in the daemon's memory: behind several
//! daemons, an app whose call reaches another daemon is refused like any
//! widget not shown to it, and the question stays answerable in the
//! transcript.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use widgetd_domain::ids::{SessionId, WidgetId};

/// How long a shown question may be answered in the app: as long as an
/// MCP session may idle (a person thinking over a form); after that it is
/// answered in the transcript.
const TTL: Duration = super::sessions::IDLE;

/// Most questions one agent session keeps shown; a new one drops its oldest.
const MAX_PER_AGENT: usize = 64;

/// The questions shown in an app, by agent session and widget, with when.
#[derive(Clone, Default)]
pub(super) struct Shown {
    by_key: Arc<Mutex<HashMap<(SessionId, WidgetId), Instant>>>,
}

impl Shown {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(SessionId, WidgetId), Instant>> {
        self.by_key
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records that `agent`'s own call created `widget`, a question, and
    /// showed it in the app of a host that declared the extension.
    pub(super) fn show(&self, agent: &SessionId, widget: &WidgetId) {
        let now = Instant::now();
        let mut shown = self.lock();
        shown.retain(|_, at| now.duration_since(*at) < TTL);
        if shown.keys().filter(|(a, _)| a == agent).count() >= MAX_PER_AGENT {
            let oldest = shown
                .iter()
                .filter(|((a, _), _)| a == agent)
                .min_by_key(|(_, at)| **at)
                .map(|(key, _)| key.clone());
            if let Some(key) = oldest {
                shown.remove(&key);
            }
        }
        shown.insert((agent.clone(), widget.clone()), now);
    }

    /// Whether `agent`'s app may answer `widget`: shown to it, not taken,
    /// not lapsed.
    pub(super) fn may_answer(&self, agent: &SessionId, widget: &WidgetId) -> bool {
        self.lock()
            .get(&(agent.clone(), widget.clone()))
            .is_some_and(|at| at.elapsed() < TTL)
    }

    /// The app's answer to `widget` was taken: it is answered no more.
    pub(super) fn take(&self, agent: &SessionId, widget: &WidgetId) {
        self.lock().remove(&(agent.clone(), widget.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_question_shown_to_that_agent_is_answerable_and_once() {
        let shown = Shown::default();
        let (alice, bob) = (SessionId::generate(), SessionId::generate());
        let (asked, other) = (WidgetId::generate(), WidgetId::generate());
        shown.show(&alice, &asked);
        assert!(shown.may_answer(&alice, &asked));
        assert!(!shown.may_answer(&bob, &asked), "another agent");
        assert!(!shown.may_answer(&alice, &other), "never shown");
        shown.take(&alice, &asked);
        assert!(!shown.may_answer(&alice, &asked), "taken once");
        let widgets: Vec<WidgetId> = (0..MAX_PER_AGENT + 1)
            .map(|_| WidgetId::generate())
            .collect();
        for widget in &widgets {
            shown.show(&alice, widget);
        }
        assert!(!shown.may_answer(&alice, &widgets[0]), "oldest dropped");
        assert!(shown.may_answer(&alice, &widgets[MAX_PER_AGENT]));
        assert!(shown.lock().len() <= MAX_PER_AGENT);
    }
}
