//! The append-only audit log: who did what, when, from where, to which
//! session, widget and names. Never a value, nor a hash of one. Each row is
//! chained to the previous one by SHA-256, so editing, deleting or
//! reordering rows is detected by [`verify`].

pub mod seal;

use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;

use crate::clock;
use crate::crypto::aad;
use crate::db::{Dialect, Script, Values, WriteTx};
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

/// Where a request came from: the client's address as the server saw it
/// (behind a trusted proxy, the address the proxy named), when there is
/// one; none for the CLI and background work.
#[derive(Debug, Clone, Default)]
pub struct ClientAddr(pub Option<String>);

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
    let mut script = Script::new(Dialect::of(tx));
    append_into(tx, &mut script, actor, client, entry).await?;
    script.run(tx).await
}

/// Records what an operator did at the command line of the machine
/// (`widgetd user`, `keys`, …): actor `cli`, no client address.
pub async fn append_by_operator(tx: &mut WriteTx, entry: Entry<'_>) -> sqlx::Result<()> {
    append(tx, &Actor::Operator, &ClientAddr::default(), entry).await
}

/// [`append`] as one of the writes of `script`, sent with the others. At
/// most one per script: on SQLite the chain's head moves when it ran.
pub async fn append_into(
    tx: &mut WriteTx,
    script: &mut Script,
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
    if script.dialect().sql().seals_audit_after_commit() {
        // Staged for the sealer that runs after the commit.
        script.push(
            "audit",
            "INSERT INTO audit_pending (at, actor, action, session_id, widget_id, names, scope, client_addr, detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            |v| bind_entry(v, row),
        );
        script.then(|tx| tx.after_commit(seal::after_commit));
        return Ok(());
    }
    let remembered = tx
        .memo()
        .and_then(|memo| memo.audit_head().map(|(id, hash)| (id, hash.to_vec())));
    let (last_id, prev_hash) = match remembered {
        Some(head) => head,
        None => {
            tx.ready().await?;
            sqlx::query_as("SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1")
                .fetch_optional(&mut **tx)
                .await?
                .unwrap_or((0, vec![0u8; 32]))
        }
    };
    row.id = last_id + 1;
    row.hash = row.compute_hash(&prev_hash);
    row.prev_hash = prev_hash;
    let head = (row.id, row.hash.clone());
    script.push("audit", CHAINED_INSERT, |v| bind_chained(v, row));
    script.then(move |tx| {
        if let Some(memo) = tx.memo() {
            memo.set_audit_head(head.0, head.1);
        }
    });
    Ok(())
}

/// The chain's last row: its id and hash, none in an empty log.
pub async fn head<'c, E>(conn: E) -> sqlx::Result<Option<(i64, Vec<u8>)>>
where
    E: sqlx::Executor<'c>,
    (i64, Vec<u8>): for<'r> sqlx::FromRow<'r, <E::Database as sqlx::Database>::Row>,
    for<'q> <E::Database as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, E::Database>,
{
    sqlx::query_as("SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1")
        .fetch_optional(conn)
        .await
}

/// Writes chained rows (PostgreSQL's: the sealer's and a group's) in one
/// statement whatever their number, the rows given as one JSON array, so
/// that one prepared statement serves every count and the chain's turn
/// (`seal.rs`) holds one round trip for the insert.
async fn insert_chained(conn: &mut AnyConnection, rows: Vec<AuditRow>) -> sqlx::Result<()> {
    use base64::Engine as _;
    debug_assert!(
        Dialect::of(conn).sql().seals_audit_after_commit(),
        "a backend that chains rows as it writes them uses CHAINED_INSERT"
    );
    if rows.is_empty() {
        return Ok(());
    }
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            serde_json::json!({
                "at": row.at,
                "actor": row.actor,
                "action": row.action,
                "session_id": row.session_id,
                "widget_id": row.widget_id,
                "names": row.names,
                "scope": row.scope,
                "client_addr": row.client_addr,
                "detail": row.detail,
                "id": row.id,
                "prev_hash": b64(&row.prev_hash),
                "hash": b64(&row.hash),
            })
        })
        .collect();
    sqlx::query(
        "INSERT INTO audit_log (at, actor, action, session_id, widget_id, names, scope, \
         client_addr, detail, id, prev_hash, hash) \
         SELECT at, actor, action, session_id, widget_id, names, scope, client_addr, detail, id, \
                decode(prev_hash, 'base64'), decode(hash, 'base64') \
         FROM json_to_recordset(CAST($1 AS JSON)) AS t(at BIGINT, actor TEXT, action TEXT, \
              session_id TEXT, widget_id TEXT, names TEXT, scope TEXT, client_addr TEXT, \
              detail TEXT, id BIGINT, prev_hash TEXT, hash TEXT) \
         ORDER BY id",
    )
    .bind(serde_json::Value::Array(rows).to_string())
    .execute(conn)
    .await?;
    Ok(())
}

/// An insert of one chained row (SQLite's, as it is written).
const CHAINED_INSERT: &str = "INSERT INTO audit_log (at, actor, action, session_id, widget_id, \
     names, scope, client_addr, detail, id, prev_hash, hash) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

/// Binds what a row says, the part staged and chained alike.
fn bind_entry(v: &mut Values<'_>, row: AuditRow) {
    v.add(row.at)
        .add(row.actor)
        .add(row.action)
        .add(row.session_id)
        .add(row.widget_id)
        .add(row.names)
        .add(row.scope)
        .add(row.client_addr)
        .add(row.detail);
}

/// Binds a chained row: what it says, then its place in the chain (the
/// columns of [`CHAINED_INSERT`], in order).
fn bind_chained(v: &mut Values<'_>, mut row: AuditRow) {
    let (id, prev, hash) = (
        row.id,
        std::mem::take(&mut row.prev_hash),
        std::mem::take(&mut row.hash),
    );
    bind_entry(v, row);
    v.add(id).add(prev).add(hash);
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
