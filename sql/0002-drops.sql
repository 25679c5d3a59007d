-- 0002-drops.sql - events the collector did not keep, and why (see schema.sql).

CREATE TABLE drops (
	host_id		INTEGER NOT NULL,	-- hosts.id; 0 when not per host
	system		TEXT NOT NULL,
	name		TEXT NOT NULL,
	reason		TEXT NOT NULL,		-- 'filter' or 'retention'
	count		INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (host_id, system, name, reason)
) WITHOUT ROWID;
