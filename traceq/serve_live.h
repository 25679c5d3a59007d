/*
 * serve_live.h - traceq --serve's live streams: GET /api/live?q=QUERY
 * [host=GLOB] [cpu=LIST] answers with Server-Sent Events
 * (text/event-stream), the rows traceq --follow -f json QUERY prints,
 * pushed as the collector stores them. Underneath, each stream is a
 * follower (follow.h: QOP_TAIL from a cursor) that serve's loop asks a
 * page of on a timer; the page's EventSource reconnects by itself, and
 * the cursor is each message's id, so a reconnect (Last-Event-ID) goes
 * on where the stream stopped.
 *
 * The events of a stream:
 *   event: rows    id: CURSOR, one data line per row (JSON objects as
 *                  --follow -f json prints them, loss lines too)
 *   event: status  data: {"collector":"following"|"lost"|"back"|
 *                  "waiting"|"reset"|"behind", "missed":N}: the
 *                  follower's news (following: its first page came, so
 *                  what is stored from now on will come)
 *   event: fail    data: {"error":TEXT}: the query is wrong; the stream
 *                  ends (the page must not reconnect)
 * and a comment line every SERVE_LIVE_KEEPALIVE_MS.
 *
 * At most SERVE_LIVE_MAX streams at once; a stream's unsent output is
 * capped (SERVE_LIVE_BACKLOG): past it the stream's follower waits, and
 * the cursor keeps its place. Prefix serve_live_.
 */
#ifndef TRACEQ_SERVE_LIVE_H
#define TRACEQ_SERVE_LIVE_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

struct client;
struct traceq_opts;
struct serve_live;

#define SERVE_LIVE_MAX		16	/* streams at once */
#define SERVE_LIVE_POLL_MS	100	/* between pages when the last had no more */
#define SERVE_LIVE_RETRY_MS	500	/* between tries after no answer */
#define SERVE_LIVE_KEEPALIVE_MS	5000
#define SERVE_LIVE_PAGE_ROWS	2000	/* rows of one page of one stream */
#define SERVE_LIVE_BACKLOG	(8u << 20)	/* bytes not yet sent to one browser */

/*
 * serve_live_new - the streams of one server, on @base, asking over @c
 * with @o (all three the caller's, outliving the streams).
 * Return: 0 and *@out; -ENOMEM.
 */
int serve_live_new(struct event_base *base, struct client *c, const struct traceq_opts *o,
		   struct serve_live **out);

/*
 * serve_live_open - answer @req (GET /api/live, @args its arguments,
 * @sse_headers sets a reply's headers for a content type): the stream
 * starts and @req is the streams' until the browser goes (return 0), or
 * the HTTP status of an error (400, 503: too many streams; 500) with its
 * JSON in @err, @req still the caller's to answer.
 */
int serve_live_open(struct serve_live *l, struct evhttp_request *req,
		    const struct evkeyvalq *args,
		    void (*sse_headers)(struct evhttp_request *, const char *type),
		    struct evbuffer *err);

/* serve_live_count - the streams open now. */
unsigned serve_live_count(const struct serve_live *l);

/* serve_live_end - end every stream (their last chunk goes out as the loop runs). */
void serve_live_end(struct serve_live *l);

/* serve_live_free - end every stream and free @l; NULL is fine. */
void serve_live_free(struct serve_live *l);

#endif
