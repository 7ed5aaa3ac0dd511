-- Slack: a workspace connection per deployment, per-person links between a
-- widgetd user and a Slack user, and the Slack message of each widget for
-- each linked person who may answer it.
--
-- The bot token and the signing secret are needed in the clear (to call the
-- Web API, to check Slack's request signatures), so they are sealed under a
-- data key like webhook secrets, each with an AAD naming what it is.
CREATE TABLE slack_workspace (
    id              INTEGER PRIMARY KEY CHECK (id = 1),   -- one per deployment
    key_id          INTEGER NOT NULL REFERENCES keyring (key_id),
    token_nonce     BLOB NOT NULL,
    bot_token       BLOB NOT NULL,                       -- AES-256-GCM ciphertext
    secret_nonce    BLOB NOT NULL,
    signing_secret  BLOB NOT NULL,                       -- AES-256-GCM ciphertext
    connected_at    INTEGER NOT NULL
);

-- A code a signed-in person asked widgetd for, to be sent from Slack
-- (`/widgetd link CODE`). Only its SHA-256 is kept; it is single-use and
-- short-lived. A link is never made from Slack without one.
CREATE TABLE slack_link_codes (
    code_hash   BLOB PRIMARY KEY,
    user_id     TEXT NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    expires_at  INTEGER NOT NULL
);

-- One Slack user per widgetd user and the other way round.
CREATE TABLE slack_links (
    user_id        TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    team_id        TEXT NOT NULL,
    slack_user_id  TEXT NOT NULL,
    linked_at      INTEGER NOT NULL,
    UNIQUE (team_id, slack_user_id)
);

-- The message a widget has (or will have) in a person's Slack: written
-- with the widget, posted and then updated by a background task until it
-- shows the widget's final status. `shown` is the status the message
-- shows; NULL until it is posted.
CREATE TABLE slack_messages (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    widget_id        TEXT NOT NULL REFERENCES widgets (id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    channel          TEXT,
    ts               TEXT,
    shown            TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    failed_at        INTEGER,
    UNIQUE (widget_id, user_id)
);
CREATE INDEX slack_messages_due ON slack_messages (next_attempt_at) WHERE failed_at IS NULL;
