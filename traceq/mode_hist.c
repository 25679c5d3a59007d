/*
 * mode_hist.c - traceq --hist SPEC QUERY: the collector computes the
 * histogram of QUERY's rows; hist_print.h prints it as the kernel prints
 * an event's hist file.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/hist_print.h"
#include "traceq/modes.h"
#include "traceq/select.h"
#include "traceq/traceq.h"

/* The filter text of the query (a copy, blanks trimmed), NULL: none or no memory. */
static char *query_filter(const struct traceq_opts *o)
{
	char *f;
	size_t n;

	if (!o->q.filter)
		return NULL;
	f = strdup(o->query + o->q.filter_offset);
	for (n = f ? strlen(f) : 0; n && (f[n - 1] == ' ' || f[n - 1] == '\t'); n--)
		f[n - 1] = '\0';
	return f;
}

/*
 * --hist: the spec was parsed (main()), the collector computes the
 * histogram; pages of QMSG_MAX_ROWS entries (size= up to 131072) all
 * count the rows the first one counted (its to_ts). --since/--until,
 * --host and --cpu narrow the rows as for a select.
 */
int mode_hist_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = {
		.op = QOP_HIST, .query = (char *)o->query, .hist = (char *)o->hist,
		.limit = QMSG_MAX_ROWS,
	};
	struct hist_spec sp = o->hist_spec;	/* hist_print_names() names its fields */
	struct qmsg_reply rep;
	uint64_t hits = 0, entries = 0, dropped = 0;
	char *filter;
	bool more = true;
	int ret = 0;

	tq_select_apply(&o->sel, &req);
	filter = query_filter(o);
	while (ret == 0 && more) {
		ret = client_call(c, &req, &rep);
		if (ret)
			break;
		if (!req.after_id) {
			hist_print_names(&sp, &rep);
			hist_print_header(stdout, &sp, filter);
			hits = rep.count, entries = rep.entries, dropped = rep.dropped;
		}
		if (hist_print_page(stdout, &sp, &rep) < 0) {
			fprintf(stderr, "traceq: bad reply from the collector: not the spec's columns\n");
			ret = 1;
		}
		more = rep.more && rep.nrows;
		req.after_id += rep.nrows;
		req.to_ts = rep.last_ts;	/* newest counted + 1: within any --until */
		req.to_end = false;
		qmsg_reply_free(&rep);
	}
	free(filter);
	if (ret)
		return ret;
	hist_print_totals(stdout, hits, entries, dropped);
	return fflush(stdout) == 0 ? 0 : 1;
}
