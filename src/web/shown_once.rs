//! Agent tokens waiting to be shown once, across a POST/redirect/GET: the
//! form that creates a session (or issues a new token) redirects, and the
//! page it redirects to takes the token out and shows it. Kept in memory
//! only, never in the database or the cookie, so a copy of the database
//! holds no usable token; after a restart, or once taken, or after
//! [`KEEP_FOR`], it is gone and the page offers a new one instead.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use secrecy::SecretString;

use widgetd_domain::ids::{SessionId, UserId};

/// How long a token waits to be shown.
pub const KEEP_FOR: Duration = Duration::from_secs(600);
/// The most tokens waiting at once; the oldest goes first.
const MOST: usize = 1_000;

/// Tokens by the person who asked and the session they belong to.
#[derive(Default)]
pub struct ShownOnce {
    waiting: Mutex<HashMap<(UserId, SessionId), (SecretString, Instant)>>,
}

impl ShownOnce {
    /// Keeps `token` for `user` to see once on `session`'s page.
    pub fn put(&self, user: &UserId, session: &SessionId, token: SecretString) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.retain(|_, (_, at)| at.elapsed() < KEEP_FOR);
        if waiting.len() >= MOST
            && let Some(oldest) = waiting
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
        {
            waiting.remove(&oldest);
        }
        waiting.insert((user.clone(), session.clone()), (token, Instant::now()));
    }

    /// Takes the token waiting for `user` on `session`, if any: a second
    /// call gets nothing.
    pub fn take(&self, user: &UserId, session: &SessionId) -> Option<SecretString> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting
            .remove(&(user.clone(), session.clone()))
            .filter(|(_, at)| at.elapsed() < KEEP_FOR)
            .map(|(token, _)| token)
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn a_token_is_shown_to_its_person_once() {
        let shown = ShownOnce::default();
        let (alice, bob) = (UserId::generate(), UserId::generate());
        let session = SessionId::generate();
        shown.put(&alice, &session, SecretString::from("wda_one"));
        assert!(shown.take(&bob, &session).is_none());
        assert!(shown.take(&alice, &SessionId::generate()).is_none());
        let token = shown.take(&alice, &session).unwrap();
        assert_eq!(token.expose_secret(), "wda_one");
        assert!(shown.take(&alice, &session).is_none());
    }

    #[test]
    fn the_waiting_list_is_bounded() {
        let shown = ShownOnce::default();
        let user = UserId::generate();
        let first = SessionId::generate();
        shown.put(&user, &first, SecretString::from("wda_first"));
        for _ in 0..MOST {
            shown.put(&user, &SessionId::generate(), SecretString::from("wda_x"));
        }
        assert!(shown.take(&user, &first).is_none(), "the oldest went first");
        assert_eq!(shown.waiting.lock().unwrap().len(), MOST);
    }
}
