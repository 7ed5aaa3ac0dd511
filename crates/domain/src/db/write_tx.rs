//! One request's write transaction, whichever the backend: a member of the
//! SQLite writer's batch (`sqlite/writer.rs`) or a PostgreSQL transaction
//! (`postgres/write.rs`).

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::AnyConnection;

use super::postgres::Pg;
use super::postgres::write::{AfterCommit, PgWrite};
use super::sqlite::deferred::Deferred;
use super::sqlite::writer::{Member, join, seated};
use super::{Memo, Writes};

/// One request's write transaction. On SQLite a savepoint in the writer's
/// batch: dropped without [`WriteTx::commit`], it rolls back its own
/// savepoint and nothing else. On PostgreSQL a transaction holding the
/// write lock. Derefs to the connection, so `&mut *tx` is an executor and
/// `&mut tx` a `&mut AnyConnection`.
pub struct WriteTx(Inner);

enum Inner {
    Member(Member),
    /// A SQLite member that holds the writer without its connection yet
    /// ([`Db::begin_write_deferred`](super::Db::begin_write_deferred)).
    Deferred(Deferred),
    Postgres(Box<PgWrite>, Arc<Pg>),
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
            Inner::Member(_) | Inner::Deferred(_) => Ok(()),
            Inner::Postgres(write, _) => write.lock_all(locks).await,
        }
    }

    /// Keeps this transaction's work and returns once it is committed to
    /// disk (on SQLite: once the batch holding it is); an error if this work
    /// or its batch failed.
    pub async fn commit(self) -> sqlx::Result<()> {
        match self.0 {
            Inner::Member(member) => member.commit().await,
            // Nothing written: what it changed in the memory is forgotten
            // with its turn.
            Inner::Deferred(_) => Ok(()),
            Inner::Postgres(write, pg) => write.commit(&pg.pool, &pg.follow_up).await,
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
            Inner::Deferred(deferred) => Some(deferred.turn().memo()),
            Inner::Postgres(..) => None,
        }
    }

    /// Which database this transaction writes to, without its connection.
    pub fn dialect(&self) -> super::Dialect {
        match &self.0 {
            Inner::Member(_) | Inner::Deferred(_) => super::Dialect::Sqlite,
            Inner::Postgres(..) => super::Dialect::Postgres,
        }
    }

    /// Whether this transaction was begun deferred and has not taken the
    /// connection yet ([`WriteTx::ready`]).
    pub fn is_deferred(&self) -> bool {
        matches!(self.0, Inner::Deferred(_))
    }

    /// Takes the connection for a transaction begun deferred, once every
    /// script left before it has run; a no-op for the others. Then `&mut
    /// *tx` reads and writes as in any write transaction. Refused as
    /// superseded (`db::superseded`) when what the transaction read from
    /// the writer's memory may have become untrue meanwhile.
    pub async fn ready(&mut self) -> sqlx::Result<()> {
        let Inner::Deferred(deferred) = &mut self.0 else {
            return Ok(());
        };
        let writer = deferred.writer.clone();
        let mut turn = deferred
            .turn
            .take()
            .expect("a live WriteTx holds the writer");
        let before = turn.epoch();
        let served = turn.memo().served();
        let mut member = seated(writer, turn).await?;
        if served && member.epoch() != before {
            // What it was told from the memory may be untrue.
            return Err(super::sqlite::deferred::superseded_error());
        }
        self.0 = Inner::Member(member);
        Ok(())
    }

    /// Leaves the writes of a transaction begun deferred to the writer's
    /// task and waits until they are durable (`pipe.rs`).
    pub(super) async fn leave_script(
        self,
        sql: String,
        args: sqlx::any::AnyArguments<'static>,
        statements: usize,
    ) -> sqlx::Result<()> {
        match self.0 {
            Inner::Deferred(deferred) => deferred.commit(sql, args, statements).await,
            _ => unreachable!("only a deferred transaction leaves its script"),
        }
    }

    /// On SQLite, what this transaction's last write may end with to end its
    /// savepoint in the same hop (`writer::RELEASE`), after which it writes
    /// nothing more: when others wait to join its batch. `None` when its
    /// commit will likely end the batch, and on PostgreSQL.
    pub(super) fn release_sql(&self) -> Option<&'static str> {
        match &self.0 {
            Inner::Member(member) if member.followed() => Some(super::sqlite::writer::RELEASE),
            Inner::Member(_) | Inner::Deferred(_) | Inner::Postgres(..) => None,
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
            Inner::Deferred(_) => Ok(()),
            Inner::Postgres(write, _) => write.tx.rollback().await,
        }
    }
}

impl Deref for WriteTx {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        match &self.0 {
            Inner::Member(member) => member.conn_ref(),
            Inner::Deferred(_) => not_ready(),
            Inner::Postgres(write, _) => &write.tx,
        }
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match &mut self.0 {
            Inner::Member(member) => member.conn(),
            Inner::Deferred(_) => not_ready(),
            Inner::Postgres(write, _) => &mut write.tx,
        }
    }
}

fn not_ready() -> ! {
    panic!("a write transaction begun deferred has no connection: call WriteTx::ready first")
}

/// Starts a deferred write transaction on SQLite (the writer's turn,
/// without its connection); on PostgreSQL the same as [`begin`].
pub(super) async fn begin_deferred(
    writes: &Writes,
    first: super::Lock<'_>,
) -> sqlx::Result<WriteTx> {
    let Writes::Sqlite(writer) = writes else {
        return begin(writes, false, Some(first)).await;
    };
    let turn = writer.turn().await;
    Ok(WriteTx(Inner::Deferred(Deferred {
        writer: writer.clone(),
        turn: Some(turn),
    })))
}

/// Starts a write transaction: joins (or opens) the SQLite batch, or begins
/// a PostgreSQL transaction that holds the write lock, shared or
/// (`exclusive`) alone, and `first`, if given. SQLite's writer is always
/// alone.
pub(super) async fn begin(
    writes: &Writes,
    exclusive: bool,
    first: Option<super::Lock<'_>>,
) -> sqlx::Result<WriteTx> {
    match writes {
        Writes::Postgres(pg) => {
            let write = super::postgres::write::begin(&pg.pool, exclusive, first).await?;
            Ok(WriteTx(Inner::Postgres(Box::new(write), pg.clone())))
        }
        Writes::Sqlite(writer) => join(writer.clone())
            .await
            .map(|member| WriteTx(Inner::Member(member))),
    }
}
