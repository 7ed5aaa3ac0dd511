//! Wall-clock time as stored: Unix milliseconds, shown as RFC 3339.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
    i64::try_from(nanos / 1_000_000).expect("the clock is within i64 milliseconds")
}

/// RFC 3339 text for a stored timestamp.
pub fn rfc3339(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// A short human reading of a stored timestamp, such as `2026-11-23 08:15 UTC`.
pub fn readable(ms: i64) -> String {
    let format =
        time::format_description::parse_borrowed::<2>("[year]-[month]-[day] [hour]:[minute] UTC");
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .zip(format.ok())
        .and_then(|(t, f)| t.format(&f).ok())
        .unwrap_or_else(|| rfc3339(ms))
}

/// Serializes a stored timestamp as RFC 3339 text, as the API shows times.
pub fn serialize_rfc3339<S: serde::Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*ms))
}

/// Serializes optional Unix milliseconds as RFC 3339 text, or null.
pub fn serialize_rfc3339_opt<S: serde::Serializer>(
    ms: &Option<i64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => s.serialize_str(&rfc3339(*ms)),
        None => s.serialize_none(),
    }
}
