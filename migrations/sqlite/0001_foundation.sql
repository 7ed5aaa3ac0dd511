-- The foundation: people, their credentials, agent sessions and the
-- encrypted env var vault. Timestamps are Unix milliseconds (UTC) so that
-- ordering and TTL arithmetic never depend on text formats.

-- People who log in, own sessions and own env vars.
CREATE TABLE users (
    id            TEXT PRIMARY KEY,                 -- UUID v4
    name          TEXT NOT NULL UNIQUE,
    role          TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    -- argon2id PHC string; the only way a password is kept.
    password_hash TEXT NOT NULL,
    disabled      INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    created_at    INTEGER NOT NULL
);

-- API tokens for agent hosts and scripts. Only the SHA-256 of the token is
-- stored: a token has 256 random bits, so a slow hash would add nothing, and
-- lookup by hash means no comparison loop that could leak timing.
CREATE TABLE api_tokens (
    id          TEXT PRIMARY KEY,                   -- UUID v4, shown to operators
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash  BLOB NOT NULL UNIQUE,
    scopes      TEXT NOT NULL,                      -- comma-separated, validated on mint
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);

-- An agent conversation. Values set for a session belong to its creator.
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,                   -- UUID v4
    creator_id  TEXT NOT NULL REFERENCES users (id),
    title       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    archived_at INTEGER
);
CREATE INDEX sessions_by_creator ON sessions (creator_id, created_at);

-- One bearer token per session for the agent: it can act only inside that
-- session and can never read a value.
CREATE TABLE agent_tokens (
    token_hash BLOB PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
);
CREATE INDEX agent_tokens_by_session ON agent_tokens (session_id);

-- Data keys, each wrapped (AES-256-GCM) by the key-encryption key that HKDF
-- derives from the master key. The newest key_id encrypts new writes; older
-- ones stay until `keys reencrypt` has moved every row off them.
CREATE TABLE keyring (
    key_id      INTEGER PRIMARY KEY,
    nonce       BLOB NOT NULL,
    wrapped_key BLOB NOT NULL,
    created_at  INTEGER NOT NULL
);

-- Env var values, encrypted. A global value applies to all of the owner's
-- sessions; a session value to one session and overrides a global one of the
-- same name. The AAD of each ciphertext binds owner, scope, session, name and
-- key_id, so a ciphertext copied onto another row does not decrypt.
CREATE TABLE env_vars (
    id          INTEGER PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scope       TEXT NOT NULL CHECK (scope IN ('global', 'session')),
    session_id  TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    key_id      INTEGER NOT NULL REFERENCES keyring (key_id),
    nonce       BLOB NOT NULL,
    ciphertext  BLOB NOT NULL,
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL REFERENCES users (id),
    CHECK ((scope = 'global') = (session_id IS NULL))
);
-- One value per owner and name globally, one per owner, session and name.
CREATE UNIQUE INDEX env_vars_global_name ON env_vars (owner_id, name) WHERE scope = 'global';
CREATE UNIQUE INDEX env_vars_session_name ON env_vars (owner_id, session_id, name) WHERE scope = 'session';
CREATE INDEX env_vars_by_key ON env_vars (key_id);
