-- Which MCP elicitation modes a session allows (`off`, `url`, `form`,
-- `both`), set when it is created; NULL: whatever the daemon allows.
ALTER TABLE sessions ADD COLUMN elicitation TEXT
    CHECK (elicitation IN ('off', 'url', 'form', 'both'));
