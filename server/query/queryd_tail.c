/*
 * queryd_tail.c - the query endpoint's live tail (QOP_TAIL): one page of
 * rows in storage order from the client's cursor (store_tail()). The
 * endpoint keeps nothing between pages: the client holds the cursor and
 * asks again (traceq --follow polls), so a slow or gone client costs the
 * collector nothing, and ingest never waits for one. Rows that retention
 * removed before the client came back for them are counted, not sent.
 * QOP_TAIL_WRITERS is the same with a cursor per collector of the store
 * (issue 35; server/store/clickhouse_tail.c says why).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/query/queryd_tail.h"

struct tail_ctx {
	struct store_reader *st;
	const struct qsel *c;
	struct qmsg_writer *w;
	struct qsel_page *pg;
};

static int tail_row(void *arg, size_t i, const struct store_row *row)
{
	struct tail_ctx *x = arg;

	qsel_put_row(x->st, x->c, i, x->w, row);
	x->pg->last_ts = row->ts;
	x->pg->rows++;
	return 0;
}

int qtail_page(struct store_reader *st, const struct qmsg_request *r, struct qsel *c,
	       struct qmsg_writer **w, struct qsel_page *pg)
{
	size_t n = qsel_ntypes(c);
	const struct store_query **qs = calloc(n + 1, sizeof(*qs));
	struct store_tail t = {
		.from = r->after_id, .max_scan = QTAIL_MAX_SCAN,
		.max_rows = r->limit ? r->limit : QMSG_MAX_ROWS,
	};
	struct tail_ctx x = { .st = st, .c = c, .pg = pg };
	uint64_t writers[STORE_TAIL_WRITERS] = { 0 };

	_Static_assert(QMSG_MAX_CURSORS == STORE_TAIL_WRITERS, "a cursor per collector number");
	int ret = qs ? qsel_begin_tail(c, &x.w) : -ENOMEM;

	if (r->op == QOP_TAIL_WRITERS) {	/* a cursor per collector (issue 35) */
		t.writers = writers;
		t.writers_set = r->ncursors > 0;
		memcpy(writers, r->cursors, r->ncursors * sizeof(*writers));
	}
	memset(pg, 0, sizeof(*pg));
	for (size_t i = 0; ret == 0 && i < n; i++)
		qs[i] = qsel_read(c, i);
	if (ret == 0)
		ret = store_tail(st, qs, n, &t, tail_row, &x);
	free(qs);
	if (ret < 0) {
		qmsg_writer_free(x.w);
		return ret;
	}
	pg->more = t.more;
	pg->last_id = t.next;
	qmsg_reply_tail(x.w, t.missed, t.reset);
	if (t.writers)
		qmsg_reply_cursors(x.w, writers, STORE_TAIL_WRITERS);
	*w = x.w;
	return 0;
}
