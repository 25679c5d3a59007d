/*
 * sqlite_read.c - the SQLite backend's reads of event rows: store_select()
 * and store_count() through the time index (ts_blocks: the blocks of rows
 * a time range can touch; a limited select reads them window by window,
 * sq_select_windows()), or through a field index, with keyset paging on
 * (ts, rowid). A struct store_query becomes the WHERE of those reads here
 * (sq_where_of(): its filter through sqlite_filter.c, its host glob and
 * scope, sq_hosts_cond(), which the counters' reads share).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_filter.h"
#include "server/store/sqlite_index.h"
#include "server/store/sqlite_names.h"
#include "server/store/sqlite_read.h"
#include "server/store/sqlite_stacks.h"
#include "server/store/sqlite_util.h"
#include "server/store/sqlite_window.h"

#define SQ_BLOCKS_FIRST	64		/* most blocks a limited select's first window takes */
#define SQ_BLOCKS_MAX	(1 << 24)	/* no wider growth of a window */
/* struct sq_range's cut: the 64th widest span (at most 63 blocks are wider) */
#define SQ_CUT_SQL	"SELECT span FROM ts_blocks WHERE type_id = ?" \
			" ORDER BY span DESC LIMIT 1 OFFSET 63"

/*
 * The first column of @name, an integer one first: a format that sent
 * common_pid as a string has a column of its own, and the rows of every
 * other format keep their pid in the integer one.
 */
int sq_col_index(const struct store_schema *sc, const char *name)
{
	int any = -1;

	for (size_t i = 0; i < sc->ncols; i++)
		if (!strcmp(sc->cols[i].name, name)) {
			if (sc->cols[i].kind == STORE_SIGNED || sc->cols[i].kind == STORE_UNSIGNED)
				return (int)i;
			if (any < 0)
				any = (int)i;
		}
	return any;
}

/*
 * The rows a time-ordered query reads, through the time index (see
 * schema.sql, "Time index"): ts in [lo, hi], found in the blocks that
 * end at or after lo and start by hi. A block of span at most cut that
 * can hold a row with ts >= lo starts at or after bmin = lo - cut; the
 * few wider ones are found by span instead (cut is the 64th widest
 * span). One wide block (a page resent after a reconnect, one CPU's pages
 * arriving far behind another's) then no longer makes every read, each
 * page of a long answer, walk the index from the store's start.
 */
struct sq_range {
	int64_t lo, hi;		/* ts bounds, inclusive */
	int64_t cut;		/* blocks wider than this are found by span */
	int64_t bmin;		/* lo - cut */
	bool keyset;		/* only rows after (after_ts, after_rowid) */
	int64_t after_ts;
	int64_t after_rowid;
	int64_t limit;		/* -1: none */
	bool reverse;		/* newest first; the keyset is "before" */
	bool by_index;		/* rows come through a field index, not blocks */
};

/*
 * Whether @where reads the special COMM (sq_column_of()'s "_tc_comm", a
 * name no field's column has: sqlite_schema.c reserves it), outside a
 * string literal (the filter compiler binds every value, so it writes
 * none; skipping them is for any other caller).
 */
static bool sq_reads_comm(const char *where)
{
	const char *p = where;

	while (p && *p) {
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
				     "0123456789");

		if (n == 8 && !strncmp(p, "_tc_comm", 8))
			return true;
		if (*p == '"' || *p == '\'') {
			const char *end = strchr(p + 1, *p);	/* "" inside: two names, fine */

			p = end ? end + 1 : p + strlen(p);
		} else {
			p += n ? n : 1;
		}
	}
	return false;
}

/*
 * The time of comm_changes row x and of event row e agree with the same
 * boot of the host: the wall-clock time of their trace clock's 0 (ts -
 * trace_ts in ns) differs by less than a second. Another boot's differs
 * by at least the earlier boot's uptime, so its trace_ts, which starts
 * again at 0, is never compared with this boot's.
 */
#define SQ_SAME_BOOT	" AND abs((x.ts - x.trace_ts * x.tick_ns) -" \
			" (e.ts - e.trace_ts * x.tick_ns)) < 1e9"

/*
 * Append the special COMM of event row e (pid column @pid) as an SQL
 * expression, its tables in schema @db ("main." or ""): the name its task
 * had when the kernel recorded the event, as the kernel's COMM filter
 * (current->comm) reads it. Where the host's comm_changes cover the pid
 * (its agent traced task_newtask, task_rename or sched_process_fork): the
 * latest name taken at or before the event, else the name before the
 * first later rename. Otherwise the name the saved cmdlines give the pid
 * (the only one for imports, as trace-cmd report -F reads it), and
 * "<...>" where they give none. pid 0 is "<idle>" in an import
 * (trace-cmd's name) and swapper/CPU on a live host (the kernel's).
 */
void sq_comm_expr(struct sq_buf *b, const char *db, const char *pid)
{
	sq_buf_str(b, "CASE WHEN e.");
	sq_ident(b, pid);
	sq_buf_str(b, " = 0 THEN CASE WHEN EXISTS (SELECT 1 FROM ");
	sq_buf_str(b, db);
	sq_buf_str(b, "hosts AS h WHERE h.id = e.host_id AND h.machine_id GLOB 'import:*')"
		   " THEN '<idle>' ELSE 'swapper/' || e.cpu END ELSE coalesce((SELECT x.new FROM ");
	sq_buf_str(b, db);
	sq_buf_str(b, "comm_changes AS x WHERE x.host_id = e.host_id AND x.pid = e.");
	sq_ident(b, pid);
	sq_buf_str(b, " AND x.trace_ts <= e.trace_ts" SQ_SAME_BOOT
		   " ORDER BY x.trace_ts DESC LIMIT 1), (SELECT x.old FROM ");
	sq_buf_str(b, db);
	sq_buf_str(b, "comm_changes AS x WHERE x.host_id = e.host_id AND x.pid = e.");
	sq_ident(b, pid);
	sq_buf_str(b, " AND x.trace_ts > e.trace_ts" SQ_SAME_BOOT
		   " ORDER BY x.trace_ts LIMIT 1), (SELECT c.comm FROM ");
	sq_buf_str(b, db);
	sq_buf_str(b, "comms AS c WHERE c.host_id = e.host_id AND c.pid = e.");
	sq_ident(b, pid);
	sq_buf_str(b, "), '<...>') END");
}

/*
 * FROM (SELECT e.rowid AS _tc_rowid, e.*[, COMM AS _tc_comm]
 *       FROM [blocks AS b CROSS JOIN] "t" AS e)
 * WHERE (where) [AND ts BETWEEN lo AND hi] [AND keyset]: the WHERE text sees
 * only the subquery's columns, so no name there is ambiguous. With @r, each
 * block's rows are read by rowid range (CROSS JOIN keeps blocks outer),
 * unless r->by_index: then SQLite reads a field index by (value, ts).
 * COMM (sq_comm_expr()) is computed only when the WHERE or the caller's
 * select list before it in @b reads it (an index can then count without
 * reading the rows); the rows a select passes on get their host name and
 * printed comm from sqlite_names.c.
 */
void sq_from(struct sq_buf *b, const struct store_schema *sc, const char *where,
	     const struct sq_range *r)
{
	int pid = sq_col_index(sc, "common_pid");
	bool blocks = r && !r->by_index, comm = sq_reads_comm(where) || sq_reads_comm(b->s);

	sq_buf_str(b, " FROM (SELECT e.rowid AS _tc_rowid, e.*");
	if (comm && pid >= 0) {
		sq_buf_str(b, ", ");
		sq_comm_expr(b, "", sc->cols[pid].column);
		sq_buf_str(b, " AS _tc_comm");
	} else if (comm) {
		sq_buf_str(b, ", '<...>' AS _tc_comm");
	}
	if (blocks)
		sq_buf_str(b, " FROM (SELECT lo, hi FROM ts_blocks WHERE type_id = :tc_type"
			   " AND min_ts BETWEEN :tc_bmin AND :tc_hi AND max_ts >= :tc_lo"
			   " UNION ALL SELECT lo, hi FROM ts_blocks WHERE type_id = :tc_type"
			   " AND span > :tc_cut AND min_ts < :tc_bmin AND min_ts <= :tc_hi"
			   " AND max_ts >= :tc_lo) AS b CROSS JOIN ");
	else
		sq_buf_str(b, " FROM ");
	sq_ident(b, sc->table);
	sq_buf_str(b, blocks ? " AS e ON e.rowid BETWEEN b.lo AND b.hi" : " AS e");
	sq_buf_str(b, ") WHERE (");
	sq_buf_str(b, where && *where ? where : "1");
	sq_buf_str(b, ")");
	if (r)
		sq_buf_str(b, " AND ts BETWEEN :tc_lo AND :tc_hi");
	if (r && r->keyset)
		sq_buf_str(b, r->reverse ? " AND (ts, _tc_rowid) < (:tc_after_ts, :tc_after_rowid)" :
			   " AND (ts, _tc_rowid) > (:tc_after_ts, :tc_after_rowid)");
}

static void sq_bind_named(sqlite3_stmt *st, const char *name, int64_t v)
{
	int i = sqlite3_bind_parameter_index(st, name);

	if (i > 0)
		sqlite3_bind_int64(st, i, v);
}

/* Bind the WHERE's values and those of @r (when set) to @st. */
static int sq_bind_all(struct sq_store *s, sqlite3_stmt *st, const struct sq_bind *b, size_t nb,
		       const struct store_schema *sc, const struct sq_range *r)
{
	int ret = sq_bind_where(s, st, b, nb);

	if (ret < 0 || !r)
		return ret;
	sq_bind_named(st, ":tc_type", sc->type_id);
	sq_bind_named(st, ":tc_bmin", r->bmin);
	sq_bind_named(st, ":tc_cut", r->cut);
	sq_bind_named(st, ":tc_lo", r->lo);
	sq_bind_named(st, ":tc_hi", r->hi);
	sq_bind_named(st, ":tc_after_ts", r->after_ts);
	sq_bind_named(st, ":tc_after_rowid", r->after_rowid);
	sq_bind_named(st, ":tc_limit", r->limit);
	return 0;
}

int sq_max_span(struct sq_store *s, int64_t type_id, int64_t *span)
{
	return sq_int1(s, "SELECT max(span) FROM ts_blocks WHERE type_id = ?", type_id, 0, span);
}

/*
 * @r for a query of @sc over @win (NULL: all time), starting after
 * (@after_ts, @after_rowid) when @after_rowid != 0 (@reverse: before it,
 * newest first).
 */
static int sq_range_init(struct sq_store *s, const struct store_schema *sc,
			 const struct store_window *win, int64_t after_ts, uint64_t after_rowid,
			 size_t limit, bool reverse, struct sq_range *r)
{
	int64_t span = 0;
	int ret = sq_int1(s, SQ_CUT_SQL, sc->type_id, 0, &span);

	if (ret < 0)
		return ret;
	r->cut = span;
	r->lo = win ? win->from_ts : INT64_MIN;
	r->hi = !win || win->to_ts == INT64_MAX ? INT64_MAX :
		win->to_ts == INT64_MIN ? INT64_MIN : win->to_ts - 1;
	r->keyset = after_rowid != 0;
	r->by_index = false;
	r->reverse = reverse;
	r->after_ts = after_ts;
	r->after_rowid = after_rowid > INT64_MAX ? INT64_MAX : (int64_t)after_rowid;
	if (r->keyset && !reverse && after_ts > r->lo)
		r->lo = after_ts;
	if (r->keyset && reverse && after_ts < r->hi)
		r->hi = after_ts;
	r->bmin = r->lo < INT64_MIN + span ? INT64_MIN : r->lo - span;
	r->limit = limit ? (int64_t)limit : -1;
	if (win && win->to_ts == INT64_MIN)	/* an empty range */
		r->lo = INT64_MAX, r->hi = INT64_MIN;
	return 0;
}

/*
 * The ts at which the @k-th block (0: the first) of @sc that starts at or
 * after @from starts: *@found false when there is none.
 */
static int sq_kth_block(struct sq_store *s, const struct store_schema *sc, int64_t from,
			int64_t k, int64_t *start, bool *found)
{
	sqlite3_stmt *st;
	int ret = sq_prepare_cached(s, "SELECT min_ts FROM ts_blocks WHERE type_id = ?"
				       " AND min_ts >= ? ORDER BY min_ts LIMIT 1 OFFSET ?", &st);
	int rc;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, sc->type_id);
	sqlite3_bind_int64(st, 2, from);
	sqlite3_bind_int64(st, 3, k);
	rc = sqlite3_step(st);
	*found = rc == SQLITE_ROW;
	*start = *found ? sqlite3_column_int64(st, 0) : 0;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "ts_blocks");
	sq_release(s, st);
	return ret;
}

int sq_count_where(struct sq_store *s, const struct store_schema *sc, const char *where,
		   const struct sq_bind *b, size_t nb, const struct store_window *win,
		   uint64_t *count)
{
	struct sq_buf q = { 0 };
	struct sq_range r;
	sqlite3_stmt *st = NULL;
	int ret = 0;

	if (win)
		ret = sq_range_init(s, sc, win, 0, 0, 0, false, &r) ?:
		      sq_ix_usable(s, sc, b, nb, &r.by_index);
	if (ret < 0)
		return ret;
	sq_buf_str(&q, "SELECT count(*)");
	sq_from(&q, sc, where, win ? &r : NULL);
	ret = q.oom ? -ENOMEM : sq_prepare(s, q.s, &st);
	if (ret == 0)
		ret = sq_bind_all(s, st, b, nb, sc, win ? &r : NULL);
	if (ret == 0) {
		if (sqlite3_step(st) == SQLITE_ROW)
			*count = (uint64_t)sqlite3_column_int64(st, 0);
		else
			ret = sq_err(s, TC_ERR_DB, "count");
	}
	sqlite3_finalize(st);
	free(q.s);
	return ret;
}

/*
 * The select of @r's rows, in (ts, rowid) order, LIMIT :tc_limit when
 * @sorted; a column @skip marks is NULL, but common_pid's (column @pid:
 * it gives the row's pid and comm).
 */
static void sq_select_sql(struct sq_buf *q, const struct store_schema *sc, const char *where,
			  const struct sq_range *r, const bool *skip, int pid, bool sorted)
{
	sq_buf_str(q, SQ_ROW_COLS);
	for (size_t i = 0; i < sc->ncols; i++) {
		sq_buf_str(q, ", ");
		if (skip && skip[i] && (int)i != pid)
			sq_buf_str(q, "NULL");	/* not read: the record is parsed no further */
		else
			sq_col_read(q, sc, i, "", "");
	}
	sq_from(q, sc, where, r);
	if (sorted)
		sq_buf_str(q, r->reverse ? " ORDER BY ts DESC, _tc_rowid DESC LIMIT :tc_limit" :
			   " ORDER BY ts, _tc_rowid LIMIT :tc_limit");
}

/* Column @i of the current row as schema column @c's value. */
static void sq_row_value(sqlite3_stmt *st, int i, enum store_kind kind,
			 struct store_value *v, bool *null)
{
	*null = false;
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		*null = true;
		memset(v, 0, sizeof(*v));
		v->kind = kind;
		break;
	case SQLITE_TEXT:
		v->kind = STORE_STRING;
		v->str.s = (const char *)sqlite3_column_text(st, i);
		v->str.len = (size_t)sqlite3_column_bytes(st, i);
		break;
	case SQLITE_BLOB:
		v->kind = STORE_BLOB;
		v->blob.p = sqlite3_column_blob(st, i);
		v->blob.len = (size_t)sqlite3_column_bytes(st, i);
		break;
	default:	/* INTEGER (a REAL never gets stored) */
		v->kind = kind == STORE_UNSIGNED ? STORE_UNSIGNED : STORE_SIGNED;
		v->i = sqlite3_column_int64(st, i);
	}
}

void sq_row(sqlite3_stmt *st, const struct store_schema *sc, struct sq_rowbuf *rb,
	    struct store_row *r)
{
	memset(r, 0, sizeof(*r));
	r->rowid = (uint64_t)sqlite3_column_int64(st, 0);
	r->host_id = (uint64_t)sqlite3_column_int64(st, 1);
	r->cpu = (uint32_t)sqlite3_column_int64(st, 2);
	r->ts = sqlite3_column_int64(st, 3);
	r->trace_ts = (uint64_t)sqlite3_column_int64(st, 4);
	for (size_t i = 0; i < sc->ncols; i++)
		sq_row_value(st, 5 + (int)i, sc->cols[i].kind, &rb->vals[i], &rb->null[i]);
	sq_row_names(sc, rb, r);
}

/*
 * @st's rows to @fn until it says stop, counted in *@rows. Return 0, what
 * @fn returned to stop, or a negative error.
 */
static int sq_select_run(struct sq_store *s, sqlite3_stmt *st, const struct store_schema *sc,
			 struct sq_rowbuf *rb, store_row_fn fn, void *ctx, size_t *rows)
{
	int rc, ret = 0;

	*rows = 0;
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_row r;

		sq_row(st, sc, rb, &r);
		ret = fn(ctx, &r);
		(*rows)++;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "select");
	return ret;
}

/*
 * The rows of window @r of @st (unsorted), kept in @w, sorted, and the
 * first @left of them passed to @fn (@soft: all of them, the limit being
 * store_query.limit_soft's). Return: as sq_select_run(); -E2BIG when the
 * window holds too much to keep (nothing was passed).
 */
static int sq_window_run(struct sq_store *s, sqlite3_stmt *st, const struct store_schema *sc,
			 struct sq_win *w, struct sq_rowbuf *rb, int64_t left, bool soft,
			 store_row_fn fn, void *ctx, size_t *rows)
{
	int rc, ret = 0;

	*rows = 0;
	sq_win_reset(w);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		ret = sq_win_add(w, st, sc);
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "select");
	if (ret < 0)
		return ret;
	sq_win_sort(w);
	for (size_t i = 0; ret == 0 && i < w->n && (soft || (int64_t)i < left); i++) {
		struct store_row r;

		sq_win_row(w, i, sc, rb, &r);
		ret = fn(ctx, &r);
		(*rows)++;
	}
	return ret;
}

/*
 * A limited select, oldest first, through blocks: window after window of
 * the range, each from lo up to just before the start of the k-th block
 * that starts after lo, read, sorted (sqlite_window.c; by SQLite when it
 * holds too much: @sorted) and passed on until r->limit rows came. k
 * starts at what the limit needs if every row matched (a block holds at
 * most 64; at most SQ_BLOCKS_FIRST), then what the rest needs at the
 * last window's yield (at most 4 times more), 8 times more while a
 * window would be empty. A row with ts
 * below a block's start lies only in blocks that start earlier (those
 * from bmin on, or the wide ones), so each window holds every row of its
 * ts span, and the windows follow one another in time: the rows come in
 * time order, and each block is read once. @soft (store_query.limit_soft):
 * a window's rows past the limit are passed on too, not read again by the
 * caller's next page; the blocks are then asked for as if full (64 rows).
 */
static int sq_select_windows(struct sq_store *s, const struct store_schema *sc,
			     const struct sq_bind *b, size_t nb, struct sq_range *r,
			     sqlite3_stmt *st, const char *sorted, struct sq_rowbuf *rb,
			     bool soft, store_row_fn fn, void *ctx, size_t *rows)
{
	int64_t hi = r->hi, left = r->limit, start, k = soft ? (left + 63) / 64 : (left + 31) / 32,
		want;
	sqlite3_stmt *sst = NULL;
	struct sq_win w = { 0 };
	bool found, last = false;
	int ret = 0;

	*rows = 0;
	k = k < 1 ? 1 : k > SQ_BLOCKS_FIRST ? SQ_BLOCKS_FIRST : k;
	while (ret == 0 && !last && left > 0) {
		size_t n = 0;

		ret = sq_kth_block(s, sc, r->lo, k, &start, &found);
		if (ret < 0)
			break;
		last = !found || start > hi || (start <= r->lo && k >= SQ_BLOCKS_MAX);
		if (!last && start <= r->lo) {	/* an empty window: a wider one */
			k *= 8;
			continue;
		}
		r->hi = last ? hi : start - 1;
		r->limit = left;
		sqlite3_reset(st);
		ret = sq_bind_all(s, st, b, nb, sc, r) ?:
		      sq_window_run(s, st, sc, &w, rb, left, soft, fn, ctx, &n);
		if (ret == -E2BIG) {	/* SQLite sorts this one, LIMIT left */
			ret = sst ? 0 : sq_prepare_cached(s, sorted, &sst);
			if (ret == 0) {
				sqlite3_reset(sst);
				ret = sq_bind_all(s, sst, b, nb, sc, r) ?:
				      sq_select_run(s, sst, sc, rb, fn, ctx, &n);
			}
		}
		left -= (int64_t)n;
		*rows += n;
		r->lo = start;
		r->bmin = start < INT64_MIN + r->cut ? INT64_MIN : start - r->cut;
		/* the blocks the rest needs at this window's yield, at most 4 times more */
		want = n ? (int64_t)((double)k * (double)left / (double)n) + 1 : 4 * k;
		k = want > 4 * k ? 4 * k : want < 1 ? 1 : want;
		k = k > SQ_BLOCKS_MAX ? SQ_BLOCKS_MAX : k;
	}
	sq_release(s, sst);
	sq_win_free(&w);
	return ret;
}

/* sq_select_where(), and with @soft store_query.limit_soft. */
static int sq_select_rows(struct sq_store *s, const struct store_schema *sc, const char *where,
			  const struct sq_bind *b, size_t nb, const struct store_window *win,
			  int64_t after_ts, uint64_t after_rowid, size_t limit, bool soft,
			  bool reverse, const bool *skip, store_row_fn fn, void *ctx)
{
	struct sq_rowbuf rb = { .pid = sq_col_index(sc, "common_pid") };
	struct sq_buf q = { 0 }, u = { 0 };
	struct sq_range r;
	sqlite3_stmt *st = NULL;
	bool windows;
	size_t n = 0;
	int ret = sq_range_init(s, sc, win, after_ts, after_rowid, limit, reverse, &r) ?:
		  sq_ix_usable(s, sc, b, nb, &r.by_index);

	if (ret < 0)
		return ret;
	rb.vals = calloc(sc->ncols + 1, sizeof(*rb.vals));
	rb.null = calloc(sc->ncols + 1, sizeof(*rb.null));
	sq_select_sql(&q, sc, where, &r, skip, rb.pid, true);
	/* windows cut the range from its old end: oldest first only */
	windows = limit && !r.by_index && !reverse;
	if (windows)
		sq_select_sql(&u, sc, where, &r, skip, rb.pid, false);
	ret = q.oom || u.oom || !rb.vals || !rb.null ? -ENOMEM : sq_names_new(s, &rb.names) ?:
	      sq_prepare_cached(s, windows ? u.s : q.s, &st);
	if (ret == 0 && windows)
		ret = sq_select_windows(s, sc, b, nb, &r, st, q.s, &rb, soft, fn, ctx, &n);
	else if (ret == 0)
		ret = sq_bind_all(s, st, b, nb, sc, &r) ?:
		      sq_select_run(s, st, sc, &rb, fn, ctx, &n);
	sq_release(s, st);
	free(q.s);
	free(u.s);
	free(rb.vals);
	free(rb.null);
	return ret ? ret : n > INT_MAX ? INT_MAX : (int)n;
}

int sq_select_where(struct sq_store *s, const struct store_schema *sc, const char *where,
		    const struct sq_bind *b, size_t nb, const struct store_window *win,
		    int64_t after_ts, uint64_t after_rowid, size_t limit, bool reverse,
		    const bool *skip, store_row_fn fn, void *ctx)
{
	return sq_select_rows(s, sc, where, b, nb, win, after_ts, after_rowid, limit, false,
			      reverse, skip, fn, ctx);
}

/* ---- a store_query as SQL ---- */

/* The room sq_hosts_cond() needs for @q (@col at most 32 bytes). */
size_t sq_hosts_len(const struct store_query *q)
{
	return 3 * 100 + (q && q->scope ? q->scope->n * 16 : 0) +
	       (q && q->hosts ? q->hosts->n * 16 : 0);
}

/*
 * Append to @out (sq_hosts_len(@q) bytes free) the conditions that host
 * id @col belongs to the hosts @q allows: its host glob, its host list,
 * then its scope (no glob: no host). Each glob is a '?', host glob first,
 * then the list's, then the scope's in order (sq_hosts_bind()); values
 * never enter the text.
 */
void sq_hosts_cond(char *out, const struct store_query *q, const char *col)
{
	out += strlen(out);
	if (q && q->host_glob)
		out += sprintf(out, " AND %s IN (SELECT id FROM hosts WHERE name GLOB ?)", col);
	if (q && q->hosts && q->hosts->n) {
		out += sprintf(out, " AND %s IN (SELECT id FROM hosts WHERE name GLOB ?", col);
		for (size_t i = 1; i < q->hosts->n; i++)
			out += sprintf(out, " OR name GLOB ?");
		out += sprintf(out, ")");
	}
	if (!q || !q->scope)
		return;
	if (!q->scope->n) {
		strcpy(out, " AND 0");
		return;
	}
	out += sprintf(out, " AND %s IN (SELECT id FROM hosts WHERE name GLOB ?", col);
	for (size_t i = 1; i < q->scope->n; i++)
		out += sprintf(out, " OR name GLOB ?");
	strcpy(out, ")");
}

/* Bind the '?'s of sq_hosts_cond(@q) to @st from parameter @first on. */
void sq_hosts_bind(sqlite3_stmt *st, int first, const struct store_query *q)
{
	if (q && q->host_glob)
		sqlite3_bind_text(st, first++, q->host_glob, -1, SQLITE_TRANSIENT);
	for (size_t i = 0; q && q->hosts && i < q->hosts->n; i++)
		sqlite3_bind_text(st, first++, q->hosts->globs[i], -1, SQLITE_TRANSIENT);
	for (size_t i = 0; q && q->scope && i < q->scope->n; i++)
		sqlite3_bind_text(st, first++, q->scope->globs[i], -1, SQLITE_TRANSIENT);
}

/* Column SQL for a bound field index: quoted field name, or the specials. */
static const char *sq_column_of(void *ctx, int index)
{
	const struct store_query *q = ctx;
	static __thread char buf[300];

	if (index == FILTER_FIELD_CPU)
		return "cpu";
	if (index == FILTER_FIELD_COMM)
		return "_tc_comm";	/* sq_from() computes it */
	if (index < 0 || (size_t)index >= q->nfields)
		return NULL;
	snprintf(buf, sizeof(buf), "\"%s\"", q->schema->cols[q->field_col[index]].column);
	return buf;
}

static struct sq_bind sq_bind_of(const struct filter_value *b)
{
	struct sq_bind s = { 0 };

	if (b->kind == FILTER_STRING) {
		s.kind = STORE_STRING;
		s.s = b->str.s;
		s.len = b->str.len;
	} else {
		s.kind = b->kind == FILTER_SIGNED ? STORE_SIGNED : STORE_UNSIGNED;
		s.i = b->kind == FILTER_SIGNED ? b->i : (int64_t)b->u;
	}
	return s;
}

void sq_where_free(struct sq_where *w)
{
	sq_filter_sql_free(&w->sql);
	free(w->text);
	free(w->b);
}

/* Append " AND cpu IN (?,...)" for @q's CPU list (2 bytes a CPU and 20 more). */
static void sq_cpus_cond(char *out, const struct store_query *q)
{
	if (!q->ncpus)
		return;
	out += sprintf(out, " AND cpu IN (?");
	for (size_t i = 1; i < q->ncpus; i++)
		*out++ = ',', *out++ = '?';
	strcpy(out, ")");
}

/* Append @q's spans (a snapshot's hosts and windows), 80 bytes each and 16 more. */
static void sq_spans_cond(char *out, const struct store_query *q)
{
	if (!q->spans)
		return;
	out += sprintf(out, " AND (0");
	for (size_t i = 0; i < q->nspans; i++)
		out += sprintf(out, " OR (host_id = ? AND ts BETWEEN ? AND ?"
			       " AND trace_ts BETWEEN ? AND ?)");
	strcpy(out, ")");
}

/*
 * @q's filter and host as WHERE text and values into @w (free it with
 * sq_where_free(), also after a failure). A `FIELD == value` at the top of
 * the filter is a promise an index may serve (sq_ix_usable()).
 */
int sq_where_of(const struct store_query *q, struct sq_where *w)
{
	size_t n, len;
	int ret = q->filter ? sq_filter_to_sql(q->filter, sq_column_of, (void *)q, &w->sql) : 0;

	if (ret < 0)
		return ret;
	n = w->sql.nbinds;
	len = (w->sql.where ? strlen(w->sql.where) : 0) + 240 + sq_hosts_len(q) + 2 * q->ncpus +
	      80 * q->nspans;
	w->b = calloc(n + 2 + (q->scope ? q->scope->n : 0) + (q->hosts ? q->hosts->n : 0) +
		      q->ncpus + 5 * q->nspans, sizeof(*w->b));
	w->text = malloc(len);
	if (!w->b || !w->text)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		w->b[i] = sq_bind_of(&w->sql.binds[i]);
	for (size_t k = 0; k < w->sql.neq; k++)
		w->b[w->sql.eq[k].bind].eq_column =
			q->schema->cols[q->field_col[w->sql.eq[k].field]].column;
	snprintf(w->text, len, "(%s)", w->sql.where ? w->sql.where : "1");
	sq_hosts_cond(w->text + strlen(w->text), q, "host_id");
	if (q->host_glob)
		w->b[n++] = (struct sq_bind){ .kind = STORE_STRING, .s = q->host_glob,
					      .len = strlen(q->host_glob) };
	for (size_t i = 0; q->hosts && i < q->hosts->n; i++)
		w->b[n++] = (struct sq_bind){ .kind = STORE_STRING, .s = q->hosts->globs[i],
					      .len = strlen(q->hosts->globs[i]) };
	for (size_t i = 0; q->scope && i < q->scope->n; i++)
		w->b[n++] = (struct sq_bind){ .kind = STORE_STRING, .s = q->scope->globs[i],
					      .len = strlen(q->scope->globs[i]) };
	sq_cpus_cond(w->text + strlen(w->text), q);
	if (q->fmt)	/* our own key, not a value of the asker's */
		snprintf(w->text + strlen(w->text), 32, " AND _tc_fmt = %lld", (long long)q->fmt);
	for (size_t i = 0; i < q->ncpus; i++)
		w->b[n++] = (struct sq_bind){ .kind = STORE_SIGNED, .i = q->cpus[i] };
	sq_spans_cond(w->text + strlen(w->text), q);
	for (size_t i = 0; q->spans && i < q->nspans; i++) {
		w->b[n++] = (struct sq_bind){ .kind = STORE_SIGNED, .i = (int64_t)q->spans[i].host_id };
		w->b[n++] = (struct sq_bind){ .kind = STORE_SIGNED, .i = q->spans[i].from_ts };
		w->b[n++] = (struct sq_bind){ .kind = STORE_SIGNED, .i = q->spans[i].to_ts };
		w->b[n++] = (struct sq_bind){ .kind = STORE_SIGNED,
					      .i = (int64_t)q->spans[i].trace_from };
		w->b[n++] = (struct sq_bind){ .kind = STORE_SIGNED,
					      .i = (int64_t)q->spans[i].trace_to };
	}
	w->nb = n;
	return 0;
}

static int sq_count(struct store_reader *rd, const struct store_query *q, uint64_t *count)
{
	struct sq_store *s = sq_reader_of(rd);
	struct sq_where w = { 0 };
	int ret = sq_reader_enter(s) ?: sq_where_of(q, &w);

	if (ret == 0)
		ret = sq_count_where(s, q->schema, w.text, w.b, w.nb, q->win, count);
	sq_where_free(&w);
	return ret;
}

static int sq_select(struct store_reader *rd, const struct store_query *q, store_row_fn fn,
		     void *ctx)
{
	struct sq_store *s = sq_reader_of(rd);
	struct sq_where w = { 0 };
	int ret = sq_reader_enter(s) ?: sq_where_of(q, &w);

	if (ret == 0)
		ret = sq_select_rows(s, q->schema, w.text, w.b, w.nb, q->win, q->after_ts,
				     q->after_rowid, q->limit, q->limit_soft, q->reverse, q->skip,
				     fn, ctx);
	sq_where_free(&w);
	return ret;
}

/* ---- the rows of a store_query, for the backend's other reads ---- */

struct sq_rows {
	struct sq_where w;
	struct sq_range r;
	bool ranged;
};

/*
 * @q's rows as sq_from() offers them (every column of the event's table,
 * "_tc_rowid", "ts", "host_id", "cpu"; @q's window, filter, host glob and
 * scope applied), appended to @b as " FROM ... WHERE ..."; *@out holds
 * what sq_rows_bind() binds. Its own parameters are named ":tc_*"; so must
 * the caller's be.
 */
int sq_rows_of(struct sq_store *s, const struct store_query *q, struct sq_buf *b,
	       struct sq_rows **out)
{
	struct sq_rows *rows = calloc(1, sizeof(*rows));
	int ret = rows ? sq_where_of(q, &rows->w) : -ENOMEM;

	if (ret == 0 && q->win) {
		rows->ranged = true;
		ret = sq_range_init(s, q->schema, q->win, 0, 0, 0, false, &rows->r) ?:
		      sq_ix_usable(s, q->schema, rows->w.b, rows->w.nb, &rows->r.by_index);
	}
	if (ret == 0)
		sq_from(b, q->schema, rows->w.text, rows->ranged ? &rows->r : NULL);
	if (ret < 0) {
		sq_rows_free(rows);
		return ret;
	}
	*out = rows;
	return 0;
}

/* Bind what sq_rows_of() put in a statement's text. */
int sq_rows_bind(struct sq_store *s, sqlite3_stmt *st, const struct store_query *q,
		 const struct sq_rows *rows)
{
	return sq_bind_all(s, st, rows->w.b, rows->w.nb, q->schema,
			   rows->ranged ? &rows->r : NULL);
}

void sq_rows_free(struct sq_rows *rows)
{
	if (!rows)
		return;
	sq_where_free(&rows->w);
	free(rows);
}

void sq_read_ops(struct store_reader_ops *r)
{
	r->select = sq_select;
	r->count = sq_count;
}
