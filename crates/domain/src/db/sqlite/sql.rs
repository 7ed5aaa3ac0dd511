//! SQLite's side of [`Sql`](crate::db::Sql).

use crate::db::Sql;

/// SQLite, the embedded file with one writer.
pub(crate) struct Sqlite;

impl Sql for Sqlite {
    fn shared_by_daemons(&self) -> bool {
        false
    }

    fn writes_in_batches(&self) -> bool {
        true
    }

    fn seals_audit_after_commit(&self) -> bool {
        false
    }

    fn reads_returning(&self) -> bool {
        false
    }

    fn delete_web_sessions_of_user(&self) -> &'static str {
        "DELETE FROM web_sessions WHERE json_extract(data, '$.user_id') = $1"
    }

    fn events_since(&self) -> &'static str {
        "SELECT e.id, e.session_id, e.kind,
                CASE WHEN m.id IS NOT NULL AND json_extract(e.payload, '$.text') IS NULL
                     THEN json_set(e.payload, '$.text', m.body) ELSE e.payload END AS payload,
                e.created_at
         FROM events e
         LEFT JOIN messages m
           ON e.kind = 'message:created' AND m.id = json_extract(e.payload, '$.message_id')
         WHERE e.session_id = $1 AND e.id > $2 ORDER BY e.id LIMIT $3"
    }

    fn effective_names(&self) -> &'static str {
        "(SELECT group_concat(name) FROM (\
          SELECT name FROM env_vars WHERE owner_id = s.creator_id AND scope = 'global' \
          UNION SELECT name FROM env_vars \
          WHERE owner_id = s.creator_id AND scope = 'session' AND session_id = s.id))"
    }

    fn least(&self) -> &'static str {
        "MIN"
    }

    fn greatest(&self) -> &'static str {
        "MAX"
    }

    fn position(&self) -> &'static str {
        "instr"
    }

    fn guard(&self, holds: &str) -> String {
        // An upsert, so that the row is written, and its CHECK tried, even
        // where it was deleted.
        format!(
            "INSERT INTO write_guard (id, ok) SELECT 1, count(*) FROM sessions AS s \
             WHERE {holds} ON CONFLICT (id) DO UPDATE SET ok = excluded.ok"
        )
    }

    fn has_table(&self) -> &'static str {
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1"
    }
}
