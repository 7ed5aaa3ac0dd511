-- Audit rows written by a transaction wait here until they are sealed into
-- the chain (`audit_log`), in the order of this table's id, by one sealer
-- at a time (src/audit/seal.rs), right after the transaction commits. Write
-- transactions therefore no longer serialise on the chain's head: only the
-- short sealing transaction does.
CREATE TABLE audit_pending (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           BIGINT NOT NULL,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    session_id   TEXT,
    widget_id    TEXT,
    names        TEXT,
    scope        TEXT,
    client_addr  TEXT,
    detail       TEXT
);
