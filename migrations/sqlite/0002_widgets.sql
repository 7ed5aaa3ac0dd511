-- The widget engine: the transcript, widgets and their lifecycle, the
-- resume prompts queued for the agent host, durable events for live views,
-- and the audit log. Values never appear in any of these tables: a widget
-- keeps its request parameters and sanitized result metadata only.

-- The transcript of a session, in order. A widget appears in it as a
-- message of kind 'widget' that points at the widget row.
CREATE TABLE messages (
    id          INTEGER PRIMARY KEY,               -- transcript order
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('text', 'widget')),
    role        TEXT NOT NULL CHECK (role IN ('agent', 'user', 'system')),
    body        TEXT,                              -- text messages only
    widget_id   TEXT REFERENCES widgets (id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    CHECK ((kind = 'widget') = (widget_id IS NOT NULL))
);
CREATE INDEX messages_by_session ON messages (session_id, id);

-- One request for input. `params` is the validated request as JSON;
-- `result` the sanitized outcome (names, scope, who answered). A status
-- other than 'pending' is terminal: every transition is a single UPDATE
-- guarded by `WHERE status = 'pending'`, so there is no in-between state a
-- crash could strand.
CREATE TABLE widgets (
    id           TEXT PRIMARY KEY,                 -- UUID v4
    session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    params       TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN
                   ('pending', 'submitted', 'dismissed', 'expired', 'cancelled', 'already_present')),
    result       TEXT,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    resolved_at  INTEGER,
    resolved_by  TEXT REFERENCES users (id)
);
CREATE INDEX widgets_by_session ON widgets (session_id, created_at);
-- The expiry sweeper looks at pending widgets only.
CREATE INDEX widgets_pending_expiry ON widgets (expires_at) WHERE status = 'pending';

-- Resume prompts for the agent's next turn, delivered at least once: a
-- prompt is handed out until the agent host acknowledges it. UNIQUE on
-- widget_id: a retried transition can never queue a second prompt.
CREATE TABLE prompts (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    widget_id   TEXT NOT NULL UNIQUE REFERENCES widgets (id) ON DELETE CASCADE,
    text        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    acked_at    INTEGER
);
CREATE INDEX prompts_undelivered ON prompts (session_id, id) WHERE acked_at IS NULL;

-- Events for live views (SSE). The id is the SSE event id, so a client that
-- reconnects with Last-Event-ID gets exactly what it missed.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, even after deletes
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,                     -- sanitized JSON
    created_at  INTEGER NOT NULL
);
CREATE INDEX events_by_session ON events (session_id, id);

-- Append-only record of who did what. Never a value, nor a hash of one.
-- Each row carries the SHA-256 of the previous row's hash and its own
-- fields, so editing, deleting or reordering rows breaks the chain.
CREATE TABLE audit_log (
    id           INTEGER PRIMARY KEY,
    at           INTEGER NOT NULL,
    actor        TEXT NOT NULL,                    -- user:<id>, agent:<session id>, system
    action       TEXT NOT NULL,
    session_id   TEXT,
    widget_id    TEXT,
    names        TEXT,                             -- comma-separated env var names
    scope        TEXT,
    client_addr  TEXT,
    prev_hash    BLOB NOT NULL,
    hash         BLOB NOT NULL
);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;

-- Browser sessions (tower-sessions). Only the SHA-256 of the session id is
-- stored, so a copy of this file does not let anyone ride a session.
CREATE TABLE web_sessions (
    id_hash     BLOB PRIMARY KEY,
    data        TEXT NOT NULL,                     -- user id, CSRF token, login time
    expires_at  INTEGER NOT NULL
);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);
