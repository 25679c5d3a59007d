/*
 * sqlite_tail.c - the SQLite backend's rows in storage order, for the
 * live tail (store_tail(), traceq --follow): the time index's blocks
 * (ts_blocks) carry the storage sequence number of their first row
 * (sql/0009-follow.sql), so the blocks from a cursor on, in seq order,
 * name the rows stored since, each block a rowid range of one event
 * table. The writer numbers the blocks it puts (sqlite_write.c, from
 * sq_seq_load()'s start; sq_seq_end() is where it goes on).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_names.h"
#include "server/store/sqlite_read.h"
#include "server/store/sqlite_tail.h"
#include "server/store/sqlite_stacks.h"
#include "server/store/sqlite_util.h"
#include "server/store/sqlite_write.h"

#define SQ_TAIL_BLOCK_MAX	64	/* rows in a block, at most (sqlite_write.c) */

/* The per-type reads of one store_tail() call. */
struct sq_tailq {
	sqlite3_stmt *st;
	struct sq_where w;
	struct sq_rowbuf rb;
};

/*
 * Rows of @q's type in a rowid range (:tc_flo, :tc_fhi) that match it, by
 * rowid: the order they were stored in.
 */
static int sq_tailq_prepare(struct sq_store *s, const struct store_query *q, struct sq_tailq *tq)
{
	const struct store_schema *sc = q->schema;
	struct sq_buf b = { 0 };
	int ret = sq_where_of(q, &tq->w);

	tq->rb.pid = sq_col_index(sc, "common_pid");
	tq->rb.vals = calloc(sc->ncols + 1, sizeof(*tq->rb.vals));
	tq->rb.null = calloc(sc->ncols + 1, sizeof(*tq->rb.null));
	if (ret == 0 && (!tq->rb.vals || !tq->rb.null))
		ret = -ENOMEM;
	if (ret == 0)
		ret = sq_names_new(s, &tq->rb.names);
	if (ret < 0)
		return ret;
	sq_buf_str(&b, SQ_ROW_COLS);
	for (size_t i = 0; i < sc->ncols; i++) {
		sq_buf_str(&b, ", ");
		sq_col_read(&b, sc, i, "", "");
	}
	sq_from(&b, sc, tq->w.text, NULL);
	sq_buf_str(&b, " AND _tc_rowid BETWEEN :tc_flo AND :tc_fhi");
	if (q->win)
		sq_buf_str(&b, " AND ts >= :tc_wlo AND ts <= :tc_whi");
	sq_buf_str(&b, " ORDER BY _tc_rowid");
	ret = b.oom ? -ENOMEM : sq_prepare(s, b.s, &tq->st);
	free(b.s);
	if (ret == 0)
		ret = sq_bind_where(s, tq->st, tq->w.b, tq->w.nb);
	if (ret == 0 && q->win) {
		int64_t hi = q->win->to_ts == INT64_MAX ? INT64_MAX :
			     q->win->to_ts == INT64_MIN ? INT64_MIN : q->win->to_ts - 1;

		sqlite3_bind_int64(tq->st, sqlite3_bind_parameter_index(tq->st, ":tc_wlo"),
				   q->win->from_ts);
		sqlite3_bind_int64(tq->st, sqlite3_bind_parameter_index(tq->st, ":tc_whi"), hi);
	}
	return ret;
}

static void sq_tailq_free(struct sq_tailq *tq)
{
	sqlite3_finalize(tq->st);
	sq_where_free(&tq->w);
	free(tq->rb.vals);
	free(tq->rb.null);
}

/*
 * Pass the rows of rowids [@lo, @hi] of @q's type that match it to @fn,
 * at most @cap of them (0: all); *@last is the rowid of the last passed.
 * Return: as store_tail(); *@rows counts what was passed.
 */
static int sq_tail_block(struct sq_store *s, const struct store_query *q, struct sq_tailq *tq,
			 size_t i, int64_t lo, int64_t hi, size_t cap, store_tail_fn fn, void *ctx,
			 size_t *rows, int64_t *last)
{
	size_t n = 0;
	int rc = SQLITE_DONE, ret = 0;

	if (!tq->st && (ret = sq_tailq_prepare(s, q, tq)) < 0)
		return ret;
	sqlite3_bind_int64(tq->st, sqlite3_bind_parameter_index(tq->st, ":tc_flo"), lo);
	sqlite3_bind_int64(tq->st, sqlite3_bind_parameter_index(tq->st, ":tc_fhi"), hi);
	while (ret == 0 && (!cap || n < cap) && (rc = sqlite3_step(tq->st)) == SQLITE_ROW) {
		struct store_row r;

		sq_row(tq->st, q->schema, &tq->rb, &r);
		ret = fn(ctx, i, &r);
		*last = (int64_t)r.rowid;
		n++;
	}
	if (ret == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = sq_err(s, TC_ERR_DB, "tail");
	sqlite3_reset(tq->st);
	*rows += n;
	return ret;
}

/*
 * Where a tail without a cursor starts: at @end, or with a window from
 * T, at the first block of a selected type that can hold a row at or
 * after T (every such block starts at or after T - its type's widest
 * span).
 */
static int sq_tail_start(struct sq_store *s, const struct store_query *const *qs, size_t nq,
			 int64_t end, int64_t *from)
{
	int ret = 0;

	*from = end;
	for (size_t i = 0; ret == 0 && i < nq; i++) {
		const struct store_window *win = qs[i]->win;
		int64_t span = 0, lo, first = end;
		sqlite3_stmt *st;
		int rc;

		if (!win || win->from_ts == INT64_MIN)
			continue;
		ret = sq_max_span(s, qs[i]->schema->type_id, &span);
		if (ret < 0)
			break;
		lo = win->from_ts < INT64_MIN + span ? INT64_MIN : win->from_ts - span;
		ret = sq_prepare(s, "SELECT min(seq) FROM ts_blocks WHERE type_id = ?"
				    " AND min_ts >= ? AND max_ts >= ?", &st);
		if (ret < 0)
			break;
		sqlite3_bind_int64(st, 1, qs[i]->schema->type_id);
		sqlite3_bind_int64(st, 2, lo);
		sqlite3_bind_int64(st, 3, win->from_ts);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
			first = sqlite3_column_int64(st, 0);
		else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			ret = sq_err(s, TC_ERR_DB, "tail start");
		sqlite3_finalize(st);
		if (first < *from)
			*from = first;
	}
	return ret;
}

static int sq_tail(struct store_reader *r, const struct store_query *const *qs, size_t nq,
		   struct store_tail *t, store_tail_fn fn, void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	struct sq_tailq *tq = calloc(nq + 1, sizeof(*tq));
	sqlite3_stmt *blocks = NULL;
	int64_t end = 1, from;
	size_t rows = 0, seen = 0;
	bool first = true;
	int rc = SQLITE_DONE, ret = tq ? sq_reader_enter(s) : -ENOMEM;

	t->missed = 0;
	t->reset = t->more = false;
	if (ret == 0)
		ret = sq_seq_end(s, &end);
	from = t->from > INT64_MAX ? INT64_MAX : (int64_t)t->from;
	if (ret == 0 && from > end) {
		t->reset = true;	/* another file, or emptied: its start */
		from = 1;
	} else if (ret == 0 && from == 0) {
		ret = sq_tail_start(s, qs, nq, end, &from);
		first = false;	/* nothing can be missed yet */
	}
	t->next = (uint64_t)from;
	/* the block that holds @from starts at most SQ_TAIL_BLOCK_MAX - 1 rows before it */
	if (ret == 0)
		ret = sq_prepare(s, "SELECT seq, type_id, lo, hi FROM ts_blocks WHERE seq >= ?"
				    " ORDER BY seq", &blocks);
	if (ret == 0)
		sqlite3_bind_int64(blocks, 1, from > SQ_TAIL_BLOCK_MAX ? from - SQ_TAIL_BLOCK_MAX : 0);
	while (ret == 0 && (rc = sqlite3_step(blocks)) == SQLITE_ROW) {
		int64_t seq = sqlite3_column_int64(blocks, 0), type = sqlite3_column_int64(blocks, 1);
		int64_t lo = sqlite3_column_int64(blocks, 2), hi = sqlite3_column_int64(blocks, 3);
		int64_t stop = seq + (hi >= lo ? hi - lo + 1 : 0), start = lo, last = 0;
		size_t n, i, cap = 0;

		if (stop <= from)
			continue;	/* before the cursor */
		if (seq < from)
			start = lo + (from - seq);	/* the cursor lies in it */
		else if (first && seq > from && !t->reset)
			t->missed = (uint64_t)(seq - from);
		first = false;
		n = (size_t)(hi - start + 1);
		if (seen && t->max_scan && seen + n > t->max_scan) {
			t->more = true;
			break;
		}
		if (t->max_rows && rows >= t->max_rows) {
			t->more = true;
			break;
		}
		if (t->max_rows)
			cap = t->max_rows - rows;
		/*
		 * A type with several formats is a query per format (store_query.fmt);
		 * a block's rows are of one (the writer's batches are per format):
		 * the first query that reads any of them is the block's.
		 */
		for (i = 0; ret == 0 && i < nq; i++) {
			size_t before = rows;

			if (qs[i]->schema->type_id != type)
				continue;
			ret = sq_tail_block(s, qs[i], &tq[i], i, start, hi, cap, fn, ctx, &rows,
					    &last);
			if (rows > before || !qs[i]->fmt)
				break;
		}
		seen += n ? n : 1;
		t->next = (uint64_t)stop;
		if (ret == 0 && cap && rows - (t->max_rows - cap) == cap && last < hi) {
			/* full in the middle of the block: go on after its last row */
			t->next = (uint64_t)(seq + (last - lo) + 1);
			t->more = true;
			break;
		}
	}
	if (ret == 0 && !t->more && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "tail blocks");	/* stopped, or a failure */
	sqlite3_finalize(blocks);
	for (size_t i = 0; tq && i < nq; i++)
		sq_tailq_free(&tq[i]);
	free(tq);
	return ret;
}

void sq_tail_ops(struct store_reader_ops *r)
{
	r->tail = sq_tail;
}
