/*
 * serve_flame.c - traceq --serve's /api/flame (serve_flame.h): the calls
 * of a function_graph trace, nested by graph.h's walk, the one traceq
 * --graph prints, and sent as frames for the page's flame chart.
 */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/query.h"
#include "traceq/client.h"
#include "traceq/graph.h"
#include "traceq/output.h"
#include "traceq/serve_api.h"
#include "traceq/serve_flame.h"
#include "traceq/traceq.h"

struct frames {
	FILE *f;
	uint64_t n;
	bool more;		/* past SERVE_FLAME_MAX */
};

/* One call as a frame: [seq, pid, cpu, depth, "start", ns, name, comm]. */
static void add_frame(void *arg, const struct graph_call *c)
{
	struct frames *fr = arg;
	const struct graph_row *r = c->exit;
	char hex[24];

	if (fr->n >= SERVE_FLAME_MAX) {
		fr->more = true;
		return;
	}
	fprintf(fr->f, "%s[%zu,%" PRId32 ",%" PRIu32 ",%" PRId32 ",\"%" PRId64 "\",%" PRId64 ",",
		fr->n++ ? "," : "", c->seq, r->pid, r->cpu, r->depth, c->start, c->ns);
	if (r->name[0]) {
		out_json_str(fr->f, r->name, strnlen(r->name, sizeof(r->name)));
	} else {
		snprintf(hex, sizeof(hex), "0x%" PRIx64, r->func);
		out_json_str(fr->f, hex, strlen(hex));
	}
	fputc(',', fr->f);
	out_json_str(fr->f, r->comm, strnlen(r->comm, sizeof(r->comm)));
	fputc(']', fr->f);
}

/* The query (default "funcgraph") parsed into @o. Return: 0; -1 (said). */
static int flame_query(const struct evkeyvalq *args, struct traceq_opts *o)
{
	struct filter_error ferr = { 0 };
	bool bad = false;
	const char *q = serve_api_arg(args, "q", &bad);

	if (bad)
		return -1;
	o->query = q && *q ? q : "funcgraph";
	if (query_parse(o->query, &o->q, &ferr) < 0) {
		client_caret(o->query, ferr.msg[0] ? ferr.msg : "the query is wrong",
			     (int)ferr.pos, (int)(ferr.len ? ferr.len : 1));
		return -1;
	}
	return 0;
}

/* The frames of @o's query into @fr (a mode's status). */
static int flame_run(struct client *c, struct traceq_opts *o, const struct evkeyvalq *args,
		     struct frames *fr)
{
	static const struct graph_ops ops = { .call = add_frame };
	struct graph *g = NULL;
	int ret;

	if (serve_api_select(args, &o->sel) < 0 || flame_query(args, o) < 0)
		return 2;
	o->sel.reverse = false;
	if (graph_new(NULL, &g) < 0) {
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	ret = graph_collect(c, o, g);
	if (ret == 0 && graph_walk(g, &ops, fr) < 0) {
		fprintf(stderr, "traceq: out of memory\n");
		ret = 1;
	}
	graph_free(g);
	if (ret == 1 && client_lost(c))
		client_reconnect(c);
	return ret;
}

int serve_api_flame(struct client *c, const struct traceq_opts *o,
		    const struct evkeyvalq *args, struct evbuffer *out)
{
	struct traceq_opts qo = *o;
	struct serve_capture cap;
	struct frames fr = { 0 };
	char *frames = NULL, *text = NULL, *err = NULL;
	size_t flen = 0, tlen = 0, elen = 0;
	int ret, code;

	memset(&qo.q, 0, sizeof(qo.q));
	fr.f = open_memstream(&frames, &flen);
	if (!fr.f || serve_capture_begin(&cap) < 0) {
		if (fr.f)
			fclose(fr.f), free(frames);
		return 500;
	}
	ret = flame_run(c, &qo, args, &fr);
	serve_capture_end(&cap, &text, &tlen, &err, &elen);
	query_free(&qo.q);
	code = fclose(fr.f) ? 500 : ret == 0 ? 200 : ret == 2 ? 400 : 502;
	if (code == 500)
		evbuffer_add_printf(out, "{\"ok\":false,\"error\":\"out of memory\"}\n");
	else
		evbuffer_add_printf(out, "{\"ok\":%s,\"count\":%" PRIu64 ",\"more\":%s,"
				    "\"frames\":[%s],\"error\":", ret ? "false" : "true", fr.n,
				    fr.more ? "true" : "false", ret ? "" : frames);
	free(frames);
	free(text);
	if (code != 500) {
		char *json = NULL;
		size_t jlen = 0;
		FILE *f = open_memstream(&json, &jlen);

		if (f) {
			out_json_str(f, err ? err : "", err ? elen : 0);
			fputs("}\n", f);
		}
		if (!f || fclose(f) || evbuffer_add(out, json, jlen) < 0) {
			evbuffer_drain(out, evbuffer_get_length(out));
			evbuffer_add_printf(out, "{\"ok\":false,\"error\":\"out of memory\"}\n");
			code = 500;
		}
		free(json);
	}
	free(err);
	return code;
}
