/*
 * serve_live.c - traceq --serve's live streams (serve_live.h).
 *
 * Why Server-Sent Events: serve.c answers on evhttp, which already
 * writes a reply in chunks (evhttp_send_reply_start/chunk/end) and tells
 * when the browser goes (the connection's close callback); the stream
 * flows one way, collector to page, which is what SSE is; and the
 * browser's EventSource reconnects by itself, sending the last message's
 * id, our cursor, back. A long poll would cost a request per page and
 * the page would do that bookkeeping itself.
 *
 * One timer drives every stream: each tick asks each stream's follower
 * for one page (a blocking call, as every request of serve is: traceq
 * has one connection and asks one thing at a time), prints it as
 * --follow -f json does (printer.h, taken from stdout by
 * serve_capture_begin()), and sends it as one event. A lost collector is
 * said on every stream once, tried again every SERVE_LIVE_RETRY_MS.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>

#include "common/query.h"
#include "common/util.h"
#include "traceq/client.h"
#include "traceq/follow.h"
#include "traceq/losses.h"
#include "traceq/output.h"
#include "traceq/printer.h"
#include "traceq/serve_api.h"
#include "traceq/serve_live.h"
#include "traceq/traceq.h"

struct live_stream {
	struct serve_live *l;
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	struct traceq_opts o;	/* the server's: this stream's query, selection, -f json */
	char *query;
	struct tq_follow f;
	struct printer *out;
	struct losses *lost;
	uint64_t sent;		/* rows sent */
	int64_t last_write_ms;
	bool said_waiting;
	bool following;		/* said so: the first page came, the cursor is set */
	struct live_stream *next;
};

struct serve_live {
	struct event_base *base;
	struct client *c;
	const struct traceq_opts *o;
	struct event *tick;
	struct live_stream *streams;
	unsigned n;
	bool lost;		/* the collector did not answer the last call */
};

/* ---- a stream ---- */

static void stream_free(struct live_stream *st)
{
	if (!st)
		return;
	printer_free(st->out);
	losses_close(st->lost);
	query_free(&st->o.q);
	free(st->query);
	free(st);
}

/* Unlink @st from its server's list and free it; its request is not touched. */
static void stream_drop(struct live_stream *st)
{
	struct serve_live *l = st->l;

	for (struct live_stream **p = &l->streams; *p; p = &(*p)->next)
		if (*p == st) {
			*p = st->next;
			l->n--;
			break;
		}
	stream_free(st);
}

/*
 * The browser went. evhttp frees a request still queued on its
 * connection; one it took off the connection because we were still
 * sending (a read or write that failed while streaming: its connection
 * then NULL) is ours, and evhttp_send_reply_end() frees it.
 */
static void on_close(struct evhttp_connection *conn, void *arg)
{
	struct live_stream *st = arg;

	(void)conn;
	if (!evhttp_request_get_connection(st->req))
		evhttp_send_reply_end(st->req);
	stream_drop(st);
}

/* End @st's reply and drop it. */
static void stream_end(struct live_stream *st)
{
	evhttp_connection_set_closecb(st->conn, NULL, NULL);
	evhttp_send_reply_end(st->req);
	stream_drop(st);
}

/* @b sent as the stream's next chunk. */
static void stream_send(struct live_stream *st, struct evbuffer *b)
{
	if (!evbuffer_get_length(b))
		return;
	evhttp_send_reply_chunk(st->req, b);
	st->last_write_ms = util_now_ms();
}

static void stream_printf(struct live_stream *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void stream_printf(struct live_stream *st, const char *fmt, ...)
{
	struct evbuffer *b = evbuffer_new();
	va_list ap;

	if (!b)
		return;
	va_start(ap, fmt);
	evbuffer_add_vprintf(b, fmt, ap);
	va_end(ap);
	stream_send(st, b);
	evbuffer_free(b);
}

/* Bytes of @st's output the browser has not taken yet. */
static size_t stream_backlog(const struct live_stream *st)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(st->conn);

	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

/* ---- what a page becomes ---- */

/* @text's lines as an event's data lines after @head, into @b. */
static void sse_lines(struct evbuffer *b, const char *head, const char *text)
{
	const char *p = text, *nl;

	evbuffer_add_printf(b, "%s", head);
	while (p && *p) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		if (nl > p) {
			evbuffer_add(b, "data: ", 6);
			evbuffer_add(b, p, (size_t)(nl - p));
			evbuffer_add(b, "\n", 1);
		}
		p = *nl ? nl + 1 : nl;
	}
	evbuffer_add(b, "\n", 1);
}

/* The query's error @err as a fail event; the stream ends. */
static void stream_fail(struct live_stream *st, const char *err, size_t len)
{
	char *json = NULL;
	size_t jlen = 0;
	FILE *f = open_memstream(&json, &jlen);

	if (f) {
		fputs("{\"error\":", f);
		out_json_str(f, err, len);
		fputc('}', f);
		if (fclose(f) == 0)
			stream_printf(st, "event: fail\ndata: %s\n\n", json);
		free(json);
	}
	stream_end(st);
}

/* Page @rep's rows (and the losses among them) as printed by -f json, sent. */
static int stream_rows(struct live_stream *st, const struct qmsg_reply *rep)
{
	struct serve_capture cap;
	struct evbuffer *b;
	char *text = NULL, *err = NULL, head[TQ_FOLLOW_ID_MAX + 32], id[TQ_FOLLOW_ID_MAX];
	size_t tlen = 0, elen = 0;
	int ret;

	if (serve_capture_begin(&cap) < 0)
		return 1;
	if (rep->nrows)	/* those stored with this page's events, at or after its first */
		losses_from(st->lost, tq_follow_first_ts(rep));
	ret = printer_page(st->out, rep);
	serve_capture_end(&cap, &text, &tlen, &err, &elen);
	b = evbuffer_new();
	if (ret == 0 && b && text && tlen) {
		tq_follow_id(&st->f, id, sizeof(id));
		snprintf(head, sizeof(head), "id: %s\nevent: rows\n", id);
		sse_lines(b, head, text);
		stream_send(st, b);
	}
	if (b)
		evbuffer_free(b);
	free(text);
	free(err);
	return ret;
}

/* The follower's news on @rep, as status events. */
static void stream_news(struct live_stream *st, const struct qmsg_reply *rep)
{
	if (rep->reset)
		stream_printf(st, "event: status\ndata: {\"collector\":\"reset\"}\n\n");
	if (rep->missed && !st->f.from_start)
		stream_printf(st, "event: status\ndata: {\"collector\":\"behind\",\"missed\":%"
			      PRIu64 "}\n\n", rep->missed);
}

/*
 * One page of @st's follower. Return: 1 (the collector did not answer),
 * 2 (it has more now), 0 (nothing more now, or the stream ended).
 */
static int stream_step(struct live_stream *st)
{
	struct serve_capture cap;
	struct qmsg_reply rep;
	char *out = NULL, *err = NULL;
	size_t olen = 0, elen = 0;
	bool more, lost;
	int ret;

	if (stream_backlog(st) > SERVE_LIVE_BACKLOG)
		return 0;	/* the browser is slow: the cursor waits */
	if (serve_capture_begin(&cap) < 0)
		return 0;
	ret = tq_follow_page(st->l->c, &st->f, SERVE_LIVE_PAGE_ROWS, st->sent, &rep);
	serve_capture_end(&cap, &out, &olen, &err, &elen);
	if (ret == 3 && !st->said_waiting)
		stream_printf(st, "event: status\ndata: {\"collector\":\"waiting\"}\n\n");
	st->said_waiting |= ret == 3;
	lost = ret == 1 && client_lost(st->l->c);
	if ((ret == 1 && !lost) || ret == 2)
		stream_fail(st, err ? err : "", err ? elen : 0);	/* st is gone */
	free(out);
	free(err);
	if (ret)
		return lost ? 1 : 0;
	if (!st->following)
		stream_printf(st, "event: status\ndata: {\"collector\":\"following\"}\n\n");
	st->following = true;
	stream_news(st, &rep);
	more = rep.more && rep.nrows;
	if (stream_rows(st, &rep) == 0)
		st->sent += rep.nrows;
	qmsg_reply_free(&rep);
	return more ? 2 : 0;
}

/* ---- the timer ---- */

static void arm(struct serve_live *l, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	if (l->streams)
		evtimer_add(l->tick, &tv);
}

static void say_all(struct serve_live *l, const char *what)
{
	for (struct live_stream *st = l->streams; st; st = st->next)
		stream_printf(st, "event: status\ndata: {\"collector\":\"%s\"}\n\n", what);
}

/* The collector lost: tried again; said on every stream when it goes and comes back. */
static bool collector_back(struct serve_live *l)
{
	struct serve_capture cap;
	char *out = NULL, *err = NULL;
	size_t olen = 0, elen = 0;
	int ret;

	if (!l->lost)
		return true;
	if (serve_capture_begin(&cap) < 0)
		return false;
	ret = client_reconnect(l->c);
	serve_capture_end(&cap, &out, &olen, &err, &elen);
	free(out);
	free(err);
	return ret == 0;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct serve_live *l = arg;
	struct live_stream *st, *next;
	int64_t now = util_now_ms();
	bool more = false, was_lost = l->lost;

	(void)fd, (void)what;
	if (!collector_back(l)) {
		arm(l, SERVE_LIVE_RETRY_MS);
		return;
	}
	l->lost = false;
	for (st = l->streams; st && !l->lost; st = next) {
		int r;

		next = st->next;	/* stream_step() may end st */
		r = stream_step(st);
		l->lost = r == 1;
		more |= r == 2;
	}
	if (l->lost != was_lost)
		say_all(l, l->lost ? "lost" : "back");
	for (st = l->streams; st; st = st->next)
		if (now - st->last_write_ms >= SERVE_LIVE_KEEPALIVE_MS)
			stream_printf(st, ": keepalive\n\n");
	arm(l, l->lost ? SERVE_LIVE_RETRY_MS : more ? 0 : SERVE_LIVE_POLL_MS);
}

/* ---- opening ---- */

/*
 * Go on from where a reconnecting EventSource was (its Last-Event-ID, an
 * id we sent: tq_follow_id()); without one, or with one not ours, from now.
 */
static void resume(struct tq_follow *f, struct evhttp_request *req)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), "Last-Event-ID");

	if (v && strlen(v) < TQ_FOLLOW_ID_MAX)
		tq_follow_resume(f, v);
}

/* A stream for @args' query and selection; the error said on stderr. */
static struct live_stream *stream_new(struct serve_live *l, struct evhttp_request *req,
				      const struct evkeyvalq *args)
{
	struct live_stream *st = calloc(1, sizeof(*st));
	struct filter_error ferr = { 0 };
	bool bad = false;
	const char *q = serve_api_arg(args, "q", &bad);

	if (!st || bad)
		goto err;
	if (!q || !*q) {
		fprintf(stderr, "traceq: q: a QUERY is wanted (EVENT [where FILTER])\n");
		goto err;
	}
	st->l = l;
	st->req = req;
	st->conn = evhttp_request_get_connection(req);
	st->o = *l->o;
	memset(&st->o.q, 0, sizeof(st->o.q));
	st->o.format = OUT_JSON;
	st->o.limit = 0;
	st->query = strdup(q);
	st->o.query = st->query;
	if (!st->query || !st->conn || serve_api_select(args, &st->o.sel) < 0)
		goto err;
	if (query_parse(q, &st->o.q, &ferr) < 0) {	/* said here, with the caret, not after */
		client_caret(q, ferr.msg[0] ? ferr.msg : "the query is wrong", (int)ferr.pos,
			     (int)(ferr.len ? ferr.len : 1));
		goto err;
	}
	if (printer_new(l->c, &st->o, &st->out) < 0 || losses_open(l->c, &st->o.sel, &st->lost) < 0)
		goto err;
	printer_losses(st->out, st->lost, false);	/* bounded by losses_from() instead */
	tq_follow_init(&st->f, &st->o, 0);
	resume(&st->f, req);
	return st;
err:
	stream_free(st);
	return NULL;
}

int serve_live_open(struct serve_live *l, struct evhttp_request *req,
		    const struct evkeyvalq *args,
		    void (*sse_headers)(struct evhttp_request *, const char *type),
		    struct evbuffer *err)
{
	struct serve_capture cap;
	struct live_stream *st = NULL;
	char *out = NULL, *msg = NULL, *json = NULL;
	size_t olen = 0, mlen = 0, jlen = 0;
	FILE *f;

	if (l->n >= SERVE_LIVE_MAX) {
		evbuffer_add_printf(err, "{\"ok\":false,\"error\":\"traceq: --serve: %u live "
				    "streams are open already\"}\n", SERVE_LIVE_MAX);
		return 503;
	}
	if (serve_capture_begin(&cap) < 0)
		return 500;
	st = stream_new(l, req, args);
	serve_capture_end(&cap, &out, &olen, &msg, &mlen);
	free(out);
	if (!st) {
		f = open_memstream(&json, &jlen);
		if (f) {
			fputs("{\"ok\":false,\"error\":", f);
			out_json_str(f, msg ? msg : "", msg ? mlen : 0);
			fputs("}\n", f);
			if (fclose(f) == 0)
				evbuffer_add(err, json, jlen);
			free(json);
		}
		free(msg);
		return mlen ? 400 : 500;
	}
	free(msg);
	st->next = l->streams;
	l->streams = st;
	l->n++;
	sse_headers(req, "text/event-stream; charset=utf-8");
	evhttp_send_reply_start(req, 200, "OK");
	evhttp_connection_set_closecb(st->conn, on_close, st);
	stream_printf(st, "retry: 1000\n: traceq --follow\n\n");
	if (!evtimer_pending(l->tick, NULL))
		arm(l, 0);
	return 0;
}

/* ---- the streams ---- */

int serve_live_new(struct event_base *base, struct client *c, const struct traceq_opts *o,
		   struct serve_live **out)
{
	struct serve_live *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	*l = (struct serve_live){ .base = base, .c = c, .o = o };
	l->tick = evtimer_new(base, on_tick, l);
	if (!l->tick) {
		free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

unsigned serve_live_count(const struct serve_live *l)
{
	return l ? l->n : 0;
}

void serve_live_end(struct serve_live *l)
{
	while (l->streams)
		stream_end(l->streams);
}

void serve_live_free(struct serve_live *l)
{
	if (!l)
		return;
	serve_live_end(l);
	event_free(l->tick);
	free(l);
}
