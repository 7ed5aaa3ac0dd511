-- Notifications when a widget waits or ends: signed webhooks per user
-- (Standard Webhooks). The signing secret is needed to sign, so it is kept
-- encrypted under a data key like env values (AAD binds it to the endpoint
-- and owner), never hashed.
CREATE TABLE webhook_endpoints (
    id          TEXT PRIMARY KEY,                  -- UUID v4
    owner_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    format      TEXT NOT NULL CHECK (format IN ('standard', 'slack', 'ntfy')),
    key_id      INTEGER NOT NULL REFERENCES keyring (key_id),
    nonce       BLOB NOT NULL,
    secret      BLOB NOT NULL,                     -- AES-256-GCM ciphertext of the HMAC key
    created_at  INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner_id);

-- The durable outbox: one row per notice and endpoint, written in the same
-- transaction as the widget change it tells of, so a notice is never lost
-- to a crash and never sent for a change that was rolled back. The row is
-- also the delivery log. `msg_id` is the `webhook-id`, the same on every
-- retry so receivers can drop duplicates.
CREATE TABLE webhook_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    msg_id          TEXT NOT NULL UNIQUE,
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event           TEXT NOT NULL,                 -- widget.created | widget.resolved
    payload         TEXT NOT NULL,                 -- JSON: names, kinds, session, URLs; never a value
    created_at      INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    delivered_at    INTEGER,
    failed_at       INTEGER,                       -- given up after the last retry
    last_status     INTEGER,                       -- the receiver's HTTP status
    last_error      TEXT
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
