//! Who a token is, who a user is, and what a session allows, kept in
//! memory so that a request does not pay a database round trip for each.
//!
//! Every change that can take a credential or an access away bumps one
//! counter in the database, the auth epoch ([`bump_epoch`]), in the same
//! transaction as the change. Before trusting anything cached, a request
//! reads the epoch afresh: a read that started after the request arrived,
//! so a change committed before then — by this daemon, by the CLI on the
//! same SQLite file, or by another daemon on the same PostgreSQL database
//! — empties the cache first. Reads are shared: while one runs, every
//! request that arrives waits for the next one, so under load one small
//! query serves a whole batch of requests, and the lookups a request makes
//! after its first (the token, then the session) reuse the same read.
//!
//! Only what exists is cached (an unknown token or session is asked of the
//! database every time), so creating a token or a session needs no bump.

use std::collections::HashMap;
use std::sync::Mutex;

use sqlx::AnyConnection;

use super::{Principal, User};
use crate::db::Db;
use crate::ids::{SessionId, UserId};
use crate::sessions::{Session, Sharing};

/// At most this many entries of each kind; a full map is emptied and
/// refilled by the requests that follow.
const MAX_ENTRIES: usize = 50_000;

/// Bumps the auth epoch inside the caller's write transaction: every
/// cached credential and access check of every daemon is read again from
/// the next request on.
pub async fn bump_epoch(conn: &mut AnyConnection) -> sqlx::Result<()> {
    sqlx::query("UPDATE auth_epoch SET epoch = epoch + 1 WHERE id = 1")
        .execute(conn)
        .await?;
    Ok(())
}

tokio::task_local! {
    /// The epoch reads started when the current request arrived (see
    /// [`AuthCache::arrival`]).
    static ARRIVAL: u64;
}

/// The epoch as read by a read that started after the request arrived;
/// `None` when it could not be read (the cache is then bypassed).
#[derive(Debug, Clone, Copy)]
pub struct Epoch(Option<i64>);

#[derive(Default)]
struct Reads {
    /// How many epoch reads have started.
    started: u64,
    /// The last one to finish, and what it read.
    finished: u64,
    value: Option<i64>,
}

#[derive(Default)]
struct Entries {
    /// The epoch the entries are valid for.
    epoch: Option<i64>,
    tokens: HashMap<Vec<u8>, Principal>,
    users: HashMap<UserId, User>,
    sessions: HashMap<SessionId, Session>,
    grants: HashMap<(SessionId, UserId), Sharing>,
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
                self.epoch = Some(epoch);
                true
            }
        }
    }
}

/// The cache of one daemon.
#[derive(Default)]
pub struct AuthCache {
    reads: Mutex<Reads>,
    /// Held while an epoch read runs: one at a time.
    reading: tokio::sync::Mutex<()>,
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
        let started = self.reads.lock().expect("not poisoned").started;
        ARRIVAL.scope(started, request).await
    }

    /// The current epoch, read by a query that started after the request
    /// arrived (or, outside a request, after this call).
    pub async fn epoch(&self, db: &Db) -> Epoch {
        let since = ARRIVAL
            .try_with(|s| *s)
            .unwrap_or_else(|_| self.reads.lock().expect("not poisoned").started);
        let fresh = |reads: &Reads| (reads.finished > since).then_some(Epoch(reads.value));
        if let Some(epoch) = fresh(&self.reads.lock().expect("not poisoned")) {
            return epoch;
        }
        let _reading = self.reading.lock().await;
        let id = {
            let mut reads = self.reads.lock().expect("not poisoned");
            if let Some(epoch) = fresh(&reads) {
                return epoch;
            }
            reads.started += 1;
            reads.started
        };
        let value: Option<i64> = sqlx::query_scalar("SELECT epoch FROM auth_epoch WHERE id = 1")
            .fetch_one(&db.read)
            .await
            .ok();
        let mut reads = self.reads.lock().expect("not poisoned");
        reads.finished = id;
        reads.value = value;
        Epoch(value)
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
}
