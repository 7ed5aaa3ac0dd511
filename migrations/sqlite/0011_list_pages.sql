-- The session list counts each session's pending widgets and finds when
-- its last widget ended, for every session on a page: both along an index,
-- not through all of a session's widgets.
CREATE INDEX widgets_by_session_status ON widgets (session_id, status);
CREATE INDEX widgets_by_session_resolved ON widgets (session_id, resolved_at);
