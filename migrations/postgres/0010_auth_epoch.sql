-- The auth epoch (see the SQLite twin, migrations/sqlite/0010_auth_epoch.sql).
CREATE TABLE auth_epoch (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    epoch  BIGINT NOT NULL
);
INSERT INTO auth_epoch (id, epoch) VALUES (1, 0);
