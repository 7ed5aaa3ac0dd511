//! What the single SQLite writer remembers between its transactions, so a
//! write does not read back what the writer itself wrote: the audit chain's
//! head and rate-limit buckets.
//!
//! Every entry is a copy of a row as the writer's transaction will see it
//! once the scripts left before are run (`pipe.rs`), so it is only ever
//! used by the member holding the writer. It stays true
//! because every change to those rows goes through the writer and updates
//! it, and because it is forgotten whenever the rows may have changed
//! without it:
//! - a member's savepoint is undone: what that member changed is forgotten
//!   (read again on next use);
//! - a batch is rolled back, its `COMMIT` fails, or a script left to the
//!   writer's task fails: everything is forgotten (the next member finds
//!   the mark moved, `Pipe::epoch`);
//! - another connection (the CLI, another process) committed to the file,
//!   as `PRAGMA data_version` tells at the start of each batch, or the
//!   writer's connection was replaced: everything is forgotten.
//!
//! On PostgreSQL there is no memo: several daemons write, and each
//! transaction reads the rows.

use std::cell::Cell;
use std::collections::HashMap;

/// Most buckets kept; past that the memo starts afresh (rows are re-read),
/// so a flood of new keys cannot grow the daemon's memory.
const MAX_BUCKETS: usize = 10_000;

/// The writer's memory of rows it owns.
#[derive(Debug, Default)]
pub struct Memo {
    audit_head: Option<(i64, Vec<u8>)>,
    buckets: HashMap<String, (f64, i64)>,
    /// What the member holding the writer changed, undone with its savepoint.
    touched: Touched,
    /// It answered the member holding the writer from what it holds.
    served: Cell<bool>,
}

#[derive(Debug, Default)]
struct Touched {
    audit: bool,
    buckets: Vec<String>,
}

impl Memo {
    /// The last audit row's id and hash, when known.
    pub fn audit_head(&self) -> Option<(i64, &[u8])> {
        let head = self.audit_head.as_ref();
        self.served.set(self.served.get() || head.is_some());
        head.map(|(id, hash)| (*id, hash.as_slice()))
    }

    /// The audit row `id` with `hash` is now the last one.
    pub fn set_audit_head(&mut self, id: i64, hash: Vec<u8>) {
        self.audit_head = Some((id, hash));
        self.touched.audit = true;
    }

    /// A bucket's stored (tokens, updated_at), when known.
    pub fn bucket(&self, key: &str) -> Option<(f64, i64)> {
        let level = self.buckets.get(key).copied();
        self.served.set(self.served.get() || level.is_some());
        level
    }

    /// Whether the member holding the writer was answered from the memo
    /// since [`Memo::new_turn`].
    pub(crate) fn served(&self) -> bool {
        self.served.get()
    }

    /// A new member holds the writer.
    pub(crate) fn new_turn(&mut self) {
        self.served.set(false);
    }

    /// The bucket `key` is stored as `level`, or has no row (`None`).
    pub fn set_bucket(&mut self, key: &str, level: Option<(f64, i64)>) {
        if self.buckets.len() >= MAX_BUCKETS && !self.buckets.contains_key(key) {
            self.buckets.clear();
        }
        match level {
            Some(level) => self.buckets.insert(key.to_owned(), level),
            None => self.buckets.remove(key),
        };
        self.touched.buckets.push(key.to_owned());
    }

    /// Forgets every bucket (after a sweep deleted some rows).
    pub fn forget_buckets(&mut self) {
        self.buckets.clear();
    }

    /// The member's savepoint was released: its changes stand.
    pub(crate) fn keep_member(&mut self) {
        self.touched = Touched::default();
    }

    /// The member's savepoint was undone: forget what it changed.
    pub(crate) fn undo_member(&mut self) {
        let touched = std::mem::take(&mut self.touched);
        if touched.audit {
            self.audit_head = None;
        }
        for key in touched.buckets {
            self.buckets.remove(&key);
        }
    }

    /// Forgets everything (a batch rolled back, or another writer).
    pub(crate) fn forget(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undone_member_forgets_only_what_it_changed() {
        let mut memo = Memo::default();
        memo.set_audit_head(1, vec![1]);
        memo.set_bucket("a", Some((3.0, 10)));
        memo.keep_member();
        memo.set_bucket("b", Some((1.0, 20)));
        memo.set_audit_head(2, vec![2]);
        memo.undo_member();
        assert_eq!(memo.audit_head(), None);
        assert_eq!(memo.bucket("a"), Some((3.0, 10)));
        assert_eq!(memo.bucket("b"), None);
        memo.forget();
        assert_eq!(memo.bucket("a"), None);
    }
}
