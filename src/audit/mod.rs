//! The append-only audit log: who did what, when, from where, to which
//! session, widget and names. Never a value, nor a hash of one. Each row is
//! chained to the previous one by SHA-256, so editing, deleting or
//! reordering rows is detected by [`verify`].

pub mod seal;

use std::fmt;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;

use crate::clock;
use crate::crypto::aad;
use crate::db::{Dialect, WriteTx};
use crate::ids::{SessionId, UserId};

/// Who acted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    User(UserId),
    Agent(SessionId),
    /// The agent's MCP client answering a question in form mode
    /// (`mcp-client:SESSION`): the agent's side, never a person.
    McpClient(SessionId),
    /// The agent's client answering a question in an MCP App
    /// (`mcp-app:SESSION`): the agent's side, never a person.
    McpApp(SessionId),
    /// widgetd itself: expiry, start-up.
    System,
    /// Someone at the command line of the machine (`widgetd user`, `keys`, …).
    Operator,
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User(id) => write!(f, "user:{id}"),
            Self::Agent(session) => write!(f, "agent:{session}"),
            Self::McpClient(session) => write!(f, "mcp-client:{session}"),
            Self::McpApp(session) => write!(f, "mcp-app:{session}"),
            Self::System => f.write_str("system"),
            Self::Operator => f.write_str("cli"),
        }
    }
}

/// The peer address of the HTTP request, when there is one.
#[derive(Debug, Clone, Default)]
pub struct ClientAddr(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let addr = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip().to_string());
        Ok(Self(addr))
    }
}

/// One thing to record.
#[derive(Debug, Default)]
pub struct Entry<'a> {
    pub action: &'static str,
    pub session: Option<&'a SessionId>,
    pub widget: Option<&'a str>,
    /// Env var names, comma-joined.
    pub names: Option<String>,
    pub scope: Option<&'a str>,
    /// Anything else worth recording, such as a share change; never a value.
    pub detail: Option<String>,
}

/// A row as stored and listed.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct AuditRow {
    pub id: i64,
    /// Unix milliseconds; serialized as RFC 3339 like every time in the API.
    #[serde(serialize_with = "clock::serialize_rfc3339")]
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub session_id: Option<String>,
    pub widget_id: Option<String>,
    pub names: Option<String>,
    pub scope: Option<String>,
    pub client_addr: Option<String>,
    pub detail: Option<String>,
    #[serde(skip)]
    pub prev_hash: Vec<u8>,
    #[serde(skip)]
    pub hash: Vec<u8>,
}

impl AuditRow {
    /// The chained hash over the previous hash and every field of this row.
    fn compute_hash(&self, prev: &[u8]) -> Vec<u8> {
        // A presence byte keeps NULL and empty text apart.
        let opt = |v: &Option<String>| {
            v.as_ref()
                .map_or_else(Vec::new, |s| [b"\x01", s.as_bytes()].concat())
        };
        let mut fields = aad(
            "widgetd/audit/v1",
            &[
                prev,
                &self.id.to_be_bytes(),
                &self.at.to_be_bytes(),
                self.actor.as_bytes(),
                self.action.as_bytes(),
                &opt(&self.session_id),
                &opt(&self.widget_id),
                &opt(&self.names),
                &opt(&self.scope),
                &opt(&self.client_addr),
            ],
        );
        // Added later: covered when present, so older rows keep their hashes.
        if let Some(detail) = &self.detail {
            fields.extend_from_slice(&aad("detail", &[detail.as_bytes()]));
        }
        Sha256::digest(&fields).to_vec()
    }
}

/// Appends `entry` inside the caller's transaction. On SQLite it is chained
/// to the last row at once (the writer remembers the head); on PostgreSQL
/// it is staged and sealed into the chain right after the commit
/// (`seal.rs`), so concurrent transactions do not wait for each other here.
pub async fn append(
    tx: &mut WriteTx,
    actor: &Actor,
    client: &ClientAddr,
    entry: Entry<'_>,
) -> sqlx::Result<()> {
    let mut row = AuditRow {
        id: 0,
        at: clock::now_ms(),
        actor: actor.to_string(),
        action: entry.action.to_owned(),
        session_id: entry.session.map(|s| s.to_string()),
        widget_id: entry.widget.map(str::to_owned),
        names: entry.names,
        scope: entry.scope.map(str::to_owned),
        client_addr: client.0.clone(),
        detail: entry.detail,
        prev_hash: Vec::new(),
        hash: Vec::new(),
    };
    if Dialect::of(tx) == Dialect::Postgres {
        return stage(tx, &row).await;
    }
    let remembered = tx
        .memo()
        .and_then(|memo| memo.audit_head().map(|(id, hash)| (id, hash.to_vec())));
    let (last_id, prev_hash) = match remembered {
        Some(head) => head,
        None => sqlx::query_as("SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1")
            .fetch_optional(&mut **tx)
            .await?
            .unwrap_or((0, vec![0u8; 32])),
    };
    row.id = last_id + 1;
    row.hash = row.compute_hash(&prev_hash);
    row.prev_hash = prev_hash;
    insert(tx, &row).await?;
    if let Some(memo) = tx.memo() {
        memo.set_audit_head(row.id, row.hash);
    }
    Ok(())
}

/// Stages `row` (PostgreSQL) for the sealer that runs after the commit.
async fn stage(tx: &mut WriteTx, row: &AuditRow) -> sqlx::Result<()> {
    bind_entry(
        sqlx::query(
            "INSERT INTO audit_pending (at, actor, action, session_id, widget_id, names, scope, client_addr, detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        ),
        row,
    )
    .execute(&mut **tx)
    .await?;
    tx.after_commit(seal::after_commit);
    Ok(())
}

/// Writes a chained row.
async fn insert(conn: &mut AnyConnection, row: &AuditRow) -> sqlx::Result<()> {
    bind_entry(
        sqlx::query(
            "INSERT INTO audit_log (at, actor, action, session_id, widget_id, names, scope, client_addr, detail, id, prev_hash, hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        ),
        row,
    )
    .bind(row.id)
    .bind(&row.prev_hash)
    .bind(&row.hash)
    .execute(conn)
    .await?;
    Ok(())
}

/// Binds what a row says (`$1`..`$9`), the part staged and chained alike.
fn bind_entry<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    row: &'q AuditRow,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(row.at)
        .bind(&row.actor)
        .bind(&row.action)
        .bind(&row.session_id)
        .bind(&row.widget_id)
        .bind(&row.names)
        .bind(&row.scope)
        .bind(&row.client_addr)
        .bind(&row.detail)
}

/// Rows in order, optionally only those at or after `since` (ms) or of one session.
pub async fn list(
    conn: &mut AnyConnection,
    since: Option<i64>,
    session: Option<&str>,
) -> sqlx::Result<Vec<AuditRow>> {
    sqlx::query_as(
        "SELECT * FROM audit_log WHERE at >= coalesce($1, 0) AND ($2 IS NULL OR session_id = $3) ORDER BY id",
    )
    .bind(since)
    .bind(session)
    .bind(session)
    .fetch_all(conn)
    .await
}

/// One page of the log, newest first: up to `limit` rows older than
/// `before`, at or after `since`, of `session`, whose action starts with
/// `action`.
pub async fn list_page(
    conn: &mut AnyConnection,
    since: Option<i64>,
    session: Option<&str>,
    action: Option<&str>,
    before: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<AuditRow>> {
    let prefix = format!("{}%", crate::db::like_escape(action.unwrap_or_default()));
    sqlx::query_as(
        "SELECT * FROM audit_log WHERE at >= coalesce($1, 0) AND ($2 IS NULL OR session_id = $3)
         AND action LIKE $4 ESCAPE '\\' AND id < $5 ORDER BY id DESC LIMIT $6",
    )
    .bind(since)
    .bind(session)
    .bind(session)
    .bind(prefix)
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Where the chain first breaks.
#[derive(Debug, thiserror::Error)]
pub enum ChainBroken {
    #[error(
        "audit row {row_id} was altered: its hash does not match its contents and the row before it"
    )]
    Altered { row_id: i64 },
    #[error(
        "audit row {expected} is missing (deleted, or rows were reordered): row {found} stands in its place"
    )]
    Missing { expected: i64, found: i64 },
}

/// A verified chain: how many rows, and the hash of the last one, which an
/// operator can keep elsewhere and compare later.
#[derive(Debug)]
pub struct Verified {
    pub rows: usize,
    pub head: String,
}

/// Checks the whole chain.
pub async fn verify(conn: &mut AnyConnection) -> anyhow::Result<Result<Verified, ChainBroken>> {
    // Rows staged but not yet sealed (PostgreSQL) join the chain first.
    seal::seal_on(conn).await?;
    let rows = list(conn, None, None).await?;
    let mut prev = vec![0u8; 32];
    for (i, row) in rows.iter().enumerate() {
        let expected_id = i64::try_from(i).expect("row count fits i64") + 1;
        if row.id != expected_id {
            return Ok(Err(ChainBroken::Missing {
                expected: expected_id,
                found: row.id,
            }));
        }
        if row.prev_hash != prev || row.compute_hash(&prev) != row.hash {
            return Ok(Err(ChainBroken::Altered { row_id: row.id }));
        }
        prev.clone_from(&row.hash);
    }
    let head = prev.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Ok(Verified {
        rows: rows.len(),
        head,
    }))
}
