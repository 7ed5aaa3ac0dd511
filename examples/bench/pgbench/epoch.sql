-- The auth epoch read that requests share.
SELECT epoch, pg_snapshot_xmax(snapshot)::text::bigint, (SELECT count(*) FROM pg_snapshot_xip(snapshot)) FROM auth_epoch, pg_current_snapshot() AS snapshot WHERE id = 1;
