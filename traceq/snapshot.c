/*
 * snapshot.c - --snapshot-id N as a narrowed query (see snapshot.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/snapshot.h"
#include "traceq/traceq.h"

/* The window is widened by this: the collector reads each host's by its trace clock. */
#define SNAP_SLACK_NS	1000000000LL

/*
 * @name as a glob that matches only it: each glob character in brackets
 * ([*], [?], [[]), which fnmatch() and SQLite's GLOB read alike.
 */
static char *exact_glob(const char *name)
{
	char *g = malloc(3 * strlen(name) + 1), *p = g;

	if (!g)
		return NULL;
	for (; *name; name++) {
		if (strchr("*?[", *name)) {
			*p++ = '[';
			*p++ = *name;
			*p++ = ']';
		} else {
			*p++ = *name;
		}
	}
	*p = '\0';
	return g;
}

/* Add host @name once; Return: 0; -1 (said). */
static int add_host(struct traceq_opts *o, const char *name)
{
	char *g;

	for (uint32_t i = 0; i < o->snap_nhosts; i++)
		if (!strcmp(o->snap_names[i], name))
			return 0;
	if (o->sel.nhosts == QMSG_MAX_HOSTS) {
		fprintf(stderr, "traceq: --snapshot-id: more than %d hosts\n", QMSG_MAX_HOSTS);
		return -1;
	}
	g = exact_glob(name);
	o->snap_names[o->snap_nhosts] = strdup(name);
	if (!g || !o->snap_names[o->snap_nhosts]) {
		free(g);
		free(o->snap_names[o->snap_nhosts]);
		fprintf(stderr, "traceq: out of memory\n");
		return -1;
	}
	o->snap_globs[o->snap_nhosts++] = g;
	o->sel.hosts[o->sel.nhosts++] = g;
	return 0;
}

int tq_snapshot_narrow(struct client *c, struct traceq_opts *o)
{
	struct qmsg_request req = { .op = QOP_SNAPSHOTS, .snapshot_id = o->snapshot_id };
	int64_t from = INT64_MAX, to = INT64_MIN;
	struct qmsg_reply rep, view;
	uint32_t found = 0;
	int ret;

	if (o->sel.nhosts || o->sel.from_ts || o->sel.to_ts || o->sel.from_end ||
	    o->sel.to_end) {
		fprintf(stderr, "traceq: --snapshot-id picks the hosts and the window: no --host, "
			"--since or --until\n");
		return 2;
	}
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	/* id asked reason who host done first_ts last_ts pages events lost */
	for (uint32_t i = 0; ret == 0 && rep.ncols == 11 && i < rep.nrows; i++) {
		const struct qmsg_value *row = qmsg_reply_row(&rep, i, &view);

		found++;
		if (row[6].kind == QV_NIL || row[7].kind == QV_NIL || row[4].kind != QV_STR)
			continue;	/* asked, not done, or its buffer held nothing */
		if (qmsg_value_int(&row[6]) < from)
			from = qmsg_value_int(&row[6]);
		if (qmsg_value_int(&row[7]) > to)
			to = qmsg_value_int(&row[7]);
		ret = add_host(o, row[4].s.p) < 0 ? 1 : 0;
	}
	qmsg_reply_free(&rep);
	if (ret == 0 && !found) {
		fprintf(stderr, "traceq: no snapshot %" PRIu64 " (of the hosts you may read)\n",
			o->snapshot_id);
		ret = 2;
	} else if (ret == 0 && !o->sel.nhosts) {
		fprintf(stderr, "traceq: snapshot %" PRIu64 " holds no events (yet: its hosts "
			"may still be shipping them)\n", o->snapshot_id);
		ret = 2;
	}
	if (ret == 0) {	/* narrows what the store reads; each host's own window is the collector's */
		o->sel.from_ts = from > INT64_MIN + SNAP_SLACK_NS ? from - SNAP_SLACK_NS : INT64_MIN;
		o->sel.to_ts = to < INT64_MAX - SNAP_SLACK_NS ? to + SNAP_SLACK_NS : INT64_MAX;
		o->sel.snapshot_id = o->snapshot_id;
	}
	return ret;
}

void tq_snapshot_free(struct traceq_opts *o)
{
	for (uint32_t i = 0; i < o->snap_nhosts; i++) {
		free(o->snap_names[i]);
		free(o->snap_globs[i]);
	}
	o->snap_nhosts = 0;
}
