-- Eight creations in one transaction with one statement of each kind for all
-- eight (the locks, the reads, the buckets, the writes): what grouping
-- creations into shared statements would give.
\set s1 random(0, 1999) * 8 + 1
\set w1 random(1, 9000000000000000000)
\set s2 random(0, 1999) * 8 + 2
\set w2 random(1, 9000000000000000000)
\set s3 random(0, 1999) * 8 + 3
\set w3 random(1, 9000000000000000000)
\set s4 random(0, 1999) * 8 + 4
\set w4 random(1, 9000000000000000000)
\set s5 random(0, 1999) * 8 + 5
\set w5 random(1, 9000000000000000000)
\set s6 random(0, 1999) * 8 + 6
\set w6 random(1, 9000000000000000000)
\set s7 random(0, 1999) * 8 + 7
\set w7 random(1, 9000000000000000000)
\set s8 random(0, 1999) * 8 + 8
\set w8 random(1, 9000000000000000000)
BEGIN;
SELECT 1 FROM (SELECT pg_advisory_xact_lock_shared(8604518958314578945)) AS locked;
SELECT count(pg_advisory_xact_lock(1, k)) FROM (SELECT unnest(ARRAY[:s1::int, :s2::int, :s3::int, :s4::int, :s5::int, :s6::int, :s7::int, :s8::int]) AS k ORDER BY 1) AS keys;
SELECT id, creator_id, title, created_at, archived_at, others_can, (SELECT count(*) FROM widgets WHERE session_id = s.id AND status = 'pending') AS pending, (SELECT string_agg(name, ',') FROM (SELECT name FROM env_vars WHERE owner_id = s.creator_id AND scope = 'global' UNION SELECT name FROM env_vars WHERE owner_id = s.creator_id AND scope = 'session' AND session_id = s.id) AS names) AS ahead FROM sessions AS s WHERE s.id = ANY(ARRAY['s' || :s1::text, 's' || :s2::text, 's' || :s3::text, 's' || :s4::text, 's' || :s5::text, 's' || :s6::text, 's' || :s7::text, 's' || :s8::text]);
INSERT INTO rate_limits (key, tokens, updated_at) SELECT E'agent\x3a' || k, 30 - 1, 1796218337378 FROM unnest(ARRAY['s' || :s1::text, 's' || :s2::text, 's' || :s3::text, 's' || :s4::text, 's' || :s5::text, 's' || :s6::text, 's' || :s7::text, 's' || :s8::text]) AS k ON CONFLICT (key) DO UPDATE SET tokens = LEAST(30, rate_limits.tokens + GREATEST(1796218337378 - rate_limits.updated_at, 0) * 0.0005) - 1, updated_at = 1796218337378 WHERE LEAST(30, rate_limits.tokens + GREATEST(1796218337378 - rate_limits.updated_at, 0) * 0.0005) >= -1000000 RETURNING tokens;
WITH src AS (SELECT * FROM unnest(ARRAY['01a236f4-' || :w1::text, '01a236f4-' || :w2::text, '01a236f4-' || :w3::text, '01a236f4-' || :w4::text, '01a236f4-' || :w5::text, '01a236f4-' || :w6::text, '01a236f4-' || :w7::text, '01a236f4-' || :w8::text], ARRAY['s' || :s1::text, 's' || :s2::text, 's' || :s3::text, 's' || :s4::text, 's' || :s5::text, 's' || :s6::text, 's' || :s7::text, 's' || :s8::text]) AS t(wid, sid)), w AS (INSERT INTO widgets (id, session_id, kind, params, status, result, created_at, expires_at, resolved_at, resolved_by) SELECT wid, sid, 'env_vars', '{"names":["BENCH_NEW_13"],"reason":"to run the benchmark","default_scope":"session"}', 'pending', NULL, 1796218337373, 1796823137373, NULL, NULL FROM src RETURNING id, session_id), m AS (INSERT INTO messages (session_id, kind, role, widget_id, created_at) SELECT w.session_id, 'widget', 'agent', w.id, 1796218337373 FROM w), event AS (INSERT INTO events (session_id, kind, payload, created_at) SELECT sid, E'widget\x3acreated', '{"kind":"env_vars","names":["BENCH_NEW_13"],"status":"pending","widget_id":"01a236f4-b85d-7162-917b-a72444734b19"}', 1796218337373 FROM src) INSERT INTO audit_pending (at, actor, action, session_id, widget_id, names, scope, client_addr, detail) SELECT 1796218337373, E'agent\x3a' || sid, 'widget.create', sid, wid, 'BENCH_NEW_13', NULL, '127.0.0.1', 'kind=env_vars' FROM src;
COMMIT;
