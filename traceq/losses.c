/*
 * losses.c - a cursor over the collector's loss positions (losses.h):
 * op 9 replies, rows (host, cpu, ts, trace_ts, count, boot_id) in (ts,
 * id) order, one page held at a time, the next asked for when it is
 * used up (keyset paging on last_ts, last_id).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/losses.h"
#include "traceq/output.h"
#include "traceq/select.h"

#define LOSSES_PAGE_ROWS	2000

struct losses {
	struct client *c;
	struct qmsg_request req;
	struct qmsg_reply rep;
	bool have;		/* rep holds a page */
	uint32_t next;		/* its next row */
	bool asked, done, failed;
	struct loss cur;
};

int losses_open(struct client *c, const struct tq_select *sel, struct losses **out)
{
	struct losses *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->c = c;
	l->req = (struct qmsg_request){ .op = QOP_LOSSES, .limit = LOSSES_PAGE_ROWS };
	tq_select_apply(sel, &l->req);
	if (l->req.from_end || l->req.to_end) {	/* offsets, no times: the caller bounds them */
		l->req.from_ts = l->req.to_ts = 0;
		l->req.from_end = l->req.to_end = false;
	}
	*out = l;
	return 0;
}

static void drop_page(struct losses *l)
{
	if (l->have)
		qmsg_reply_free(&l->rep);
	l->have = false;
	l->next = 0;
}

/* The next page into l->rep; false at the end (or on failure). */
static bool fetch(struct losses *l)
{
	bool more = !l->asked || (l->rep.more && l->rep.nrows);
	int ret;

	if (l->asked && more) {
		l->req.after_ts = l->rep.last_ts;
		l->req.after_id = l->rep.last_id;
	}
	drop_page(l);
	if (l->done || !more) {
		l->done = true;
		return false;
	}
	l->asked = true;
	ret = client_call_opt(l->c, &l->req, &l->rep);
	if (ret == 0 && (l->rep.types || (l->rep.nrows && l->rep.ncols < QMSG_LOSSES_COLS))) {
		fprintf(stderr, "traceq: bad reply from the collector: losses: %u columns\n",
			l->rep.ncols);
		qmsg_reply_free(&l->rep);
		ret = 1;
	}
	l->failed = ret != 0 && ret != 4;
	l->have = ret == 0;
	l->done = ret != 0;
	return ret == 0 && l->rep.nrows > 0;
}

const struct loss *losses_peek(struct losses *l)
{
	const struct qmsg_value *row;

	while (!l->have || l->next >= l->rep.nrows) {
		if (!fetch(l))
			return NULL;
	}
	row = &l->rep.vals[(size_t)l->next * l->rep.ncols];
	l->cur = (struct loss){
		.host = row[0].kind == QV_STR ? row[0].s.p : "",
		.cpu = (uint32_t)qmsg_value_int(&row[1]),
		.ts = qmsg_value_int(&row[2]),
		.trace_ts = qmsg_value_int(&row[3]),
		.count = row[4].kind == QV_NIL ? -1 : qmsg_value_int(&row[4]),
		.boot_id = row[5].kind == QV_STR ? row[5].s.p : "",
	};
	return &l->cur;
}

void losses_pop(struct losses *l)
{
	if (l->have && l->next < l->rep.nrows)
		l->next++;
}

bool losses_failed(const struct losses *l)
{
	return l->failed;
}

void losses_close(struct losses *l)
{
	if (!l)
		return;
	drop_page(l);
	free(l);
}

int losses_print_text(FILE *f, const struct loss *x, int host_col, bool kernel)
{
	char h[4 * 256];

	if (host_col > 0) {
		log_escape_mem(x->host, strlen(x->host), h, sizeof(h));
		fprintf(f, "%*s: ", host_col, h);
	}
	if (kernel && x->count >= 0)
		return fprintf(f, "CPU:%u [LOST %lld EVENTS]\n", x->cpu, (long long)x->count);
	if (kernel)
		return fprintf(f, "CPU:%u [LOST EVENTS]\n", x->cpu);
	if (x->count >= 0)
		return fprintf(f, "CPU:%u [%lld EVENTS DROPPED]\n", x->cpu, (long long)x->count);
	return fprintf(f, "CPU:%u [EVENTS DROPPED]\n", x->cpu);
}

void losses_print_json(FILE *f, const struct loss *x)
{
	fputs("{\"lost_events\":{\"host\":", f);
	out_json_str(f, x->host, strlen(x->host));
	fprintf(f, ",\"cpu\":%u,\"ts\":%lld,\"trace_ts\":%lld,\"count\":", x->cpu,
		(long long)x->ts, (long long)x->trace_ts);
	if (x->count >= 0)
		fprintf(f, "%lld", (long long)x->count);
	else
		fputs("null", f);
	fputs(",\"boot_id\":", f);
	out_json_str(f, x->boot_id, strlen(x->boot_id));
	fputs("}}\n", f);
}
