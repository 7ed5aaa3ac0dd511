//! Who a token is, who a user is, and what a session allows, kept in
//! memory so that a request does not pay a database round trip for each.
//!
//! Every change that can take a credential or an access away bumps one
//! counter in the database, the auth epoch ([`bump_epoch`]), in the same
//! transaction as the change. What is cached is trusted only at the epoch
//! last read; a moved epoch empties the cache. When the epoch is read:
//!
//! - After a bump made in this process (by a request, a background job or
//!   anything else on this daemon's pools), until a read shows the bumped
//!   value: every request waits for a read that started after it arrived.
//!   [`bump_epoch`] notes the value it wrote before its transaction
//!   commits, so a change made here counts from the next request on.
//! - On SQLite otherwise, a read that started at most [`POLL`] before the
//!   request arrived is good enough: under load one read serves every
//!   request of a few milliseconds, instead of one read per request or
//!   batch. A change made by another process on the same file (the CLI)
//!   therefore counts for every request that arrives [`POLL`] or more
//!   after it commits.
//! - On PostgreSQL, where other daemons make changes of their own, every
//!   request waits for a read that started after it arrived, as above.
//!   The same statement reads the database's stamp (`db/changes.rs`), so
//!   that widget rows kept in memory (`widgets/cache.rs`) are checked at
//!   no further round trip.
//!
//! Reads are shared: while one runs, every request that arrives waits for
//! the next one, and the lookups a request makes after its first (the
//! token, then the session) reuse the same read.
//!
//! Only what exists is cached (an unknown token or session is asked of the
//! database every time), so creating a token or a session needs no bump.
//!
//! The same epoch also guards [`Wanted`]: whether a widget's change has
//! anywhere to go besides the transcript (for the notifiers the server
//! registers: a webhook endpoint, a person linked to a connected Slack). Adding an endpoint, a link or a workspace
//! bumps the epoch, so a request that arrives after the addition committed
//! queues its notices; removals need no bump (a stale `true` only looks
//! for targets that are gone).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::AnyConnection;

use super::{Principal, User};
use crate::db::{Backend, Db, Stamp};
use crate::ids::{SessionId, UserId};
use crate::notify::Wanted;
use crate::sessions::{Session, Sharing};

/// At most this many entries of each kind; a full map is emptied and
/// refilled by the requests that follow.
const MAX_ENTRIES: usize = 50_000;

/// On SQLite, how old (from its start) an epoch read may be when a request
/// arrives, unless this process bumped the epoch since.
pub const POLL: Duration = Duration::from_millis(5);

/// How long a bump noted by [`bump_epoch`] keeps every read fresh while no
/// read shows it (its transaction may have rolled back); after that a
/// late commit is seen as another process's would be.
const AWAIT_LIMIT: Duration = Duration::from_secs(30);

/// The epoch values this process wrote in the last [`AWAIT_LIMIT`], and
/// when. Not cleared when a read shows them: each daemon's cache compares
/// them with what it read itself (a test process may run several daemons,
/// each on its own database).
static WRITTEN: Mutex<Vec<(i64, Instant)>> = Mutex::new(Vec::new());

/// Bumps the auth epoch inside the caller's write transaction: every
/// cached credential and access check of every daemon is read again from
/// the next request on. The value written is noted before the
/// transaction commits, so this daemon reads the epoch afresh for every
/// request until it sees it.
pub async fn bump_epoch(conn: &mut AnyConnection) -> sqlx::Result<()> {
    let written: i64 =
        sqlx::query_scalar("UPDATE auth_epoch SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch")
            .fetch_one(conn)
            .await?;
    let mut values = WRITTEN.lock().unwrap_or_else(|p| p.into_inner());
    values.retain(|(_, at)| at.elapsed() < AWAIT_LIMIT);
    values.push((written, Instant::now()));
    Ok(())
}

/// Whether this process wrote, in the last [`AWAIT_LIMIT`], an epoch that
/// `seen` (the last value this cache read) does not show yet.
fn awaiting(seen: Option<i64>) -> bool {
    let mut values = WRITTEN.lock().unwrap_or_else(|p| p.into_inner());
    if values.is_empty() {
        return false;
    }
    values.retain(|(_, at)| at.elapsed() < AWAIT_LIMIT);
    values
        .iter()
        .any(|(value, _)| seen.is_none_or(|seen| seen < *value))
}

/// When the current request arrived, and how many epoch reads had started
/// by then: what a task the request hands its work to carries along
/// ([`AuthCache::arrived`], [`AuthCache::as_arrived`]).
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    reads_started: u64,
    at: Instant,
}

tokio::task_local! {
    /// The arrival of the current request (see [`AuthCache::arrival`]).
    static ARRIVAL: Arrival;
}

/// The epoch as read by a read that started after the request arrived;
/// `None` when it could not be read (the cache is then bypassed). On
/// PostgreSQL the same statement read the database's stamp.
#[derive(Debug, Clone, Copy)]
pub struct Epoch(Option<i64>, Option<Stamp>);

impl Epoch {
    /// On PostgreSQL, the database's stamp read with the epoch
    /// (`db/changes.rs`): what widget rows kept in memory are checked
    /// against. `None` on SQLite, whose stamp is [`Db::stamp`].
    pub fn stamp(&self) -> Option<Stamp> {
        self.1
    }
}

#[derive(Default)]
struct Reads {
    /// How many epoch reads have started.
    started: u64,
    /// The last one to finish, when it started, and what it read.
    finished: u64,
    finished_started_at: Option<Instant>,
    value: Option<i64>,
    stamp: Option<Stamp>,
    /// Whether a read is running now.
    running: bool,
}

/// A running epoch read: ending (or dropped with its request) lets the
/// next one start and wakes every request waiting.
struct Running<'a>(&'a AuthCache);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        // Runs while unwinding too: a poisoned lock must not panic again.
        let mut reads = self.0.reads.lock().unwrap_or_else(|p| p.into_inner());
        reads.running = false;
        drop(reads);
        self.0.read_ended.notify_waiters();
    }
}

impl Reads {
    /// The epoch, if the last read is fresh enough for a request that
    /// arrived as `arrival` says: it started after the request arrived or,
    /// when `poll` allows, at most `poll` before.
    fn fresh(&self, arrival: Arrival, poll: Option<Duration>) -> Option<Epoch> {
        let after = self.finished > arrival.reads_started;
        let recent = poll.is_some_and(|poll| {
            self.finished_started_at
                .is_some_and(|started| started + poll >= arrival.at)
        });
        (after || recent).then_some(Epoch(self.value, self.stamp))
    }
}

#[derive(Default)]
struct Entries {
    /// The epoch the entries are valid for.
    epoch: Option<i64>,
    tokens: HashMap<Vec<u8>, Principal>,
    users: HashMap<UserId, User>,
    sessions: HashMap<SessionId, Session>,
    grants: HashMap<(SessionId, UserId), Sharing>,
    notified: Option<Wanted>,
}

impl Entries {
    /// Whether the entries may be used under `epoch`, emptying them first
    /// when the epoch moved on. An older epoch (a slow request's) neither
    /// uses nor empties them.
    fn at(&mut self, epoch: Epoch) -> bool {
        let Some(epoch) = epoch.0 else { return false };
        match self.epoch {
            Some(current) if current == epoch => true,
            Some(current) if current > epoch => false,
            _ => {
                self.tokens.clear();
                self.users.clear();
                self.sessions.clear();
                self.grants.clear();
                self.notified = None;
                self.epoch = Some(epoch);
                true
            }
        }
    }
}

/// How old a read may be when the request arrived (see the module's text).
fn poll(backend: Backend, reads: &Reads) -> Option<Duration> {
    let shared = backend.dialect().sql().shared_by_daemons();
    (!shared && !awaiting(reads.value)).then_some(POLL)
}

/// Reads the epoch and, on PostgreSQL, the stamp of the same statement's
/// snapshot; `None` when the read failed.
async fn read(db: &Db) -> Option<(i64, Option<Stamp>)> {
    db.read_epoch().await.ok()
}

/// Epoch reads this process has started, for `/metrics`: how many round
/// trips the cache costs (each read is shared by the requests waiting on
/// it).
static READS_STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many epoch reads this process has started.
pub fn epoch_reads() -> u64 {
    READS_STARTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The cache of one daemon.
#[derive(Default)]
pub struct AuthCache {
    reads: Mutex<Reads>,
    /// Told when an epoch read ends (or is dropped unfinished): every
    /// request waiting for it looks again at once.
    read_ended: tokio::sync::Notify,
    entries: Mutex<Entries>,
}

fn insert<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>, key: K, value: V) {
    if map.len() >= MAX_ENTRIES {
        map.clear();
    }
    map.insert(key, value);
}

impl AuthCache {
    /// Runs `request` with its arrival noted: every epoch it asks for comes
    /// from a read that started after this call.
    pub async fn arrival<F: Future>(&self, request: F) -> F::Output {
        ARRIVAL.scope(self.now(), request).await
    }

    /// The arrival of the current request (a request arriving now, outside
    /// one), for work the request hands to a task of its own.
    pub fn arrived(&self) -> Arrival {
        ARRIVAL.try_with(|a| *a).unwrap_or_else(|_| self.now())
    }

    /// Runs `work`, done in a task of its own for a request that arrived as
    /// `arrival`, as part of that request: its epoch reads are shared with
    /// the request's instead of starting afresh.
    pub async fn as_arrived<F: Future>(&self, arrival: Arrival, work: F) -> F::Output {
        ARRIVAL.scope(arrival, work).await
    }

    fn now(&self) -> Arrival {
        Arrival {
            reads_started: self.reads.lock().expect("not poisoned").started,
            at: Instant::now(),
        }
    }

    /// The current epoch, read by a query fresh enough for the request (see
    /// the module's text; outside a request, for a request arriving now).
    pub async fn epoch(&self, db: &Db) -> Epoch {
        let arrival = self.arrived();
        let fresh = |reads: &Reads| reads.fresh(arrival, poll(db.backend(), reads));
        // One read at a time. A request that finds one running waits for
        // it to end, with every other waiter at once (not handed on one by
        // one, as a lock would), then takes what it read if that read
        // started after the request arrived, or starts the next.
        let (id, started_at) = loop {
            let ended = {
                let mut reads = self.reads.lock().expect("not poisoned");
                if let Some(epoch) = fresh(&reads) {
                    return epoch;
                }
                if !reads.running {
                    reads.running = true;
                    reads.started += 1;
                    READS_STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    break (reads.started, Instant::now());
                }
                // Made before the lock is let go: the end of the running
                // read cannot slip in between.
                self.read_ended.notified()
            };
            ended.await;
        };
        let running = Running(self);
        let (value, stamp) = read(db).await.unzip();
        let stamp = stamp.flatten();
        {
            let mut reads = self.reads.lock().expect("not poisoned");
            reads.finished = id;
            reads.finished_started_at = Some(started_at);
            reads.value = value;
            reads.stamp = stamp;
        }
        drop(running);
        Epoch(value, stamp)
    }

    /// The epoch, if a read fresh enough for the current request has
    /// finished (as [`AuthCache::epoch`] would return it at once); `None`
    /// rather than a read. For work inside a write transaction, which on
    /// PostgreSQL holds one of the connections a read would wait for.
    pub fn epoch_if_read(&self, backend: Backend) -> Option<Epoch> {
        // Before the lock: outside a request, the arrival is read under it.
        let arrival = self.arrived();
        let reads = self.reads.lock().expect("not poisoned");
        reads.fresh(arrival, poll(backend, &reads))
    }

    fn with<T>(&self, epoch: Epoch, f: impl FnOnce(&mut Entries) -> T) -> Option<T> {
        let mut entries = self.entries.lock().expect("not poisoned");
        entries.at(epoch).then(|| f(&mut entries))
    }

    pub fn token(&self, epoch: Epoch, hash: &[u8]) -> Option<Principal> {
        self.with(epoch, |e| e.tokens.get(hash).cloned()).flatten()
    }

    pub fn put_token(&self, epoch: Epoch, hash: Vec<u8>, principal: Principal) {
        self.with(epoch, |e| insert(&mut e.tokens, hash, principal));
    }

    pub fn user(&self, epoch: Epoch, id: &UserId) -> Option<User> {
        self.with(epoch, |e| e.users.get(id).cloned()).flatten()
    }

    pub fn put_user(&self, epoch: Epoch, user: User) {
        self.with(epoch, |e| insert(&mut e.users, user.id.clone(), user));
    }

    pub fn session(&self, epoch: Epoch, id: &SessionId) -> Option<Session> {
        self.with(epoch, |e| e.sessions.get(id).cloned()).flatten()
    }

    pub fn put_session(&self, epoch: Epoch, session: Session) {
        self.with(epoch, |e| {
            insert(&mut e.sessions, session.id.clone(), session)
        });
    }

    /// A person's grant on a session (`Sharing::None` when they have none).
    pub fn grant(&self, epoch: Epoch, session: &SessionId, user: &UserId) -> Option<Sharing> {
        self.with(epoch, |e| {
            e.grants.get(&(session.clone(), user.clone())).copied()
        })
        .flatten()
    }

    pub fn put_grant(&self, epoch: Epoch, session: SessionId, user: UserId, grant: Sharing) {
        self.with(epoch, |e| insert(&mut e.grants, (session, user), grant));
    }

    pub fn notified(&self, epoch: Epoch) -> Option<Wanted> {
        self.with(epoch, |e| e.notified).flatten()
    }

    pub fn put_notified(&self, epoch: Epoch, notified: Wanted) {
        self.with(epoch, |e| e.notified = Some(notified));
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
