-- An "Always" rule may hold for one session only: `session_id` names it;
-- NULL is a rule for all of the owner's sessions (every rule kept before).
ALTER TABLE approval_rules ADD COLUMN session_id TEXT REFERENCES sessions (id) ON DELETE CASCADE;

-- At most one live rule per owner, tool, kind, input and scope.
DROP INDEX approval_rules_live;
CREATE UNIQUE INDEX approval_rules_live
    ON approval_rules (owner_id, tool, match_kind, input, COALESCE(session_id, ''))
    WHERE revoked_at IS NULL;
