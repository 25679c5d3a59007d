-- 0001-initial.sql - the fixed tables (see schema.sql for the design).

CREATE TABLE hosts (
	id		INTEGER PRIMARY KEY,
	name		TEXT NOT NULL,
	machine_id	TEXT NOT NULL,
	boot_id		TEXT,
	kernel		TEXT,
	ncpus		INTEGER,
	page_size	INTEGER,
	trace_clock	TEXT,
	clock_offset_ns	INTEGER,	-- realtime - trace clock, latest sample
	peer_subject	TEXT,		-- the agent certificate's subject
	first_seen	INTEGER NOT NULL,	-- wall clock ns
	last_seen	INTEGER NOT NULL,
	UNIQUE (machine_id, name)
);

CREATE TABLE cpus (
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	cpu		INTEGER NOT NULL,
	pages		INTEGER NOT NULL DEFAULT 0,	-- received and stored
	events		INTEGER NOT NULL DEFAULT 0,
	bytes		INTEGER NOT NULL DEFAULT 0,
	agent_pages	INTEGER NOT NULL DEFAULT 0,	-- as the agent reported
	agent_events	INTEGER NOT NULL DEFAULT 0,
	agent_bytes	INTEGER NOT NULL DEFAULT 0,
	overrun		INTEGER NOT NULL DEFAULT 0,	-- kernel per_cpu stats
	dropped		INTEGER NOT NULL DEFAULT 0,
	commit_overrun	INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (host_id, cpu)
) WITHOUT ROWID;

CREATE TABLE event_types (
	id		INTEGER PRIMARY KEY,
	system		TEXT NOT NULL,
	name		TEXT NOT NULL,
	table_name	TEXT NOT NULL UNIQUE,
	format		TEXT NOT NULL,	-- the latest format file seen
	UNIQUE (system, name)
);

CREATE TABLE event_fields (
	type_id		INTEGER NOT NULL REFERENCES event_types(id),
	name		TEXT NOT NULL,
	col		TEXT NOT NULL,	-- column in the event table
	kind		TEXT NOT NULL,	-- signed, unsigned, string, blob
	size		INTEGER NOT NULL,
	ordinal		INTEGER NOT NULL,
	PRIMARY KEY (type_id, name)
) WITHOUT ROWID;

CREATE TABLE comms (
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	pid		INTEGER NOT NULL,
	comm		TEXT NOT NULL,
	PRIMARY KEY (host_id, pid)
) WITHOUT ROWID;
