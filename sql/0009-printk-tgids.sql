-- 0009-printk-tgids.sql - what traceq needs to print events as trace-cmd
-- report does, besides formats and symbols (see schema.sql).

-- The kernel's printk_formats (MSG_PRINTK), once per host and boot: the
-- strings tracepoint_string() pointers and trace_printk() formats point
-- at. fmt is the kernel's text, quotes and escapes included; since is the
-- wall-clock ns of the connection that sent the boot's table first, so
-- that a row at time T reads the table of the boot that was up at T.
CREATE TABLE printk_formats (
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	boot_id		TEXT NOT NULL,
	addr		INTEGER NOT NULL,	-- the address, as a signed 64-bit integer
	fmt		TEXT NOT NULL,
	since		INTEGER NOT NULL,
	PRIMARY KEY (host_id, boot_id, addr)
) WITHOUT ROWID;
CREATE INDEX printk_formats_since ON printk_formats (host_id, since);

-- pid -> tgid per host, from the tgids of the agent's cmdlines (the
-- kernel's saved_tgids), like comms: later values replace earlier ones.
CREATE TABLE tgids (
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	pid		INTEGER NOT NULL,
	tgid		INTEGER NOT NULL,
	PRIMARY KEY (host_id, pid)
) WITHOUT ROWID;
