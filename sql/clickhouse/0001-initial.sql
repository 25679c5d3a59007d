-- 0001-initial.sql - the ClickHouse backend's fixed tables (issue 32).
-- The design and the why are in server/store/clickhouse.h. Statements are
-- separated by a line ending in ';' (the backend runs them one by one:
-- ClickHouse's HTTP interface takes one statement per request). Every
-- table is written so that 18.16 and later releases take it. A table's
-- engine is written {{ENGINE TABLE X(...)}}: server/store/clickhouse.c makes
-- it "ENGINE = X(...)", or its Replicated twin with ?replicated.
--
-- Event tables (ev_<system>_<name>, one per event type) are made at run
-- time, server/store/clickhouse_schema.c:
--   host_id UInt64, cpu UInt32, ts Int64, trace_ts UInt64, _tc_fmt Int64,
--   _tc_commit UInt64, _tc_row UInt64, then a column per (field, kind):
--   Int64 signed, UInt64 unsigned, String string and blob.
--   ENGINE MergeTree PARTITION BY toYYYYMMDD(ts day) ORDER BY (host_id, ts)

-- One row per commit that completed: the last thing a commit writes. A row
-- of a counted table whose _tc_commit has no row here belongs to a commit
-- that did not complete, and is deleted before the writer stores again.
CREATE TABLE IF NOT EXISTS commits (
	id		UInt64,
	ts		Int64,
	collector	String
) {{ENGINE commits MergeTree()}} ORDER BY id;

-- Hosts: host_id is a stable hash of the name (clickhouse_host.c), so two
-- collectors give a host the same id. The latest row of a host wins.
CREATE TABLE IF NOT EXISTS hosts (
	host_id		UInt64,
	name		String,
	machine_id	String,
	boot_id		String,
	kernel		String,
	ncpus		UInt32,
	page_size	UInt32,
	trace_clock	String,
	clock_offset_ns	Int64,
	peer_subject	String,
	agent		String,
	first_seen	Int64,
	last_seen	Int64,
	version		UInt64
) {{ENGINE hosts ReplacingMergeTree(version)}} ORDER BY host_id;

-- What the collector received and stored per CPU, added to: one row per
-- commit and CPU, read as sums.
CREATE TABLE IF NOT EXISTS cpu_counts (
	host_id		UInt64,
	cpu		UInt32,
	pages		UInt64,
	events		UInt64,
	bytes		UInt64,
	dup_pages	UInt64,
	bad_pages	UInt64,
	bad_events	UInt64,
	rate_held_pages	UInt64,
	rate_held_ms	UInt64,
	quota_held_pages UInt64,
	quota_held_ms	UInt64,
	_tc_commit	UInt64
) {{ENGINE cpu_counts MergeTree()}} ORDER BY (host_id, cpu);

-- What the agent reported per CPU (overwritten by each report: the row
-- with the highest version wins).
CREATE TABLE IF NOT EXISTS cpu_agent (
	host_id		UInt64,
	cpu		UInt32,
	agent_pages	UInt64,
	agent_events	UInt64,
	agent_bytes	UInt64,
	overrun		UInt64,
	dropped		UInt64,
	commit_overrun	UInt64,
	resent_pages	UInt64,
	lost_pages	UInt64,
	lost_events	UInt64,
	pages_mmap	UInt64,
	pages_splice	UInt64,
	pages_read	UInt64,
	copied_bytes	UInt64,
	version		UInt64
) {{ENGINE cpu_agent ReplacingMergeTree(version)}} ORDER BY (host_id, cpu);

-- Events not kept, per host, system, name and reason; added to.
CREATE TABLE IF NOT EXISTS drops (
	host_id		UInt64,
	system		String,
	name		String,
	reason		String,
	n		UInt64,
	_tc_commit	UInt64
) {{ENGINE drops MergeTree()}} ORDER BY (host_id, system, name, reason);

-- The highest page sequence stored per agent stream (read as max).
CREATE TABLE IF NOT EXISTS stream_marks (
	host_id		UInt64,
	boot_id		String,
	session		UInt64,
	stream		UInt32,
	seq		UInt64,
	_tc_commit	UInt64
) {{ENGINE stream_marks MergeTree()}} ORDER BY (host_id, boot_id, session, stream);

-- How far each receive journal file of a collector is stored (read as max).
CREATE TABLE IF NOT EXISTS journal_marks (
	collector	String,
	file		UInt64,
	pos		UInt64,
	_tc_commit	UInt64
) {{ENGINE journal_marks MergeTree()}} ORDER BY (collector, file);

-- Event types, their columns, formats and who sent which format.
-- type_id and format_id are stable hashes (of system:name, of the text).
CREATE TABLE IF NOT EXISTS event_types (
	type_id		Int64,
	system		String,
	name		String,
	table_name	String,
	format_id	Int64,
	version		UInt64
) {{ENGINE event_types ReplacingMergeTree(version)}} ORDER BY type_id;

CREATE TABLE IF NOT EXISTS event_fields (
	type_id		Int64,
	col		String,
	name		String,
	kind		String,
	size		UInt32,
	ordinal		UInt32
) {{ENGINE event_fields ReplacingMergeTree()}} ORDER BY (type_id, col);

CREATE TABLE IF NOT EXISTS formats (
	format_id	Int64,
	type_id		Int64,
	text		String
) {{ENGINE formats ReplacingMergeTree()}} ORDER BY format_id;

CREATE TABLE IF NOT EXISTS format_fields (
	format_id	Int64,
	idx		UInt32,
	col		String,
	ctype		String
) {{ENGINE format_fields ReplacingMergeTree()}} ORDER BY (format_id, idx);

CREATE TABLE IF NOT EXISTS host_formats (
	host_id		UInt64,
	boot_id		String,
	type_id		Int64,
	format_id	Int64,
	since		Int64
) {{ENGINE host_formats ReplacingMergeTree()}} ORDER BY (host_id, boot_id, type_id, format_id);

-- Task names and thread groups per host (the latest row of a pid wins).
CREATE TABLE IF NOT EXISTS comms (
	host_id		UInt64,
	pid		Int32,
	comm		String,
	version		UInt64
) {{ENGINE comms ReplacingMergeTree(version)}} ORDER BY (host_id, pid);

CREATE TABLE IF NOT EXISTS tgids (
	host_id		UInt64,
	pid		Int32,
	tgid		Int32,
	version		UInt64
) {{ENGINE tgids ReplacingMergeTree(version)}} ORDER BY (host_id, pid);

CREATE TABLE IF NOT EXISTS comm_changes (
	host_id		UInt64,
	pid		Int32,
	trace_ts	Int64,
	ts		Int64,
	tick_ns		Float64,
	old		String,
	is_rename	UInt8,
	comm		String
) {{ENGINE comm_changes ReplacingMergeTree()}} ORDER BY (host_id, pid, trace_ts);

-- Programs whose addresses may be named, and their symbols.
-- program_id is a stable hash of (host, boot, session, group, pid).
CREATE TABLE IF NOT EXISTS programs (
	program_id	UInt64,
	host_id		UInt64,
	boot_id		String,
	session		UInt64,
	grp		UInt32,
	pid		Int32,
	comm		String,
	first_stream	UInt32,
	nstreams	UInt32,
	since_ns	Int64
) {{ENGINE programs ReplacingMergeTree()}} ORDER BY program_id;

CREATE TABLE IF NOT EXISTS symbols (
	program_id	UInt64,
	addr		UInt64,
	size		UInt64,
	name		String
) {{ENGINE symbols ReplacingMergeTree()}} ORDER BY (program_id, addr);

-- The kernel's printk_formats per host and boot.
CREATE TABLE IF NOT EXISTS printk_formats (
	host_id		UInt64,
	boot_id		String,
	since		Int64,
	addr		UInt64,
	fmt		String
) {{ENGINE printk_formats ReplacingMergeTree()}} ORDER BY (host_id, boot_id, addr);

-- Bytes retention gave back, per host (added to).
CREATE TABLE IF NOT EXISTS freed (
	host_id		UInt64,
	bytes		UInt64,
	_tc_commit	UInt64
) {{ENGINE freed MergeTree()}} ORDER BY host_id;
