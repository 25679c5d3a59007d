/*
 * clickhouse_comm.h - the filters' COMM on ClickHouse 18.16 (issue 32),
 * with exactly the answers of SQLite's sq_comm_expr() (sqlite_read.c):
 * the name the event's task (common_pid) had when the kernel recorded it.
 * For an event e of pid P on host H:
 *   - P 0: "<idle>" on an imported host (hosts.machine_id "import:..."),
 *     else "swapper/CPU";
 *   - else the name of the latest comm_changes row of (H, P) at or before
 *     e (x.trace_ts <= e.trace_ts) in e's boot (SQ_SAME_BOOT: the
 *     wall-clock time of the trace clock's 0, ts - trace_ts * tick_ns,
 *     within a second, computed in doubles as SQLite does);
 *   - else the old name of the first row after e in its boot, when that
 *     row is a rename (a new task's row has no old name: SQLite's
 *     coalesce() goes on);
 *   - else the pid's comms row (the latest, argMax by version);
 *   - else "<...>"; and "<...>" for a row whose format lacks the pid's
 *     column (NULL in SQLite).
 *
 * 18.16 has no correlated subquery and no ASOF JOIN, so each event is
 * joined (ANY LEFT JOIN ... USING (host_id, _tc_pid), one join per
 * SELECT as 18.16 allows) to one row per (host, pid): its comm_changes as
 * one array of tuples (trace_ts, ts, tick_ns, is_rename, old, comm)
 * sorted by trace_ts, and its comms name; the row's own trace_ts and ts
 * then pick the name with arrayFilter() (lambdas may read the row's
 * columns):
 *
 *   FROM (SELECT *, arrayFilter(x -> x.1 <= e.trace_ts AND same boot,
 *                               _tc_cc) AS _tc_cb,       -- at or before
 *                   arrayFilter(x -> x.1 > ... AND same boot, _tc_cc)
 *                               AS _tc_ca,               -- after
 *                   multiIf(...) AS _tc_comm
 *         FROM (SELECT *, toInt64(common_pid) AS _tc_pid FROM `t`
 *               WHERE <the query's conditions but COMM's>)
 *         ANY LEFT JOIN (SELECT host_id, _tc_pid,
 *                 arraySort(groupArrayIf(tuple, src = 0)) AS _tc_cc,
 *                 argMaxIf(comm, version, src = 1) AS _tc_c,
 *                 max(src) AS _tc_hc
 *               FROM (comm_changes FINAL UNION ALL comms) GROUP BY ...)
 *         USING (host_id, _tc_pid))
 *   WHERE <the filter>
 *
 * comm_changes is a ReplacingMergeTree ordered by (host_id, pid,
 * trace_ts): read FINAL, a change written twice (a fact is written again
 * after a rollback) is one row whether or not the parts have merged, and
 * two changes of one task at one trace instant are one, the last written,
 * which is the one SQLite's "at or before" takes (its index walks them
 * backwards by rowid). The kernel stamps a task's renames apart, so its
 * "first after" never meets such a pair.
 *
 * Cost: the join and the arrays are written only when a query reads COMM
 * (as SQLite computes it only then); the query's host, time, CPU, format
 * and commit conditions, and the filter's top-level conjuncts that do not
 * read COMM, are applied below the join, so only the rows they keep are
 * joined; the right side is every (host, pid) of the query's hosts that
 * has a name (a hash table in memory, small beside the events). It is
 * still the dearest filter there is: measured on 18.16 on this project's
 * 2-core machine (busy with other tests: load 8), 10 M events of 5,000
 * pids with 25,000 changes, a count with a COMM glob took 12 to 16 s,
 * one on a numeric field 0.2 s. Most of it is the join's copy of each
 * pid's arrays to every row and the lambdas over them: carrying the
 * names through a second join (one string per row) instead of in the
 * tuples saved a fifth, and picking by index (arrayFirstIndex) instead
 * of filtering tuples nothing measurable, so neither is done. A select
 * pays it for each page (CH_PAGE_ROWS) over the rows after the page's key.
 */
#ifndef SERVER_STORE_CLICKHOUSE_COMM_H
#define SERVER_STORE_CLICKHOUSE_COMM_H

#include "server/store/clickhouse_escape.h"
#include "server/store/store_types.h"

/*
 * ch_comm_from - append " FROM (...)" to @w: the rows of @sc's table that
 * @where holds (a ClickHouse condition on the table's own columns, without
 * WHERE), each with the column _tc_comm (above). @hosts: " AND host_id IN
 * (...)" limiting the names read, or "". @null: a condition true where
 * the row's format lacks the pid's column (or "0").
 * Return: 0, @w's sticky error, or -ENOSYS when @sc's common_pid is text
 * only (SQLite compares such a pid by its affinities: not reproduced).
 */
int ch_comm_from(struct ch_sql *w, const struct store_schema *sc, const char *where,
		 const char *hosts, const char *null);

/*
 * ch_comm_pid_col - the schema column SQLite's COMM reads the pid from:
 * the first integer column named common_pid, else the first of that name
 * (text); -1 when there is none.
 */
int ch_comm_pid_col(const struct store_schema *sc);

#endif
