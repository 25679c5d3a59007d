/*
 * clickhouse_query.c - count on ClickHouse: a store_query as one WHERE over
 * the type's table (clickhouse_query.h says what goes in it), the filter
 * through clickhouse_filter.c, every value through clickhouse_escape.c.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_filter.h"
#include "server/store/clickhouse_query.h"
#include "server/store/clickhouse_reader.h"
#include "server/store/clickhouse_util.h"

/* The column of filter field @idx of query @ctx (ch_column_fn). */
static int ch_query_column(void *ctx, int idx, struct ch_sql *s)
{
	const struct store_query *q = ctx;

	if (idx == FILTER_FIELD_CPU)
		return ch_sql_raw(s, "cpu");	/* UInt32: unsigned, as the filter's CPU */
	if (idx < 0 || (size_t)idx >= q->nfields)
		return TC_ERR_UNKNOWN_FIELD;	/* COMM: refused before (ch_where()) */
	return ch_sql_ident(s, q->schema->cols[q->field_col[idx]].column);
}

static bool ch_hosts_limited(const struct store_query *q)
{
	return q->host_glob || q->hosts || q->scope;
}

/*
 * " AND host_id IN (...)" of the hosts @q allows, when it limits them;
 * *@none when it allows no host at all (the answer is empty).
 */
static int ch_hosts_cond(struct ch_store *s, const struct store_query *q, struct ch_sql *w,
			 bool *none)
{
	struct ch_reply r;
	struct ch_sql hq;
	uint64_t id;
	size_t n = 0;
	int ret;

	*none = false;
	if (!ch_hosts_limited(q))
		return 0;
	ch_sql_init(&hq, 0);
	ch_sql_raw(&hq, "SELECT host_id, argMax(name, version) FROM hosts GROUP BY host_id");
	ret = ch_query(s, &hq, &r);
	ch_sql_free(&hq);
	if (ret < 0)
		return ret;
	ch_sql_raw(w, " AND host_id IN (");
	for (size_t i = 0; i < r.nrows && ret == 0; i++) {
		if (!ch_host_allowed(q, ch_reply_cell(&r, i, 1)))
			continue;
		ret = ch_reply_u64(&r, i, 0, &id);
		ch_sql_raw(w, n++ ? ", " : "");
		ch_sql_u64(w, id);
	}
	ch_sql_raw(w, ")");
	ch_reply_free(&r);
	*none = n == 0;
	return ret < 0 ? ch_errf(s, ret, "the hosts' ids") : 0;
}

/* The window [from_ts, to_ts) as SQLite's reads take it (to_ts INT64_MAX: no end). */
static void ch_window_cond(const struct store_window *win, struct ch_sql *w, bool *none)
{
	if (!win)
		return;
	*none = *none || win->to_ts == INT64_MIN || win->from_ts >= win->to_ts;
	ch_sql_raw(w, " AND ts >= ");
	ch_sql_i64(w, win->from_ts);
	if (win->to_ts != INT64_MAX) {
		ch_sql_raw(w, " AND ts < ");
		ch_sql_i64(w, win->to_ts);
	}
}

/*
 * " FROM `table` WHERE ..." of @q into @w; *@none when no row can match
 * (no host allowed, an empty window).
 */
static int ch_where(struct ch_store *s, const struct store_query *q, struct ch_sql *w,
		    bool *none)
{
	int ret;

	if (q->filter && filter_uses_field(q->filter, FILTER_FIELD_COMM))
		return ch_errf(s, -ENOSYS, "COMM in a filter is not answered from ClickHouse: 18.16 "
			       "cannot find the name a task had at each event (no correlated "
			       "subquery, no ASOF JOIN); filter on common_pid or use SQLite");
	ch_sql_raw(w, " FROM ");
	ch_sql_ident(w, q->schema->table);
	ch_sql_raw(w, " WHERE _tc_commit <= (SELECT max(id) FROM commits)");
	if (q->filter) {
		ch_sql_raw(w, " AND ");
		ret = ch_filter_to_sql(q->filter, ch_query_column, (void *)q, w);
		if (ret < 0)
			return ch_errf(s, ret, "the filter as ClickHouse SQL: %s", tc_strerror(ret));
	}
	ret = ch_hosts_cond(s, q, w, none);
	if (ret < 0)
		return ret;
	ch_window_cond(q->win, w, none);
	if (q->ncpus) {
		ch_sql_raw(w, " AND cpu IN (");
		for (size_t i = 0; i < q->ncpus; i++) {
			ch_sql_raw(w, i ? ", " : "");
			ch_sql_u64(w, q->cpus[i]);
		}
		ch_sql_raw(w, ")");
	}
	if (q->fmt) {
		ch_sql_raw(w, " AND _tc_fmt = ");
		ch_sql_i64(w, q->fmt);
	}
	ret = ch_sql_err(w);
	return ret < 0 ? ch_errf(s, ret, "the query is too long for ClickHouse") : 0;
}

static int ch_count(struct store_reader *rd, const struct store_query *q, uint64_t *count)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_sql w;
	uint64_t n = 0;
	bool none = false;
	int ret;

	ch_sql_init(&w, 0);
	ch_sql_raw(&w, "SELECT count()");
	ret = ch_where(s, q, &w, &none);
	if (ret == 0 && !none)
		ret = ch_query_u64(s, &w, &n);
	ch_sql_free(&w);
	if (ret == 0)
		*count = n;
	return ret;
}

void ch_query_reader_ops(struct store_reader_ops *r)
{
	r->count = ch_count;
}
