//! Slack's request signatures (version `v0`): `X-Slack-Signature` is
//! `v0=` and the hex HMAC-SHA256, keyed with the app's signing secret, of
//! `v0:{X-Slack-Request-Timestamp}:{raw body}`; a timestamp more than five
//! minutes from now is refused, so a recorded request cannot be replayed
//! later. ("Verifying requests from Slack", Slack API documentation, as
//! published in 2025.)

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// How far a request's timestamp may be from now, in seconds.
pub const REPLAY_WINDOW_SECS: i64 = 5 * 60;

/// Why a request was not accepted as Slack's.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// A header is missing or unreadable.
    Malformed,
    /// The timestamp is outside the replay window.
    Stale,
    /// The signature does not match.
    BadSignature,
}

/// `v0=<hex>` for `body` sent at `timestamp` (what Slack sends; also used
/// by tests to sign as Slack does).
pub fn sign(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    let tag = mac(secret, timestamp, body).finalize().into_bytes();
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    format!("v0={hex}")
}

fn mac(secret: &[u8], timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    mac
}

/// Checks a request's timestamp (against `now_secs`) and signature, in
/// constant time.
pub fn check(
    secret: &[u8],
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now_secs: i64,
) -> Result<(), Refused> {
    let timestamp = timestamp.ok_or(Refused::Malformed)?;
    let sent: i64 = timestamp.parse().map_err(|_| Refused::Malformed)?;
    if (now_secs - sent).abs() > REPLAY_WINDOW_SECS {
        return Err(Refused::Stale);
    }
    let hex = signature
        .and_then(|s| s.strip_prefix("v0="))
        .ok_or(Refused::Malformed)?;
    let tag = decode_hex(hex).ok_or(Refused::BadSignature)?;
    mac(secret, timestamp, body)
        .verify_slice(&tag)
        .map_err(|_| Refused::BadSignature)
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"8f742231b10e8888abcd99yyyzzz85a5";
    const BODY: &[u8] = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fweather";

    #[test]
    fn a_signed_request_within_the_window_passes() {
        let sig = sign(SECRET, "1531420618", BODY);
        assert!(sig.starts_with("v0=") && sig.len() == 67, "{sig}");
        let ok = check(
            SECRET,
            Some("1531420618"),
            Some(&sig),
            BODY,
            1531420618 + 299,
        );
        assert_eq!(ok, Ok(()));
    }

    #[test]
    fn stale_altered_or_unsigned_requests_are_refused() {
        let sig = sign(SECRET, "1531420618", BODY);
        let at = |now| check(SECRET, Some("1531420618"), Some(&sig), BODY, now);
        assert_eq!(at(1531420618 + 301), Err(Refused::Stale));
        assert_eq!(at(1531420618 - 301), Err(Refused::Stale));
        let other = check(SECRET, Some("1531420618"), Some(&sig), b"x", 1531420618);
        assert_eq!(other, Err(Refused::BadSignature));
        let wrong_key = check(b"k", Some("1531420618"), Some(&sig), BODY, 1531420618);
        assert_eq!(wrong_key, Err(Refused::BadSignature));
        // The timestamp is signed: moving it into the window breaks the signature.
        let moved = check(SECRET, Some("1531420619"), Some(&sig), BODY, 1531420618);
        assert_eq!(moved, Err(Refused::BadSignature));
        assert_eq!(
            check(SECRET, None, Some(&sig), BODY, 1531420618),
            Err(Refused::Malformed)
        );
        assert_eq!(
            check(SECRET, Some("1531420618"), Some("v1=00"), BODY, 1531420618),
            Err(Refused::Malformed)
        );
    }

    #[test]
    fn five_minutes_either_way_is_within_the_window_and_a_second_more_is_not() {
        let sig = sign(SECRET, "1531420618", BODY);
        let at = |now| check(SECRET, Some("1531420618"), Some(&sig), BODY, now);
        assert_eq!(at(1531420618 + REPLAY_WINDOW_SECS), Ok(()));
        assert_eq!(at(1531420618 - REPLAY_WINDOW_SECS), Ok(()));
        assert_eq!(at(1531420618 + REPLAY_WINDOW_SECS + 1), Err(Refused::Stale));
        assert_eq!(at(1531420618 - REPLAY_WINDOW_SECS - 1), Err(Refused::Stale));
        assert_eq!(REPLAY_WINDOW_SECS, 300);
    }

    #[test]
    fn a_signature_of_the_wrong_length_or_not_hex_is_refused_without_reading_past_it() {
        let sig = sign(SECRET, "1531420618", BODY);
        let hex = &sig[3..];
        let odd = format!("v0={}", &hex[..63]);
        let long = format!("v0={hex}0");
        let short = format!("v0={}", &hex[..62]);
        // 64 bytes, but a three-byte character straddles a pair.
        let wide = format!("v0=a{}", "€".repeat(21));
        let not_hex = format!("v0={}", "zz".repeat(32));
        for signature in [&odd, &long, &short, &wide, &not_hex, &"v0=".to_owned()] {
            let checked = check(
                SECRET,
                Some("1531420618"),
                Some(signature),
                BODY,
                1531420618,
            );
            assert_eq!(checked, Err(Refused::BadSignature), "{signature}");
        }
    }
}
