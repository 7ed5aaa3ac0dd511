//! Waiting for something to happen instead of sleeping a fixed time:
//! [`eventually`] polls a check until it holds and fails the test, saying
//! what it waited for, once its deadline passes.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

use super::app::TestApp;

/// Polls `check` every 20 ms until it holds; past `within`, fails the test
/// with "timed out after {within} waiting for {what}".
pub async fn eventually<F, Fut>(what: impl Display, within: Duration, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_every(what, within, Duration::from_millis(20), check).await;
}

/// [`eventually`], polling every `every` (a browser's checks cost more).
pub async fn eventually_every<F, Fut>(
    what: impl Display,
    within: Duration,
    every: Duration,
    mut check: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !check().await {
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(every).await;
    }
}

impl TestApp {
    /// How many event streams and waiting calls the daemon holds open for
    /// `key`: a caller (`agent:SESSION`, `user:ID`) or an address
    /// (`addr:127.0.0.1`). A long-poll counts from its start, a
    /// `wait_seconds` call once it has run a second.
    pub fn held_open(&self, key: &str) -> usize {
        self.state.open_streams.held(key)
    }
}

/// Waits until a call of `caller` (`agent:SESSION`, `user:ID`) counts as
/// waiting for a person ([`TestApp::held_open`]).
pub async fn until_waiting(app: &TestApp, caller: &str) {
    eventually(
        format!("a call of {caller} to count as waiting"),
        Duration::from_secs(10),
        || async { app.held_open(caller) > 0 },
    )
    .await;
}
