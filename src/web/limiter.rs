//! Login rate limiting: a token bucket per client address and per user
//! name, so neither one address nor many addresses can guess passwords fast.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Attempts allowed at once.
const BURST: f64 = 5.0;
/// Attempts regained per second after that (one every 12 s).
const REFILL_PER_SEC: f64 = 1.0 / 12.0;
/// Above this many tracked keys, full buckets are forgotten.
const MAX_KEYS: usize = 10_000;

#[derive(Debug, Default)]
pub struct LoginLimiter {
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl LoginLimiter {
    /// Takes one attempt for every key; `Err(wait)` if any bucket is empty.
    pub fn attempt(&self, keys: &[String]) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().expect("limiter lock");
        if buckets.len() > MAX_KEYS {
            buckets.retain(|_, (tokens, at)| {
                *tokens + at.elapsed().as_secs_f64() * REFILL_PER_SEC < BURST
            });
        }
        let level = |(tokens, at): (f64, Instant)| {
            (tokens + now.duration_since(at).as_secs_f64() * REFILL_PER_SEC).min(BURST)
        };
        let levels: Vec<f64> = keys
            .iter()
            .map(|k| buckets.get(k).copied().map_or(BURST, level))
            .collect();
        if let Some(lowest) = levels.iter().copied().reduce(f64::min)
            && lowest < 1.0
        {
            return Err(Duration::from_secs_f64((1.0 - lowest) / REFILL_PER_SEC)
                .max(Duration::from_secs(1)));
        }
        for (key, tokens) in keys.iter().zip(levels) {
            buckets.insert(key.clone(), (tokens - 1.0, now));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_attempts_are_refused_per_key() {
        let limiter = LoginLimiter::default();
        let keys = |ip: &str, user: &str| vec![format!("ip:{ip}"), format!("user:{user}")];
        for _ in 0..5 {
            assert!(limiter.attempt(&keys("1.1.1.1", "alice")).is_ok());
        }
        let wait = limiter.attempt(&keys("1.1.1.1", "alice")).unwrap_err();
        assert!(wait >= Duration::from_secs(1));
        // The same user from elsewhere is limited too; another user from elsewhere is not.
        assert!(limiter.attempt(&keys("2.2.2.2", "alice")).is_err());
        assert!(limiter.attempt(&keys("2.2.2.2", "bob")).is_ok());
    }
}
