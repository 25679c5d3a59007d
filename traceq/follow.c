/*
 * follow.c - the cursor of traceq --follow (follow.h): pages of
 * QOP_TAIL_WRITERS, the cursors (one per collector that stores into the
 * collector's database, issue 35) carried from one to the next, across a
 * lost collector too (the caller reconnects); QOP_TAIL and its one cursor
 * (last_id) with a collector from before it.
 */
#include "config.h"

#include <string.h>

#include "traceq/client.h"
#include "traceq/follow.h"
#include "traceq/printer.h"
#include "traceq/select.h"
#include "traceq/traceq.h"

void tq_follow_init(struct tq_follow *f, const struct traceq_opts *o, uint64_t cursor)
{
	*f = (struct tq_follow){ .req = { .op = QOP_TAIL_WRITERS, .query = (char *)o->query },
				 .cursor = cursor };
	tq_select_apply(&o->sel, &f->req);
	printer_omit(o, &f->req);
}

int tq_follow_page(struct client *c, struct tq_follow *f, uint32_t limit, uint64_t sent,
		   struct qmsg_reply *rep)
{
	int ret;

	/*
	 * Cursor 0 is "from now on" (the collector's end when it answers).
	 * A follower that waited for a selector before it had a cursor
	 * must not take "now" at its first answer instead: the rows
	 * stored while it waited would be skipped. No row of a selected
	 * event was stored when the collector said none was, so every
	 * such row is from the follower's start on: it begins at the
	 * storage start (cursor 1), as tail -F prints a file that appeared.
	 */
	f->from_start = !f->cursor && !f->req.ncursors && f->waiting;
	f->req.after_id = f->from_start ? 1 : f->cursor;
	f->req.sent = sent;
	f->req.limit = limit;
	client_wait_unknown(c, true);	/* unknown events waited for, as tail -F does */
	ret = f->req.op == QOP_TAIL_WRITERS ? client_call_opt(c, &f->req, rep) :
	      client_call(c, &f->req, rep);
	if (ret == 4) {	/* a collector from before QOP_TAIL_WRITERS: one cursor */
		f->req.op = QOP_TAIL;
		f->req.ncursors = 0;
		ret = client_call(c, &f->req, rep);
	}
	client_wait_unknown(c, false);
	if (ret == 3)
		f->waiting = true;
	if (ret == 0) {
		f->cursor = rep->last_id;
		if (f->req.op == QOP_TAIL_WRITERS && rep->ncursors) {
			memcpy(f->req.cursors, rep->cursors,
			       rep->ncursors * sizeof(*f->req.cursors));
			f->req.ncursors = rep->ncursors;
		}
	}
	return ret;
}

int64_t tq_follow_first_ts(const struct qmsg_reply *rep)
{
	int64_t first = INT64_MAX;

	for (uint32_t i = 0; i < rep->nrows; i++) {
		struct qmsg_reply view;
		const struct qmsg_value *v = qmsg_reply_row(rep, i, &view);
		int64_t ts = view.ncols > 2 ? qmsg_value_int(&v[2]) : INT64_MAX;

		if (ts < first)
			first = ts;
	}
	return first;
}
