/*
 * mode_sql.c - traceq --sql TEXT: one read-only statement run by the
 * collector over its views, its rows as columns, csv or json (output.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/modes.h"
#include "traceq/output.h"
#include "traceq/traceq.h"

/* --sql: one statement's rows as a table. */
int mode_sql_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = { .op = QOP_SQL, .query = (char *)o->sql,
				    .limit = o->limit && o->limit < QMSG_MAX_ROWS ?
					     (uint32_t)o->limit : 0 };
	struct qmsg_reply rep;
	int ret = client_call(c, &req, &rep);

	if (ret)
		return ret;
	if (out_sql_print(stdout, o->format, &rep) < 0)
		ret = 1;
	if (rep.more && (!o->limit || o->limit > rep.nrows))
		fprintf(stderr, "traceq: --sql: stopped after %" PRIu32 " rows, the most one answer"
			" holds; narrow the statement (LIMIT, GROUP BY)\n", rep.nrows);
	qmsg_reply_free(&rep);
	return ret ? ret : fflush(stdout) == 0 ? 0 : 1;
}
