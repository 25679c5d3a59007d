-- 0003-delivery.sql - exactly-once page delivery (see schema.sql).

-- The highest page sequence number stored per agent session and stream.
-- Updated in the same transaction as the page's events, so after a
-- collector crash it is exactly as far as the events are.
CREATE TABLE stream_marks (
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	boot_id		TEXT NOT NULL,
	session		INTEGER NOT NULL,	-- the agent run's random id
	stream		INTEGER NOT NULL,	-- CPU number
	seq		INTEGER NOT NULL,	-- highest page stored
	PRIMARY KEY (host_id, boot_id, session, stream)
) WITHOUT ROWID;

-- Pages the collector received again and dropped (already stored), and the
-- agent's delivery counters from its cpu_stats.
ALTER TABLE cpus ADD COLUMN dup_pages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN resent_pages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN lost_pages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN lost_events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN pages_mmap INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN pages_splice INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN pages_read INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN copied_bytes INTEGER NOT NULL DEFAULT 0;
