-- 0012-comm-changes.sql - the names a host's tasks had over time, for the
-- filters' COMM (see schema.sql, "Task names").

-- One row per name a task took: at fork (task:task_newtask,
-- sched:sched_process_fork; old is NULL, the pid's earlier name belongs to
-- another task) and at exec or prctl(PR_SET_NAME) (task:task_rename; old
-- is the name before). trace_ts is the trace clock of the first event
-- that has the new name, in the units of the events' trace_ts (the
-- changing event's own time + 1: the kernel renames after it records
-- task_rename), ts the same instant on the wall clock, tick_ns the ns per
-- unit of trace_ts (1, or the TSC's period for x86-tsc): ts - trace_ts *
-- tick_ns, the wall-clock time of the trace clock's 0, tells a host's
-- boots apart.
CREATE TABLE comm_changes (
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	pid		INTEGER NOT NULL,
	trace_ts	INTEGER NOT NULL,
	ts		INTEGER NOT NULL,
	tick_ns		REAL NOT NULL,
	old		TEXT,
	new		TEXT NOT NULL
);
CREATE INDEX comm_changes_pid ON comm_changes (host_id, pid, trace_ts);
