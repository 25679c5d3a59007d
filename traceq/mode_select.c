/*
 * mode_select.c - traceq QUERY: the rows QUERY selects, page by page, in
 * time order (--reverse: newest first), up to --limit, printed by
 * printer.h in the --format layout, with the places where the kernels
 * lost events (losses.h) between them, as trace-cmd report prints them.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/losses.h"
#include "traceq/modes.h"
#include "traceq/printer.h"
#include "traceq/select.h"
#include "traceq/traceq.h"

/*
 * The request for the page after @rep (@printed rows so far, @rep's
 * included); false when there is none.
 */
static bool select_next(struct qmsg_request *req, const struct qmsg_reply *rep,
			const struct traceq_opts *o, uint64_t printed)
{
	if (!(rep->more && rep->nrows && (!o->limit || printed < o->limit)))
		return false;
	req->limit = TRACEQ_PAGE_ROWS;
	if (o->limit && o->limit - printed < req->limit)
		req->limit = (uint32_t)(o->limit - printed);
	req->sent = printed;	/* the collector's query-max-rows counts them */
	req->after_ts = rep->last_ts;
	req->after_id = rep->last_id;
	req->after_type = rep->last_type;
	return true;
}

/*
 * Page by page, the next page asked for before this one is printed: the
 * collector reads it while traceq prints (at most two pages held).
 */
int mode_select_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = {
		.op = QOP_SELECT, .query = (char *)o->query, .limit = TRACEQ_PAGE_ROWS,
	};
	struct printer *out = NULL;
	struct losses *lost = NULL;
	uint64_t printed = 0;
	struct qmsg_reply rep;
	bool more = true, complete = false;
	int ret;

	tq_select_apply(&o->sel, &req);
	printer_omit(o, &req);
	if (printer_new(c, o, &out) < 0 || losses_open(c, &o->sel, &lost) < 0) {
		printer_free(out);
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	printer_losses(out, lost, o->sel.from_end || o->sel.to_end);
	if (o->limit && o->limit < req.limit)
		req.limit = (uint32_t)o->limit;
	ret = client_send(c, &req);
	while (ret == 0 && more) {
		ret = client_next(c, &rep);
		if (ret)
			break;
		if (!rep.types && rep.ncols < QMSG_META_COLS && rep.nrows) {
			fprintf(stderr, "traceq: bad reply from the collector: too few columns\n");
			qmsg_reply_free(&rep);
			ret = 1;
			break;
		}
		printed += rep.nrows;
		complete = !rep.more;
		more = select_next(&req, &rep, o, printed);
		if (more)
			ret = client_send(c, &req);
		if (printer_page(out, &rep) && ret == 0)
			ret = 1;
		qmsg_reply_free(&rep);
	}
	if (ret == 0 && complete)
		printer_losses_rest(out);
	printer_free(out);
	losses_close(lost);
	if (ret > 0)
		return ret;
	return fflush(stdout) == 0 ? 0 : 1;
}
