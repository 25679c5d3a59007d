-- 0014-losses.sql - what an export to trace.dat needs of a host besides its
-- rows (issue 33; see schema.sql, "Losses and boots").

-- Where a kernel lost events: one row per page whose header carried the
-- missed-events flag (the ring buffer overran before it), written in the
-- transaction that stores the page's events. count is NULL when the
-- kernel did not store how many. ts is the page's timestamp on the wall
-- clock (ns), trace_ts as the page has it: trace-cmd report prints the
-- loss before the page's first event.
CREATE TABLE losses (
	id		INTEGER PRIMARY KEY,
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	boot_id		TEXT NOT NULL,
	cpu		INTEGER NOT NULL,
	ts		INTEGER NOT NULL,
	trace_ts	INTEGER NOT NULL,
	count		INTEGER
);
-- a page is one loss however often it is stored (a replay, a resend)
CREATE UNIQUE INDEX losses_page ON losses (host_id, boot_id, cpu, trace_ts);
CREATE INDEX losses_ts ON losses (ts);

-- A host's boot as its kernel describes itself: HELLO's layout and clock,
-- HEADER_PAGE's texts (header_event only from agents that send it). since
-- is the wall-clock ns of the boot's first connection.
CREATE TABLE host_boots (
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	boot_id		TEXT NOT NULL,
	since		INTEGER NOT NULL,
	kernel		TEXT,
	trace_clock	TEXT,
	long_size	INTEGER,
	big_endian	INTEGER,
	page_size	INTEGER,
	header_page	TEXT,
	header_event	TEXT,
	PRIMARY KEY (host_id, boot_id)
) WITHOUT ROWID;
