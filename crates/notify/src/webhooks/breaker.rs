//! A circuit breaker per endpoint: after [`TRIP_AFTER`] failed attempts in
//! a row, its notices wait out a cool-down instead of taking a place in
//! the sender each time; the first trip since the endpoint last worked is
//! logged, once.

use std::collections::HashMap;

/// Consecutive failures that pause an endpoint.
pub const TRIP_AFTER: u32 = 5;
/// How long a paused endpoint waits before its next attempt.
pub const COOL_DOWN_MS: i64 = 60_000;

#[derive(Default)]
struct Breaker {
    failures: u32,
    open_until: i64,
    logged: bool,
}

/// The breakers of every endpoint that failed since it last worked.
#[derive(Default)]
pub struct Breakers(HashMap<String, Breaker>);

impl Breakers {
    /// When a paused endpoint may be tried again, if it is paused at `now`.
    pub fn open_until(&self, endpoint: &str, now: i64) -> Option<i64> {
        self.0
            .get(endpoint)
            .map(|b| b.open_until)
            .filter(|until| *until > now)
    }

    /// Counts an attempt; returns the end of the cool-down when this
    /// failure pauses the endpoint.
    pub fn record(&mut self, endpoint: &str, ok: bool, now: i64) -> Option<i64> {
        if ok {
            self.0.remove(endpoint);
            return None;
        }
        let breaker = self.0.entry(endpoint.to_owned()).or_default();
        breaker.failures += 1;
        if breaker.failures < TRIP_AFTER {
            return None;
        }
        breaker.open_until = now + COOL_DOWN_MS;
        if !breaker.logged {
            breaker.logged = true;
            tracing::warn!(
                endpoint,
                failures = breaker.failures,
                cool_down_s = COOL_DOWN_MS / 1000,
                "a webhook endpoint keeps failing; its notices wait out a cool-down between attempts"
            );
        }
        Some(breaker.open_until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_paused_after_failures_in_a_row_and_reset_by_a_success() {
        let mut breakers = Breakers::default();
        for _ in 1..TRIP_AFTER {
            assert_eq!(breakers.record("e", false, 0), None);
        }
        assert_eq!(breakers.open_until("e", 0), None);
        assert_eq!(breakers.record("e", false, 10), Some(10 + COOL_DOWN_MS));
        assert_eq!(breakers.open_until("e", 11), Some(10 + COOL_DOWN_MS));
        assert_eq!(breakers.open_until("other", 11), None);
        // After the cool-down one trial attempt; failing, it pauses again.
        assert_eq!(breakers.open_until("e", 10 + COOL_DOWN_MS), None);
        assert_eq!(
            breakers.record("e", false, 20 + COOL_DOWN_MS),
            Some(20 + 2 * COOL_DOWN_MS)
        );
        assert_eq!(breakers.record("e", true, 30 + 2 * COOL_DOWN_MS), None);
        assert_eq!(breakers.open_until("e", 31 + 2 * COOL_DOWN_MS), None);
        assert_eq!(breakers.record("e", false, 40 + 2 * COOL_DOWN_MS), None);
    }
}
