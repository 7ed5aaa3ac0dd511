-- Replies: a person writes to the agent from the box under the transcript.
-- The text becomes a transcript message (role 'user', with its author) and
-- a resume prompt that belongs to that message instead of a widget.

-- Who wrote a message, for lines written by a signed-in person. Lines
-- posted by an agent or its host have none.
ALTER TABLE messages ADD COLUMN author_id TEXT REFERENCES users (id);

-- A prompt now comes from exactly one widget or one message. SQLite cannot
-- drop NOT NULL from a column, so the table is rebuilt with the same rows
-- and ids (nothing references prompts, so dropping the old table is safe).
-- Both keys stay UNIQUE: a retried transition or reply can never queue a
-- second prompt.
CREATE TABLE prompts_new (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    widget_id   TEXT UNIQUE REFERENCES widgets (id) ON DELETE CASCADE,
    message_id  INTEGER UNIQUE REFERENCES messages (id) ON DELETE CASCADE,
    text        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    acked_at    INTEGER,
    CHECK ((widget_id IS NULL) <> (message_id IS NULL))
);
INSERT INTO prompts_new (id, session_id, widget_id, text, created_at, acked_at)
    SELECT id, session_id, widget_id, text, created_at, acked_at FROM prompts;
DROP TABLE prompts;
ALTER TABLE prompts_new RENAME TO prompts;
CREATE INDEX prompts_undelivered ON prompts (session_id, id) WHERE acked_at IS NULL;
