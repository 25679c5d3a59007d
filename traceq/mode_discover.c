/*
 * mode_discover.c - traceq --hosts, --events [SELECTOR], --fields
 * SELECTOR: one request, its table printed by discover.h.
 */
#include "config.h"

#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/discover.h"
#include "traceq/modes.h"
#include "traceq/traceq.h"

/* --hosts, --events, --fields: one request, the table it answers (discover.c). */
int mode_discover_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_reply rep;
	int ret = client_ask(c, o->list, o->query, &o->sel, &rep);

	if (ret)
		return ret;
	tq_discover_print(stdout, &rep, o->format == OUT_JSON);
	qmsg_reply_free(&rep);
	return fflush(stdout) == 0 ? 0 : 1;
}
