/*
 * mode_graph.c - traceq --graph "funcgraph [where FILTER]": the rows of
 * ftrace:funcgraph_entry and funcgraph_exit, every page of both, handed
 * to graph.h, which nests and prints them as the kernel's function_graph
 * tracer does. The query is read as main() parsed it (common/query.h).
 * graph_collect() is the fetching, for --serve's flame chart too.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/query.h"
#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/graph.h"
#include "traceq/modes.h"
#include "traceq/select.h"
#include "traceq/traceq.h"

static int col_index(const struct qmsg_reply *r, const char *name)
{
	uint32_t i;

	for (i = QMSG_META_COLS; i < r->ncols; i++)
		if (!strcmp(r->cols[i], name))
			return (int)i;
	return -1;
}

static uint64_t col_u64(const struct qmsg_value *row, int i)
{
	return i < 0 ? 0 : (uint64_t)qmsg_value_int(&row[i]);
}

/* One page of funcgraph rows into @g. Return: 0, or 1 when out of memory. */
static int graph_page(struct graph *g, const struct qmsg_reply *r, bool exit)
{
	int func = col_index(r, "func"), depth = col_index(r, "depth");
	int call = col_index(r, "calltime"), ret = col_index(r, "rettime");
	int sym = col_index(r, "func_sym"), added;
	struct graph_row gr;
	uint32_t i;

	for (i = 0; i < r->nrows; i++) {
		const struct qmsg_value *row = &r->vals[i * r->ncols];

		memset(&gr, 0, sizeof(gr));
		gr.ts = qmsg_value_int(&row[2]);
		gr.cpu = (uint32_t)qmsg_value_int(&row[1]);
		gr.pid = (int32_t)qmsg_value_int(&row[4]);
		if (row[5].kind == QV_STR)
			snprintf(gr.comm, sizeof(gr.comm), "%s", row[5].s.p);
		gr.exit = exit;
		gr.func = col_u64(row, func);
		gr.depth = (int32_t)col_u64(row, depth);
		gr.calltime = col_u64(row, call);
		gr.rettime = col_u64(row, ret);
		/* the function, not the hook's call site in it: no +0xoff */
		if (sym >= 0 && row[sym].kind == QV_STR)
			snprintf(gr.name, sizeof(gr.name), "%.*s",
				 (int)strcspn(row[sym].s.p, "+"), row[sym].s.p);
		added = graph_add(g, &gr);
		if (added == -E2BIG)
			fprintf(stderr, "traceq: --graph: more than %zu rows; it holds them all to "
				"nest the calls: narrow the query (--since/--until, --cpu, --host, "
				"a filter such as common_pid == N)\n", graph_max_rows);
		else if (added < 0)
			fprintf(stderr, "traceq: out of memory\n");
		if (added < 0)
			return 1;
	}
	return 0;
}

/* Every row of @event matching @filter (NULL: all) into @g. */
static int graph_fetch(struct client *c, const struct traceq_opts *o,
		       const char *event, const char *filter, struct graph *g)
{
	char query[4096];
	struct qmsg_request req = {
		.op = QOP_SELECT, .query = query,
	};
	struct qmsg_reply rep;
	int ret;

	tq_select_apply(&o->sel, &req);
	req.reverse = false;	/* the graph is built oldest first */
	snprintf(query, sizeof(query), "ftrace:%s%s%s", event, filter ? " where " : "",
		 filter ? filter : "");
	do {
		req.limit = TRACEQ_PAGE_ROWS;
		ret = client_call(c, &req, &rep);
		if (ret)
			return ret;
		ret = rep.ncols < QMSG_META_COLS && rep.nrows;
		if (ret)
			fprintf(stderr, "traceq: bad reply from the collector\n");
		else
			ret = graph_page(g, &rep, strstr(event, "exit") != NULL);
		req.after_ts = rep.last_ts;
		req.after_id = rep.last_id;
		if (ret == 0 && !(rep.more && rep.nrows))
			ret = -1;
		qmsg_reply_free(&rep);
	} while (ret == 0);
	return ret < 0 ? 0 : ret;
}

int graph_collect(struct client *c, const struct traceq_opts *o, struct graph *g)
{
	const struct query_sel *sel = o->q.nsel ? &o->q.sel[0] : NULL;
	const char *filter = o->q.filter ? o->query + o->q.filter_offset : NULL;
	int ret;

	if (!sel || (sel->system && strcmp(sel->system, "ftrace")) ||
	    strncmp(sel->event, "funcgraph", 9)) {
		fprintf(stderr, "traceq: --graph wants \"funcgraph [where "
			"FILTER]\", not '%s'\n", o->query);
		return 2;
	}
	ret = graph_fetch(c, o, "funcgraph_entry", filter, g);
	if (ret == 0)
		ret = graph_fetch(c, o, "funcgraph_exit", filter, g);
	return ret;
}

int mode_graph_run(struct client *c, const struct traceq_opts *o)
{
	struct graph *g;
	int ret;

	if (graph_new(stdout, &g) < 0) {
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	ret = graph_collect(c, o, g);
	if (ret == 0)
		graph_print(g);
	graph_free(g);
	return ret ? ret : fflush(stdout) == 0 ? 0 : 1;
}
