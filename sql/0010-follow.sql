-- 0010-follow.sql - the order rows were stored in, for `traceq --follow`
-- (see schema.sql, "Storage order").

-- seq: the storage sequence number of the block's first row. Every row
-- the collector stores gets the next number, across all event types, in
-- the order the writer inserts them (commit order: one writer), so the
-- block's rows are seq .. seq + (hi - lo). Blocks of one transaction
-- become visible together, and a reader never sees a block without every
-- block of a lower seq, so "the blocks from seq C on" is a cursor a
-- reader can resume from.
ALTER TABLE ts_blocks ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;

-- The blocks already stored, numbered in the order they were written.
UPDATE ts_blocks SET seq = n.seq FROM
	(SELECT rowid AS r, sum(hi - lo + 1) OVER (ORDER BY rowid) - (hi - lo) AS seq
	 FROM ts_blocks) AS n
	WHERE n.r = ts_blocks.rowid;

CREATE INDEX ts_blocks_seq ON ts_blocks (seq);
