-- 0012-void-ids.sql - commit ids given up (server/store/clickhouse_txn.c).
-- A row (lo, hi, slot) says: every id i with lo < i <= hi and i % 64 = slot
-- (the ids of collector number slot, --collector-id) is void, whether or
-- not `commits` has a row for it, now or later. A writer adds one before it
-- deletes the rows of commits it gave up (at open: those after the last
-- one of its own that completed, up to the last id it reserved; at the
-- begin after a failed commit: up to that commit), so that a late commits
-- row of one of them (a request the server held) never makes its rows
-- read as events, in the moment before the deletion is done or ever.
-- Readers take a commit as completed iff it has a commits row and no void
-- row covers it (CH_COMMITTED, server/store/clickhouse_int.h). Nothing
-- deletes from this table: a writer writes one row per restart or failed
-- commit, and the ids it covers are never used again (commit_ids).
CREATE TABLE IF NOT EXISTS void_ids (
	lo		UInt64,
	hi		UInt64,
	slot		UInt32,
	ts		Int64,
	collector	String
) {{ENGINE void_ids MergeTree()}} ORDER BY (slot, hi);
