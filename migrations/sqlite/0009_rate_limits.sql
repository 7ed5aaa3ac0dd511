-- Rate limits: login attempts per client address and per user name, and
-- what each agent adds to its session. Kept in the database rather than in
-- a daemon's memory so that they hold across every daemon of a deployment
-- (several daemons on one PostgreSQL database share one set of buckets).
-- A row is a token bucket: `tokens` left at `updated_at`, refilled by the
-- clock in code. Keys: `ip:<address>`, `user:<SHA-256 of the name as
-- typed>` (never the name itself), `agent:<session id>`. Rows idle for an
-- hour are full again and are deleted by the background sweep.
CREATE TABLE rate_limits (
    key         TEXT PRIMARY KEY,
    tokens      REAL NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX rate_limits_idle ON rate_limits (updated_at);
