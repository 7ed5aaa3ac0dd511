//! Widget rows kept in memory, so that reading a widget's state
//! (`GET /api/v1/widgets/{id}`, the MCP `get_widget_status` tool) does not
//! send a query to SQLite's worker thread for a row that cannot have
//! changed.
//!
//! Every row kept was read under one [`Stamp`] (`db/changes.rs`,
//! `Core::stamp`), taken before its query; it is served only to a request
//! whose own stamp, taken as it asks, is the same. On SQLite a write of
//! this daemon moves the stamp before it is acknowledged, so it is seen
//! from the next request on; a write by another process on the same file
//! (the CLI) moves it for every request that asks [`crate::db::POLL`] or
//! more after that write commits. On PostgreSQL any commit, by any daemon,
//! moves the stamp of every request that arrives after it. A moved stamp
//! empties the cache; rows read under an older stamp are not kept.
//!
//! What is kept is the row as stored; everything derived from it (the
//! view, its times) is derived per request as before. A widget that does
//! not exist is asked of the database every time.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::db::Stamp;
use crate::ids::WidgetId;
use crate::widgets::engine::row::WidgetRow;

/// At most this many rows; a full cache is emptied and refilled by the
/// requests that follow.
const MAX_ROWS: usize = 10_000;
/// At most this many bytes of rows' text in all.
const MAX_BYTES: usize = 16 * 1024 * 1024;
/// A row larger than this (an annotation's image) is never kept.
const MAX_ROW_BYTES: usize = 64 * 1024;

/// The widget rows of one daemon.
#[derive(Default)]
pub struct RowCache(Mutex<Rows>);

#[derive(Default)]
struct Rows {
    /// The stamp every row was read under.
    stamp: Option<Stamp>,
    rows: HashMap<WidgetId, WidgetRow>,
    bytes: usize,
}

/// The bytes of text `row` holds, as counted against [`MAX_BYTES`].
fn size(row: &WidgetRow) -> usize {
    let text = row.id.as_str().len()
        + row.session_id.as_str().len()
        + row.kind.len()
        + row.params.len()
        + row.result.as_ref().map_or(0, String::len)
        + row.resolved_by.as_ref().map_or(0, |u| u.as_str().len());
    text + size_of::<WidgetRow>()
}

impl RowCache {
    /// The row `id` if it was read under `stamp`, the caller's current one.
    pub fn get(&self, stamp: Stamp, id: &WidgetId) -> Option<WidgetRow> {
        let rows = self.0.lock().expect("not poisoned");
        if rows.stamp != Some(stamp) {
            return None;
        }
        rows.rows.get(id).cloned()
    }

    /// Keeps `row`, read under `stamp` (taken before its query). A stamp
    /// later than the cache's empties it first; an earlier one (a slow
    /// request's) keeps nothing.
    pub fn put(&self, stamp: Stamp, row: &WidgetRow) {
        let bytes = size(row);
        if bytes > MAX_ROW_BYTES {
            return;
        }
        let mut rows = self.0.lock().expect("not poisoned");
        if rows.stamp != Some(stamp) {
            if rows
                .stamp
                .is_some_and(|current| !stamp.not_before(&current))
            {
                return;
            }
            rows.clear();
            rows.stamp = Some(stamp);
        }
        if rows.rows.len() >= MAX_ROWS || rows.bytes + bytes > MAX_BYTES {
            rows.clear();
        }
        if let Some(old) = rows.rows.insert(row.id.clone(), row.clone()) {
            rows.bytes -= size(&old);
        }
        rows.bytes += bytes;
    }

    /// How many rows are kept, and their bytes.
    #[cfg(test)]
    fn len(&self) -> (usize, usize) {
        let rows = self.0.lock().expect("not poisoned");
        (rows.rows.len(), rows.bytes)
    }
}

impl Rows {
    fn clear(&mut self) {
        self.rows.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::SessionId;
    use crate::widgets::engine::row::WidgetStatus;

    fn row(params: String) -> WidgetRow {
        WidgetRow {
            id: WidgetId::generate(),
            session_id: SessionId::generate(),
            kind: "env_vars".into(),
            params,
            status: WidgetStatus::Pending,
            result: None,
            created_at: 1,
            expires_at: 2,
            resolved_at: None,
            resolved_by: None,
        }
    }

    #[test]
    fn the_cache_never_holds_more_than_its_bound_of_rows() {
        let cache = RowCache::default();
        let stamp = Stamp::made_up(1, 1);
        let rows: Vec<_> = (0..MAX_ROWS + 10).map(|_| row("{}".into())).collect();
        for (n, r) in rows.iter().enumerate() {
            cache.put(stamp, r);
            let (len, _) = cache.len();
            assert!(len <= MAX_ROWS, "{len} rows after {n} puts");
        }
        // The last one put is there.
        let last = rows.last().unwrap();
        assert_eq!(cache.get(stamp, &last.id).unwrap().id, last.id);
    }

    #[test]
    fn the_cache_never_holds_more_than_its_bound_of_bytes() {
        let cache = RowCache::default();
        let stamp = Stamp::made_up(1, 1);
        let big = MAX_ROW_BYTES - 1024;
        for _ in 0..2 * MAX_BYTES / big {
            cache.put(stamp, &row("x".repeat(big)));
            let (_, bytes) = cache.len();
            assert!(bytes <= MAX_BYTES, "{bytes} bytes");
        }
        let huge = row("x".repeat(MAX_ROW_BYTES + 1));
        cache.put(stamp, &huge);
        assert!(cache.get(stamp, &huge.id).is_none(), "a huge row is kept");
    }

    #[test]
    fn a_row_is_served_only_under_the_stamp_it_was_read_under() {
        let cache = RowCache::default();
        let (read, later) = (Stamp::made_up(1, 1), Stamp::made_up(2, 1));
        let kept = row("{}".into());
        cache.put(read, &kept);
        assert_eq!(cache.get(read, &kept.id).unwrap().params, "{}");
        assert!(cache.get(later, &kept.id).is_none());
        assert!(cache.get(Stamp::made_up(1, 2), &kept.id).is_none());
        // A row read under a later stamp empties the cache...
        cache.put(later, &row("{}".into()));
        assert!(cache.get(read, &kept.id).is_none());
        assert!(cache.get(later, &kept.id).is_none());
        // ...and one read under an earlier stamp is not kept.
        cache.put(read, &kept);
        assert_eq!(cache.len().0, 1);
    }
}
