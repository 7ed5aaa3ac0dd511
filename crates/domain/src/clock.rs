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

/// A stored timestamp on a page: `<time datetime="…">` with a readable UTC
/// text for browsers without JavaScript; `static/app.js` turns it into a
/// relative time ("3 min ago") with the exact local time on hover.
/// Rendered with `|safe`: it holds only digits and separators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// RFC 3339, for the `datetime` attribute.
    pub iso: String,
    /// `2026-11-23 08:15 UTC`.
    pub text: String,
}

impl Stamp {
    pub fn from_ms(ms: i64) -> Self {
        Self {
            iso: rfc3339(ms),
            text: readable(ms),
        }
    }

    /// From RFC 3339 text as the API shows it; text that is not a time is
    /// shown as it is (escaped).
    pub fn parse(text: &str) -> Self {
        match OffsetDateTime::parse(text, &Rfc3339) {
            Ok(t) => {
                Self::from_ms(i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(0))
            }
            Err(_) => Self {
                iso: String::new(),
                text: text.to_owned(),
            },
        }
    }
}

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.iso.is_empty() {
            // Not a time we made: escape it, never trust it as markup.
            let escaped = self
                .text
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;");
            return f.write_str(&escaped);
        }
        write!(
            f,
            r#"<time datetime="{}" title="{}">{}</time>"#,
            self.iso, self.text, self.text
        )
    }
}
