-- 0005-clock-points.sql - the collector's measurements of each host's
-- trace clock (issue 36), as sql/0015-clock-points.sql on SQLite: one row
-- per measurement (a burst of clock probes, its best round trip); a fact,
-- written again harmlessly by a journal replay. traceq --hosts reads each
-- host's latest (version) (server/store/clickhouse_boots.c,
-- clickhouse_reader.c). disagree_ns NULL: the host had sent no sample.
CREATE TABLE IF NOT EXISTS clock_points (
	host_id		UInt64,
	boot_id		String,
	trace_ns	UInt64,
	realtime_ns	Int64,
	uncertainty_ns	UInt64,
	drift_ppb	Int64,
	disagree_ns	Nullable(Int64),
	measured	UInt8,
	version		UInt64
) {{ENGINE clock_points MergeTree()}} ORDER BY (host_id, boot_id, trace_ns);
