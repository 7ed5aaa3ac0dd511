-- "Always" rules for one session only (see the SQLite twin,
-- migrations/sqlite/0015_approval_scope.sql).
ALTER TABLE approval_rules ADD COLUMN session_id TEXT REFERENCES sessions (id) ON DELETE CASCADE;

DROP INDEX approval_rules_live;
CREATE UNIQUE INDEX approval_rules_live
    ON approval_rules (owner_id, tool, match_kind, input, COALESCE(session_id, ''))
    WHERE revoked_at IS NULL;
