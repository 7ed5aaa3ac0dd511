//! What the two backends say or do differently, as one trait ([`Sql`]) with
//! an implementation in each backend's folder (`sqlite/sql.rs`,
//! `postgres/sql.rs`). The domain writes its SQL once, in the dialect both
//! read; where they differ it asks the transaction's [`Dialect`] for its
//! [`Sql`] and never names a backend.

use super::Dialect;

/// The statements and fragments each backend spells its own way, and the
/// few ways it works differently. Adding a method makes both backends
/// say how.
pub trait Sql: Sync {
    /// Several daemons write this database at once (PostgreSQL): a
    /// transaction that must not interleave with another of the same
    /// session takes the session's lock, and reads again under it what it
    /// read before. SQLite has one writer, which every transaction holds.
    fn shared_by_daemons(&self) -> bool;

    /// A write transaction is a member of a batch that holds other
    /// transactions' writes not committed yet (SQLite's group commit): what
    /// must be true once committed is read on another connection.
    fn writes_in_batches(&self) -> bool;

    /// Audit rows are staged and chained after the commit by one sealer at
    /// a time (PostgreSQL, `audit/seal.rs`), not chained as written.
    fn seals_audit_after_commit(&self) -> bool;

    /// A later write of a script reads an earlier one's row from its
    /// `RETURNING` (PostgreSQL's data-modifying CTEs), rather than being
    /// bound the same values again.
    fn reads_returning(&self) -> bool;

    /// `DELETE` of every browser session whose data names user `$1`.
    fn delete_web_sessions_of_user(&self) -> &'static str;

    /// A session's events after id `$2`, at most `$3`, where a
    /// `message:created` event written without its text gets it back from
    /// its message.
    fn events_since(&self) -> &'static str;

    /// A scalar subquery over a session's row aliased `s`: the names that
    /// resolve in its effective env, comma-joined, or NULL.
    fn effective_names(&self) -> &'static str;

    /// The smaller and the larger of two values.
    fn least(&self) -> &'static str;
    fn greatest(&self) -> &'static str;

    /// `FN(haystack, needle)`: the 1-based place of `needle`, 0 if absent.
    fn position(&self) -> &'static str;

    /// The guard of a creation on a guess (`widgets/engine/store/guess.rs`):
    /// a write into `write_guard` that breaks its `CHECK` exactly when no
    /// session `s` satisfies `holds`.
    fn guard(&self, holds: &str) -> String;

    /// One row when table `$1` exists.
    fn has_table(&self) -> &'static str;
}

impl Dialect {
    /// How this backend says and does what differs.
    pub fn sql(self) -> &'static dyn Sql {
        match self {
            Self::Sqlite => &super::sqlite::sql::Sqlite,
            Self::Postgres => &super::postgres::sql::Postgres,
        }
    }
}
