-- 0009-snapshots.sql - the flight recorders' snapshots (issue 38, as
-- sql/0017-snapshots.sql on SQLite; server/store/clickhouse_snapshots.c).
-- Rows are facts, written again harmlessly (a journal replay): a snapshot
-- is read as its rows grouped by id, a host's part as its rows grouped by
-- (snapshot_id, host_id), each column the latest row's (version: the
-- collector's realtime when written; a done row wins over an asked one).
CREATE TABLE IF NOT EXISTS snapshots (
	id		UInt64,
	asked_ns	Int64,
	reason		String,
	who		String,
	version		Int64
) {{ENGINE snapshots ReplacingMergeTree(version)}} ORDER BY id;

CREATE TABLE IF NOT EXISTS snapshot_hosts (
	snapshot_id	UInt64,
	host_id		UInt64,
	done		UInt8,
	pages		UInt64,
	events		UInt64,
	lost		UInt64,
	has_window	UInt8,
	first_ts	Int64,
	last_ts		Int64,
	first_trace	UInt64,
	last_trace	UInt64,
	version		Int64
) {{ENGINE snapshot_hosts ReplacingMergeTree(version)}} ORDER BY (snapshot_id, host_id);
