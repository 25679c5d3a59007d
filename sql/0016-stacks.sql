-- 0016-stacks.sql - kernel stacks stored once each (issue 38; see
-- schema.sql, "Stacks").

-- One row per distinct stack: frames is the stack record's caller[] as
-- the host wrote it (its addresses in the host's long size and byte
-- order). An event row of ftrace:kernel_stack or ftrace:user_stack holds
-- the id in its caller column instead of the frames; rows stored before
-- this migration keep their frames there (a BLOB), and the read side
-- takes either (coalesce of the stacks row and the column itself).
-- No index on the frames: the writer finds a stack by a hash of its
-- frames in memory and compares the frames themselves (sqlite_stacks.c).
CREATE TABLE stacks (
	id		INTEGER PRIMARY KEY,
	frames		BLOB NOT NULL
);
