-- 0006-journal.sql - the collector's receive journal (see schema.sql).

-- How far each journal file (server/journal.h; one per agent connection,
-- named by this number) is stored: the end of its last record whose pages
-- are in the store. Written in the transaction that stores them, so after
-- a crash the collector stores again exactly what follows.
CREATE TABLE journal_marks (
	file		INTEGER PRIMARY KEY,	-- the journal file's number
	pos		INTEGER NOT NULL	-- byte offset in it
);
