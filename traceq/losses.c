/*
 * losses.c - a cursor over the collector's loss positions (losses.h):
 * op 9 replies, rows (host, cpu, ts, trace_ts, count, boot_id) in (ts,
 * id) order, one page held at a time, the next asked for when it is
 * used up (keyset paging on last_ts, last_id). For --follow, asked
 * again from a time on (losses_from()), the losses returned already
 * left out (a set of their keys).
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
#define LOSSES_SEEN_MAX		(1u << 16)	/* losses_from(): keys kept, then forgotten */

struct losses {
	struct client *c;
	struct qmsg_request req;
	struct qmsg_reply rep;
	bool have;		/* rep holds a page */
	uint32_t next;		/* its next row */
	bool asked, done, failed;
	bool unknown;		/* the collector has no losses op */
	int64_t from0;		/* the selection's own from_ts (0: none) */
	uint64_t *seen;		/* losses_from(): keys of those returned (0: empty) */
	size_t nseen, seen_cap;
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
	l->from0 = l->req.from_ts;
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
	bool more = !l->asked || (l->have && l->rep.more && l->rep.nrows);
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
	l->unknown = ret == 4;
	l->have = ret == 0;
	l->done = ret != 0;
	return ret == 0 && l->rep.nrows > 0;
}

/* A loss's key for the set of those returned: its host, boot, CPU and time. */
static uint64_t loss_key(const struct loss *x)
{
	uint64_t h = 14695981039346656037ull;	/* FNV-1a */

	for (const char *p = x->host; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (const char *p = x->boot_id; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ x->cpu) * 1099511628211ull;
	h = (h ^ (uint64_t)x->ts) * 1099511628211ull;
	return h ? h : 1;
}

/* Whether @key is in the set; with @add, put it there (false: it was not). */
static bool seen_has(struct losses *l, uint64_t key, bool add)
{
	size_t i;

	if (add && (l->nseen + 1) * 2 > l->seen_cap) {
		size_t cap = l->seen_cap ? l->seen_cap * 2 : 256;
		uint64_t *t = l->nseen < LOSSES_SEEN_MAX ? calloc(cap, sizeof(*t)) : NULL;

		if (!t) {	/* too many (or no memory): forgotten, at worst said twice */
			memset(l->seen, 0, l->seen_cap * sizeof(*l->seen));
			l->nseen = 0;
		} else {
			for (size_t j = 0; j < l->seen_cap; j++)
				for (i = l->seen[j] % cap; l->seen[j]; i = (i + 1) % cap)
					if (!t[i]) {
						t[i] = l->seen[j];
						break;
					}
			free(l->seen);
			l->seen = t;
			l->seen_cap = cap;
		}
	}
	if (!l->seen_cap)
		return false;
	for (i = key % l->seen_cap; l->seen[i]; i = (i + 1) % l->seen_cap)
		if (l->seen[i] == key)
			return true;
	if (add) {
		l->seen[i] = key;
		l->nseen++;
	}
	return false;
}

const struct loss *losses_peek(struct losses *l)
{
	for (;;) {
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
		if (!l->seen || !seen_has(l, loss_key(&l->cur), false))
			return &l->cur;
		l->next++;	/* returned before a losses_from() */
	}
}

void losses_from(struct losses *l, int64_t ts)
{
	if (!l || l->failed || l->unknown)
		return;
	if (!l->seen && !(l->seen = calloc(256, sizeof(*l->seen))))
		return;	/* no memory: the losses after the last one seen only */
	if (l->seen_cap == 0)
		l->seen_cap = 256;
	drop_page(l);
	l->req.from_ts = l->from0 > ts ? l->from0 : ts;
	l->req.after_ts = 0;
	l->req.after_id = 0;
	l->asked = l->done = false;
}

void losses_pop(struct losses *l)
{
	if (l->have && l->next < l->rep.nrows) {
		if (l->seen)
			seen_has(l, loss_key(&l->cur), true);
		l->next++;
	}
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
	free(l->seen);
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
