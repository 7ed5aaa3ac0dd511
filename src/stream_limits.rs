//! Caps on connections that stay open: event streams, long-polls and
//! calls that wait for a person (`wait_seconds`, the hooks' `?wait=`).
//!
//! Each open one holds a [`StreamSlot`] for its caller (a user, whatever
//! token or browser session they use, or an agent's session) and for the
//! client address; the slot is given back when the stream or long-poll
//! ends. Past a cap the request is refused with `429 too_many_streams`
//! before anything is opened. The counts live in this process: several
//! daemons on one PostgreSQL database each allow as many.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::WebResult;
use widgetd_domain::Error;
use widgetd_domain::auth::Principal;
use widgetd_domain::ids::UserId;

/// Open event streams and long-polls per caller. A page opens one stream
/// per tab; a host one long-poll per session it hosts, and one person may
/// host dozens of agents under one token.
pub const PER_CALLER: usize = 64;
/// Per client address: a team behind one NAT shares it; several callers.
pub const PER_ADDRESS: usize = 256;

/// The counts of open streams, by key.
#[derive(Debug, Default)]
pub struct OpenStreams {
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

/// One open stream or long-poll; dropping it gives its place back.
#[derive(Debug)]
pub struct StreamSlot {
    keys: [String; 2],
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

impl OpenStreams {
    /// Takes a place for `caller` (e.g. `user:ID`, `agent:SESSION`) from
    /// `address`; `429 too_many_streams` if either is at its cap.
    pub fn open(&self, caller: String, address: Option<&str>) -> WebResult<StreamSlot> {
        let address = format!("addr:{}", address.unwrap_or("unknown"));
        let mut counts = self.counts.lock().expect("stream counts lock");
        let caller_open = counts.get(&caller).copied().unwrap_or(0);
        let address_open = counts.get(&address).copied().unwrap_or(0);
        if caller_open >= PER_CALLER || address_open >= PER_ADDRESS {
            return Err(Error::TooMany {
                code: "too_many_streams",
                message: format!(
                    "too many event streams and long-polls are open (at most {PER_CALLER} per \
                     caller and {PER_ADDRESS} per address); close one, or wait for one to end"
                ),
            }
            .into());
        }
        *counts.entry(caller.clone()).or_default() += 1;
        *counts.entry(address.clone()).or_default() += 1;
        Ok(StreamSlot {
            keys: [caller, address],
            counts: self.counts.clone(),
        })
    }

    /// How many places `key` (a caller, or `addr:ADDRESS`) holds now.
    pub fn held(&self, key: &str) -> usize {
        let counts = self.counts.lock().expect("stream counts lock");
        counts.get(key).copied().unwrap_or(0)
    }
}

/// Marks a response to a call that waited, for the metrics.
#[derive(Debug, Clone, Copy)]
pub struct Waited;

/// Whose cap a stream counts against: a user (any of their tokens and
/// browser sessions) or an agent's session.
pub fn caller_key(principal: Option<&Principal>, person: Option<&UserId>) -> String {
    match (principal, person) {
        (Some(Principal::User { user_id, .. }), _) | (None, Some(user_id)) => {
            format!("user:{user_id}")
        }
        (Some(Principal::Agent { session_id }), _) => format!("agent:{session_id}"),
        (None, None) => "anonymous".to_owned(),
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().expect("stream counts lock");
        for key in &self.keys {
            if let Some(n) = counts.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_come_back_when_streams_end() {
        let open = OpenStreams::default();
        let held: Vec<_> = (0..PER_CALLER)
            .map(|_| open.open("user:a".into(), Some("1.1.1.1")).unwrap())
            .collect();
        assert!(open.open("user:a".into(), Some("2.2.2.2")).is_err());
        assert!(open.open("user:b".into(), Some("1.1.1.1")).is_ok());
        drop(held);
        assert!(open.counts.lock().unwrap().is_empty());
        assert!(open.open("user:a".into(), Some("1.1.1.1")).is_ok());
    }
}
