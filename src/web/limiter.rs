//! Login rate limiting: a token bucket per client address and per user
//! name, so neither one address nor many addresses can guess passwords fast.
//! An address gets a larger bucket than a name: a team behind one NAT
//! shares an address, while guessing one account is what must stay slow.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A bucket: attempts allowed at once, and regained per second after that.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    pub burst: f64,
    pub per_sec: f64,
}

/// Per user name: 5 at once, then one every 12 s.
pub const PER_NAME: Bucket = Bucket {
    burst: 5.0,
    per_sec: 1.0 / 12.0,
};
/// Per client address: 20 at once, then one every 3 s.
pub const PER_ADDRESS: Bucket = Bucket {
    burst: 20.0,
    per_sec: 1.0 / 3.0,
};
/// Per agent (session): 30 new widgets or transcript lines at once, then
/// one every 2 s — an agent in a loop cannot flood a person.
pub const PER_AGENT: Bucket = Bucket {
    burst: 30.0,
    per_sec: 0.5,
};
/// At most this many buckets are kept: past it, idle ones go first, then
/// the least recently used, so memory stays bounded under a flood.
const MAX_KEYS: usize = 10_000;

/// The bucket key of a user name as typed: a fixed-size hash, so a key
/// costs the same whatever was sent.
pub fn name_key(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(name.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("user:{hex}")
}

#[derive(Debug, Default)]
pub struct LoginLimiter {
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl LoginLimiter {
    /// Takes one attempt from every bucket; `Err(wait)` if any is empty.
    pub fn attempt(&self, keys: &[(String, Bucket)]) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().expect("limiter lock");
        if buckets.len() >= MAX_KEYS {
            // Forget buckets idle for an hour: they are full again by then.
            buckets.retain(|_, (_, at)| at.elapsed() < Duration::from_secs(3600));
        }
        if buckets.len() >= MAX_KEYS {
            // Still full: a flood of fresh keys. Drop the least recently
            // used half; a bucket being drained right now is recent.
            let mut ages: Vec<Instant> = buckets.values().map(|(_, at)| *at).collect();
            ages.sort_unstable();
            let cutoff = ages[ages.len() / 2];
            buckets.retain(|_, (_, at)| *at > cutoff);
        }
        let level = |key: &str, b: Bucket| {
            buckets.get(key).map_or(b.burst, |(tokens, at)| {
                (tokens + now.duration_since(*at).as_secs_f64() * b.per_sec).min(b.burst)
            })
        };
        let levels: Vec<f64> = keys.iter().map(|(k, b)| level(k, *b)).collect();
        for ((_, bucket), tokens) in keys.iter().zip(&levels) {
            if *tokens < 1.0 {
                let wait = Duration::from_secs_f64((1.0 - tokens) / bucket.per_sec);
                return Err(wait.max(Duration::from_secs(1)));
            }
        }
        for ((key, _), tokens) in keys.iter().zip(levels) {
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
        let keys = |ip: &str, user: &str| {
            vec![
                (format!("ip:{ip}"), PER_ADDRESS),
                (format!("user:{user}"), PER_NAME),
            ]
        };
        for _ in 0..5 {
            assert!(limiter.attempt(&keys("1.1.1.1", "alice")).is_ok());
        }
        let wait = limiter.attempt(&keys("1.1.1.1", "alice")).unwrap_err();
        assert!(wait >= Duration::from_secs(1));
        // The same user from elsewhere is limited too; another user from elsewhere is not.
        assert!(limiter.attempt(&keys("2.2.2.2", "alice")).is_err());
        assert!(limiter.attempt(&keys("2.2.2.2", "bob")).is_ok());
        // One address may try many names, up to its own larger bucket.
        let names: Vec<bool> = (0..30)
            .map(|i| limiter.attempt(&keys("3.3.3.3", &format!("u{i}"))).is_ok())
            .collect();
        assert_eq!(names.iter().filter(|ok| **ok).count(), 20);
    }

    #[test]
    fn memory_stays_bounded_under_a_flood_of_names() {
        let limiter = LoginLimiter::default();
        for i in 0..(3 * MAX_KEYS) {
            let _ = limiter.attempt(&[(name_key(&format!("flood-{i}")), PER_NAME)]);
            assert!(limiter.buckets.lock().unwrap().len() <= MAX_KEYS);
        }
        assert_eq!(
            name_key(&"x".repeat(1 << 20)).len(),
            name_key("alice").len()
        );
    }
}
