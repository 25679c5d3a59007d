/*
 * clickhouse_tail.c - the live tail on ClickHouse (store_tail(), traceq
 * --follow): rows in the order they were stored, from a cursor.
 *
 * ClickHouse has no commit order of its own; ours is the writer's commit
 * id (clickhouse.h). The cursor is a _tc_row: commit_id << 32 | the row's
 * place in its commit (clickhouse_schema.c), so _tc_row order is storage
 * order, across event types too (the place counts every row of the
 * commit). A call reads M = max(id) of `commits` first, then each query's
 * rows with _tc_row >= the cursor and _tc_commit <= M in _tc_row order,
 * merges them, and says where to go on: after the last row it passed, or
 * (M + 1) << 32 when it passed every row of commits up to M.
 *
 * Why no row is skipped, i.e. why no commit at or below M can become
 * visible after a reader has gone past it: the database has one writer
 * (clickhouse.h: two collectors must not share one), which runs its
 * commits one after the other on one thread. A commit's rows are sent
 * first, each INSERT acknowledged, and an acknowledged INSERT into a
 * MergeTree is visible to every later query on the server; then, last,
 * its row in `commits`. Commit N + 1 sends nothing before N's `commits`
 * row is acknowledged. So when `commits` holds M, every row of every
 * commit up to M is visible, and a commit not yet visible has an id above
 * M, i.e. _tc_row >= (M + 1) << 32, which is where the cursor stands.
 * Rows of a commit that did not complete have no `commits` row, or a
 * void one (clickhouse_txn.c): they are never read (CH_COMMITTED), before
 * or after the writer deletes them and stores the transaction again
 * under a new, higher id. Ids are never reused,
 * across a restart of the collector too (clickhouse_txn.c: each is
 * reserved in commit_ids before a row carries it, and a writer numbers
 * above every reserved id), so a cursor past a deleted commit's id is
 * never past a later commit's rows.
 *
 * What this cannot promise:
 *  - a commit whose `commits` insert lost its answer and could not be
 *    confirmed is given up and stored again under a new id; should its
 *    row land before it was given up (clickhouse.h, "What is still
 *    open"), a reader that saw it then sees its rows twice (never none);
 *  - t->missed is 0: retention drops whole days of rows (clickhouse.h),
 *    and which of them a reader had not read yet is not counted.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_query.h"
#include "server/store/clickhouse_tail.h"
#include "server/store/clickhouse_util.h"

#define CHT_PAGE_ROWS	4096	/* rows of each query read with one query */

/* One query's walk and its current page. */
struct cht_q {
	struct ch_walk k;
	struct ch_reply page;
	size_t at;		/* the next row of the page to pass */
	bool full;		/* the page holds as many rows as were asked for */
};

/* The _tc_row of row @i of @p (UINT64_MAX: none, or unreadable). */
static uint64_t cht_row(const struct ch_reply *p, size_t i)
{
	uint64_t v;

	return i < p->nrows && ch_reply_u64(p, i, 4, &v) == 0 ? v : UINT64_MAX;
}

/* What store_tail_fn needs from a store_row_fn: the query's index. */
struct cht_fwd {
	store_tail_fn fn;
	void *ctx;
	size_t i;
};

static int cht_fwd_row(void *ctx, const struct store_row *row)
{
	struct cht_fwd *f = ctx;

	return f->fn(f->ctx, f->i, row);
}

/* Where a call without a cursor starts: at @end, or at the start when a window has a from. */
static uint64_t cht_start(const struct store_query *const *qs, size_t nq, uint64_t end)
{
	for (size_t i = 0; i < nq; i++)
		if (qs[i]->win && qs[i]->win->from_ts != INT64_MIN)
			return 0;	/* the window's ts bound prunes the rest */
	return end;
}

/*
 * Pass the pages' rows up to _tc_row @upto in storage order (a row that two
 * queries both matched, once), at most @cap (0: no limit); *@last is the
 * _tc_row of the last one passed.
 */
static int cht_merge(struct cht_q *tq, size_t nq, uint64_t upto, size_t cap,
		     store_tail_fn fn, void *ctx, size_t *rows, uint64_t *last)
{
	int ret = 0;

	while (ret == 0 && (!cap || *rows < cap)) {
		size_t best = nq;
		uint64_t min = UINT64_MAX, r;

		for (size_t i = 0; i < nq; i++) {
			r = cht_row(&tq[i].page, tq[i].at);
			if (r <= upto && r < min) {
				min = r;
				best = i;
			}
		}
		if (best == nq)
			break;
		if (*rows && min == *last) {	/* the same row through another query */
			tq[best].at++;
			continue;
		}
		struct cht_fwd f = { .fn = fn, .ctx = ctx, .i = best };
		struct store_row row = { 0 };

		ret = ch_walk_row(&tq[best].k, &tq[best].page, tq[best].at++, cht_fwd_row, &f,
				  &row);
		*last = min;
		(*rows)++;
	}
	return ret;
}

/* Whether a page still holds a row not passed, or more may follow it. */
static bool cht_left(const struct cht_q *tq, size_t nq)
{
	for (size_t i = 0; i < nq; i++)
		if (tq[i].full || tq[i].at < tq[i].page.nrows)
			return true;
	return false;
}

/*
 * One cursor's walk: the rows of the commits up to @last_commit (of
 * collector number @slot's alone when @slot >= 0) from t->from on, at most
 * t->max_rows in all (*@rows counts them across calls) and looking at
 * about t->max_scan (*@seen, likewise); t->next, t->more and t->reset
 * are this walk's. @tq: the queries' walks, ready.
 */
static int cht_walk(struct cht_q *tq, const struct store_query *const *qs, size_t nq,
		    struct store_tail *t, uint64_t last_commit, int slot,
		    store_tail_fn fn, void *ctx, size_t *rows, size_t *seen)
{
	uint64_t end = (last_commit + 1) << 32, from = t->from, last = 0;
	int ret = 0;

	t->reset = t->more = false;
	if (from > end) {
		t->reset = true;	/* another database, or emptied: its start */
		from = 0;
	} else if (from == 0) {
		from = cht_start(qs, nq, end);
	}
	t->next = from ? from : 1;
	while (ret == 0 && from < end) {
		size_t want = CHT_PAGE_ROWS, before = *rows;
		uint64_t upto = UINT64_MAX;

		if (t->max_rows && t->max_rows - *rows < want)
			want = t->max_rows - *rows;
		for (size_t i = 0; ret == 0 && i < nq; i++) {
			ret = ch_walk_tail(&tq[i].k, from, last_commit, slot, want, &tq[i].page);
			tq[i].at = 0;
			tq[i].full = tq[i].page.nrows == want;
			*seen += tq[i].page.nrows;
			if (ret == 0 && tq[i].full && cht_row(&tq[i].page, want - 1) < upto)
				upto = cht_row(&tq[i].page, want - 1);
		}
		if (ret == 0)
			ret = cht_merge(tq, nq, upto, t->max_rows, fn, ctx, rows, &last);
		if (ret < 0 || (t->max_rows && *rows >= t->max_rows)) {
			t->more = ret == 0 && cht_left(tq, nq);
			t->next = *rows > before ? last + 1 : from;
			if (ret == 0 && !t->more)
				t->next = end;
			break;
		}
		if (upto == UINT64_MAX) {
			t->next = end;	/* every row of commits up to last_commit */
			break;
		}
		from = upto + 1;
		t->next = from;
		if (t->max_scan && *seen >= t->max_scan) {
			t->more = true;
			break;
		}
	}
	if (ret == 0 && from >= end && !t->more)
		t->next = end;
	return ret;
}

/* The queries' walks, ready (*@out; free with cht_free()). */
static int cht_new(struct ch_store *s, const struct store_query *const *qs, size_t nq,
		   struct cht_q **out)
{
	struct cht_q *tq = calloc(nq + 1, sizeof(*tq));
	int ret = tq ? 0 : -ENOMEM;

	for (size_t i = 0; ret == 0 && i < nq; i++)
		ret = ch_walk_init(&tq[i].k, s, qs[i]);
	*out = tq;
	return ret;
}

static void cht_free(struct cht_q *tq, size_t nq)
{
	for (size_t i = 0; tq && i < nq; i++) {
		ch_walk_free(&tq[i].k);
		ch_reply_free(&tq[i].page);
	}
	free(tq);
}

/*
 * Per collector number k, the last of its commits that completed (0: none)
 * into @last, and how many numbers have one into *@n.
 */
static int cht_lasts(struct ch_store *s, uint64_t *last, unsigned *n)
{
	struct ch_reply r;
	uint64_t k, id;
	int ret = ch_query_text(s, "SELECT id % 64, max(id) FROM commits GROUP BY id % 64", &r);

	memset(last, 0, STORE_COLLECTOR_IDS * sizeof(*last));
	*n = 0;
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		if (ch_reply_u64(&r, i, 0, &k) < 0 || k >= STORE_COLLECTOR_IDS ||
		    ch_reply_u64(&r, i, 1, &id) < 0)
			continue;
		if (id >= UINT32_MAX)
			ret = ch_errf(s, TC_ERR_DB, "commit id %llu: past the tail's cursor",
				      (unsigned long long)id);
		last[k] = id;
		(*n)++;
	}
	if (r.nrows || ret == 0)
		ch_reply_free(&r);
	return ret;
}

static int ch_tail(struct store_reader *rd, const struct store_query *const *qs, size_t nq,
		   struct store_tail *t, store_tail_fn fn, void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	uint64_t lasts[STORE_COLLECTOR_IDS], last_commit = 0;
	struct cht_q *tq = NULL;
	size_t rows = 0, seen = 0;
	unsigned writers = 0;
	int ret = cht_lasts(s, lasts, &writers);

	t->missed = 0;
	for (unsigned k = 0; k < STORE_COLLECTOR_IDS; k++)
		last_commit = lasts[k] > last_commit ? lasts[k] : last_commit;
	if (ret == 0 && writers > 1)	/* one cursor would skip a slower one's commits */
		ret = ch_errf(s, TC_ERR_PROTO_VERSION, "%u collectors store into this database:"
			      " following it takes a cursor per collector, which this traceq does"
			      " not send (query op tail_writers, in traceq from issue 35 on)",
			      writers);
	ret = ret ?: cht_new(s, qs, nq, &tq);
	ret = ret ?: cht_walk(tq, qs, nq, t, last_commit, -1, fn, ctx, &rows, &seen);
	cht_free(tq, nq);
	return ret;
}

/*
 * Several collectors (issue 35): a walk per collector number, each over
 * that collector's commits only, from its own cursor t->writers[k]. Why a
 * collector's rows are read in its storage order and none is skipped is
 * the argument above, for each collector alone: a collector runs its
 * commits one after another, so when `commits` holds its id M, every row
 * of its commits up to M is visible and its next commit has a higher id
 * (other collectors' commits, in flight or not, are not in its walk). The
 * walks go one collector after another within a call, so rows of two
 * collectors are not in time order among themselves; each row comes once.
 */
static int ch_tail_writers(struct store_reader *rd, const struct store_query *const *qs,
			   size_t nq, struct store_tail *t, store_tail_fn fn, void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	uint64_t lasts[STORE_COLLECTOR_IDS], from = t->from;
	struct cht_q *tq = NULL;
	size_t rows = 0, seen = 0;
	unsigned writers = 0;
	bool more = false, reset = false;
	int ret = cht_lasts(s, lasts, &writers);

	t->missed = 0;
	ret = ret ?: cht_new(s, qs, nq, &tq);
	for (unsigned k = 0; ret == 0 && k < STORE_COLLECTOR_IDS; k++) {
		if (!t->writers_set)	/* at the end, its start, or the window's */
			t->writers[k] = from == 0 ? cht_start(qs, nq, (lasts[k] + 1) << 32) : from;
		if ((t->max_rows && rows >= t->max_rows) || (t->max_scan && seen >= t->max_scan))
			more = true;	/* out of room: the next call goes on */
		if (!lasts[k] || more)
			continue;	/* none of its commits yet; or the next call */
		t->from = t->writers[k] ? t->writers[k] : 1;
		ret = cht_walk(tq, qs, nq, t, lasts[k], (int)k, fn, ctx, &rows, &seen);
		if (ret == 0)
			t->writers[k] = t->next;
		more |= t->more;
		reset |= t->reset;
	}
	cht_free(tq, nq);
	t->from = from;
	t->more = more;
	t->reset = reset;
	t->next = 0;
	return ret;
}

void ch_tail_reader_ops(struct store_reader_ops *r)
{
	r->tail = ch_tail;
	r->tail_writers = ch_tail_writers;
}
