-- Rate limits shared by every daemon of the deployment (see the SQLite
-- twin, migrations/sqlite/0009_rate_limits.sql).
CREATE TABLE rate_limits (
    key         TEXT PRIMARY KEY,
    tokens      DOUBLE PRECISION NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX rate_limits_idle ON rate_limits (updated_at);
