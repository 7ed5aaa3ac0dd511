-- A session's pending widgets, counted on every creation (the pending cap).
-- Without it a plan made while `widgets` had no statistics yet (a new
-- database, before autovacuum's first ANALYZE) counted through the partial
-- index of every pending widget of the deployment, filtering by session.
CREATE INDEX widgets_pending_by_session ON widgets (session_id) WHERE status = 'pending';
