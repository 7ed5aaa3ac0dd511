//! A plain creation does not read its session before it writes: it takes
//! the common case for granted (the session is there and not archived, it
//! has room under the pending cap, and the kind finds nothing that would
//! make the widget born terminal) and sends its writes with a guard in
//! front that checks exactly that. On SQLite the guard checks against the
//! batch it joins; reading nothing, the creation takes the writer without
//! its connection and leaves its writes to the writer's task, which sends
//! several creations' in one hop to sqlx's worker thread
//! (`db::Db::begin_write_deferred`, `docs/performance.md`); a creation
//! whose guess was read on an untrue memory is superseded and made again
//! like a refused one. On PostgreSQL the guard is the first part of the
//! creation's one statement of writes, after the statement that took the
//! session's lock, so it reads what every earlier writer of the session
//! committed, and the creation saves the round trip of its read.
//!
//! When the guess is wrong, the guard's write breaks `write_guard`'s
//! `CHECK` (`guess_holds`): on SQLite it stops the statement list at its
//! first statement, before any write of it runs; on PostgreSQL it fails
//! the statement, and with it the transaction. The creation is undone
//! whole (the writer's memo forgets what it had moved) and made again with
//! its read, which gives the refusal (`404`, `409 session_archived`, `409
//! too_many_pending`) or the widget born `already_present`.

use std::sync::atomic::{AtomicU64, Ordering};

use super as store;
use super::super::kind::Kind;
use super::MAX_PENDING_PER_SESSION;
use crate::db::{Db, Script};
use crate::error::Error;
use crate::ids::SessionId;

/// Creations made on the guess, and those of them whose guard refused it;
/// one pair per process (`/metrics`).
static GUESSES: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// (creations guessed, guesses refused) since the start.
pub fn counts() -> (u64, u64) {
    let [guessed, refused] = &GUESSES;
    (
        guessed.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
    )
}

/// Whether a creation of `K` may guess: for a kind whose `born` reads
/// nothing of its own (`BORN_READS`) and whose `born_ahead`, if any, reads
/// the names it asks for (`names`).
pub(crate) fn allowed<K: Kind>(db: &Db, names: bool) -> bool {
    !K::BORN_READS && (K::born_ahead(db.backend().dialect()).is_none() || names)
}

/// What the guard checks, besides the session and the cap: that the kind's
/// read (`ahead_sql`, over the session's row aliased `s`: the names already
/// stored, comma-separated) does not hold every one of `names`.
pub(crate) struct Guard<'a> {
    pub ahead_sql: Option<&'a str>,
    pub names: Vec<String>,
}

impl Guard<'_> {
    /// Puts the guard in `script`, which must be empty (nothing may be
    /// written before it): session `id` is there and not archived, has
    /// fewer than the most pending widgets, and the kind's read does not
    /// make the widget born terminal.
    pub(crate) fn put_into(self, script: &mut Script, id: &SessionId) {
        guessed();
        let sql = script.dialect().sql();
        // `$1` is the session's id, in the pending count's statement too.
        let mut holds = format!(
            "s.id = $1 AND s.archived_at IS NULL AND ({}) < $2",
            store::PENDING_COUNT
        );
        if let Some(ahead_sql) = self.ahead_sql {
            let find = sql.position();
            let stored: Vec<String> = (0..self.names.len())
                .map(|i| {
                    format!(
                        "{find}(',' || coalesce(({ahead_sql}), '') || ',', ',' || ${} || ',') > 0",
                        i + 3
                    )
                })
                .collect();
            holds.push_str(&format!(" AND NOT ({})", stored.join(" AND ")));
        }
        let sql = sql.guard(&holds);
        let id = id.clone();
        let names = self.ahead_sql.map(|_| self.names).unwrap_or_default();
        script.push("guard", &sql, |v| {
            v.add(id).add(MAX_PENDING_PER_SESSION);
            for name in names {
                v.add(name);
            }
        });
    }
}

/// Counts a creation made on the guess.
pub(crate) fn guessed() {
    GUESSES[0].fetch_add(1, Ordering::Relaxed);
}

/// Counts a guess refused (its creation is made again with its read).
pub(crate) fn refused_once() {
    GUESSES[1].fetch_add(1, Ordering::Relaxed);
}

/// Whether `err` says the guess's writes were superseded (a write built
/// before them failed, `db::superseded`): the creation is made again.
pub(crate) fn superseded(err: &Error) -> bool {
    matches!(err, Error::Database(e) if crate::db::superseded(e))
}

/// Whether `err` is the guard refusing the guess; counted, as the creation
/// is made again.
pub(crate) fn refused(err: &Error) -> bool {
    let refused = matches!(err, Error::Database(sqlx::Error::Database(e))
        if e.message().contains("guess_holds"));
    if refused {
        refused_once();
    }
    refused
}
