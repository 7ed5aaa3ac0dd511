//! PostgreSQL's side of [`Sql`](crate::db::Sql).

use crate::db::Sql;

/// PostgreSQL, shared by several daemons.
pub(crate) struct Postgres;

impl Sql for Postgres {
    fn shared_by_daemons(&self) -> bool {
        true
    }

    fn writes_in_batches(&self) -> bool {
        false
    }

    fn seals_audit_after_commit(&self) -> bool {
        true
    }

    fn reads_returning(&self) -> bool {
        true
    }

    fn delete_web_sessions_of_user(&self) -> &'static str {
        "DELETE FROM web_sessions WHERE CAST(data AS jsonb) ->> 'user_id' = $1"
    }

    fn events_since(&self) -> &'static str {
        "SELECT e.id, e.session_id, e.kind,
                CASE WHEN m.id IS NOT NULL AND NOT (CAST(e.payload AS jsonb) ? 'text')
                     THEN CAST(jsonb_set(CAST(e.payload AS jsonb), '{text}', to_jsonb(m.body)) AS text)
                     ELSE e.payload END AS payload,
                e.created_at
         FROM events e
         LEFT JOIN messages m
           ON e.kind = 'message:created'
          AND m.id = CAST(CAST(e.payload AS jsonb) ->> 'message_id' AS BIGINT)
         WHERE e.session_id = $1 AND e.id > $2 ORDER BY e.id LIMIT $3"
    }

    fn effective_names(&self) -> &'static str {
        "(SELECT string_agg(name, ',') FROM (\
          SELECT name FROM env_vars WHERE owner_id = s.creator_id AND scope = 'global' \
          UNION SELECT name FROM env_vars \
          WHERE owner_id = s.creator_id AND scope = 'session' AND session_id = s.id) AS names)"
    }

    fn least(&self) -> &'static str {
        "LEAST"
    }

    fn greatest(&self) -> &'static str {
        "GREATEST"
    }

    fn position(&self) -> &'static str {
        "strpos"
    }

    fn guard(&self, holds: &str) -> String {
        // A row only when the guess is false: concurrent creations never
        // wait for each other's row here.
        format!(
            "INSERT INTO write_guard (ok) SELECT 0 \
             WHERE NOT EXISTS (SELECT 1 FROM sessions AS s WHERE {holds})"
        )
    }

    fn has_table(&self) -> &'static str {
        "SELECT 1 FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_name = $1"
    }
}
