/*
 * clickhouse_query.c - count and select on ClickHouse: a store_query as
 * one WHERE over the type's table (clickhouse_query.h says what goes in it
 * and how select pages), the filter through clickhouse_filter.c, every
 * value through clickhouse_escape.c.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_comm.h"
#include "server/store/clickhouse_filter.h"
#include "server/store/clickhouse_query.h"
#include "server/store/clickhouse_reader.h"
#include "server/store/clickhouse_stacks.h"
#include "server/store/clickhouse_util.h"

/* The column of filter field @idx of query @ctx (ch_column_fn). */
static int ch_query_column(void *ctx, int idx, struct ch_sql *s)
{
	const struct store_query *q = ctx;

	if (idx == FILTER_FIELD_CPU)
		return ch_sql_raw(s, "cpu");	/* UInt32: unsigned, as the filter's CPU */
	if (idx == FILTER_FIELD_COMM)
		return ch_sql_raw(s, "_tc_comm");	/* ch_query_where() joins it */
	if (idx < 0 || (size_t)idx >= q->nfields)
		return TC_ERR_UNKNOWN_FIELD;
	return ch_sql_ident(s, q->schema->cols[q->field_col[idx]].column);
}

static bool ch_hosts_limited(const struct store_query *q)
{
	return q->host_glob || q->hosts || q->scope;
}

/* The hosts' ids and latest names: host_id, name. */
int ch_query_hosts(struct ch_store *s, struct ch_reply *r)
{
	struct ch_sql hq;
	int ret;

	ch_sql_init(&hq, 0);
	ch_sql_raw(&hq, "SELECT host_id, argMax(name, version) FROM hosts GROUP BY host_id");
	ret = ch_query(s, &hq, r);
	ch_sql_free(&hq);
	return ret;
}

/*
 * " AND host_id IN (...)" of the hosts of @hosts (ch_query_hosts()) that
 * @q allows, when it limits them; *@none when it allows none.
 */
static int ch_hosts_cond(struct ch_store *s, const struct store_query *q,
			 const struct ch_reply *hosts, struct ch_sql *w, bool *none)
{
	uint64_t id;
	size_t n = 0;
	int ret = 0;

	if (!ch_hosts_limited(q))
		return 0;
	ch_sql_raw(w, " AND host_id IN (");
	for (size_t i = 0; i < hosts->nrows && ret == 0; i++) {
		if (!ch_host_allowed(q, ch_reply_cell(hosts, i, 1)))
			continue;
		ret = ch_reply_u64(hosts, i, 0, &id);
		ch_sql_raw(w, n++ ? ", " : "");
		ch_sql_u64(w, id);
	}
	ch_sql_raw(w, ")");
	*none = *none || n == 0;
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
 * Whether schema column @col is one the row's format may lack: "(_tc_fmt
 * IN (...))" of the formats without it, or "0" (NULL in SQLite, the
 * column's default here).
 */
void ch_query_null_expr(struct ch_sql *w, const struct store_schema *sc, int col)
{
	size_t n = 0;

	for (size_t i = 0; col >= 0 && i < sc->nfmts; i++) {
		const struct store_fmt *f = &sc->fmts[i];
		bool has = false;

		for (size_t j = 0; j < f->ncols && !has; j++)
			has = f->cols[j] == (size_t)col;
		if (has)
			continue;
		ch_sql_raw(w, n++ ? ", " : "(_tc_fmt IN (");
		ch_sql_i64(w, f->id);
	}
	ch_sql_raw(w, n ? "))" : "0");
}

bool ch_query_reads_comm(const struct store_query *q)
{
	return q->filter && filter_uses_field(q->filter, FILTER_FIELD_COMM);
}

/*
 * The rows' conditions but the filter's into @in (the first one without
 * AND), the hosts' also into @hc: the query's commits, hosts, window,
 * CPUs, format, and @extra.
 */
static int ch_query_conds(struct ch_store *s, const struct store_query *q,
			  const struct ch_reply *hosts, const char *extra, struct ch_sql *in,
			  struct ch_sql *hc, bool *none)
{
	int ret = ch_hosts_cond(s, q, hosts, hc, none);

	ch_sql_raw(in, CH_COMMITTED);
	ch_sql_raw(in, ch_sql_text(hc));
	ch_window_cond(q->win, in, none);
	if (q->ncpus) {
		ch_sql_raw(in, " AND cpu IN (");
		for (size_t i = 0; i < q->ncpus; i++) {
			ch_sql_raw(in, i ? ", " : "");
			ch_sql_u64(in, q->cpus[i]);
		}
		ch_sql_raw(in, ")");
	}
	if (q->fmt) {
		ch_sql_raw(in, " AND _tc_fmt = ");
		ch_sql_i64(in, q->fmt);
	}
	if (q->spans) {	/* a snapshot's hosts and windows: numbers only */
		ch_sql_raw(in, " AND (0");
		for (size_t i = 0; i < q->nspans; i++) {
			ch_sql_raw(in, " OR (host_id = ");
			ch_sql_u64(in, q->spans[i].host_id);
			ch_sql_raw(in, " AND ts BETWEEN ");
			ch_sql_i64(in, q->spans[i].from_ts);
			ch_sql_raw(in, " AND ");
			ch_sql_i64(in, q->spans[i].to_ts);
			ch_sql_raw(in, " AND trace_ts BETWEEN ");
			ch_sql_u64(in, q->spans[i].trace_from);
			ch_sql_raw(in, " AND ");
			ch_sql_u64(in, q->spans[i].trace_to);
			ch_sql_raw(in, ")");
		}
		ch_sql_raw(in, ")");
	}
	ch_sql_raw(in, extra ? extra : "");
	return ret;
}

/*
 * The top-level conjuncts of @q's filter that do not read COMM, as " AND
 * (...)" each into @in: applied below COMM's join (clickhouse_comm.h).
 */
static int ch_query_push(const struct store_query *q, struct ch_sql *in)
{
	struct filter_node node;
	uint32_t root, c;
	int ret = filter_root(q->filter, &root);

	if (ret < 0)
		return ret;
	filter_node_get(q->filter, root, &node);
	if (node.type != FILTER_NODE_AND)
		return 0;
	for (c = node.child; c != FILTER_NODE_NONE && ret == 0; c = node.next) {
		if (!ch_filter_node_uses(q->filter, c, FILTER_FIELD_COMM)) {
			ch_sql_raw(in, " AND ");
			ret = ch_filter_node_to_sql(q->filter, c, ch_query_column, (void *)q, in);
		}
		filter_node_get(q->filter, c, &node);
	}
	return ret;
}

/* " FROM (rows with _tc_comm)" of @q, the rows @in holds, into @w. */
static int ch_query_comm_from(struct ch_store *s, const struct store_query *q,
			      struct ch_sql *in, const struct ch_sql *hc, struct ch_sql *w)
{
	struct ch_sql null;
	int ret = q->filter ? ch_query_push(q, in) : 0;

	ch_sql_init(&null, 0);
	ch_query_null_expr(&null, q->schema, ch_comm_pid_col(q->schema));
	if (ret == 0)
		ret = ch_sql_err(in) ?: ch_sql_err(&null) ?:
		      ch_comm_from(w, q->schema, ch_sql_text(in), ch_sql_text(hc),
				   ch_sql_text(&null));
	ch_sql_free(&null);
	if (ret == -ENOSYS)
		return ch_errf(s, ret, "COMM of %s is not answered from ClickHouse: its common_pid "
			       "is stored as text, which SQLite compares by its type affinities; "
			       "use SQLite", q->schema->name);
	return ret < 0 ? ch_errf(s, ret, "the rows' COMM: %s", tc_strerror(ret)) : 0;
}

/*
 * " FROM ... WHERE ..." of @q into @w, @hosts from ch_query_hosts();
 * *@none when no row can match (no host allowed, an empty window).
 */
int ch_query_where(struct ch_store *s, const struct store_query *q,
		   const struct ch_reply *hosts, const char *extra, bool comm,
		   struct ch_sql *w, bool *none)
{
	struct ch_sql in, hc;
	int ret;

	ch_sql_init(&in, 0);
	ch_sql_init(&hc, 0);
	ret = ch_query_conds(s, q, hosts, extra, &in, &hc, none);
	if (ret == 0 && comm) {
		ret = ch_query_comm_from(s, q, &in, &hc, w);
		ch_sql_raw(w, " WHERE 1");
	} else if (ret == 0) {
		ch_sql_raw(w, " FROM ");
		ch_sql_ident(w, q->schema->table);
		ch_sql_raw(w, " WHERE ");
		ch_sql_raw(w, ch_sql_text(&in));
	}
	ch_sql_free(&in);
	ch_sql_free(&hc);
	if (ret == 0 && q->filter) {
		ch_sql_raw(w, " AND ");
		ret = ch_filter_to_sql(q->filter, ch_query_column, (void *)q, w);
		if (ret < 0)
			return ch_errf(s, ret, "the filter as ClickHouse SQL: %s", tc_strerror(ret));
	}
	if (ret < 0)
		return ret;
	ret = ch_sql_err(w);
	return ret < 0 ? ch_errf(s, ret, "the query is too long for ClickHouse") : 0;
}

static int ch_count(struct store_reader *rd, const struct store_query *q, uint64_t *count)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply hosts = { 0 };
	struct ch_sql w;
	uint64_t n = 0;
	bool none = false;
	int ret = ch_hosts_limited(q) ? ch_query_hosts(s, &hosts) : 0;

	ch_sql_init(&w, 0);
	ch_sql_raw(&w, "SELECT count()");
	ret = ret ?: ch_query_where(s, q, &hosts, NULL, ch_query_reads_comm(q), &w, &none);
	if (ret == 0 && !none)
		ret = ch_query_u64(s, &w, &n);
	ch_sql_free(&w);
	ch_reply_free(&hosts);
	if (ret == 0)
		*count = n;
	return ret;
}

/* ---- select -------------------------------------------------------------------- */

#define CH_PAGE_ROWS	4096	/* rows a select reads with one query */
#define CH_FIXED_COLS	6	/* host_id, cpu, ts, trace_ts, _tc_row, _tc_fmt */

/* A name by (host, pid): the rows' host names (pid 0) and comms, sorted for bsearch(). */
struct ch_name {
	uint64_t host;
	int64_t pid;
	const char *name;
};

static int ch_name_cmp(const void *a, const void *b)
{
	const struct ch_name *x = a, *y = b;

	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/*
 * The rows of @r as names into @out: the host in column 0, the pid in
 * column @pcol (-1: none, 0), the name in column @ncol; rows that do not
 * read are left out. The names point into @r.
 */
static int ch_names_of(const struct ch_reply *r, int pcol, size_t ncol, struct ch_names *out)
{
	free(out->v);
	out->n = 0;
	out->v = calloc(r->nrows + 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < r->nrows; i++) {
		struct ch_name *m = &out->v[out->n];

		if (ch_reply_u64(r, i, 0, &m->host) ||
		    (pcol >= 0 && ch_reply_i64(r, i, (size_t)pcol, &m->pid)))
			continue;
		m->name = ch_reply_cell(r, i, ncol);
		out->n++;
	}
	qsort(out->v, out->n, sizeof(*out->v), ch_name_cmp);
	return 0;
}

static const char *ch_names_find(const struct ch_names *nm, uint64_t host, int64_t pid)
{
	const struct ch_name key = { .host = host, .pid = pid };
	const struct ch_name *m = nm->n ? bsearch(&key, nm->v, nm->n, sizeof(key), ch_name_cmp) :
				  NULL;

	return m ? m->name : NULL;
}


/* The columns a row of format @fmt lacks are null (a column added later reads as 0). */
static void ch_walk_nulls(struct ch_walk *k, int64_t fmt)
{
	const struct store_schema *sc = k->q->schema;
	const struct store_fmt *f = NULL;

	for (size_t i = 0; i < sc->nfmts && !f; i++)
		f = sc->fmts[i].id == fmt ? &sc->fmts[i] : NULL;
	for (size_t c = 0; c < sc->ncols; c++)
		k->null[c] = !k->at[c] || f;
	for (size_t j = 0; f && j < f->ncols; j++)
		if (f->cols[j] < sc->ncols)
			k->null[f->cols[j]] = !k->at[f->cols[j]];
}

/* Row @i of page @r as a store_row to @fn. */
int ch_walk_row(struct ch_walk *k, const struct ch_reply *r, size_t i,
		       store_row_fn fn, void *ctx, struct store_row *row)
{
	const struct store_schema *sc = k->q->schema;
	int64_t fmt = 0, cpu = 0;
	int ret = ch_reply_u64(r, i, 0, &row->host_id) ?: ch_reply_i64(r, i, 1, &cpu) ?:
		  ch_reply_i64(r, i, 2, &row->ts) ?: ch_reply_u64(r, i, 3, &row->trace_ts) ?:
		  ch_reply_u64(r, i, 4, &row->rowid) ?: ch_reply_i64(r, i, 5, &fmt);

	ch_walk_nulls(k, fmt);
	for (size_t c = 0; ret == 0 && c < sc->ncols; c++) {
		struct store_value *v = &k->vals[c];

		v->kind = sc->cols[c].kind;
		if (k->null[c])
			continue;
		if (v->kind == STORE_SIGNED)
			ret = ch_reply_i64(r, i, k->at[c], &v->i);
		else if (v->kind == STORE_UNSIGNED)
			ret = ch_reply_u64(r, i, k->at[c], &v->u);
		else if (v->kind == STORE_STRING)
			v->str.s = r->cells[i * r->ncols + k->at[c]],
			v->str.len = r->lens[i * r->ncols + k->at[c]];
		else
			v->blob.p = r->cells[i * r->ncols + k->at[c]],
			v->blob.len = r->lens[i * r->ncols + k->at[c]];
	}
	for (size_t j = 0; ret == 0 && j < k->nstack; j++)
		if (!k->null[k->stack_col[j]])
			ch_stack_frames(&k->stacks, row->host_id, &k->vals[k->stack_col[j]]);
	if (ret < 0)
		return ch_errf(k->s, TC_ERR_DB, "a row ClickHouse sent: %s", tc_strerror(ret));
	row->cpu = (uint32_t)cpu;
	row->pid = k->pid >= 0 && !k->null[k->pid] ? (int)k->vals[k->pid].i : -1;
	row->host = ch_names_find(&k->host_names, row->host_id, 0);
	row->comm = row->pid >= 0 ? ch_names_find(&k->comm_names, row->host_id, row->pid) : NULL;
	row->nvals = sc->ncols;
	row->vals = k->vals;
	row->null = k->null;
	return fn(ctx, row);
}

/* The comms of the pids of page @r (their hosts' latest names) into k->comms. */
static int ch_walk_names(struct ch_walk *k, const struct ch_reply *r)
{
	struct ch_sql q;
	size_t n = 0;
	int ret;

	ch_reply_free(&k->comms);
	k->comm_names.n = 0;
	if (k->pid < 0 || !r->nrows)
		return 0;
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT host_id, pid, argMax(comm, version) FROM comms WHERE"
		       " (host_id, pid) IN (");
	for (size_t i = 0; i < r->nrows; i++) {
		uint64_t host;
		int64_t pid;

		if (ch_reply_u64(r, i, 0, &host) || ch_reply_i64(r, i, k->at[k->pid], &pid))
			continue;	/* ch_walk_row() says so */
		ch_sql_raw(&q, n++ ? ", (" : "(");
		ch_sql_u64(&q, host);
		ch_sql_raw(&q, ", ");
		ch_sql_i64(&q, pid);
		ch_sql_raw(&q, ")");
	}
	ch_sql_raw(&q, ") GROUP BY host_id, pid");
	ret = ch_sql_err(&q) ? ch_errf(k->s, ch_sql_err(&q), "the page's comms") :
	      n ? ch_query(k->s, &q, &k->comms) : 0;
	ch_sql_free(&q);
	return ret ?: ch_names_of(&k->comms, 1, 2, &k->comm_names);
}

/* What page @r's rows need besides their cells: comms, and their stacks' frames. */
static int ch_walk_comms(struct ch_walk *k, const struct ch_reply *r)
{
	return ch_walk_names(k, r) ?: ch_stacks_page(k->s, r, k->stack_at, k->nstack, &k->stacks);
}

/* "SELECT" and the columns a walk reads: the fixed ones, then the schema's it reads. */
static void ch_walk_select(const struct ch_walk *k, struct ch_sql *w)
{
	const struct store_schema *sc = k->q->schema;

	ch_sql_raw(w, "SELECT host_id, cpu, ts, trace_ts, _tc_row, _tc_fmt");
	for (size_t c = 0; c < sc->ncols; c++) {
		if (!k->at[c])
			continue;
		ch_sql_raw(w, ", ");
		ch_sql_ident(w, sc->cols[c].column);
	}
}

/*
 * One page of @q after the key (@ts, @rowid) (@keyset false: from the
 * start), at most @limit rows, into @r. The key is (ts, _tc_row):
 * clickhouse_query.h says why.
 */
static int ch_walk_page(struct ch_walk *k, bool keyset, int64_t ts, uint64_t rowid,
			size_t limit, struct ch_reply *r, bool *none)
{
	const struct store_query *q = k->q;
	const char *cmp = q->reverse ? " < " : " > ";
	struct ch_sql w, key;
	int ret;

	ch_sql_init(&w, 0);
	ch_sql_init(&key, 0);
	if (keyset) {	/* below COMM's join too: the rows before are not joined */
		ch_sql_addf(&key, " AND (ts%s", cmp);
		ch_sql_i64(&key, ts);
		ch_sql_raw(&key, " OR (ts = ");
		ch_sql_i64(&key, ts);
		ch_sql_addf(&key, " AND _tc_row%s", cmp);
		ch_sql_u64(&key, rowid);
		ch_sql_raw(&key, "))");
	}
	ch_walk_select(k, &w);
	ret = ch_sql_err(&key) ?:
	      ch_query_where(k->s, q, &k->hosts, ch_sql_text(&key), ch_query_reads_comm(q), &w,
			     none);
	ch_sql_free(&key);
	ch_sql_raw(&w, q->reverse ? " ORDER BY ts DESC, _tc_row DESC LIMIT " :
		   " ORDER BY ts, _tc_row LIMIT ");
	ch_sql_u64(&w, limit);
	if (ret == 0 && !*none)
		ret = ch_sql_err(&w) ? ch_errf(k->s, ch_sql_err(&w), "the select is too long") :
		      ch_query(k->s, &w, r);
	ch_sql_free(&w);
	return ret;
}

/*
 * One page of the tail (clickhouse_tail.c): @q's rows of commits up to
 * @last whose _tc_row is @from or more, in _tc_row order (the order they
 * were stored in), at most @limit, into @r, with their comms.
 */
int ch_walk_tail(struct ch_walk *k, uint64_t from, uint64_t last, int slot, size_t limit,
		 struct ch_reply *r)
{
	const struct store_query *q = k->q;
	bool none = false;
	struct ch_sql w, cond;
	int ret;

	ch_reply_free(r);
	ch_sql_init(&w, 0);
	ch_sql_init(&cond, 0);
	ch_sql_addf(&cond, " AND _tc_row >= %llu AND _tc_commit <= %llu",
		    (unsigned long long)from, (unsigned long long)last);
	if (slot >= 0)
		ch_sql_addf(&cond, " AND _tc_commit %% %u = %d", STORE_COLLECTOR_IDS, slot);
	ch_walk_select(k, &w);
	ret = ch_sql_err(&cond) ?:
	      ch_query_where(k->s, q, &k->hosts, ch_sql_text(&cond), ch_query_reads_comm(q), &w,
			     &none);
	ch_sql_free(&cond);
	ch_sql_raw(&w, " ORDER BY _tc_row LIMIT ");
	ch_sql_u64(&w, limit);
	if (ret == 0 && !none)
		ret = ch_sql_err(&w) ? ch_errf(k->s, ch_sql_err(&w), "the tail's query is too long") :
		      ch_query(k->s, &w, r);
	ch_sql_free(&w);
	return ret ?: ch_walk_comms(k, r);
}

/* Which schema columns a select reads (common_pid always: the row's pid and comm). */
int ch_walk_init(struct ch_walk *k, struct ch_store *s, const struct store_query *q)
{
	const struct store_schema *sc = q->schema;
	size_t n = CH_FIXED_COLS;

	*k = (struct ch_walk){ .s = s, .q = q, .pid = -1 };
	k->at = calloc(sc->ncols + 1, sizeof(*k->at));
	k->vals = calloc(sc->ncols + 1, sizeof(*k->vals));
	k->null = calloc(sc->ncols + 1, sizeof(*k->null));
	k->stack_at = calloc(sc->ncols + 1, sizeof(*k->stack_at));
	k->stack_col = calloc(sc->ncols + 1, sizeof(*k->stack_col));
	if (!k->at || !k->vals || !k->null || !k->stack_at || !k->stack_col)
		return -ENOMEM;
	for (size_t c = 0; c < sc->ncols; c++) {
		bool pid = !strcmp(sc->cols[c].name, "common_pid") &&
			   sc->cols[c].kind == STORE_SIGNED;

		k->pid = pid ? (int)c : k->pid;
		if (pid || !q->skip || !q->skip[c])
			k->at[c] = n++;
		if (k->at[c] && store_col_is_stack(sc, c)) {
			k->stack_col[k->nstack] = c;
			k->stack_at[k->nstack++] = k->at[c];
		}
	}
	return ch_query_hosts(s, &k->hosts) ?: ch_names_of(&k->hosts, -1, 1, &k->host_names);
}

void ch_walk_free(struct ch_walk *k)
{
	ch_reply_free(&k->hosts);
	ch_reply_free(&k->comms);
	free(k->host_names.v);
	free(k->comm_names.v);
	free(k->at);
	free(k->vals);
	free(k->null);
	free(k->stack_at);
	free(k->stack_col);
	ch_stack_page_free(&k->stacks);
}

static int ch_select(struct store_reader *rd, const struct store_query *q, store_row_fn fn,
		     void *ctx)
{
	struct ch_walk k;
	struct store_row row = { 0 };
	bool keyset = q->after_rowid != 0, none = false, more = true;
	int64_t ts = q->after_ts;
	uint64_t rowid = q->after_rowid;
	size_t left = q->limit, got;
	int ret = ch_walk_init(&k, ch_reader_of(rd), q);

	while (ret == 0 && more && !none) {
		size_t want = left && left < CH_PAGE_ROWS ? left : CH_PAGE_ROWS;
		struct ch_reply page = { 0 };

		ret = ch_walk_page(&k, keyset, ts, rowid, want, &page, &none) ?:
		      ch_walk_comms(&k, &page);
		for (got = 0; ret == 0 && got < page.nrows; got++)
			ret = ch_walk_row(&k, &page, got, fn, ctx, &row);
		more = page.nrows == want && (!q->limit || (left -= want) > 0);
		keyset = true;
		ts = row.ts;
		rowid = row.rowid;
		ch_reply_free(&page);
	}
	ch_walk_free(&k);
	return ret;
}

void ch_query_reader_ops(struct store_reader_ops *r)
{
	r->count = ch_count;
	r->select = ch_select;
}
