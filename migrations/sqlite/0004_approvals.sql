-- Standing "Always" answers to request_approval: per session creator, per
-- tool and exact input. A later identical request is approved at once.
-- Revoking keeps the row, with the time, for the record.
CREATE TABLE approval_rules (
    id          TEXT PRIMARY KEY,                  -- UUID v4
    owner_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tool        TEXT NOT NULL,
    input       TEXT NOT NULL,                     -- canonical JSON (sorted keys) of the tool input
    created_at  INTEGER NOT NULL,
    created_by  TEXT NOT NULL REFERENCES users (id),
    revoked_at  INTEGER
);
-- At most one live rule per owner, tool and input.
CREATE UNIQUE INDEX approval_rules_live ON approval_rules (owner_id, tool, input) WHERE revoked_at IS NULL;
