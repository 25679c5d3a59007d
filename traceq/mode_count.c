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
#include "traceq/select.h"
#include "traceq/traceq.h"

int mode_count_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = {
		.op = QOP_COUNT, .query = (char *)o->query,
	};
	struct qmsg_reply rep;
	int ret;

	tq_select_apply(&o->sel, &req);
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	printf("%" PRIu64 "\n", rep.count);
	qmsg_reply_free(&rep);
	return 0;
}
