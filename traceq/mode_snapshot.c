/*
 * mode_snapshot.c - traceq --snapshot (op 31): freeze the flight
 * recorders of the hosts asked for (-H GLOB, --reason TEXT) and say the
 * snapshot's id.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/modes.h"
#include "traceq/traceq.h"

int mode_snapshot_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = { .op = QOP_SNAPSHOT, .reason = (char *)o->reason,
				    .host = o->sel.nhosts ? (char *)o->sel.hosts[0] : NULL };
	const struct qmsg_value *row;
	struct qmsg_reply rep, view;
	int ret;

	if (o->sel.nhosts > 1) {
		fprintf(stderr, "traceq: --snapshot takes one -H GLOB\n");
		return 2;
	}
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	row = rep.nrows && rep.ncols == 2 ? qmsg_reply_row(&rep, 0, &view) : NULL;
	if (!row) {
		fprintf(stderr, "traceq: --snapshot: the collector's answer has no snapshot\n");
		ret = 1;
	} else {
		printf("snapshot %" PRIu64 ": %" PRIu64 " flight recorders told to freeze\n",
		       (uint64_t)qmsg_value_int(&row[0]), (uint64_t)qmsg_value_int(&row[1]));
	}
	qmsg_reply_free(&rep);
	return ret ? ret : fflush(stdout) == 0 ? 0 : 1;
}
