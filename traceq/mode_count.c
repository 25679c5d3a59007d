/*
 * mode_count.c - traceq --count QUERY: one number, the rows QUERY
 * selects within --since/--until, --host and --cpu.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/modes.h"
#include "traceq/traceq.h"

int mode_count_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_reply rep;
	int ret = client_ask(c, QOP_COUNT, o->query, &o->sel, &rep);

	if (ret)
		return ret;
	printf("%" PRIu64 "\n", rep.count);
	qmsg_reply_free(&rep);
	return 0;
}
