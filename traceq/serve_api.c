/*
 * serve_api.c - the answers of traceq --serve's /api/ (serve_api.h).
 * Each runs what a mode runs (the printer, stats.h, discover.h,
 * hist_print.h) on one request's options, so a number or a row on the
 * page is the one traceq prints. What those print on stdout and stderr
 * (the collector's errors with their carets: client.h says them there)
 * is taken while the request runs: stdout and stderr are pointed at
 * memory files (memfd_create) and put back after; traceq --serve runs
 * one request at a time on one thread, so nothing else prints meanwhile.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/http.h>

#include "common/hist.h"
#include "common/query.h"
#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/discover.h"
#include "traceq/hist_print.h"
#include "traceq/losses.h"
#include "traceq/output.h"
#include "traceq/printer.h"
#include "traceq/select.h"
#include "traceq/serve_api.h"
#include "traceq/stats.h"
#include "traceq/traceq.h"
#include "traceq/when.h"

/* ---- what the modes print, taken ---- */

int serve_capture_begin(struct serve_capture *cap)
{
	fflush(stdout);
	fflush(stderr);
	cap->saved[0] = cap->saved[1] = cap->mem[0] = cap->mem[1] = -1;
	for (int i = 0; i < 2; i++) {
		cap->mem[i] = memfd_create("traceq-serve", MFD_CLOEXEC);
		cap->saved[i] = dup(1 + i);
		if (cap->mem[i] < 0 || cap->saved[i] < 0)
			goto err;
	}
	if (dup2(cap->mem[0], 1) < 0 || dup2(cap->mem[1], 2) < 0)
		goto err;
	return 0;
err:
	dup2(cap->saved[0], 1);
	for (int i = 0; i < 2; i++) {
		if (cap->mem[i] >= 0)
			close(cap->mem[i]);
		if (cap->saved[i] >= 0)
			close(cap->saved[i]);
	}
	return -1;
}

/* Up to SERVE_OUT_MAX bytes of memory file @fd, closed, as a string (NULL: no memory). */
static char *take_file(int fd, size_t *len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	size_t n = size > 0 ? (size_t)size : 0, got = 0;
	char *p;

	if (n > SERVE_OUT_MAX)
		n = SERVE_OUT_MAX;
	p = malloc(n + 1);
	while (p && got < n) {
		ssize_t r = pread(fd, p + got, n - got, (off_t)got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (p)
		p[got] = '\0';
	*len = got;
	return p;
}

void serve_capture_end(struct serve_capture *cap, char **out, size_t *olen, char **err,
		       size_t *elen)
{
	fflush(stdout);
	fflush(stderr);
	dup2(cap->saved[0], 1);
	dup2(cap->saved[1], 2);
	close(cap->saved[0]);
	close(cap->saved[1]);
	*out = take_file(cap->mem[0], olen);
	*err = take_file(cap->mem[1], elen);
}

/* ---- the request's arguments ---- */

const char *serve_api_arg(const struct evkeyvalq *args, const char *name, bool *bad)
{
	const char *v = evhttp_find_header(args, name);

	if (v && strnlen(v, SERVE_ARG_MAX + 1) > SERVE_ARG_MAX) {
		fprintf(stderr, "traceq: %s: longer than %u bytes\n", name, SERVE_ARG_MAX);
		*bad = true;
		return NULL;
	}
	return v;
}

/* Argument @name as a whole number in [0, @max] (absent: @def). Return: 0; -1 (said). */
static int arg_u64(const struct evkeyvalq *args, const char *name, uint64_t max, uint64_t def,
		   uint64_t *out)
{
	bool bad = false;
	const char *v = serve_api_arg(args, name, &bad);
	char *end;
	unsigned long long n;

	if (bad)
		return -1;
	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v || *end || *v == '-' || *v == '+' || n > max) {
		fprintf(stderr, "traceq: %s: expected a whole number in 0..%" PRIu64 "\n",
			name, max);
		return -1;
	}
	*out = n;
	return 0;
}

static int arg_format(const struct evkeyvalq *args, enum out_format *f)
{
	bool bad = false;
	const char *v = serve_api_arg(args, "format", &bad);

	if (bad)
		return -1;
	if (!v || out_format_parse(v, f) == 0)
		return 0;
	fprintf(stderr, "traceq: format: expected text, kernel, fields, csv or json\n");
	return -1;
}

/* since, until, host (one glob), cpu (a list) into @sel. Return: 0; -1 (said). */
int serve_api_select(const struct evkeyvalq *args, struct tq_select *sel)
{
	bool bad = false;
	const char *since = serve_api_arg(args, "since", &bad);
	const char *until = serve_api_arg(args, "until", &bad);
	const char *host = serve_api_arg(args, "host", &bad);
	const char *cpu = serve_api_arg(args, "cpu", &bad);

	memset(sel, 0, sizeof(*sel));
	if (bad || (since && tq_select_time(sel, since, false, when_now_ns()) < 0) ||
	    (until && tq_select_time(sel, until, true, when_now_ns()) < 0) ||
	    (host && *host && tq_select_host(sel, host) < 0) ||
	    (cpu && *cpu && tq_select_cpus(sel, cpu) < 0))
		return -1;
	return 0;
}

/* ---- JSON ---- */

static void json_key_str(FILE *f, const char *key, const char *s, size_t len)
{
	fprintf(f, ",\"%s\":", key);
	out_json_str(f, s ? s : "", s ? len : 0);
}

/* @text's lines (JSON objects, as the modes print them with -f json) as a JSON array. */
static void json_lines(FILE *f, const char *text)
{
	const char *p = text, *nl;
	bool first = true;

	fputc('[', f);
	while (p && *p) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		if (nl > p) {
			fputs(first ? "" : ",", f);
			fwrite(p, 1, (size_t)(nl - p), f);
			first = false;
		}
		p = *nl ? nl + 1 : nl;
	}
	fputc(']', f);
}

/* A memory FILE's text appended to @out; its status @code (500 if it failed). */
static int json_done(FILE *f, char **buf, size_t *len, int code, struct evbuffer *out)
{
	bool failed = fclose(f) != 0;	/* sets *buf and *len */

	if (failed || evbuffer_add(out, *buf, *len) < 0) {
		free(*buf);
		evbuffer_drain(out, evbuffer_get_length(out));
		evbuffer_add_printf(out, "{\"ok\":false,\"error\":\"out of memory\"}");
		return 500;
	}
	free(*buf);
	return code;
}

/* The status of a mode's exit status @ret (modes.h). */
static int status_of(int ret)
{
	return ret == 0 ? 200 : ret == 2 || ret == 3 ? 400 : 502;
}

/* ---- /api/stats ---- */

/* The stats and hosts tables as -f json prints them, on stdout. Return: a mode's status. */
static int stats_print(struct client *c, const struct tq_select *sel)
{
	struct qmsg_reply rep;
	int ret = client_ask(c, QOP_STATS, NULL, sel, &rep);

	if (ret)
		return ret;
	if (tq_stats_print(stdout, &rep, sel, true, true) < 0)
		ret = 1;
	qmsg_reply_free(&rep);
	fputs("\x1e\n", stdout);	/* between the two tables: a record separator */
	if (ret || (ret = client_ask(c, QOP_HOSTS, NULL, sel, &rep)))
		return ret;
	tq_discover_print(stdout, &rep, true);
	qmsg_reply_free(&rep);
	return 0;
}

int serve_api_stats(struct client *c, const struct traceq_opts *o,
		    const struct evkeyvalq *args, struct evbuffer *out)
{
	struct serve_capture cap;
	struct tq_select sel;
	char *text = NULL, *err = NULL, *buf = NULL, *sep;
	size_t tlen = 0, elen = 0, len = 0;
	FILE *f;
	int ret;

	(void)o;
	f = open_memstream(&buf, &len);
	if (!f || serve_capture_begin(&cap) < 0) {
		if (f)
			fclose(f), free(buf);
		return 500;
	}
	ret = serve_api_select(args, &sel) < 0 ? 2 : stats_print(c, &sel);
	if (ret == 1 && client_lost(c))
		client_reconnect(c);
	serve_capture_end(&cap, &text, &tlen, &err, &elen);
	sep = text ? strstr(text, "\x1e\n") : NULL;
	if (sep)
		*sep = '\0';
	fprintf(f, "{\"ok\":%s,\"now_ms\":%" PRId64, ret ? "false" : "true", when_now_ns() / 1000000);
	json_key_str(f, "error", err, elen);
	fputs(",\"stats\":", f);
	json_lines(f, ret ? NULL : text);
	fputs(",\"hosts\":", f);
	json_lines(f, ret || !sep ? NULL : sep + 2);
	fputs("}\n", f);
	free(text);
	free(err);
	return json_done(f, &buf, &len, status_of(ret), out);
}

/* ---- /api/query ---- */

/* What one /api/query request asks, and what came of it. */
struct qpage {
	struct traceq_opts o;	/* the caller's, with this request's query and options */
	const char *mode;	/* rows, count, hist, losses, events */
	struct qmsg_request req;
	bool more;
	bool table;		/* hist with format=json: a JSON table, not the kernel's text */
	uint64_t rows, count, dropped;
};

/* One page of rows (select) as the printer prints them, on stdout. */
static int query_rows(struct client *c, struct qpage *p)
{
	struct printer *out = NULL;
	struct losses *lost = NULL;
	struct qmsg_reply rep;
	bool first = !p->req.after_ts && !p->req.after_id;
	int ret;

	p->req.op = QOP_SELECT;
	p->req.query = (char *)p->o.query;
	tq_select_apply(&p->o.sel, &p->req);
	printer_omit(&p->o, &p->req);
	if (printer_new(c, &p->o, &out) < 0 ||
	    (first && losses_open(c, &p->o.sel, &lost) < 0)) {
		printer_free(out);
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	printer_losses(out, lost, p->o.sel.from_end || p->o.sel.to_end);
	ret = client_call(c, &p->req, &rep);
	if (ret == 0) {
		if (!rep.types && rep.ncols < QMSG_META_COLS && rep.nrows) {
			fprintf(stderr, "traceq: bad reply from the collector: too few columns\n");
			ret = 1;
		} else {
			ret = printer_page(out, &rep);
			if (!rep.more && lost)
				printer_losses_rest(out);
		}
		p->more = rep.more && rep.nrows;
		p->rows = rep.nrows;
		p->req.after_ts = rep.last_ts;
		p->req.after_id = rep.last_id;
		p->req.after_type = rep.last_type;
		qmsg_reply_free(&rep);
	}
	printer_free(out);
	losses_close(lost);
	return ret;
}

/* --count: the number into p->count. */
static int query_count(struct client *c, struct qpage *p)
{
	struct qmsg_reply rep;
	int ret = client_ask(c, QOP_COUNT, p->o.query, &p->o.sel, &rep);

	if (ret)
		return ret;
	p->count = rep.count;
	printf("%" PRIu64 "\n", rep.count);
	qmsg_reply_free(&rep);
	return 0;
}

/*
 * A page of @rep as JSON arrays, one per row, comma-separated (@first:
 * its columns' names first): what a hist answers with format=json, the
 * inside of the answer's "table".
 */
static void table_page(const struct qmsg_reply *rep, bool first)
{
	if (first) {
		fputc('[', stdout);
		for (uint32_t i = 0; i < rep->ncols; i++) {
			fputs(i ? "," : "", stdout);
			out_json_str(stdout, rep->cols[i] ? rep->cols[i] : "",
				     rep->cols[i] ? strlen(rep->cols[i]) : 0);
		}
		fputc(']', stdout);
	}
	for (uint32_t r = 0; r < rep->nrows; r++) {
		fputs(",[", stdout);
		for (uint32_t i = 0; i < rep->ncols; i++) {
			fputs(i ? "," : "", stdout);
			out_value(stdout, &rep->vals[(size_t)r * rep->ncols + i], true);
		}
		fputc(']', stdout);
	}
}

/* mode=losses: where the kernels lost events in the window, one JSON object a line. */
static int query_losses(struct client *c, struct qpage *p)
{
	struct losses *l;
	const struct loss *x;
	uint64_t n = 0;

	if (losses_open(c, &p->o.sel, &l) < 0) {
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	while ((x = losses_peek(l)) && n++ < SERVE_LOSSES_MAX) {
		losses_print_json(stdout, x);
		losses_pop(l);
	}
	p->more = x != NULL;
	p->rows = n;
	n = losses_failed(l);
	losses_close(l);
	return n ? 1 : 0;
}

/* mode=events: the stored events (QUERY, when given, a selector) as --events -f json. */
static int query_events(struct client *c, struct qpage *p)
{
	struct qmsg_reply rep;
	int ret = client_ask(c, QOP_EVENTS, p->o.query, &p->o.sel, &rep);

	if (ret)
		return ret;
	tq_discover_print(stdout, &rep, true);
	p->rows = rep.nrows;
	qmsg_reply_free(&rep);
	return 0;
}

/* --hist SPEC: the histogram as mode_hist.c prints it, every page. */
static int query_hist(struct client *c, struct qpage *p, const char *spec)
{
	struct filter_error ferr = { 0 };
	struct hist_spec sp;
	struct qmsg_reply rep;
	uint64_t hits = 0, entries = 0, dropped = 0;
	const char *filter = p->o.q.filter ? p->o.query + p->o.q.filter_offset : NULL;
	bool more = true;
	int ret = 0;

	if (!spec || hist_parse(spec, &sp, &ferr) < 0) {
		client_caret(spec ? spec : "", spec ? ferr.msg : "hist: a SPEC is wanted",
			     (int)ferr.pos, (int)(ferr.len ? ferr.len : 1));
		return 2;
	}
	p->req = (struct qmsg_request){ .op = QOP_HIST, .query = (char *)p->o.query,
					.hist = (char *)spec, .limit = QMSG_MAX_ROWS };
	tq_select_apply(&p->o.sel, &p->req);
	while (ret == 0 && more) {
		ret = client_call(c, &p->req, &rep);
		if (ret)
			break;
		if (!p->req.after_id) {
			hist_print_names(&sp, &rep);
			if (!p->table)
				hist_print_header(stdout, &sp, filter);
			hits = rep.count, entries = rep.entries, dropped = rep.dropped;
		}
		if (p->table)
			table_page(&rep, !p->req.after_id);
		else if (hist_print_page(stdout, &sp, &rep) < 0)
			ret = 1;
		more = rep.more && rep.nrows;
		p->req.after_id += rep.nrows;
		p->req.to_ts = rep.last_ts;
		p->req.to_end = false;
		qmsg_reply_free(&rep);
	}
	if (ret == 0 && !p->table)
		hist_print_totals(stdout, hits, entries, dropped);
	p->count = hits;
	p->dropped = dropped;
	return ret;
}

/* The query text into p->o.query and p->o.q, checked here as traceq.c does. */
static int query_parse_arg(const struct evkeyvalq *args, struct qpage *p)
{
	struct filter_error ferr = { 0 };
	bool bad = false;
	const char *q = serve_api_arg(args, "q", &bad);
	int ret;

	if (bad)
		return -1;
	if (!q || !*q) {
		fprintf(stderr, "traceq: q: a QUERY is wanted (EVENT [where FILTER])\n");
		return -1;
	}
	p->o.query = q;
	ret = query_parse(q, &p->o.q, &ferr);
	if (ret < 0) {
		client_caret(q, ferr.msg[0] ? ferr.msg : "the query is wrong", (int)ferr.pos,
			     (int)(ferr.len ? ferr.len : 1));
		return -1;
	}
	return 0;
}

/* The request's options into @p. Return: 0; -1 (said). */
static int query_args(const struct evkeyvalq *args, struct qpage *p)
{
	bool bad = false;
	uint64_t limit, ts, id, type;

	p->mode = serve_api_arg(args, "mode", &bad);
	if (!p->mode)
		p->mode = "rows";
	if (bad || (strcmp(p->mode, "rows") && strcmp(p->mode, "count") &&
		    strcmp(p->mode, "hist") && strcmp(p->mode, "losses") &&
		    strcmp(p->mode, "events"))) {
		fprintf(stderr, "traceq: mode: expected rows, count, hist, losses or events\n");
		return -1;
	}
	p->o.format = OUT_TEXT;
	p->o.limit = 0;
	if (arg_format(args, &p->o.format) < 0 || serve_api_select(args, &p->o.sel) < 0 ||
	    arg_u64(args, "limit", SERVE_PAGE_ROWS_MAX, 100, &limit) < 0 ||
	    arg_u64(args, "after_ts", INT64_MAX, 0, &ts) < 0 ||
	    arg_u64(args, "after_id", INT64_MAX, 0, &id) < 0 ||
	    arg_u64(args, "after_type", INT64_MAX, 0, &type) < 0)
		return -1;
	p->table = !strcmp(p->mode, "hist") && p->o.format == OUT_JSON;
	p->o.sel.reverse = evhttp_find_header(args, "reverse") != NULL;
	p->req.limit = limit ? (uint32_t)limit : 1;
	p->req.after_ts = (int64_t)ts;
	p->req.after_id = id;
	p->req.after_type = (int64_t)type;
	if (!strcmp(p->mode, "losses") || (!strcmp(p->mode, "events") && !evhttp_find_header(args, "q")))
		return 0;	/* no query */
	return query_parse_arg(args, p);
}

static int query_run(struct client *c, const struct evkeyvalq *args, struct qpage *p)
{
	bool bad = false;
	const char *spec = serve_api_arg(args, "hist", &bad);
	int ret;

	if (bad || query_args(args, p) < 0)
		return 2;
	if (!strcmp(p->mode, "count"))
		ret = query_count(c, p);
	else if (!strcmp(p->mode, "hist"))
		ret = query_hist(c, p, spec);
	else if (!strcmp(p->mode, "losses"))
		ret = query_losses(c, p);
	else if (!strcmp(p->mode, "events"))
		ret = query_events(c, p);
	else
		ret = query_rows(c, p);
	if (ret == 1 && client_lost(c))
		client_reconnect(c);
	return ret;
}

int serve_api_query(struct client *c, const struct traceq_opts *o,
		    const struct evkeyvalq *args, struct evbuffer *out)
{
	struct qpage p = { .o = *o };
	struct serve_capture cap;
	char *text = NULL, *err = NULL, *buf = NULL;
	size_t tlen = 0, elen = 0, len = 0;
	FILE *f = open_memstream(&buf, &len);
	int ret;

	memset(&p.o.q, 0, sizeof(p.o.q));
	if (!f || serve_capture_begin(&cap) < 0) {
		if (f)
			fclose(f), free(buf);
		return 500;
	}
	ret = query_run(c, args, &p);
	serve_capture_end(&cap, &text, &tlen, &err, &elen);
	query_free(&p.o.q);
	fprintf(f, "{\"ok\":%s,\"rows\":%" PRIu64 ",\"count\":%" PRIu64 ",\"dropped\":%" PRIu64
		",\"more\":%s,\"after\":{\"ts\":\"%" PRId64 "\",\"id\":\"%" PRIu64
		"\",\"type\":\"%" PRId64 "\"}", ret ? "false" : "true", p.rows, p.count,
		p.dropped, p.more ? "true" : "false", p.req.after_ts, p.req.after_id,
		p.req.after_type);
	if (p.table && ret == 0)	/* out_value()'s JSON, whole: tlen is under SERVE_OUT_MAX */
		fprintf(f, ",\"table\":[%s]", tlen < SERVE_OUT_MAX ? text : "");
	else
		json_key_str(f, "text", text, tlen);
	json_key_str(f, "error", err, elen);
	fputs("}\n", f);
	free(text);
	free(err);
	return json_done(f, &buf, &len, status_of(ret), out);
}
