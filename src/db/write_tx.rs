//! One request's write transaction, whichever the backend: a member of the
//! SQLite writer's batch (`writer.rs`) or a PostgreSQL transaction
//! (`pg_write.rs`).

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::AnyConnection;

use super::Memo;
use super::pg_write::{AfterCommit, PgWrite};
use super::writer::{Member, Writer, join};

/// One request's write transaction. On SQLite a savepoint in the writer's
/// batch: dropped without [`WriteTx::commit`], it rolls back its own
/// savepoint and nothing else. On PostgreSQL a transaction holding the
/// write lock. Derefs to the connection, so `&mut *tx` is an executor and
/// `&mut tx` a `&mut AnyConnection`.
pub struct WriteTx(Inner);

enum Inner {
    Member(Member),
    Postgres(Box<PgWrite>, Arc<Writer>),
}

impl std::fmt::Debug for WriteTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTx").finish_non_exhaustive()
    }
}

impl WriteTx {
    /// Takes `what` until the end of this transaction ([`super::lock`]),
    /// unless it already holds it. A no-op on SQLite.
    pub async fn lock(&mut self, what: super::Lock<'_>) -> sqlx::Result<()> {
        self.lock_all([what]).await
    }

    /// Takes `locks` in the order of their keys ([`super::lock_all`]),
    /// leaving out those this transaction holds. A no-op on SQLite.
    pub async fn lock_all<'a>(
        &mut self,
        locks: impl IntoIterator<Item = super::Lock<'a>>,
    ) -> sqlx::Result<()> {
        match &mut self.0 {
            Inner::Member(_) => Ok(()),
            Inner::Postgres(write, _) => write.lock_all(locks).await,
        }
    }

    /// Keeps this transaction's work and returns once it is committed to
    /// disk (on SQLite: once the batch holding it is); an error if this work
    /// or its batch failed.
    pub async fn commit(self) -> sqlx::Result<()> {
        match self.0 {
            Inner::Member(member) => member.commit().await,
            Inner::Postgres(write, writer) => write.commit(&writer.pool, &writer.follow_up).await,
        }
    }

    /// Tells the other daemons of the deployment that `session` changed,
    /// once this transaction has committed (PostgreSQL; SQLite has one
    /// daemon), before [`WriteTx::commit`] returns.
    pub fn notify_after_commit(&mut self, session: &str) {
        if let Inner::Postgres(write, _) = &mut self.0
            && !write.notify.iter().any(|s| s == session)
        {
            write.notify.push(session.to_owned());
        }
    }

    /// Runs `hook` once this transaction has committed, before
    /// [`WriteTx::commit`] returns (PostgreSQL; SQLite needs none). The
    /// audit log seals its staged rows so.
    pub fn after_commit(&mut self, hook: AfterCommit) {
        if let Inner::Postgres(write, _) = &mut self.0 {
            write.after = Some(hook);
        }
    }

    /// The writer's memory of the rows it owns (`memo.rs`): on SQLite only;
    /// `None` on PostgreSQL, where every transaction reads them.
    pub fn memo(&mut self) -> Option<&mut Memo> {
        match &mut self.0 {
            Inner::Member(member) => member.memo(),
            Inner::Postgres(..) => None,
        }
    }

    /// On SQLite, what this transaction's last write may end with to end its
    /// savepoint in the same hop (`writer::RELEASE`), after which it writes
    /// nothing more: when others wait to join its batch. `None` when its
    /// commit will likely end the batch, and on PostgreSQL.
    pub(super) fn release_sql(&self) -> Option<&'static str> {
        match &self.0 {
            Inner::Member(member) if member.followed() => Some(super::writer::RELEASE),
            Inner::Member(_) | Inner::Postgres(..) => None,
        }
    }

    /// The last write carried [`WriteTx::release_sql`] and succeeded.
    pub(super) fn released(&mut self) {
        if let Inner::Member(member) = &mut self.0 {
            member.released();
        }
    }

    /// Undoes this transaction's work (and nothing else in its batch).
    pub async fn rollback(self) -> sqlx::Result<()> {
        match self.0 {
            Inner::Member(member) => member.rollback().await,
            Inner::Postgres(write, _) => write.tx.rollback().await,
        }
    }
}

impl Deref for WriteTx {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        match &self.0 {
            Inner::Member(member) => member.conn_ref(),
            Inner::Postgres(write, _) => &write.tx,
        }
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match &mut self.0 {
            Inner::Member(member) => member.conn(),
            Inner::Postgres(write, _) => &mut write.tx,
        }
    }
}

/// Starts a write transaction: joins (or opens) the SQLite batch, or begins
/// a PostgreSQL transaction that holds the write lock, shared or
/// (`exclusive`) alone, and `first`, if given. SQLite's writer is always
/// alone.
pub(super) async fn begin(
    writer: Arc<Writer>,
    exclusive: bool,
    first: Option<super::Lock<'_>>,
) -> sqlx::Result<WriteTx> {
    if writer.backend == super::Backend::Postgres {
        let write = super::pg_write::begin(&writer.pool, exclusive, first).await?;
        return Ok(WriteTx(Inner::Postgres(Box::new(write), writer)));
    }
    join(writer)
        .await
        .map(|member| WriteTx(Inner::Member(member)))
}
