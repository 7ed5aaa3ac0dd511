-- Sharing a session with other people. The creator still owns every value
-- submitted in it; sharing only decides who may read the transcript
-- ('view') and who may also answer its widgets ('prompt').

-- What everyone else (any signed-in user) may do with the session.
ALTER TABLE sessions ADD COLUMN others_can TEXT NOT NULL DEFAULT 'none'
    CHECK (others_can IN ('none', 'view', 'prompt'));

-- Per-user grants on top of `others_can`; the higher of the two applies.
CREATE TABLE session_grants (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    access      TEXT NOT NULL CHECK (access IN ('view', 'prompt')),
    PRIMARY KEY (session_id, user_id)
);
CREATE INDEX session_grants_by_user ON session_grants (user_id);

-- Free-form, value-free detail of an audit row (a share change, a role).
ALTER TABLE audit_log ADD COLUMN detail TEXT;
