-- 0008-host-limits.sql - per-host limits (tracecollectd --host-rate,
-- --host-quota, --host-limit; see schema.sql).

-- Pages of a CPU whose reading the collector held back because their host
-- was over its events/s (rate_*) or its bytes-stored quota (quota_*), and
-- how long they waited (ms). Nothing is dropped for it: the agent keeps
-- the pages meanwhile; what it loses is in its own lost_* counters.
ALTER TABLE cpus ADD COLUMN rate_held_pages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN rate_held_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN quota_held_pages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN quota_held_ms INTEGER NOT NULL DEFAULT 0;

-- Bytes of the host's quota that retention gave back: a host stores
-- sum(cpus.bytes) - freed_bytes. Retention removes rows, not pages, so
-- each removed row gives back its host's page bytes per stored event.
ALTER TABLE hosts ADD COLUMN freed_bytes INTEGER NOT NULL DEFAULT 0;
