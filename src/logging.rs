//! Where log lines go and which are written: stderr, colour only on a
//! terminal, as text or one JSON object per line (`--log-format json`, for
//! log shippers).
//!
//! The filter is `RUST_LOG` (else `info` for `serve`, `warn` for the other
//! commands), and a bare level in it (`debug`, `trace`) is widgetd's own:
//! every library stays at `warn` unless `RUST_LOG` names it. At DEBUG and
//! TRACE rmcp logs whole MCP messages, an answer typed into an MCP form
//! included; hyper, sqlx and tower log every request and statement; the
//! HTML parser under the markdown cleaner (html5ever, markup5ever) logs
//! every token of an agent's text, megabytes for one card. A library added
//! later is quiet too, without being listed. So `RUST_LOG=trace` traces
//! widgetd only; `RUST_LOG=trace,rmcp=trace` also rmcp, values and all —
//! only for debugging on a machine with no real data.

use std::fmt;
use std::io::IsTerminal;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The target a bare level applies to: widgetd's crates (a directive's
/// target is a prefix, so this also covers `widgetd_domain` and
/// `widgetd_notify`).
pub const OWN_TARGET: &str = "widgetd";
/// The most any library logs unless `RUST_LOG` names it.
const LIBRARIES: LevelFilter = LevelFilter::WARN;

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
/// with `default_level` when there is none: a bare level becomes
/// widgetd's (unless a directive names `widgetd` itself), everything else
/// stays at `warn` (or a stricter bare level: `off`, `error`), and
/// directives naming a target are kept as written.
pub fn directives(rust_log: Option<&str>, default_level: &str) -> String {
    let given = rust_log
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(default_level);
    let parts: Vec<&str> = given
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    let names_own = parts
        .iter()
        .any(|d| d.split(['=', '[']).next().unwrap_or_default().trim() == OWN_TARGET);
    let mut libraries = LIBRARIES;
    let mut directives = Vec::new();
    for part in parts {
        match part.parse::<LevelFilter>() {
            Ok(level) => {
                libraries = libraries.min(level);
                if !names_own {
                    directives.push(format!("{OWN_TARGET}={}", name(level)));
                }
            }
            Err(_) => directives.push(part.to_owned()),
        }
    }
    directives.insert(0, name(libraries).to_owned());
    directives.join(",")
}

fn name(level: LevelFilter) -> &'static str {
    match level {
        LevelFilter::OFF => "off",
        LevelFilter::ERROR => "error",
        LevelFilter::WARN => "warn",
        LevelFilter::INFO => "info",
        LevelFilter::DEBUG => "debug",
        _ => "trace",
    }
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
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn a_bare_level_is_widgetds_and_libraries_stay_quiet_unless_named() {
        assert_eq!(directives(None, "info"), "warn,widgetd=info");
        assert_eq!(directives(Some("trace"), "info"), "warn,widgetd=trace");
        assert_eq!(directives(Some(" "), "warn"), "warn,widgetd=warn");
        assert_eq!(
            directives(Some("trace,rmcp::transport=trace"), "info"),
            "warn,widgetd=trace,rmcp::transport=trace"
        );
        assert_eq!(
            directives(Some("debug,widgetd=trace"), "info"),
            "warn,widgetd=trace"
        );
        assert_eq!(
            directives(Some("widgetd_domain=debug"), "info"),
            "warn,widgetd_domain=debug"
        );
        assert_eq!(directives(Some("off"), "info"), "off,widgetd=off");
        assert_eq!(directives(Some("error"), "info"), "error,widgetd=error");
    }

    /// The lines the filter for `rust_log` lets through of one event at
    /// TRACE from each of the markdown parser's libraries, a library no
    /// list names, and two of widgetd's crates.
    fn written(rust_log: &str) -> String {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(directives(Some(rust_log), "info")))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!(target: "html5ever::tree_builder", "token");
            tracing::trace!(target: "markup5ever::interface", "token");
            tracing::trace!(target: "a_library_added_later", "token");
            tracing::trace!(target: "widgetd::cards", "token");
            tracing::trace!(target: "widgetd_domain::widgets", "token");
        });
        String::from_utf8(lines.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn at_trace_the_markdown_parser_and_any_other_library_write_nothing() {
        let logs = written("trace");
        for own in ["widgetd::cards", "widgetd_domain::widgets"] {
            assert!(logs.contains(own), "{own}: {logs}");
        }
        for library in ["html5ever", "markup5ever", "a_library_added_later"] {
            assert!(!logs.contains(library), "{library}: {logs}");
        }
        // Named, a library is heard.
        let logs = written("trace,html5ever=trace");
        assert!(logs.contains("html5ever::tree_builder"), "{logs}");
        assert!(!logs.contains("markup5ever"), "{logs}");
    }
}
