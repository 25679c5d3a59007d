/*
 * clickhouse_hist.c - histograms on ClickHouse (store_hist(), traceq
 * --hist) with SQLite's answers (sqlite_hist.c): the grouping, the
 * first spec->size keys kept, in ClickHouse; the kept entries' sort and
 * page here.
 *
 * One GROUP BY over the rows a store_query matches (clickhouse_query.h's
 * WHERE, bounded by the last commit M read first, so the totals' query
 * sees the same rows), then the first spec->size groups by their first
 * row's ts and then the keys, as the kernel's tracing_map keeps the first
 * keys to come:
 *
 *   SELECT k0, n0.., hc, s0.., ft, lt, hid FROM (
 *     SELECT <key> AS k0, <key is null> AS n0.., count() AS hc,
 *            sum(<val as UInt64>) AS s0.., min(ts) AS ft, max(ts) AS lt,
 *            min(host_id) AS hid
 *     FROM `table` WHERE ... AND _tc_commit <= M GROUP BY k0, n0..)
 *   ORDER BY ft, n0 DESC, k0.. LIMIT size
 *   SELECT count(), max(ts) FROM `table` WHERE ... AND _tc_commit <= M
 *
 * At most HIST_SIZE_MAX entries come back; they are sorted as the spec
 * says (then by the keys) and paged here, as SQLite's in-memory path does.
 *
 * Exactness, key by key, against SQLite's:
 *  - a column a row's format lacks is NULL in SQLite and its default in
 *    ClickHouse: the key is grouped as (is null, value), the null flag
 *    being _tc_fmt IN (the formats without the column), and NULL sorts
 *    first, as in SQLite; a null sums as nothing (0);
 *  - the kernel's arithmetic is u64: .log2 is ilog2(roundup_pow_of_two(v))
 *    (the bit length of v - 1, counted with arrayCount over range(64):
 *    18.16 has no clz, and log2() of a Float64 rounds near 2^53), .buckets
 *    is intDiv(v, N) * N, sums are sum() of UInt64, which wraps as the
 *    kernel's does; a .buckets key of a signed field sorts signed, as
 *    SQLite's;
 *  - a host key is the host's latest name (transform() of host_id over the
 *    hosts table, names escaped), grouped and sorted by the name;
 *  - .execname's comm is the pid's latest comm on the entry's host
 *    (comms, argMax by version), as SQLite's comms row;
 *  - a COMM key is the filters' COMM, _tc_comm of the rows
 *    ch_query_where() joins to their names (clickhouse_comm.h), joined
 *    only when a key or the filter reads it.
 *  - a common_stacktrace key is the frames of the stack record right
 *    after the row on its host and CPU (chh_stacks(), SQLite's
 *    stack_cte()): the rows joined to it, a row without one not counted;
 *    its first stack_bytes bytes, compared byte-wise as SQLite's BLOBs.
 *    Two rows of one ts on one CPU are ordered by commit and row here, by
 *    rowid there (an import stores them in the same order).
 * Strings compare byte-wise in both. hid (the entry's host, min(host_id))
 * is the same host as SQLite's on a store of one host; with several, each
 * store's own smallest id (ClickHouse's are hashes).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_hist.h"
#include "server/store/clickhouse_query.h"
#include "server/store/clickhouse_util.h"

/* One entry as ClickHouse sent it; its strings point into the reply. */
struct chh_ent {
	struct store_value k[HIST_KEYS_MAX];
	bool null[HIST_KEYS_MAX];
	uint64_t hc, sum[HIST_VALS_MAX + 1], hid;
	int64_t lt;
};

struct chh {
	struct ch_store *s;
	const struct store_query *q;
	const struct store_hist *h;
	bool text[HIST_KEYS_MAX];	/* key i is a string */
	bool uns[HIST_KEYS_MAX];	/* key i sorts as unsigned */
	struct chh_ent *e;
	size_t n;
};

/* Whether the rows need the filters' COMM: a COMM key, or the filter reads it. */
static bool chh_reads_comm(const struct chh *c)
{
	for (size_t i = 0; i < c->h->spec->nkeys; i++)
		if (c->h->key_col[i] == STORE_HIST_COMM)
			return true;
	return ch_query_reads_comm(c->q);
}

/* Column @col of the row: cpu, the host's name, or a schema column. */
static void chh_col(struct ch_sql *w, const struct store_schema *sc, int col,
		    const struct ch_reply *hosts)
{
	size_t n = 0;

	if (col == STORE_HIST_CPU || col == STORE_HIST_COMM || col == STORE_HIST_TS) {
		ch_sql_raw(w, col == STORE_HIST_CPU ? "cpu" : col == STORE_HIST_TS ? "ts" :
			   "_tc_comm");	/* see chh_sql() */
		return;
	}
	if (col >= 0) {
		ch_sql_ident(w, sc->cols[col].column);
		return;
	}
	if (!hosts->nrows) {
		ch_sql_raw(w, "''");	/* no host: no row either */
		return;
	}
	ch_sql_raw(w, "transform(host_id, [");
	for (size_t i = 0; i < hosts->nrows; i++) {
		uint64_t id;

		if (ch_reply_u64(hosts, i, 0, &id))
			continue;
		ch_sql_raw(w, n ? ", toUInt64(" : "toUInt64(");
		ch_sql_u64(w, id);
		ch_sql_raw(w, ")");
		n++;
	}
	ch_sql_raw(w, "], [");
	n = 0;
	for (size_t i = 0; i < hosts->nrows; i++) {
		uint64_t id;

		if (ch_reply_u64(hosts, i, 0, &id))
			continue;
		ch_sql_raw(w, n++ ? ", " : "");
		ch_sql_cstr(w, ch_reply_cell(hosts, i, 1));
	}
	ch_sql_raw(w, "], '')");
}

/* Key @i's expression: the kernel's u64 arithmetic on .log2 and .buckets. */
static void chh_key(struct chh *c, struct ch_sql *w, size_t i, const struct ch_reply *hosts)
{
	const struct hist_field *f = &c->h->spec->keys[i];
	int col = c->h->key_col[i];

	if (col == STORE_HIST_STACK) {
		ch_sql_addf(w, "_tc_zst AS k%zu, 0 AS n%zu, ", i, i);	/* chh_stacks() */
		return;
	}
	if (f->mod == HIST_MOD_LOG2) {
		ch_sql_raw(w, "arrayCount(b -> bitShiftRight(toUInt64(");
		chh_col(w, c->q->schema, col, hosts);
		ch_sql_raw(w, ") - 1, b) != 0, range(if(toUInt64(");
		chh_col(w, c->q->schema, col, hosts);
		ch_sql_raw(w, ") BETWEEN 2 AND 9223372036854775808, 64, 0)))");
	} else if (f->mod == HIST_MOD_BUCKETS) {
		ch_sql_raw(w, c->uns[i] ? "(intDiv(toUInt64(" : "toInt64(intDiv(toUInt64(");
		chh_col(w, c->q->schema, col, hosts);
		ch_sql_raw(w, "), ");
		ch_sql_u64(w, f->buckets ? f->buckets : 1);
		ch_sql_raw(w, ") * ");
		ch_sql_u64(w, f->buckets ? f->buckets : 1);
		ch_sql_raw(w, ")");
	} else {
		chh_col(w, c->q->schema, col, hosts);
	}
	ch_sql_addf(w, " AS k%zu, ", i);
	if (f->mod == HIST_MOD_LOG2 || f->mod == HIST_MOD_BUCKETS)
		ch_sql_raw(w, "0");	/* SQLite's functions make NULL 0 */
	else
		ch_query_null_expr(w, c->q->schema, col);
	ch_sql_addf(w, " AS n%zu, ", i);
}

/* "k0, n0, k1, n1" */
static void chh_keys(struct ch_sql *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ch_sql_addf(w, "%sk%zu, n%zu", i ? ", " : "", i, i);
}

/* Whether a key is the rows' stack. */
static bool chh_has_stack(const struct chh *c)
{
	for (size_t i = 0; i < c->h->spec->nkeys; i++)
		if (c->h->key_col[i] == STORE_HIST_STACK)
			return true;
	return false;
}

/*
 * The stack of each row of the event that has one, as SQLite's
 * stack_cte() (sqlite_hist.c) finds it: every row of the event and every
 * stack record committed by @last, merged per host and CPU by ts (an
 * event row first at one ts, then by commit and row), a stack record the
 * row's right before it. 18.16 has no window functions and its lambdas
 * take no outer column: per host and CPU one sorted array of (ts, kind,
 * commit, row, caller), split into one array per element; the kinds one
 * before and the commits and rows one before are those arrays shifted by
 * one; the three arrays filtered to the stacks right after an event are
 * array-joined together. Only they and host_id reach the ARRAY JOIN: had
 * the sorted array itself been there, every output row would carry a copy
 * of its CPU's whole array (memory quadratic in a CPU's rows: 2.3 GiB for
 * 7,046 rows of one CPU, past max_memory_usage; test_ch_hist failed so
 * about once in seven runs). Rows (host_id, _tc_commit, _tc_row: the
 * event's row; _tc_zst: the first stack_bytes bytes of its frames, a
 * reference looked up in stacks, clickhouse_stacks.h). Its memory is the
 * event's and the stacks' rows of one CPU at a time, a few times over.
 */
static void chh_stacks(const struct chh *c, uint64_t last, struct ch_sql *w)
{
	const struct store_hist *h = c->h;
	/* of the elements of an array, those right after an event's row: a stack */
	static const char after[] = "arrayFilter((_tc_x, _tc_a, _tc_b) -> _tc_a = 1 AND _tc_b = 0, ";

	ch_sql_raw(w, "SELECT host_id, _tc_commit, _tc_row, substring(if(_tc_zid = 0, _tc_zraw,"
		   " _tc_sf), 1, ");
	ch_sql_u64(w, h->stack_bytes);
	ch_sql_raw(w, ") AS _tc_zst FROM (SELECT host_id, _tc_commit, _tc_row, _tc_zraw,"
		   " if(length(_tc_zraw) = 9 AND startsWith(_tc_zraw, '\\x01'),"
		   " reinterpretAsUInt64(substring(_tc_zraw, 2, 8)), toUInt64(0)) AS _tc_zid FROM"
		   " (SELECT host_id, ");
	ch_sql_raw(w, after);
	ch_sql_raw(w, "arrayPushFront(arrayPopBack(_tc_c), toUInt64(0)), _tc_k, _tc_pk) AS _tc_fc, ");
	ch_sql_raw(w, after);
	ch_sql_raw(w, "arrayPushFront(arrayPopBack(_tc_r), toUInt64(0)), _tc_k, _tc_pk) AS _tc_fr, ");
	ch_sql_raw(w, after);
	ch_sql_raw(w, "_tc_z, _tc_k, _tc_pk) AS _tc_fz FROM (SELECT host_id,"
		   " arrayMap(_tc_x -> tupleElement(_tc_x, 2), _tc_s) AS _tc_k,"
		   " arrayPushFront(arrayPopBack(_tc_k), toUInt8(2)) AS _tc_pk,"
		   " arrayMap(_tc_x -> tupleElement(_tc_x, 3), _tc_s) AS _tc_c,"
		   " arrayMap(_tc_x -> tupleElement(_tc_x, 4), _tc_s) AS _tc_r,"
		   " arrayMap(_tc_x -> tupleElement(_tc_x, 5), _tc_s) AS _tc_z FROM (SELECT"
		   " host_id, arraySort(groupArray((ts, k, cm, rw, st))) AS _tc_s FROM (SELECT host_id,"
		   " cpu, ts, toUInt8(0) AS k, _tc_commit AS cm, _tc_row AS rw, '' AS st FROM ");
	ch_sql_ident(w, c->q->schema->table);
	ch_sql_raw(w, " WHERE _tc_commit <= ");
	ch_sql_u64(w, last);
	ch_sql_raw(w, " UNION ALL SELECT host_id, cpu, ts, toUInt8(1), toUInt64(0), toUInt64(0), ");
	ch_sql_ident(w, h->stacks->cols[h->stack_col].column);
	ch_sql_raw(w, " FROM ");
	ch_sql_ident(w, h->stacks->table);
	ch_sql_raw(w, " WHERE _tc_commit <= ");
	ch_sql_u64(w, last);
	ch_sql_raw(w, ") GROUP BY host_id, cpu))) ARRAY JOIN _tc_fc AS _tc_commit, _tc_fr AS _tc_row,"
		   " _tc_fz AS _tc_zraw) ANY LEFT JOIN (SELECT host_id, id AS _tc_zid, any(frames) AS"
		   " _tc_sf FROM stacks GROUP BY host_id, id) USING (host_id, _tc_zid)");
}

/*
 * @where (" FROM ... WHERE ...") with the rows' stacks joined (a row
 * without one is not counted): the rows as a subquery, ANY INNER JOIN
 * chh_stacks() on the row's host, commit and row.
 */
static void chh_stack_from(const struct chh *c, uint64_t last, const char *where,
			   struct ch_sql *w)
{
	ch_sql_raw(w, " FROM (SELECT *");
	ch_sql_raw(w, where);
	ch_sql_raw(w, ") ANY INNER JOIN (");
	chh_stacks(c, last, w);
	ch_sql_raw(w, ") USING (host_id, _tc_commit, _tc_row)");
}

/* The grouped query into @w; the rows' WHERE from ch_query_where(). */
static int chh_sql(struct chh *c, const struct ch_reply *hosts, uint64_t last,
		   struct ch_sql *w, struct ch_sql *tw, bool *none)
{
	const struct hist_spec *sp = c->h->spec;
	struct ch_sql where;
	char extra[48];
	int ret;

	snprintf(extra, sizeof(extra), " AND _tc_commit <= %llu", (unsigned long long)last);
	ch_sql_init(&where, 0);
	ret = ch_query_where(c->s, c->q, hosts, extra, chh_reads_comm(c), &where, none);
	if (ret == 0 && ch_sql_err(&where))
		ret = ch_errf(c->s, ch_sql_err(&where), "the histogram's query is too long");
	if (ret < 0) {
		ch_sql_free(&where);
		return ret;
	}
	ch_sql_raw(w, "SELECT ");
	chh_keys(w, sp->nkeys);
	ch_sql_raw(w, ", hc");
	for (size_t i = 0; i < sp->nvals; i++)
		ch_sql_addf(w, ", s%zu", i);
	ch_sql_raw(w, ", ft, lt, hid FROM (SELECT ");
	for (size_t i = 0; i < sp->nkeys; i++)
		chh_key(c, w, i, hosts);
	ch_sql_raw(w, "count() AS hc");
	for (size_t i = 0; i < sp->nvals; i++) {
		ch_sql_raw(w, ", sum(if(");
		ch_query_null_expr(w, c->q->schema, c->h->val_col[i]);
		ch_sql_raw(w, ", toUInt64(0), toUInt64(");
		chh_col(w, c->q->schema, c->h->val_col[i], hosts);
		ch_sql_addf(w, "))) AS s%zu", i);
	}
	ch_sql_raw(w, ", min(ts) AS ft, max(ts) AS lt, min(host_id) AS hid");
	if (chh_has_stack(c))
		chh_stack_from(c, last, ch_sql_text(&where), w);
	else
		ch_sql_raw(w, ch_sql_text(&where));
	ch_sql_raw(w, " GROUP BY ");
	chh_keys(w, sp->nkeys);
	ch_sql_raw(w, ") ORDER BY ft");
	for (size_t i = 0; i < sp->nkeys; i++)
		ch_sql_addf(w, ", n%zu DESC, k%zu", i, i);
	ch_sql_raw(w, " LIMIT ");
	ch_sql_u64(w, sp->size);
	ch_sql_raw(tw, "SELECT count(), max(ts)");
	if (chh_has_stack(c))
		chh_stack_from(c, last, ch_sql_text(&where), tw);
	else
		ch_sql_raw(tw, ch_sql_text(&where));
	ch_sql_free(&where);
	ret = ch_sql_err(w) ?: ch_sql_err(tw);
	return ret < 0 ? ch_errf(c->s, ret, "the histogram's query is too long") : 0;
}

/* Cell @col of row @i as an integer key or sum (its u64 bit pattern). */
static int chh_int(const struct ch_reply *r, size_t i, size_t col, uint64_t *v)
{
	int64_t x;

	if (ch_reply_i64(r, i, col, &x) == 0) {
		*v = (uint64_t)x;
		return 0;
	}
	return ch_reply_u64(r, i, col, v);
}

/* The reply's rows as entries. */
static int chh_read(struct chh *c, const struct ch_reply *r)
{
	const struct hist_spec *sp = c->h->spec;
	size_t nk = sp->nkeys, nv = sp->nvals;
	int ret = 0;

	c->e = calloc(r->nrows + 1, sizeof(*c->e));
	if (!c->e)
		return -ENOMEM;
	for (size_t i = 0; ret == 0 && i < r->nrows; i++) {
		struct chh_ent *e = &c->e[c->n++];
		size_t col = 0;
		uint64_t u = 0, lt = 0;

		for (size_t k = 0; ret == 0 && k < nk; k++, col += 2) {
			ret = chh_int(r, i, col + 1, &u);
			e->null[k] = u != 0;
			if (c->text[k] && !e->null[k]) {
				e->k[k].kind = c->h->key_col[k] == STORE_HIST_STACK ? STORE_BLOB :
					       STORE_STRING;
				e->k[k].str.s = r->cells[i * r->ncols + col];
				e->k[k].str.len = r->lens[i * r->ncols + col];
			} else {
				e->k[k].kind = STORE_SIGNED;
				ret = ret ?: e->null[k] ? 0 : chh_int(r, i, col, &u);
				e->k[k].i = e->null[k] ? 0 : (int64_t)u;
			}
		}
		ret = ret ?: chh_int(r, i, col++, &e->hc);
		for (size_t v = 0; ret == 0 && v < nv; v++)
			ret = chh_int(r, i, col++, &e->sum[v]);
		col++;	/* ft: ordered by ClickHouse */
		ret = ret ?: chh_int(r, i, col++, &lt) ?: chh_int(r, i, col, &e->hid);
		e->lt = (int64_t)lt;
	}
	return ret < 0 ? ch_errf(c->s, TC_ERR_DB, "a histogram entry ClickHouse sent: %s",
				 tc_strerror(ret)) : 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

/* SQLite's order of key @k: NULL first, integers (signed or not), strings by bytes. */
static int chh_key_cmp(const struct chh *c, const struct chh_ent *a, const struct chh_ent *b,
		       size_t k)
{
	const struct store_value *x = &a->k[k], *y = &b->k[k];
	bool xs = x->kind == STORE_STRING || x->kind == STORE_BLOB;
	bool ys = y->kind == STORE_STRING || y->kind == STORE_BLOB;
	int r;

	if (a->null[k] != b->null[k])
		return a->null[k] ? -1 : 1;
	if (a->null[k])
		return 0;
	if (xs != ys)
		return xs ? 1 : -1;
	if (!xs)
		return c->uns[k] ? cmp_u64((uint64_t)x->i, (uint64_t)y->i) :
			x->i < y->i ? -1 : x->i > y->i;
	/* strings and a stack's frames (str and blob share their layout) by bytes */
	r = memcmp(x->str.s, y->str.s, x->str.len < y->str.len ? x->str.len : y->str.len);
	return r ? r : cmp_u64(x->str.len, y->str.len);
}

/* The spec's sort, then the keys. */
static int chh_cmp(const void *pa, const void *pb, void *arg)
{
	const struct chh *c = arg;
	const struct chh_ent *a = pa, *b = pb;
	const struct hist_spec *sp = c->h->spec;
	int r = 0;

	for (size_t i = 0; r == 0 && i < sp->nsort; i++) {
		const struct hist_sort *o = &sp->sort[i];

		if (o->by == HIST_SORT_HITCOUNT)
			r = cmp_u64(a->hc, b->hc);
		else if (o->by == HIST_SORT_VAL)
			r = cmp_u64(a->sum[o->i], b->sum[o->i]);
		else
			r = chh_key_cmp(c, a, b, o->i);
		r = o->descending ? -r : r;
	}
	for (size_t k = 0; r == 0 && k < sp->nkeys; k++)
		r = chh_key_cmp(c, a, b, k);
	return r;
}

/* The latest comms of the pids of the .execname keys of @c's entries into @out. */
static int chh_comms(struct chh *c, struct ch_reply *out)
{
	const struct hist_spec *sp = c->h->spec;
	struct ch_sql w;
	size_t n = 0;
	int ret;

	ch_sql_init(&w, 0);
	ch_sql_raw(&w, "SELECT host_id, pid, argMax(comm, version) FROM comms WHERE"
		       " (host_id, pid) IN (");
	for (size_t i = 0; i < c->n; i++)
		for (size_t k = 0; k < sp->nkeys; k++) {
			if (sp->keys[k].mod != HIST_MOD_EXECNAME || c->e[i].null[k] || c->text[k])
				continue;
			ch_sql_raw(&w, n++ ? ", (" : "(");
			ch_sql_u64(&w, c->e[i].hid);
			ch_sql_raw(&w, ", ");
			ch_sql_i64(&w, c->e[i].k[k].i);
			ch_sql_raw(&w, ")");
		}
	ch_sql_raw(&w, ") GROUP BY host_id, pid");
	ret = ch_sql_err(&w) ? ch_errf(c->s, ch_sql_err(&w), "the histogram's comms") :
	      n ? ch_query(c->s, &w, out) : 0;
	ch_sql_free(&w);
	return ret;
}

static const char *chh_comm_of(const struct ch_reply *comms, uint64_t host, int64_t pid)
{
	for (size_t i = 0; i < comms->nrows; i++) {
		uint64_t h;
		int64_t p;

		if (!ch_reply_u64(comms, i, 0, &h) && !ch_reply_i64(comms, i, 1, &p) &&
		    h == host && p == pid)
			return ch_reply_cell(comms, i, 2);
	}
	return NULL;
}

/* Entries [offset, offset + limit) of the sorted ones to @fn. */
static int chh_pass(struct chh *c, const struct ch_reply *comms,
		    int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx)
{
	const struct store_hist *h = c->h;
	uint64_t end = h->limit && h->offset + h->limit < c->n ? h->offset + h->limit : c->n;
	const char *comm[HIST_KEYS_MAX];
	int ret = 0;

	for (uint64_t r = h->offset; ret == 0 && r < end; r++) {
		const struct chh_ent *e = &c->e[r];
		struct store_hist_entry out = { .keys = e->k, .comm = comm, .host_id = e->hid,
						.last_ts = e->lt, .hitcount = e->hc, .sums = e->sum };

		for (size_t k = 0; k < h->spec->nkeys; k++)
			comm[k] = h->spec->keys[k].mod == HIST_MOD_EXECNAME && !e->null[k] &&
				  !c->text[k] ? chh_comm_of(comms, e->hid, e->k[k].i) : NULL;
		ret = fn(ctx, &out);
	}
	return ret;
}

static int ch_hist(struct store_reader *rd, const struct store_query *q,
		   const struct store_hist *h,
		   int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		   struct store_hist_totals *tot)
{
	struct chh c = { .s = ch_reader_of(rd), .q = q, .h = h };
	struct ch_reply hosts = { 0 }, groups = { 0 }, totals = { 0 }, comms = { 0 };
	struct ch_sql w, tw, lq;
	uint64_t last = 0, all = 0, max_ts = 0;
	bool none = false;
	int ret = store_hist_check(q, h);

	memset(tot, 0, sizeof(*tot));
	for (size_t i = 0; ret == 0 && i < h->spec->nkeys; i++) {
		int col = h->key_col[i];

		c.text[i] = col == STORE_HIST_HOST || col == STORE_HIST_COMM || col == STORE_HIST_STACK ||
			    (col >= 0 && h->spec->keys[i].mod != HIST_MOD_LOG2 &&
			     h->spec->keys[i].mod != HIST_MOD_BUCKETS &&
			     (q->schema->cols[col].kind == STORE_STRING ||
			      q->schema->cols[col].kind == STORE_BLOB));
		c.uns[i] = h->spec->keys[i].mod != HIST_MOD_LOG2 &&
			   (col == STORE_HIST_CPU ||
			    (col >= 0 && q->schema->cols[col].kind == STORE_UNSIGNED));
	}
	ch_sql_init(&w, 0);
	ch_sql_init(&tw, 0);
	ch_sql_init(&lq, 0);
	ch_sql_raw(&lq, "SELECT max(id) FROM commits");
	ret = ret ?: ch_query_u64(c.s, &lq, &last) ?: ch_query_hosts(c.s, &hosts) ?:
	      chh_sql(&c, &hosts, last, &w, &tw, &none);
	if (ret == 0 && !none)
		ret = ch_query(c.s, &w, &groups) ?: ch_query(c.s, &tw, &totals) ?:
		      chh_read(&c, &groups);
	if (ret == 0 && !none && totals.nrows &&
	    (chh_int(&totals, 0, 0, &all) || chh_int(&totals, 0, 1, &max_ts)))
		ret = ch_errf(c.s, TC_ERR_DB, "the histogram's totals ClickHouse sent");
	if (ret == 0 && c.n) {
		qsort_r(c.e, c.n, sizeof(*c.e), chh_cmp, &c);
		for (size_t i = 0; i < c.n; i++)
			tot->hits += c.e[i].hc;
		tot->entries = c.n;
		tot->dropped = all - tot->hits;
		tot->max_ts = (int64_t)max_ts;
		ret = chh_comms(&c, &comms) ?: chh_pass(&c, &comms, fn, ctx);
	}
	free(c.e);
	ch_reply_free(&hosts);
	ch_reply_free(&groups);
	ch_reply_free(&totals);
	ch_reply_free(&comms);
	ch_sql_free(&w);
	ch_sql_free(&tw);
	ch_sql_free(&lq);
	return ret;
}

void ch_hist_reader_ops(struct store_reader_ops *r)
{
	r->hist = ch_hist;
}
