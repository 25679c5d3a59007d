/*
 * mode_snapshots.c - traceq --snapshots (op 32): the snapshots stored, one
 * row per host: its window, pages, events and the events its kernel
 * overwrote before the freeze; with --snapshot-id N only that one. As a
 * table, csv or json (output.h).
 */
#include "config.h"

#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/modes.h"
#include "traceq/output.h"
#include "traceq/traceq.h"

int mode_snapshots_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = { .op = QOP_SNAPSHOTS, .snapshot_id = o->snapshot_id };
	struct qmsg_reply rep;
	int ret;

	tq_select_apply(&o->sel, &req);
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	if (out_sql_print(stdout, o->format, &rep) < 0)
		ret = 1;
	qmsg_reply_free(&rep);
	return ret ? ret : fflush(stdout) == 0 ? 0 : 1;
}
