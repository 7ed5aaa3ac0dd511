-- The auth epoch: one counter, bumped in the same transaction as every
-- change that can take a credential or an access away (a token revoked, a
-- user disabled or given another role, a password changed, a share taken
-- back, a session archived). Daemons cache who a token is and what a
-- caller may do, and check this one row (one cheap read shared by every
-- request that arrives meanwhile) before trusting the cache, so such a
-- change counts from the next request on, whichever process made it.
CREATE TABLE auth_epoch (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    epoch  INTEGER NOT NULL
);
INSERT INTO auth_epoch (id, epoch) VALUES (1, 0);
