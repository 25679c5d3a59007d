-- 0008-live-hosts.sql - which collector each host is connected to, in a
-- database several collectors share (issue 35). Every 5 s each collector
-- writes one row per host connected to it and one with host_id 0 (itself),
-- all with the same `seen` (ns, its wall clock). A host is connected to
-- collector C when its row carries C's latest `seen` and that is recent
-- (server/store/clickhouse_fleet.c). Replacing: only each (host,
-- collector)'s latest row stays after merges.
CREATE TABLE IF NOT EXISTS live_hosts (
	host_id		UInt64,
	collector	String,
	slot		UInt32,
	seen		Int64
) {{ENGINE live_hosts ReplacingMergeTree(seen)}} ORDER BY (host_id, collector);
