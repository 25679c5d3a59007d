/*
 * clickhouse_comm.c - the filters' COMM on ClickHouse: the join and the
 * array functions that give each event the name SQLite's sq_comm_expr()
 * gives it (clickhouse_comm.h says how, and why so on 18.16).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "server/store/clickhouse_comm.h"

int ch_comm_pid_col(const struct store_schema *sc)
{
	int any = -1;

	for (size_t i = 0; i < sc->ncols; i++) {
		if (strcmp(sc->cols[i].name, "common_pid"))
			continue;
		if (sc->cols[i].kind == STORE_SIGNED || sc->cols[i].kind == STORE_UNSIGNED)
			return (int)i;
		any = any < 0 ? (int)i : any;
	}
	return any;
}

/*
 * SQ_SAME_BOOT for change _tc_x (a tuple: trace_ts, ts, tick_ns, ...) and
 * the row (its trace_ts _tc_t, its ts _tc_s): the same double operations
 * as SQLite's, in its order.
 */
#define CH_SAME_BOOT	"abs((tupleElement(_tc_x, 2) - tupleElement(_tc_x, 1) *" \
			" tupleElement(_tc_x, 3)) - (_tc_s - _tc_t * tupleElement(_tc_x, 3))) < 1e9"

/*
 * The row's trace_ts and ts reach the lambdas as arrays (replicate()):
 * 18.16 drops a subquery's column that only a lambda reads ("Unknown
 * identifier") when the query above reads no column of its own.
 */
#define CH_ROW_ARGS	", _tc_cc, replicate(toInt64(trace_ts), _tc_cc), replicate(ts, _tc_cc))"

/* The middle SELECT's list: the changes at or before the row, after it, and COMM. */
static void ch_comm_pick(struct ch_sql *w, const char *null)
{
	ch_sql_raw(w, "SELECT *, arrayFilter((_tc_x, _tc_t, _tc_s) -> tupleElement(_tc_x, 1) <= _tc_t"
		   " AND " CH_SAME_BOOT CH_ROW_ARGS " AS _tc_cb, arrayFilter((_tc_x, _tc_t, _tc_s) ->"
		   " tupleElement(_tc_x, 1) > _tc_t AND " CH_SAME_BOOT CH_ROW_ARGS " AS _tc_ca,"
		   " multiIf(");
	ch_sql_raw(w, null);
	ch_sql_raw(w, ", '<...>', _tc_pid = 0, if(host_id IN (SELECT host_id FROM hosts GROUP BY"
		   " host_id HAVING startsWith(argMax(machine_id, version), 'import:')),"
		   " '<idle>', concat('swapper/', toString(cpu))),"
		   " notEmpty(_tc_cb), tupleElement(_tc_cb[-1], 6),"
		   " notEmpty(_tc_ca) AND tupleElement(_tc_ca[1], 4) = 1,"
		   " tupleElement(_tc_ca[1], 5), _tc_hc = 1, _tc_c, '<...>') AS _tc_comm");
}

/* The right side: per (host, pid) its sorted changes and its comms name. */
static void ch_comm_names(struct ch_sql *w, const char *hosts)
{
	ch_sql_raw(w, "SELECT host_id, _tc_pid, arraySort(groupArrayIf((trace_ts, ts, tick_ns,"
		   " is_rename, old, comm), src = 0)) AS _tc_cc, argMaxIf(comm, version, src = 1)"
		   " AS _tc_c, max(src) AS _tc_hc FROM (SELECT host_id, toInt64(pid) AS _tc_pid,"
		   " toUInt8(0) AS src, trace_ts, ts, tick_ns, is_rename, old, comm,"
		   " toUInt64(0) AS version FROM comm_changes FINAL WHERE 1");
	ch_sql_raw(w, hosts);
	ch_sql_raw(w, " UNION ALL SELECT host_id, toInt64(pid), toUInt8(1), toInt64(0), toInt64(0),"
		   " toFloat64(1), toUInt8(0), '', comm, version FROM comms WHERE 1");
	ch_sql_raw(w, hosts);
	ch_sql_raw(w, ") GROUP BY host_id, _tc_pid");
}

int ch_comm_from(struct ch_sql *w, const struct store_schema *sc, const char *where,
		 const char *hosts, const char *null)
{
	int pid = ch_comm_pid_col(sc);

	if (pid >= 0 && sc->cols[pid].kind != STORE_SIGNED && sc->cols[pid].kind != STORE_UNSIGNED)
		return -ENOSYS;
	if (pid < 0) {
		ch_sql_raw(w, " FROM (SELECT *, '<...>' AS _tc_comm FROM ");
		ch_sql_ident(w, sc->table);
		ch_sql_raw(w, " WHERE ");
		ch_sql_raw(w, where);
		return ch_sql_raw(w, ")");
	}
	ch_sql_raw(w, " FROM (");
	ch_comm_pick(w, null);
	ch_sql_raw(w, " FROM (SELECT *, toInt64(");
	ch_sql_ident(w, sc->cols[pid].column);
	ch_sql_raw(w, ") AS _tc_pid FROM ");
	ch_sql_ident(w, sc->table);
	ch_sql_raw(w, " WHERE ");
	ch_sql_raw(w, where);
	ch_sql_raw(w, ") ANY LEFT JOIN (");
	ch_comm_names(w, hosts);
	return ch_sql_raw(w, ") USING (host_id, _tc_pid))");
}
