//! What operators and their tools ask of a running daemon: liveness
//! (`/healthz`), readiness (`/readyz`) and metrics (`/metrics`, in the
//! Prometheus text format, for admins' API tokens).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Json;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::error::{ErrorCode, WebResult};
pub use crate::metrics::Metrics;
use crate::metrics::{gauge, label};
use crate::state::AppState;
use crate::stream_limits::Waited;
use widgetd_domain::Error;
use widgetd_domain::auth::{Principal, Role};
use widgetd_domain::db::stats::WRITES;
use widgetd_domain::health::Gauges;

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

/// Times every request into [`Metrics`], and logs each refusal in one
/// line: method, route template, status and error code (never the path's
/// ids, a query or a body).
pub async fn measure(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    // Noted as it arrives: the auth checks of this request trust what is
    // cached only after an epoch read fresh enough for it (see
    // `auth::cache`).
    let response = state.auth_cache.arrival(next.run(request)).await;
    let status = response.status();
    let waited = response.extensions().get::<Waited>().is_some();
    state.metrics.observe(
        &route,
        status.as_u16(),
        started.elapsed().as_secs_f64(),
        waited,
    );
    if status.is_client_error() || status.is_server_error() {
        let code = response
            .extensions()
            .get::<ErrorCode>()
            .map_or("-", |c| c.0.as_str());
        state.metrics.refused(status.as_u16(), code);
        if code == "storage_unavailable" {
            widgetd_domain::db::stats::WRITES.failed();
        }
        let status = status.as_u16();
        if route == "/login" && status == 401 {
            state.metrics.login_failed();
            tracing::warn!(%method, route, status, "login failed");
        } else if status >= 500 {
            tracing::error!(%method, route, status, code, "request failed");
        } else if route == "unmatched" {
            tracing::debug!(%method, status, "no such route");
        } else {
            tracing::warn!(%method, route, status, code, "request refused");
        }
    } else {
        let status = status.as_u16();
        tracing::trace!(%method, route, status, "request answered");
    }
    response
}

pub fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(check_ready))
        .route("/metrics", get(read_metrics))
        .route("/favicon.ico", get(favicon))
}

/// The tab icon browsers ask every page for: a small SVG.
async fn favicon() -> Response {
    const ICON: &str = concat!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">"##,
        r##"<rect width="32" height="32" rx="7" fill="#1f3a5f"/>"##,
        r##"<path d="M7 10l4 13 5-9 5 9 4-13" fill="none" stroke="#fff" stroke-width="3" "##,
        r##"stroke-linecap="round" stroke-linejoin="round"/></svg>"##
    );
    ([(header::CONTENT_TYPE, "image/svg+xml")], ICON).into_response()
}

/// `GET /readyz`: 200 when the database takes a write and the master key
/// opens the newest data key; 503 `not_ready` saying which failed. After a
/// write that did not reach the disk (a full or read-only disk), it stays
/// 503 until a write succeeds again: it then tries one itself.
async fn check_ready(State(state): State<AppState>) -> Response {
    let last_ok = WRITES.last_ok.load(Ordering::Relaxed);
    let writable = async {
        let mut tx = state.db.begin_write().await?;
        if last_ok {
            // Taking the write lock and rolling back proves the file and
            // its directory are writable now, without changing anything.
            return tx.rollback().await;
        }
        widgetd_domain::health::probe_write(&mut tx).await?;
        tx.commit().await
    };
    let database = writable.await.map_err(|e| match last_ok {
        true => format!("database: {e}"),
        false => format!(
            "database: the last write did not reach the disk, and neither did a new one: {e}"
        ),
    });
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
async fn read_metrics(State(state): State<AppState>, principal: Principal) -> WebResult<Response> {
    match principal {
        Principal::User {
            role: Role::Admin, ..
        } => {}
        _ => {
            return Err(Error::Forbidden(
                "/metrics takes an API token of an admin (`widgetd token create --user ADMIN --scope sessions`)".into(),
            ).into());
        }
    }
    let Gauges {
        widgets,
        queued,
        outbox,
        given_up,
    } = widgetd_domain::health::gauges(&state.db).await?;
    let pending: i64 = widgets
        .iter()
        .filter(|(_, status, _)| status == "pending")
        .map(|(_, _, n)| n)
        .sum();
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
            "widgetd_widgets_pending",
            "Widgets waiting for a person's answer.",
            pending,
        ),
        (
            "widgetd_webhooks_failed",
            "Webhook notices given up after every attempt.",
            given_up,
        ),
        (
            "widgetd_event_streams_open",
            "Event streams open now.",
            i64::try_from(OPEN_STREAMS.load(Ordering::Relaxed)).unwrap_or(i64::MAX),
        ),
    ];
    for (name, help, value) in gauges {
        gauge(&mut out, name, help, value);
    }
    state.metrics.render(&mut out);
    let (groups, grouped) = state.db.group_counts();
    crate::metrics::counter(
        &mut out,
        "widgetd_db_groups_total",
        "PostgreSQL: transactions that wrote several requests' creations with one statement.",
        groups,
    );
    crate::metrics::counter(
        &mut out,
        "widgetd_db_grouped_total",
        "PostgreSQL: creations those groups carried (written, or left out and made again alone); divided by widgetd_db_groups_total, the mean group size.",
        grouped,
    );
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response())
}
