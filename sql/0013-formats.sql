-- 0013-formats.sql - event formats per host and boot (see schema.sql,
-- "Formats per host and boot").

-- Each distinct format text of an event type, as an agent sent it. Two
-- hosts (or two boots of one host) that send the same text share a row.
CREATE TABLE formats (
	id		INTEGER PRIMARY KEY,
	type_id		INTEGER NOT NULL REFERENCES event_types(id),
	text		TEXT NOT NULL
);
CREATE INDEX formats_type ON formats (type_id);

-- The fields of a format in its order, and the column of the event table
-- each one is stored in (a field of another kind than the column of its
-- name has a column of its own: see event_fields). type is the C type as
-- the format gives it ('' for formats stored before this migration).
CREATE TABLE format_fields (
	format_id	INTEGER NOT NULL REFERENCES formats(id),
	ordinal		INTEGER NOT NULL,
	name		TEXT NOT NULL,
	col		TEXT NOT NULL,
	type		TEXT NOT NULL,
	PRIMARY KEY (format_id, ordinal)
) WITHOUT ROWID;

-- Which format a host sent for a type in a boot, from when (since: the
-- wall-clock ns of the connection that sent it first).
CREATE TABLE host_formats (
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	boot_id		TEXT NOT NULL,
	type_id		INTEGER NOT NULL REFERENCES event_types(id),
	format_id	INTEGER NOT NULL REFERENCES formats(id),
	since		INTEGER NOT NULL,
	PRIMARY KEY (host_id, type_id, boot_id, format_id)
) WITHOUT ROWID;
CREATE INDEX host_formats_format ON host_formats (format_id);

-- event_fields was one row per (type, field name); a name may now have a
-- column per kind, so it is one row per (type, column). kind is the
-- column's, for good.
CREATE TABLE event_fields_13 (
	type_id		INTEGER NOT NULL REFERENCES event_types(id),
	name		TEXT NOT NULL,
	col		TEXT NOT NULL,	-- column in the event table
	kind		TEXT NOT NULL,	-- signed, unsigned, string, blob
	size		INTEGER NOT NULL,
	ordinal		INTEGER NOT NULL,
	PRIMARY KEY (type_id, col)
) WITHOUT ROWID;
INSERT INTO event_fields_13 SELECT type_id, name, col, kind, size, ordinal FROM event_fields;
DROP TABLE event_fields;
ALTER TABLE event_fields_13 RENAME TO event_fields;

-- The rows stored so far are of each type's latest format: one formats
-- row each, with the columns of every field (sqlite_schema.c then gives
-- each event table its _tc_fmt column, defaulting to that format).
INSERT INTO formats (type_id, text) SELECT id, format FROM event_types ORDER BY id;
INSERT INTO format_fields (format_id, ordinal, name, col, type)
	SELECT f.id, e.ordinal, e.name, e.col, ''
	FROM event_fields e JOIN formats f ON f.type_id = e.type_id;
