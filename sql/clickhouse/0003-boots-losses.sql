-- 0003-boots-losses.sql - what an export to trace.dat needs of a host
-- besides its rows (issue 33, as sql/0014-losses.sql on SQLite), so that a
-- second collector needs nothing from this one's disk to write it
-- (server/store/clickhouse_boots.c).

-- A host's boot as its kernel describes itself: HELLO's layout and clock,
-- HEADER_PAGE's texts. One row per store_boot() call (a fact, written
-- again harmlessly); read per (host_id, boot_id) as SQLite's one row is
-- kept: since of the first row (lowest version), each other column the
-- latest row's that told it (NULL: not told, skipped by argMax).
CREATE TABLE IF NOT EXISTS host_boots (
	host_id		UInt64,
	boot_id		String,
	since		Int64,
	kernel		Nullable(String),
	trace_clock	Nullable(String),
	long_size	Nullable(UInt32),
	big_endian	Nullable(UInt8),
	page_size	Nullable(UInt32),
	header_page	Nullable(String),
	header_event	Nullable(String),
	version		UInt64
) {{ENGINE host_boots MergeTree()}} ORDER BY (host_id, boot_id);

-- Where a kernel lost events: one row per page whose header carried the
-- missed-events flag, written (counted, _tc_commit) in the commit that
-- stores the page's events. lost is -1 when the kernel did not say how
-- many. A page is one loss however often it is stored: reads group by
-- (host_id, boot_id, cpu, trace_ts), the first commit's count winning,
-- as SQLite's unique index keeps the first row. loss_id is a stable hash
-- of that key: the paging key after ts (SQLite's rowid).
CREATE TABLE IF NOT EXISTS losses (
	host_id		UInt64,
	boot_id		String,
	cpu		UInt32,
	ts		Int64,
	trace_ts	UInt64,
	lost		Int64,
	loss_id		Int64,
	_tc_commit	UInt64
) {{ENGINE losses MergeTree()}} PARTITION BY toYYYYMMDD(toDateTime(intDiv(ts, 1000000000)))
ORDER BY (host_id, ts);
