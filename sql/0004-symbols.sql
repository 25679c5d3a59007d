-- 0004-symbols.sql - function symbols, so addresses in events can be named
-- (see schema.sql).

-- One row per traced program an agent announced (MSG_GROUP), and per agent
-- run for the kernel (grp 0). An event row carries its thread id
-- (common_pid), not its program, so the query side tries the host's
-- programs announced no later than the row: the one whose pid is the
-- row's first, then the latest few, and takes the first whose symbols
-- cover the address (server/store/sqlite_symbols.c, sq_symbol_name).
CREATE TABLE programs (
	id		INTEGER PRIMARY KEY,
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	boot_id		TEXT NOT NULL,
	session		INTEGER NOT NULL,	-- the agent run's id; 0: none
	grp		INTEGER NOT NULL,	-- MSG_GROUP number; 0: the kernel
	pid		INTEGER NOT NULL,
	comm		TEXT NOT NULL,
	first_stream	INTEGER NOT NULL,
	nstreams	INTEGER NOT NULL,
	since		INTEGER NOT NULL	-- wall-clock ns of the announcing connection
);
-- an agent run announces a program again after each reconnect: one row
CREATE UNIQUE INDEX programs_run ON programs (host_id, boot_id, session, grp)
	WHERE session != 0;
CREATE INDEX programs_since ON programs (host_id, since);

-- Function symbols of a program. addr is the run-time address with its top
-- bit flipped (addr ^ 2^63), so that SQLite's signed integers order like
-- the unsigned addresses (kernel addresses have the top bit set).
CREATE TABLE symbols (
	program_id	INTEGER NOT NULL REFERENCES programs(id),
	addr		INTEGER NOT NULL,
	size		INTEGER NOT NULL,	-- 0: unknown (kallsyms)
	name		TEXT NOT NULL,
	PRIMARY KEY (program_id, addr, name)
) WITHOUT ROWID;
