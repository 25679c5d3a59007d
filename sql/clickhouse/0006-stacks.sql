-- 0006-stacks.sql - kernel stacks stored once each (issue 38), as
-- sql/0016-stacks.sql on SQLite: one row per host and distinct stack,
-- id = SHA-256 (63 bits) of the host and the frames (the same on every
-- collector); a fact, written again harmlessly. A kernel_stack or
-- user_stack row's caller holds a 9-byte reference to it (\1, then the id
-- little-endian); rows stored before keep their frames there
-- (server/store/clickhouse_stacks.h).
CREATE TABLE IF NOT EXISTS stacks (
	host_id		UInt64,
	id		UInt64,
	frames		String
) {{ENGINE stacks ReplacingMergeTree()}} ORDER BY (host_id, id);
