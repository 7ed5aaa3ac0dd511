-- Which MCP elicitation modes a session allows (see the SQLite twin,
-- migrations/sqlite/0012_session_elicitation.sql).
ALTER TABLE sessions ADD COLUMN elicitation TEXT
    CHECK (elicitation IN ('off', 'url', 'form', 'both'));
