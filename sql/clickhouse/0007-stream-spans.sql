-- 0007-stream-spans.sql - stored pages per agent stream as spans (issue
-- 35): several collectors share the database, and one that takes an
-- agent's session over (failover) may store pages below those another
-- stored. One row per commit and stream that stored pages lo..hi; read as
-- their union (server/store/clickhouse_meta.c), with stream_marks' old
-- rows read as 0..seq. Counted: rows of an unfinished commit are deleted.
CREATE TABLE IF NOT EXISTS stream_spans (
	host_id		UInt64,
	boot_id		String,
	session		UInt64,
	stream		UInt32,
	lo		UInt64,
	hi		UInt64,
	_tc_commit	UInt64
) {{ENGINE stream_spans MergeTree()}} ORDER BY (host_id, boot_id, session, stream, lo);
