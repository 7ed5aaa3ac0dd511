-- Replies (the twin of migrations/sqlite/0007_replies.sql): a person
-- writes to the agent from the box under the transcript. The text becomes
-- a transcript message (role 'user', with its author) and a resume prompt
-- that belongs to that message instead of a widget.

-- Who wrote a message, for lines written by a signed-in person.
ALTER TABLE messages ADD COLUMN author_id TEXT REFERENCES users (id);

-- A prompt now comes from exactly one widget or one message; both keys
-- stay UNIQUE, so nothing can queue a second prompt for either.
ALTER TABLE prompts ALTER COLUMN widget_id DROP NOT NULL;
ALTER TABLE prompts ADD COLUMN message_id BIGINT UNIQUE REFERENCES messages (id) ON DELETE CASCADE;
ALTER TABLE prompts ADD CONSTRAINT prompts_one_source
    CHECK ((widget_id IS NULL) <> (message_id IS NULL));
