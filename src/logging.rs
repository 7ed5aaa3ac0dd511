//! Where log lines go and which are written: stderr, colour only on a
//! terminal, as text or one JSON object per line (`--log-format json`, for
//! log shippers).
//!
//! The filter is `RUST_LOG` (else `info` for `serve`, `warn` for the other
//! commands), with the libraries widgetd is built on pinned at `warn`
//! unless `RUST_LOG` names them itself: at DEBUG and TRACE rmcp logs whole
//! MCP messages, an answer typed into an MCP form included, and hyper,
//! sqlx and tower log every request and statement. So `RUST_LOG=trace`
//! traces widgetd only; `RUST_LOG=trace,rmcp=trace` also rmcp, values and
//! all — only for debugging on a machine with no real data.

use std::fmt;
use std::io::IsTerminal;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The libraries kept at `warn` unless `RUST_LOG` names them.
pub const QUIET_LIBRARIES: [&str; 10] = [
    "rmcp",
    "hyper",
    "hyper_util",
    "h2",
    "sqlx",
    "tower",
    "tower_http",
    "tower_sessions",
    "tower_sessions_core",
    "reqwest",
];

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal only).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `message`,
    /// `fields`, `spans`.
    Json,
}

/// The filter directives for `rust_log` (the `RUST_LOG` value, if any)
/// with `default_level` when there is none.
pub fn directives(rust_log: Option<&str>, default_level: &str) -> String {
    let given = rust_log.map(str::trim).filter(|s| !s.is_empty());
    let mut directives = given.unwrap_or(default_level).to_owned();
    for library in QUIET_LIBRARIES {
        let named = given.is_some_and(|given| {
            given.split(',').any(|d| {
                let target = d.split(['=', '[']).next().unwrap_or_default().trim();
                target == library || target.starts_with(&format!("{library}::"))
            })
        });
        if !named {
            directives.push_str(&format!(",{library}=warn"));
        }
    }
    directives
}

/// Installs the global subscriber: stderr, `format`, the filter above.
pub fn init(format: LogFormat, default_level: &str) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = EnvFilter::builder().parse_lossy(directives(rust_log.as_deref(), default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.with_ansi(false).event_format(JsonLines).init(),
    }
}

/// One JSON object per event.
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Map::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert(
            "timestamp".into(),
            widgetd_domain::clock::rfc3339(widgetd_domain::clock::now_ms()).into(),
        );
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        if let Some(message) = fields.remove("message") {
            line.insert("message".into(), message);
        }
        if !fields.is_empty() {
            line.insert("fields".into(), Value::Object(fields));
        }
        if let Some(scope) = ctx.event_scope() {
            let spans: Vec<Value> = scope.from_root().map(|s| s.name().into()).collect();
            line.insert("spans".into(), spans.into());
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// Collects an event's fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
}

#[cfg(test)]
mod tests {
    use super::directives;

    #[test]
    fn libraries_stay_quiet_unless_named() {
        let d = directives(None, "info");
        assert!(d.starts_with("info,"), "{d}");
        assert!(d.contains("rmcp=warn") && d.contains("sqlx=warn"), "{d}");
        let d = directives(Some("trace"), "info");
        assert!(d.starts_with("trace,") && d.contains("rmcp=warn"), "{d}");
        let d = directives(Some("trace,rmcp::transport=trace"), "info");
        assert!(!d.contains("rmcp=warn") && d.contains("hyper=warn"), "{d}");
        assert!(directives(Some("rmcp_like=info"), "info").contains("rmcp=warn"));
    }
}
