-- The audit seal and the NOTIFY, run by one client beside the creations, as
-- each daemon runs one sealer.
BEGIN;
SELECT 1 FROM (SELECT pg_advisory_xact_lock(8604518958314578946)) AS locked;
WITH taken AS (DELETE FROM audit_pending WHERE id IN (SELECT id FROM audit_pending ORDER BY id LIMIT 500) RETURNING id, at, actor, action, session_id, widget_id, names, scope, client_addr, detail) INSERT INTO audit_log (at, actor, action, session_id, widget_id, names, scope, client_addr, detail, prev_hash, hash) SELECT at, actor, action, session_id, widget_id, names, scope, client_addr, detail, '\x00'::bytea, '\x01'::bytea FROM taken LEFT JOIN (SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1) AS head ON true;
COMMIT;
SELECT count(*) FROM (SELECT pg_notify('widgetd_changes', s) FROM unnest(string_to_array('s1,s2,s3,s4', ',')) AS s) AS sent;
