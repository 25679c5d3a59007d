/*
 * sqlite_hist.c - the SQLite backend's histograms (store_hist(), the
 * kernel's hist triggers over stored rows). First in memory: one scan of
 * the rows into a hash table of ours, bounded (see "in memory" below).
 * When the keys do not fit, one statement that groups the
 * rows a store_query matches (sq_rows_of(): its bound filter, window,
 * hosts and scope) by the keys, keeps the first spec->size keys to appear
 * (the kernel's tracing_map takes entries first come and counts the hits
 * it has no room for as drops), and passes them sorted as the spec says,
 * with the totals as window aggregates over the kept ones.
 *
 *   WITH r AS (SELECT <key exprs> AS k0.., <val exprs> AS v0.., ts, host_id FROM ...),
 *        g AS MATERIALIZED (SELECT k.., count(*), tc_hist_usum(v).., min(ts), max(ts),
 *                                  min(host_id) FROM r GROUP BY k..),
 *        kept AS MATERIALIZED (SELECT * FROM g ORDER BY min(ts), k.. LIMIT :tc_size)
 *   SELECT k.., hc, s.., hid, lt, comms.., sum(hc) OVER (), count(*) OVER (),
 *          (SELECT sum(hc) FROM g), (SELECT max(lt) FROM g)
 *   FROM kept ORDER BY <sort> LIMIT :tc_plimit OFFSET :tc_off
 *
 * The kernel's arithmetic is u64: .log2 is ilog2(roundup_pow_of_two(v)),
 * .buckets=N is v / N * N, sums wrap. SQLite integers are signed, so three
 * functions of ours (registered on the connection before each read) do
 * it on the bit pattern, and unsigned fields and sums sort as unsigned
 * ((x < 0) first, then x). Every value is a bound parameter; the text
 * holds only quoted column names and the store's own words.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/hist.h"
#include "common/tc_error.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_hist.h"
#include "server/store/sqlite_read.h"
#include "server/store/sqlite_stacks.h"
#include "server/store/sqlite_util.h"

/* ilog2(roundup_pow_of_two(v)) as x86-64 computes it (1 << 64 is 1). */
static void fn_log2(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	uint64_t v = (uint64_t)sqlite3_value_int64(argv[0]);

	(void)argc;
	sqlite3_result_int64(cx, v > 1 && v <= (1ull << 63) ? 64 - __builtin_clzll(v - 1) : 0);
}

static void fn_bucket(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	uint64_t v = (uint64_t)sqlite3_value_int64(argv[0]);
	uint64_t n = (uint64_t)sqlite3_value_int64(argv[1]);

	(void)argc;
	sqlite3_result_int64(cx, (int64_t)(n ? v / n * n : v));
}

/* sum() as u64 that wraps (SQLite's raises an error on overflow). */
static void fn_usum_step(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	uint64_t *acc = sqlite3_aggregate_context(cx, sizeof(*acc));

	(void)argc;
	if (acc && sqlite3_value_type(argv[0]) != SQLITE_NULL)
		*acc += (uint64_t)sqlite3_value_int64(argv[0]);
}

static void fn_usum_final(sqlite3_context *cx)
{
	uint64_t *acc = sqlite3_aggregate_context(cx, 0);

	sqlite3_result_int64(cx, acc ? (int64_t)*acc : 0);
}

static int register_fns(struct sq_store *s, sqlite3 *db)
{
	int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;

	if (sqlite3_create_function_v2(db, "tc_hist_log2", 1, flags, NULL, fn_log2, NULL, NULL,
				       NULL) != SQLITE_OK ||
	    sqlite3_create_function_v2(db, "tc_hist_bucket", 2, flags, NULL, fn_bucket, NULL,
				       NULL, NULL) != SQLITE_OK ||
	    sqlite3_create_function_v2(db, "tc_hist_usum", 1, flags, NULL, NULL, fn_usum_step,
				       fn_usum_final, NULL) != SQLITE_OK)
		return sq_err(s, TC_ERR_DB, "hist functions");
	return 0;
}

/* Whether key/val column @col sorts as unsigned. */
static bool col_unsigned(const struct store_schema *sc, int col)
{
	return col == STORE_HIST_CPU || (col >= 0 && sc->cols[col].kind == STORE_UNSIGNED);
}

/* The SQL of key or val column @col of the rows. */
static void col_expr(struct sq_buf *b, const struct store_schema *sc, int col)
{
	if (col == STORE_HIST_HOST)
		sq_buf_str(b, "(SELECT name FROM hosts WHERE id = host_id)");
	else if (col == STORE_HIST_CPU)
		sq_buf_str(b, "cpu");
	else if (col == STORE_HIST_COMM)
		sq_buf_str(b, "_tc_comm");	/* sq_from() computes it */
	else if (col == STORE_HIST_TS)
		sq_buf_str(b, "ts");
	else if (col == STORE_HIST_STACK)
		sq_buf_str(b, "_tc_rowid");	/* its stack joined by stack_join() */
	else
		sq_col_read(b, sc, (size_t)col, "", "");
}

/* The key that is the rows' stack (its index), or -1. */
static int stack_key(const struct store_hist *h)
{
	for (size_t i = 0; i < h->spec->nkeys; i++)
		if (h->key_col[i] == STORE_HIST_STACK)
			return (int)i;
	return -1;
}

/*
 * "WITH _tc_stk AS (...)" (and @more after it: ", " when another CTE
 * follows): the stack of each row of the event that has one, as
 * store_types.h's struct store_hist says, (prid: the row's rowid, st: the
 * first :tc_stkb bytes of its frames). Every row of the event and every
 * stack record take part, merged per host and CPU by ts (an event row
 * first at one ts), whatever the query's filter and window: a row the
 * filter drops keeps its stack from the next row's.
 */
static void stack_cte(struct sq_buf *b, const struct store_query *q, const struct store_hist *h,
		      const char *more)
{
	sq_buf_str(b, "WITH _tc_stk AS MATERIALIZED (SELECT prid, substr(st, 1, :tc_stkb) AS st"
		   " FROM (SELECT k, st, lag(k) OVER w AS pk, lag(rid) OVER w AS prid FROM"
		   " (SELECT rowid AS rid, host_id AS h, cpu AS c, ts AS t, 0 AS k, NULL AS st FROM ");
	sq_ident(b, q->schema->table);
	sq_buf_str(b, " UNION ALL SELECT NULL, host_id, cpu, ts, 1, ");
	sq_col_read(b, h->stacks, h->stack_col, "", "");
	sq_buf_str(b, " FROM ");
	sq_ident(b, h->stacks->table);
	sq_buf_str(b, ") WINDOW w AS (PARTITION BY h, c ORDER BY t, k, rid))"
		   " WHERE k = 1 AND pk = 0)");
	sq_buf_str(b, more);
}

/*
 * "SELECT k0.., v0.., @t, @hh FROM _tc_r JOIN _tc_stk ...": the rows of
 * _tc_r (whose stack key holds the row's rowid) with that key replaced by
 * the row's stack; a row without one is not counted. A join, not a
 * subquery per row: SQLite indexes one side of a join (an automatic
 * index), never a CTE a correlated subquery scans.
 */
static void stack_join(struct sq_buf *b, const struct store_hist *h, int sk, const char *t,
		       const char *hh)
{
	char c[64];

	sq_buf_str(b, "SELECT ");
	for (size_t i = 0; i < h->spec->nkeys; i++) {
		if ((int)i == sk)
			snprintf(c, sizeof(c), "_tc_stk.st AS k%zu, ", i);
		else
			snprintf(c, sizeof(c), "k%zu, ", i);
		sq_buf_str(b, c);
	}
	for (size_t i = 0; i < h->spec->nvals; i++) {
		snprintf(c, sizeof(c), "v%zu, ", i);
		sq_buf_str(b, c);
	}
	snprintf(c, sizeof(c), "%s, %s FROM _tc_r JOIN _tc_stk ON _tc_stk.prid = _tc_r.k%d", t, hh,
		 sk);
	sq_buf_str(b, c);
}

static void key_expr(struct sq_buf *b, const struct store_query *q, const struct store_hist *h,
		     size_t i)
{
	const struct hist_field *f = &h->spec->keys[i];
	char p[32];

	if (f->mod == HIST_MOD_LOG2 || f->mod == HIST_MOD_BUCKETS)
		sq_buf_str(b, f->mod == HIST_MOD_LOG2 ? "tc_hist_log2(" : "tc_hist_bucket(");
	col_expr(b, q->schema, h->key_col[i]);
	snprintf(p, sizeof(p), ", :tc_bk%zu)", i);
	if (f->mod == HIST_MOD_LOG2)
		sq_buf_str(b, ")");
	else if (f->mod == HIST_MOD_BUCKETS)
		sq_buf_str(b, p);
	snprintf(p, sizeof(p), " AS k%zu, ", i);
	sq_buf_str(b, p);
}

/* One ORDER BY term: name @col, unsigned order when @uns, then @dir. */
static void order_term(struct sq_buf *b, const char *col, bool uns, bool desc, bool *first)
{
	const char *dir = desc ? " DESC" : "";

	sq_buf_str(b, *first ? " ORDER BY " : ", ");
	*first = false;
	if (uns) {
		sq_buf_str(b, "(");
		sq_buf_str(b, col);
		sq_buf_str(b, " < 0)");
		sq_buf_str(b, dir);
		sq_buf_str(b, ", ");
	}
	sq_buf_str(b, col);
	sq_buf_str(b, dir);
}

static bool key_unsigned(const struct store_query *q, const struct store_hist *h, size_t i)
{
	return h->spec->keys[i].mod != HIST_MOD_LOG2 && col_unsigned(q->schema, h->key_col[i]);
}

/* ORDER BY the keys ascending, after @first terms. */
static void order_keys(struct sq_buf *b, const struct store_query *q, const struct store_hist *h,
		       bool *first)
{
	char k[32];

	for (size_t i = 0; i < h->spec->nkeys; i++) {
		snprintf(k, sizeof(k), "k%zu", i);
		order_term(b, k, key_unsigned(q, h, i), false, first);
	}
}

static void order_sort(struct sq_buf *b, const struct store_query *q, const struct store_hist *h)
{
	bool first = true, uns;
	char c[32];

	for (size_t i = 0; i < h->spec->nsort; i++) {
		const struct hist_sort *o = &h->spec->sort[i];

		if (o->by == HIST_SORT_HITCOUNT) {
			snprintf(c, sizeof(c), "hc");
			uns = false;
		} else if (o->by == HIST_SORT_VAL) {
			snprintf(c, sizeof(c), "s%zu", o->i);
			uns = true;	/* sums are u64 */
		} else {
			snprintf(c, sizeof(c), "k%zu", o->i);
			uns = key_unsigned(q, h, o->i);
		}
		order_term(b, c, uns, o->descending, &first);
	}
	order_keys(b, q, h, &first);
}

/* "k0, k1" */
static void key_list(struct sq_buf *b, size_t n)
{
	char k[32];

	for (size_t i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%sk%zu", i ? ", " : "", i);
		sq_buf_str(b, k);
	}
}

/* The statement's text; the rows' part through sq_rows_of(). */
static int hist_sql(struct sq_store *s, const struct store_query *q, const struct store_hist *h,
		    struct sq_buf *b, struct sq_rows **rows)
{
	const struct hist_spec *sp = h->spec;
	bool first = true;
	char t[160];
	int ret;

	if (stack_key(h) >= 0)
		stack_cte(b, q, h, ", _tc_r AS (SELECT ");
	else
		sq_buf_str(b, "WITH r AS (SELECT ");
	for (size_t i = 0; i < sp->nkeys; i++)
		key_expr(b, q, h, i);
	for (size_t i = 0; i < sp->nvals; i++) {
		col_expr(b, q->schema, h->val_col[i]);
		snprintf(t, sizeof(t), " AS v%zu, ", i);
		sq_buf_str(b, t);
	}
	sq_buf_str(b, "ts AS t, host_id AS h");
	ret = sq_rows_of(s, q, b, rows);
	if (ret < 0)
		return ret;
	if (stack_key(h) >= 0) {
		sq_buf_str(b, "), r AS (");
		stack_join(b, h, stack_key(h), "t", "h");
	}
	sq_buf_str(b, "), g AS MATERIALIZED (SELECT ");
	key_list(b, sp->nkeys);
	sq_buf_str(b, ", count(*) AS hc");
	for (size_t i = 0; i < sp->nvals; i++) {
		snprintf(t, sizeof(t), ", tc_hist_usum(v%zu) AS s%zu", i, i);
		sq_buf_str(b, t);
	}
	sq_buf_str(b, ", min(t) AS ft, max(t) AS lt, min(h) AS hid FROM r");
	if (stack_key(h) >= 0) {
		snprintf(t, sizeof(t), " WHERE k%d IS NOT NULL", stack_key(h));
		sq_buf_str(b, t);	/* a row without a stack is not counted */
	}
	sq_buf_str(b, " GROUP BY ");
	key_list(b, sp->nkeys);
	sq_buf_str(b, "), kept AS MATERIALIZED (SELECT * FROM g");
	order_term(b, "ft", false, false, &first);
	order_keys(b, q, h, &first);
	sq_buf_str(b, " LIMIT :tc_size) SELECT ");
	key_list(b, sp->nkeys);
	sq_buf_str(b, ", hc");
	for (size_t i = 0; i < sp->nvals; i++) {
		snprintf(t, sizeof(t), ", s%zu", i);
		sq_buf_str(b, t);
	}
	sq_buf_str(b, ", hid, lt");
	for (size_t i = 0; i < sp->nkeys; i++) {
		snprintf(t, sizeof(t), ", (SELECT comm FROM comms WHERE host_id = hid AND pid = k%zu)",
			 i);
		sq_buf_str(b, sp->keys[i].mod == HIST_MOD_EXECNAME ? t : ", NULL");
	}
	sq_buf_str(b, ", sum(hc) OVER (), count(*) OVER (), (SELECT sum(hc) FROM g),"
		   " (SELECT max(lt) FROM g) FROM kept");
	order_sort(b, q, h);
	sq_buf_str(b, " LIMIT :tc_plimit OFFSET :tc_off");
	return b->oom ? -ENOMEM : 0;
}

static void bind_named(sqlite3_stmt *st, const char *name, int64_t v)
{
	int i = sqlite3_bind_parameter_index(st, name);

	if (i > 0)
		sqlite3_bind_int64(st, i, v);
}

static void hist_bind(sqlite3_stmt *st, const struct store_hist *h)
{
	char p[32];

	for (size_t i = 0; i < h->spec->nkeys; i++) {
		snprintf(p, sizeof(p), ":tc_bk%zu", i);
		bind_named(st, p, (int64_t)h->spec->keys[i].buckets);
	}
	bind_named(st, ":tc_size", h->spec->size);
	bind_named(st, ":tc_stkb", h->stack_bytes);
	bind_named(st, ":tc_plimit", h->limit ? (int64_t)h->limit : -1);
	bind_named(st, ":tc_off", h->offset > INT64_MAX ? INT64_MAX : (int64_t)h->offset);
}

/* The entry of the current row into @e (its arrays are the caller's). */
static void hist_entry(sqlite3_stmt *st, const struct store_hist *h, struct store_hist_entry *e,
		       struct store_value *keys, const char **comm, uint64_t *sums)
{
	size_t nk = h->spec->nkeys, nv = h->spec->nvals, c = 0;

	for (size_t i = 0; i < nk; i++, c++) {
		memset(&keys[i], 0, sizeof(keys[i]));
		if (sqlite3_column_type(st, (int)c) == SQLITE_BLOB) {
			keys[i].kind = STORE_BLOB;	/* a stack's frames */
			keys[i].blob.p = sqlite3_column_blob(st, (int)c);
			keys[i].blob.len = (size_t)sqlite3_column_bytes(st, (int)c);
		} else if (sqlite3_column_type(st, (int)c) == SQLITE_TEXT) {
			keys[i].kind = STORE_STRING;
			keys[i].str.s = (const char *)sqlite3_column_text(st, (int)c);
			keys[i].str.len = (size_t)sqlite3_column_bytes(st, (int)c);
		} else {
			keys[i].kind = STORE_SIGNED;
			keys[i].i = sqlite3_column_int64(st, (int)c);
		}
	}
	e->hitcount = (uint64_t)sqlite3_column_int64(st, (int)c++);
	for (size_t i = 0; i < nv; i++)
		sums[i] = (uint64_t)sqlite3_column_int64(st, (int)c++);
	e->host_id = (uint64_t)sqlite3_column_int64(st, (int)c++);
	e->last_ts = sqlite3_column_int64(st, (int)c++);
	for (size_t i = 0; i < nk; i++, c++)
		comm[i] = (const char *)sqlite3_column_text(st, (int)c);
	e->keys = keys;
	e->comm = comm;
	e->sums = sums;
}

static void hist_totals(sqlite3_stmt *st, const struct store_hist *h,
			struct store_hist_totals *tot)
{
	int c = (int)(2 * h->spec->nkeys + h->spec->nvals + 3);
	uint64_t all = (uint64_t)sqlite3_column_int64(st, c + 2);

	tot->hits = (uint64_t)sqlite3_column_int64(st, c);
	tot->entries = (uint64_t)sqlite3_column_int64(st, c + 1);
	tot->dropped = all - tot->hits;
	tot->max_ts = sqlite3_column_int64(st, c + 3);
}

static int hist_run(struct sq_store *s, sqlite3_stmt *st, const struct store_hist *h,
		    int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		    struct store_hist_totals *tot)
{
	struct store_value keys[HIST_KEYS_MAX];
	const char *comm[HIST_KEYS_MAX];
	uint64_t sums[HIST_VALS_MAX + 1];
	struct store_hist_entry e;
	bool first = true;
	int rc, ret = 0;

	memset(tot, 0, sizeof(*tot));
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (first)
			hist_totals(st, h, tot);
		first = false;
		hist_entry(st, h, &e, keys, comm, sums);
		ret = fn(ctx, &e);
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "hist");
	return ret;
}

/* ---- in memory: one scan into a bounded hash table ---- */

/*
 * SQLite's GROUP BY sorts every row (seconds for millions); a scan that
 * aggregates into a hash table of ours reads them once. It holds at most
 * spec->size + QH_MEM_EXTRA keys and QH_MEM_TEXT bytes of their text: with
 * every key in it the answer is exact
 * (the first spec->size keys by first ts are kept, as the grouped
 * statement keeps them); with more, it gives up (1) and the grouped
 * statement runs, its memory SQLite's (spilled to disk).
 */
#define QH_MEM_EXTRA	16384
#define QH_MEM_TEXT	(32u << 20)	/* bytes of text keys held, then the same */

enum { QK_NULL, QK_INT, QK_TEXT };	/* SQLite's order: NULL < INTEGER < TEXT */

struct qh_key {
	int kind;
	int64_t i;
	char *s;
	size_t len;
};

struct qh_ent {
	struct qh_key k[HIST_KEYS_MAX];
	uint64_t hash, hc, sum[HIST_VALS_MAX], hid;
	int64_t ft, lt;
};

struct qh_tab {
	const struct store_query *q;
	const struct store_hist *h;
	bool uns[HIST_KEYS_MAX];	/* key i sorts as unsigned */
	int stack;			/* the stack key, -1: none */
	struct qh_ent *e;		/* n in use, room for cap; arrival order */
	size_t n, cap, max;
	size_t text;			/* bytes of text keys held */
	uint32_t *slot;			/* entry index + 1, 0: empty; nslot = 2 * cap */
	size_t nslot;
	size_t *order;			/* kept entries, sorted */
};

static uint64_t qh_hash(const struct qh_key *k, size_t n)
{
	uint64_t x = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		x = (x ^ (uint64_t)k[i].kind) * 0x100000001b3ull;
		x = (x ^ (uint64_t)k[i].i) * 0x100000001b3ull;
		for (size_t j = 0; k[i].kind == QK_TEXT && j < k[i].len; j++)
			x = (x ^ (unsigned char)k[i].s[j]) * 0x100000001b3ull;
	}
	return x;
}

static bool qh_key_eq(const struct qh_key *a, const struct qh_key *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].kind != b[i].kind || a[i].i != b[i].i || a[i].len != b[i].len ||
		    (a[i].kind == QK_TEXT && memcmp(a[i].s, b[i].s, a[i].len)))
			return false;
	return true;
}

/* Room for twice as many entries (up to t->max); 1: full. */
static int qh_grow(struct qh_tab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024, nslot;
	struct qh_ent *e;
	uint32_t *slot;

	if (t->cap >= t->max)
		return 1;
	if (cap > t->max)
		cap = t->max;
	nslot = 1;
	while (nslot < 2 * cap)
		nslot <<= 1;
	e = realloc(t->e, cap * sizeof(*e));
	if (e)
		t->e = e;
	slot = calloc(nslot, sizeof(*slot));
	if (!e || !slot) {
		free(slot);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++) {
		size_t j = t->e[i].hash & (nslot - 1);

		while (slot[j])
			j = (j + 1) & (nslot - 1);
		slot[j] = (uint32_t)(i + 1);
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = nslot;
	t->cap = cap;
	return 0;
}

/* The entry of @k (a new one copies its strings): 0 and *@out; 1: full. */
static int qh_find(struct qh_tab *t, const struct qh_key *k, struct qh_ent **out)
{
	size_t nk = t->h->spec->nkeys, j;
	uint64_t hash = qh_hash(k, nk);
	struct qh_ent *e;
	int ret;

	for (j = t->nslot ? hash & (t->nslot - 1) : 0; t->nslot && t->slot[j];
	     j = (j + 1) & (t->nslot - 1)) {
		e = &t->e[t->slot[j] - 1];
		if (e->hash == hash && qh_key_eq(e->k, k, nk)) {
			*out = e;
			return 0;
		}
	}
	if (t->n == t->cap) {
		ret = qh_grow(t);
		if (ret != 0)
			return ret;
		return qh_find(t, k, out);
	}
	for (size_t i = 0; i < nk; i++)
		t->text += k[i].kind == QK_TEXT ? k[i].len + 1 : 0;
	if (t->text > QH_MEM_TEXT)
		return 1;
	e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < nk; i++) {
		e->k[i] = k[i];
		if (k[i].kind == QK_TEXT && !(e->k[i].s = malloc(k[i].len + 1))) {
			while (i--)
				free(e->k[i].s);
			return -ENOMEM;
		}
		if (k[i].kind == QK_TEXT) {
			memcpy(e->k[i].s, k[i].s, k[i].len);
			e->k[i].s[k[i].len] = '\0';
		}
	}
	e->hash = hash;
	t->slot[j] = (uint32_t)(++t->n);
	*out = e;
	return 0;
}

static void qh_row_key(sqlite3_stmt *st, int c, struct qh_key *k)
{
	memset(k, 0, sizeof(*k));
	switch (sqlite3_column_type(st, c)) {
	case SQLITE_NULL:
		k->kind = QK_NULL;
		break;
	case SQLITE_TEXT:
	case SQLITE_BLOB:
		k->kind = QK_TEXT;
		k->s = (char *)sqlite3_column_blob(st, c);
		k->len = (size_t)sqlite3_column_bytes(st, c);
		break;
	default:
		k->kind = QK_INT;
		k->i = sqlite3_column_int64(st, c);
	}
}

/* One row: k0.., v0.., t, h. Return: 0; 1 (full); -ENOMEM. */
static int qh_add(struct qh_tab *t, sqlite3_stmt *st)
{
	size_t nk = t->h->spec->nkeys, nv = t->h->spec->nvals;
	struct qh_key k[HIST_KEYS_MAX];
	struct qh_ent *e;
	int64_t ts = sqlite3_column_int64(st, (int)(nk + nv));
	uint64_t hid = (uint64_t)sqlite3_column_int64(st, (int)(nk + nv + 1));
	int ret;

	for (size_t i = 0; i < nk; i++)
		qh_row_key(st, (int)i, &k[i]);
	if (t->stack >= 0 && k[t->stack].kind == QK_NULL)
		return 0;	/* a row without a stack is not counted */
	ret = qh_find(t, k, &e);
	if (ret != 0)
		return ret;
	if (!e->hc || ts < e->ft)
		e->ft = ts;
	if (!e->hc || ts > e->lt)
		e->lt = ts;
	if (!e->hc || hid < e->hid)
		e->hid = hid;
	e->hc++;
	for (size_t i = 0; i < nv; i++)
		e->sum[i] += (uint64_t)sqlite3_column_int64(st, (int)(nk + i));
	return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int qh_key_cmp(const struct qh_key *a, const struct qh_key *b, bool uns)
{
	int c;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->kind == QK_INT)
		return uns ? cmp_u64((uint64_t)a->i, (uint64_t)b->i) :
			     a->i < b->i ? -1 : a->i > b->i;
	if (a->kind == QK_NULL)
		return 0;
	c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);
	return c ? c : cmp_u64(a->len, b->len);
}

static int qh_keys_cmp(const struct qh_tab *t, const struct qh_ent *a, const struct qh_ent *b)
{
	int c = 0;

	for (size_t i = 0; c == 0 && i < t->h->spec->nkeys; i++)
		c = qh_key_cmp(&a->k[i], &b->k[i], t->uns[i]);
	return c;
}

/* First come: the earliest first row, then the keys. */
static int qh_cmp_first(const void *x, const void *y, void *arg)
{
	const struct qh_tab *t = arg;
	const struct qh_ent *a = &t->e[*(const size_t *)x], *b = &t->e[*(const size_t *)y];

	if (a->ft != b->ft)
		return a->ft < b->ft ? -1 : 1;
	return qh_keys_cmp(t, a, b);
}

/* The spec's sort, then the keys. */
static int qh_cmp_sort(const void *x, const void *y, void *arg)
{
	const struct qh_tab *t = arg;
	const struct qh_ent *a = &t->e[*(const size_t *)x], *b = &t->e[*(const size_t *)y];
	const struct hist_spec *sp = t->h->spec;
	int c = 0;

	for (size_t i = 0; c == 0 && i < sp->nsort; i++) {
		const struct hist_sort *o = &sp->sort[i];

		if (o->by == HIST_SORT_HITCOUNT)
			c = cmp_u64(a->hc, b->hc);
		else if (o->by == HIST_SORT_VAL)
			c = cmp_u64(a->sum[o->i], b->sum[o->i]);
		else
			c = qh_key_cmp(&a->k[o->i], &b->k[o->i], t->uns[o->i]);
		if (o->descending)
			c = -c;
	}
	return c ? c : qh_keys_cmp(t, a, b);
}

static void qh_free(struct qh_tab *t)
{
	for (size_t i = 0; t->e && i < t->n; i++)
		for (size_t k = 0; k < t->h->spec->nkeys; k++)
			free(t->e[i].k[k].s);
	free(t->e);
	free(t->slot);
	free(t->order);
}

/* Scan @q's rows into @t. Return: 0; 1 (too many keys); a negative code. */
static int qh_scan(struct sq_store *s, struct qh_tab *t)
{
	const struct store_hist *h = t->h;
	struct sq_buf b = { 0 };
	struct sq_rows *rows = NULL;
	sqlite3_stmt *st = NULL;
	char a[32];
	int ret, rc = SQLITE_DONE;

	if (t->stack >= 0)
		stack_cte(&b, t->q, h, ", _tc_r AS (");
	sq_buf_str(&b, "SELECT ");
	for (size_t i = 0; i < h->spec->nkeys; i++)
		key_expr(&b, t->q, h, i);
	for (size_t i = 0; i < h->spec->nvals; i++) {
		col_expr(&b, t->q->schema, h->val_col[i]);
		snprintf(a, sizeof(a), " AS v%zu, ", i);
		sq_buf_str(&b, a);
	}
	sq_buf_str(&b, "ts, host_id");
	ret = sq_rows_of(s, t->q, &b, &rows);
	if (ret == 0 && t->stack >= 0) {
		sq_buf_str(&b, ") ");
		stack_join(&b, h, t->stack, "ts", "host_id");
	}
	if (ret == 0)
		ret = b.oom ? -ENOMEM : sq_prepare(s, b.s, &st);
	if (ret == 0)
		ret = sq_rows_bind(s, st, t->q, rows);
	if (ret == 0)
		hist_bind(st, h);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		ret = qh_add(t, st);
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "hist scan");
	sqlite3_finalize(st);
	sq_rows_free(rows);
	free(b.s);
	return ret;
}

/* Keep the first spec->size keys, sorted as the spec says; the totals. */
static int qh_keep(struct qh_tab *t, struct store_hist_totals *tot)
{
	size_t kept = t->n < t->h->spec->size ? t->n : t->h->spec->size;
	uint64_t all = 0;

	t->order = malloc((t->n ? t->n : 1) * sizeof(*t->order));
	if (!t->order)
		return -ENOMEM;
	memset(tot, 0, sizeof(*tot));
	for (size_t i = 0; i < t->n; i++) {
		t->order[i] = i;
		all += t->e[i].hc;
		if (!i || t->e[i].lt > tot->max_ts)
			tot->max_ts = t->e[i].lt;
	}
	if (kept < t->n)
		qsort_r(t->order, t->n, sizeof(*t->order), qh_cmp_first, t);
	qsort_r(t->order, kept, sizeof(*t->order), qh_cmp_sort, t);
	for (size_t i = 0; i < kept; i++)
		tot->hits += t->e[t->order[i]].hc;
	tot->entries = kept;
	tot->dropped = all - tot->hits;
	return 0;
}

/* Pass entries [offset, offset + limit) of the kept ones to @fn. */
static int qh_pass(struct sq_store *s, struct qh_tab *t, const struct store_hist_totals *tot,
		   int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx)
{
	const struct store_hist *h = t->h;
	uint64_t end = h->limit && h->offset + h->limit < tot->entries ? h->offset + h->limit :
		       tot->entries;
	struct store_value keys[HIST_KEYS_MAX];
	const char *comm[HIST_KEYS_MAX];
	char names[HIST_KEYS_MAX][256];
	sqlite3_stmt *cs = NULL;
	int ret = sq_prepare(s, "SELECT comm FROM comms WHERE host_id = ? AND pid = ?", &cs);

	for (uint64_t r = h->offset; ret == 0 && r < end; r++) {
		const struct qh_ent *e = &t->e[t->order[r]];
		struct store_hist_entry out = { .keys = keys, .comm = comm, .host_id = e->hid,
						.last_ts = e->lt, .hitcount = e->hc, .sums = e->sum };

		for (size_t i = 0; i < h->spec->nkeys; i++) {
			memset(&keys[i], 0, sizeof(keys[i]));
			keys[i].kind = e->k[i].kind != QK_TEXT ? STORE_SIGNED :
				       (int)i == t->stack ? STORE_BLOB : STORE_STRING;
			keys[i].i = e->k[i].i;
			if (e->k[i].kind == QK_TEXT) {
				keys[i].str.s = e->k[i].s;
				keys[i].str.len = e->k[i].len;
			}
			comm[i] = NULL;
			if (h->spec->keys[i].mod != HIST_MOD_EXECNAME || e->k[i].kind != QK_INT)
				continue;
			sqlite3_reset(cs);
			sqlite3_bind_int64(cs, 1, (int64_t)e->hid);
			sqlite3_bind_int64(cs, 2, e->k[i].i);
			if (sqlite3_step(cs) == SQLITE_ROW) {
				snprintf(names[i], sizeof(names[i]), "%s",
					 (const char *)sqlite3_column_text(cs, 0));
				comm[i] = names[i];
			}
		}
		ret = fn(ctx, &out);
	}
	sqlite3_finalize(cs);
	return ret;
}

/*
 * The histogram in memory. Return: 0 (done); 1 (more keys than it holds:
 * nothing was passed to @fn); a negative code.
 */
static int sq_hist_mem(struct sq_store *s, const struct store_query *q, const struct store_hist *h,
		       int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		       struct store_hist_totals *tot)
{
	struct qh_tab t = { .q = q, .h = h, .max = h->spec->size + QH_MEM_EXTRA,
			    .stack = stack_key(h) };
	int ret;

	for (size_t i = 0; i < h->spec->nkeys; i++)
		t.uns[i] = key_unsigned(q, h, i);
	ret = qh_grow(&t) ?: qh_scan(s, &t);
	if (ret == 0)
		ret = qh_keep(&t, tot);
	if (ret == 0)
		ret = qh_pass(s, &t, tot, fn, ctx);
	qh_free(&t);
	return ret;
}

/*
 * The grouped statement alone (see the top of this file): sq_hist() runs it
 * when the keys do not fit in memory; tests call it to compare.
 */
int sq_hist_grouped(struct sq_store *s, const struct store_query *q, const struct store_hist *h,
		    int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		    struct store_hist_totals *tot)
{
	struct sq_buf b = { 0 };
	struct sq_rows *rows = NULL;
	sqlite3_stmt *st = NULL;
	int ret = store_hist_check(q, h) ?: register_fns(s, s->db);

	if (ret == 0)
		ret = hist_sql(s, q, h, &b, &rows);
	if (ret == 0)
		ret = sq_prepare(s, b.s, &st);
	if (ret == 0)
		ret = sq_rows_bind(s, st, q, rows);
	if (ret == 0) {
		hist_bind(st, h);
		ret = hist_run(s, st, h, fn, ctx, tot);
	}
	sqlite3_finalize(st);
	sq_rows_free(rows);
	free(b.s);
	return ret;
}

static int sq_hist(struct store_reader *r, const struct store_query *q,
		   const struct store_hist *h,
		   int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		   struct store_hist_totals *tot)
{
	struct sq_store *s = sq_reader_of(r);
	int ret = sq_reader_enter(s) ?: store_hist_check(q, h) ?: register_fns(s, s->db);

	if (ret == 0)
		ret = sq_hist_mem(s, q, h, fn, ctx, tot);
	return ret == 1 ? sq_hist_grouped(s, q, h, fn, ctx, tot) : ret;
}

void sq_hist_ops(struct store_reader_ops *r)
{
	r->hist = sq_hist;
}
