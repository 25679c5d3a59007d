-- 0002-commit-ids.sql - commit ids the writer has reserved (clickhouse_txn.c).
-- Before a commit sends a row carrying its _tc_commit, the writer has a row
-- here with hw >= its id, acknowledged; rows here are never deleted (no
-- cleanup, no retention touches this table). A writer that opens numbers
-- from above max(hw) and max(id) of commits, so no id is ever used twice,
-- even for a commit whose rows were deleted (server/store/clickhouse.h).
-- The writer reserves ids in blocks: one row here per block, not per commit.
CREATE TABLE IF NOT EXISTS commit_ids (
	hw		UInt64,
	ts		Int64,
	collector	String
) {{ENGINE commit_ids MergeTree()}} ORDER BY hw;
