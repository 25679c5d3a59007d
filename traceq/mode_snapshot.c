/*
 * mode_snapshot.c - traceq --snapshot (op 31: freeze the flight recorders
 * of the hosts asked for; -H GLOB, --reason TEXT) and --snapshots (op 32:
 * the snapshots stored, one row per host: its window, pages, events and
 * the events its kernel overwrote before the freeze), as a table, csv or
 * json (output.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/modes.h"
#include "traceq/output.h"
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

int mode_snapshots_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = { .op = QOP_SNAPSHOTS, .snapshot_id = o->snapshot_id };
	struct qmsg_reply rep;
	int ret;

	tq_select_apply(&o->sel, &req);
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	if (o->format == OUT_CSV)
		out_sql_csv(stdout, &rep);
	else if (o->format == OUT_JSON)
		out_sql_json(stdout, &rep);
	else if (out_sql_text(stdout, &rep) < 0)
		ret = 1;
	qmsg_reply_free(&rep);
	return ret ? ret : fflush(stdout) == 0 ? 0 : 1;
}
