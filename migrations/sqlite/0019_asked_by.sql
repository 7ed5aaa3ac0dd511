-- Who asked a widget: its session's agent (the agent token: REST, MCP, the
-- agent's hooks) or the host (an API token or a person). The agent may
-- withdraw (`cancel_widget`) or replace (`replaces`) only what it asked
-- itself. Widgets written before this column came from the agent unless
-- the audit log says otherwise; only pending ones can still be withdrawn.
ALTER TABLE widgets ADD COLUMN asked_by TEXT NOT NULL DEFAULT 'agent'
    CHECK (asked_by IN ('agent', 'host'));
UPDATE widgets SET asked_by = 'host'
WHERE status = 'pending' AND id IN (
    SELECT widget_id FROM audit_log
    WHERE action = 'widget.create' AND widget_id IS NOT NULL AND actor NOT LIKE 'agent:%'
);
