//! What operators and their tools ask of a running daemon: liveness
//! (`/healthz`), readiness (`/readyz`) and metrics (`/metrics`, in the
//! Prometheus text format, for admins' API tokens).

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::AppState;
use crate::auth::{Principal, Role};
use crate::error::{AppError, AppResult};

/// Upper bounds of the request latency buckets, in seconds.
const BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];

/// Request counts and a latency histogram per status class, kept in
/// memory since the start.
#[derive(Default)]
pub struct Metrics {
    /// Per status class (1xx … 5xx): count, sum of seconds, bucket counts.
    classes: Mutex<[Histogram; 5]>,
}

#[derive(Default, Clone, Copy)]
struct Histogram {
    count: u64,
    sum: f64,
    buckets: [u64; BUCKETS.len()],
}

/// Event streams open right now.
static OPEN_STREAMS: AtomicU64 = AtomicU64::new(0);

/// Counts an open event stream for as long as it lives.
pub struct StreamOpen(());

impl StreamOpen {
    pub fn new() -> Self {
        OPEN_STREAMS.fetch_add(1, Ordering::Relaxed);
        Self(())
    }
}

impl Default for StreamOpen {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for StreamOpen {
    fn drop(&mut self) {
        OPEN_STREAMS.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    fn observe(&self, status: StatusCode, seconds: f64) {
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        let mut classes = self.classes.lock().unwrap_or_else(|p| p.into_inner());
        let h = &mut classes[class];
        h.count += 1;
        h.sum += seconds;
        for (bucket, bound) in h.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
    }

    fn render(&self, out: &mut String) {
        let classes = *self.classes.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str("# HELP widgetd_http_request_duration_seconds Time to answer HTTP requests (event streams: until the headers).\n");
        out.push_str("# TYPE widgetd_http_request_duration_seconds histogram\n");
        for (i, h) in classes.iter().enumerate() {
            let class = format!("{}xx", i + 1);
            for (bound, n) in BUCKETS.iter().zip(h.buckets) {
                let _ = writeln!(
                    out,
                    "widgetd_http_request_duration_seconds_bucket{{class=\"{class}\",le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "widgetd_http_request_duration_seconds_bucket{{class=\"{class}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "widgetd_http_request_duration_seconds_sum{{class=\"{class}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "widgetd_http_request_duration_seconds_count{{class=\"{class}\"}} {}",
                h.count
            );
        }
    }
}

/// Times every request into [`Metrics`].
pub async fn measure(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    // Noted as it arrives: the auth checks of this request trust what is
    // cached only after an epoch read that started from now on.
    let response = state.auth_cache.arrival(next.run(request)).await;
    state
        .metrics
        .observe(response.status(), started.elapsed().as_secs_f64());
    response
}

pub fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(check_ready))
        .route("/metrics", get(read_metrics))
}

/// `GET /readyz`: 200 when the database takes a write and the master key
/// opens the newest data key; 503 `not_ready` saying which failed.
async fn check_ready(State(state): State<AppState>) -> Response {
    let writable = async {
        // Taking the write lock and rolling back proves the file and its
        // directory are writable now, without changing anything.
        let tx = state.db.begin_write().await?;
        tx.rollback().await
    };
    let database = writable.await.map_err(|e| format!("database: {e}"));
    let key = async {
        let mut conn = state.db.read.acquire().await.map_err(|e| e.to_string())?;
        state
            .keyring
            .for_write(&mut conn)
            .await
            .map(|_| ())
            .map_err(|e| format!("keyring: {e}"))
    };
    match (database, key.await) {
        (Ok(()), Ok(())) => (StatusCode::OK, Json(json!({ "ready": true }))).into_response(),
        (database, key) => {
            let problems: Vec<String> = [database.err(), key.err()].into_iter().flatten().collect();
            tracing::warn!(problems = ?problems, "not ready");
            let body = json!({ "ready": false, "error": { "code": "not_ready", "message": problems.join("; ") } });
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
    }
}

/// `GET /metrics`: for an API token of an admin.
async fn read_metrics(State(state): State<AppState>, principal: Principal) -> AppResult<Response> {
    match principal {
        Principal::User {
            role: Role::Admin, ..
        } => {}
        _ => {
            return Err(AppError::Forbidden(
                "/metrics takes an API token of an admin (`widgetd token create --user ADMIN --scope sessions`)".into(),
            ));
        }
    }
    let mut conn = state.db.read.acquire().await?;
    let widgets: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT kind, status, count(*) FROM widgets GROUP BY kind, status ORDER BY kind, status",
    )
    .fetch_all(&mut *conn)
    .await?;
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM prompts WHERE acked_at IS NULL")
        .fetch_one(&mut *conn)
        .await?;
    let outbox: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM webhook_outbox WHERE delivered_at IS NULL AND failed_at IS NULL",
    )
    .fetch_one(&mut *conn)
    .await?;
    drop(conn);
    let mut out = String::new();
    out.push_str(
        "# HELP widgetd_widgets Widgets by kind and status.\n# TYPE widgetd_widgets gauge\n",
    );
    for (kind, status, n) in widgets {
        let _ = writeln!(
            out,
            "widgetd_widgets{{kind=\"{}\",status=\"{}\"}} {n}",
            label(&kind),
            label(&status)
        );
    }
    let gauges = [
        (
            "widgetd_prompts_queued",
            "Resume prompts not yet acknowledged by an agent host.",
            queued,
        ),
        (
            "widgetd_webhooks_pending",
            "Webhook notices not yet delivered or given up.",
            outbox,
        ),
        (
            "widgetd_event_streams_open",
            "Event streams open now.",
            i64::try_from(OPEN_STREAMS.load(Ordering::Relaxed)).unwrap_or(i64::MAX),
        ),
    ];
    for (name, help, value) in gauges {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
        );
    }
    state.metrics.render(&mut out);
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response())
}

/// A label value as the text format needs it.
fn label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
