-- 0017-snapshots.sql - the flight recorders' snapshots (issue 38; see
-- schema.sql, "Snapshots").

-- One row per snapshot: who asked (an identity, or the host whose
-- --freeze-on trigger fired), why, and when (the collector's realtime, ns).
CREATE TABLE snapshots (
	id		INTEGER PRIMARY KEY,
	asked_ns	INTEGER NOT NULL,
	reason		TEXT NOT NULL,
	who		TEXT NOT NULL
);

-- One row per snapshot and host that was told to freeze. done is 0 until
-- the agent said what its buffer held (MSG_SNAP_END): its pages and events,
-- the events the kernel overwrote before the freeze (lost: the overrun
-- since the host's last snapshot), and the window its events span
-- (first_ts, last_ts: wall-clock ns as the events are stored; NULL when it
-- held none; first_trace, last_trace: the same in the host's trace clock,
-- as the events' trace_ts, which a read selects by: the wall-clock times
-- may move by a clock measurement between the pages and the end).
CREATE TABLE snapshot_hosts (
	snapshot_id	INTEGER NOT NULL REFERENCES snapshots(id),
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	done		INTEGER NOT NULL DEFAULT 0,
	pages		INTEGER NOT NULL DEFAULT 0,
	events		INTEGER NOT NULL DEFAULT 0,
	lost		INTEGER NOT NULL DEFAULT 0,
	first_ts	INTEGER,
	last_ts		INTEGER,
	first_trace	INTEGER,
	last_trace	INTEGER,
	PRIMARY KEY (snapshot_id, host_id)
);
