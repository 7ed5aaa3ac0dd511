//! On PostgreSQL a plain creation is written with others, each of its own
//! session, in one transaction and one statement (`db::Db::write_grouped`):
//! the guess of `guess.rs`, checked per member by the statement
//! itself. A member whose session is missing or archived, is at its
//! pending cap, already holds every name asked for, or whose agent's
//! bucket is empty, is left out, and its creation is made again alone with
//! its read, which gives the true answer (`404`, `409 session_archived`,
//! `409 too_many_pending`, `429 rate_limited`, or the widget born
//! `already_present`). The member writes what a creation alone writes: the
//! widget, its transcript line, its `widget:created` event, its audit row
//! and its agent's bucket. Its audit row is chained in the group's own
//! transaction, which holds the sealer's lock (taken after the sessions'),
//! instead of staged and sealed after the commit: one commit per group,
//! not two. The chain's head is read by the group's statement, which
//! starts after that lock is held.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use sqlx::AnyConnection;

use super::super::kind::Loaded;
use super::MAX_PENDING_PER_SESSION;
use super::{self as store, WidgetRow};
use crate::Core;
use crate::audit::{Actor, AuditRow, seal};
use crate::db::{Grouped, Seen};
use crate::error::Result;
use crate::limits::{self, PER_AGENT};
use crate::widgets::engine::row::Cause;

/// Whether a creation may join a group now: on PostgreSQL, and where the
/// change has no webhook notice or Slack message to queue (known under
/// the request's auth epoch; when it is not known yet, the creation is
/// made alone, which learns it).
pub(crate) fn allowed(state: &Core) -> bool {
    let backend = state.db.backend();
    backend.dialect().sql().shared_by_daemons()
        && state
            .auth_cache
            .epoch_if_read(backend)
            .and_then(|epoch| state.auth_cache.notified(epoch))
            .is_some_and(|n| !n.any())
}

/// Writes pending `widget` with a group; `false` when the group's
/// statement left it out (or the group failed before its commit), and the
/// caller makes it again alone.
pub(crate) async fn write(
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    ahead_sql: Option<&'static str>,
    cause: &Cause<'_>,
) -> Result<bool> {
    let (created, names) = super::created_event(widget, loaded.env_names());
    let bucket = match cause.actor {
        Actor::Agent(session) => Some(limits::agent_key(session)),
        _ => None,
    };
    let row = json!({
        "wid": widget.id,
        "sid": widget.session_id,
        "kind": widget.kind,
        "params": widget.params,
        "created": widget.created_at,
        "expires": widget.expires_at,
        "payload": created.to_string(),
        "actor": cause.actor.to_string(),
        "names": names.as_ref().map(|n| n.join(",")),
        "client": cause.client.0,
        "detail": super::created_detail(widget),
        "bucket": bucket,
        // What the guard checks the names stored against, for a kind
        // that reads them (`Kind::born_ahead`).
        "ask": ahead_sql.map(|_| names.unwrap_or_default()).unwrap_or_default(),
    });
    let work = Grouped {
        sql: statement(ahead_sql),
        session: widget.session_id.to_string(),
        row,
        last_lock: Some(seal::SEAL_LOCK),
        before_commit: Some(chain_written),
    };
    Ok(state.db.write_grouped(work).await?)
}

/// The audit rows of the members written, chained in the group's
/// transaction after `head`, the chain's head as its statement read it
/// (`seal::chain_on`): those a creation alone would stage.
fn chain_written(
    conn: &mut AnyConnection,
    rows: Vec<Value>,
    head: Seen,
) -> BoxFuture<'_, sqlx::Result<()>> {
    let text = |row: &Value, key: &str| row[key].as_str().map(str::to_owned);
    let rows = rows
        .iter()
        .map(|row| AuditRow {
            id: 0,
            at: row["created"].as_i64().unwrap_or_default(),
            actor: text(row, "actor").unwrap_or_default(),
            action: "widget.create".to_owned(),
            session_id: text(row, "sid"),
            widget_id: text(row, "wid"),
            names: text(row, "names"),
            scope: None,
            client_addr: text(row, "client"),
            detail: text(row, "detail"),
            prev_hash: Vec::new(),
            hash: Vec::new(),
        })
        .collect();
    Box::pin(seal::chain_on(conn, head, rows))
}

/// The group's statement for a kind whose `born` reads `ahead_sql` (a
/// scalar subquery over the session's row `s`: the names stored,
/// comma-separated), built once per kind.
fn statement(ahead_sql: Option<&'static str>) -> &'static str {
    static BUILT: OnceLock<Mutex<HashMap<Option<&'static str>, &'static str>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    built
        .entry(ahead_sql)
        .or_insert_with(|| Box::leak(build(ahead_sql).into_boxed_str()))
}

fn build(ahead_sql: Option<&str>) -> String {
    // Not born terminal: some name asked for is not stored yet.
    let names = ahead_sql.map_or(String::new(), |ahead| {
        format!(
            " AND (json_array_length(src.ask) = 0 OR EXISTS (SELECT 1 \
             FROM json_array_elements_text(src.ask) AS n(name) \
             WHERE strpos(',' || coalesce(({ahead}), '') || ',', ',' || n.name || ',') = 0))"
        )
    });
    let pending = store::PENDING_COUNT.replace("$1", "s.id");
    let (burst, rate) = (PER_AGENT.burst, PER_AGENT.per_sec / 1000.0);
    let level = format!(
        "LEAST({burst}, rate_limits.tokens \
         + GREATEST(excluded.updated_at - rate_limits.updated_at, 0) * {rate})"
    );
    format!(
        "WITH src AS MATERIALIZED (SELECT * FROM json_to_recordset(CAST($1 AS JSON)) AS t(\
           i BIGINT, wid TEXT, sid TEXT, kind TEXT, params TEXT, created BIGINT, \
           expires BIGINT, payload TEXT, actor TEXT, names TEXT, client TEXT, detail TEXT, \
           bucket TEXT, ask JSON)), \
         ok AS MATERIALIZED (SELECT src.* FROM src JOIN sessions AS s ON s.id = src.sid \
           WHERE s.archived_at IS NULL AND ({pending}) < {MAX_PENDING_PER_SESSION}{names}), \
         taken AS (INSERT INTO rate_limits (key, tokens, updated_at) \
           SELECT bucket, {burst} - 1, created FROM ok WHERE bucket IS NOT NULL \
           ON CONFLICT (key) DO UPDATE SET tokens = {level} - 1, \
           updated_at = GREATEST(rate_limits.updated_at, excluded.updated_at) \
           WHERE {level} >= 1 RETURNING key), \
         go AS MATERIALIZED (SELECT ok.* FROM ok \
           WHERE ok.bucket IS NULL OR ok.bucket IN (SELECT key FROM taken)), \
         w AS (INSERT INTO widgets ({columns}) \
           SELECT wid, sid, kind, params, 'pending', NULL, created, expires, NULL, NULL FROM go \
           RETURNING id, session_id, created_at), \
         m AS (INSERT INTO messages (session_id, kind, role, widget_id, created_at) \
           SELECT session_id, 'widget', 'agent', id, created_at FROM w), \
         e AS (INSERT INTO events (session_id, kind, payload, created_at) \
           SELECT sid, 'widget:created', payload, created FROM go) \
         SELECT go.i, head.id, head.hash FROM go \
           LEFT JOIN (SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1) AS head ON true",
        columns = store::COLUMNS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_one_statement_built_once() {
        let plain = statement(None);
        assert!(std::ptr::eq(plain, statement(None)));
        assert!(!plain.contains("strpos"));
        let ahead = "(SELECT 'A,B')";
        let names = statement(Some(ahead));
        assert!(names.contains(ahead) && names.contains("strpos"));
        // One placeholder: the rows.
        assert!(names.contains("$1") && !names.contains("$2"));
        // The chain's head comes back with the members written.
        assert!(plain.ends_with("ORDER BY id DESC LIMIT 1) AS head ON true"));
        assert!(names.contains("< 50"));
    }
}
