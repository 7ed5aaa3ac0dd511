-- A session's pending widgets, counted on every creation (the pending cap);
-- the same index as PostgreSQL's 0018.
CREATE INDEX widgets_pending_by_session ON widgets (session_id) WHERE status = 'pending';
