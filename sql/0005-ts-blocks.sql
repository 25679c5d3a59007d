-- 0005-ts-blocks.sql - a time index per block of rows instead of per row
-- (see schema.sql, "Time index").

-- One row per block of consecutive rows of one event table, written in
-- the transaction that inserts them: the rowid range [lo, hi] and the
-- oldest and newest ts in it. span = max_ts - min_ts, indexed so the
-- widest block of a type is one lookup: every block that can hold a row
-- with ts >= X has min_ts >= X - max(span).
CREATE TABLE ts_blocks (
	type_id		INTEGER NOT NULL REFERENCES event_types(id),
	lo		INTEGER NOT NULL,
	hi		INTEGER NOT NULL,
	min_ts		INTEGER NOT NULL,
	max_ts		INTEGER NOT NULL,
	span		INTEGER NOT NULL
);
CREATE INDEX ts_blocks_min ON ts_blocks (type_id, min_ts);
CREATE INDEX ts_blocks_span ON ts_blocks (type_id, span);

-- The per-row ts indexes of the existing event tables ("<table>_ts") are
-- replaced by blocks of their rows and dropped by the program right after
-- this script, in the same transaction (server/store/sqlite_schema.c, sq_blocks_backfill):
-- their names come from event_types, which SQL alone cannot iterate.
