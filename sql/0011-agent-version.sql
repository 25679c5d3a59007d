-- 0011-agent-version.sql - which agent program and version each host ran
-- (see schema.sql, "Agent versions"): for traceq --hosts.

-- agent: the latest HELLO's optional "agent" (e.g. "traceagent 0.1.0");
-- NULL for hosts whose agent did not say (older agents) and for imports.
ALTER TABLE hosts ADD COLUMN agent TEXT;
