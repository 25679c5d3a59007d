/*
 * importer.c - trace.dat imports fed to the ingest (see importer.h).
 *
 * A caller's request becomes a struct imp_call, run on the loop through
 * server/loopcall.h, which is done when it has run, except an END, which
 * is done when the ingest's done or failed hook for its import arrives.
 * The calls live on their callers' stacks: every queued or waiting call is
 * completed before importer_stop() returns, and no caller gives up on one
 * before then.
 */
#include "config.h"

#define LOG_PREFIX "import"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"
#include "proto/msg.h"
#include "server/ingest/importer.h"
#include "server/ingest/ingest.h"
#include "server/loopcall.h"

#define IMPORTER_FULL_WAIT_US	20000	/* a page batch waits this long while ingest is full */

enum imp_op { IC_BEGIN, IC_MSG, IC_PAGES, IC_END };

struct imp_call {
	enum imp_op op;
	uint64_t id;
	const char *subject;
	struct proto_msg *msg;
	const void *raw;
	size_t rawlen;
	uint32_t cpu;
	uint64_t seq;
	const uint8_t *pages;
	size_t len;
	bool abort;
	/* results */
	char err[256];
	uint64_t out_pages, out_events;
	struct loopcall lc;		/* .arg: this call */
};

/* One import, on the loop. */
struct imp_sess {
	uint64_t id;
	struct sink *sink;
	uint32_t ncpus, page_size;
	char subject[128];		/* who began it: only they go on with it */
	bool failed;
	int fail_err;
	char fail_what[64];
	struct imp_call *end;		/* an END waiting for done/failed */
	int64_t last_ms;
	struct imp_sess *next;
};

struct importer {
	struct event_base *base;
	struct ingest *ing;
	struct ingest_hooks inner;	/* the connections' */
	struct loopcall_queue *calls;
	struct event *tick;
	/* the loop's */
	struct imp_sess *sessions;
	size_t nsessions;
	uint64_t next_id;
};

/* Mark @c done and wake its caller. */
static void call_done(struct importer *im, struct imp_call *c, int ret)
{
	loopcall_done(im->calls, &c->lc, ret);
}

static struct imp_sess *sess_find(struct importer *im, uint64_t id)
{
	struct imp_sess *s;

	for (s = im->sessions; s && s->id != id; s = s->next)
		;
	return s;
}

/* Close @s's sink and forget it (its END, if one waits, gets @ret). */
static void sess_close(struct importer *im, struct imp_sess *s, int ret)
{
	struct imp_sess **pp;

	for (pp = &im->sessions; *pp && *pp != s; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = s->next;
	im->nsessions--;
	if (s->sink)
		ingest_sink_close(im->ing, s->sink);
	if (s->end)
		call_done(im, s->end, ret);
	free(s);
}

/* @s failed: the call's error and reason. */
static int sess_failure(const struct imp_sess *s, struct imp_call *c)
{
	snprintf(c->err, sizeof(c->err), "the collector failed storing the import (%s): %s",
		 s->fail_what, tc_strerror(s->fail_err));
	return s->fail_err < 0 ? s->fail_err : TC_ERR_DB;
}

static int run_begin(struct importer *im, struct imp_call *c)
{
	struct imp_sess *s;
	int ret;

	if (im->nsessions >= IMPORTER_MAX) {
		snprintf(c->err, sizeof(c->err), "%d imports run already; try again later",
			 IMPORTER_MAX);
		return -EBUSY;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->id = IMPORTER_ID_BIT | ++im->next_id;
	s->ncpus = c->msg->hello.ncpus;
	s->page_size = c->msg->hello.page_size;
	s->last_ms = util_now_ms();
	snprintf(s->subject, sizeof(s->subject), "%s", c->subject);
	ret = ingest_sink_new(im->ing, s->id, c->subject, &s->sink);
	if (ret < 0) {
		free(s);
		return ret;
	}
	s->next = im->sessions;
	im->sessions = s;
	im->nsessions++;
	ret = ingest_push_msg(im->ing, s->sink, c->msg, c->raw, c->rawlen);
	if (ret < 0) {
		sess_close(im, s, ret);
		return ret;
	}
	c->id = s->id;
	return 0;
}

static int run_msg(struct importer *im, struct imp_sess *s, struct imp_call *c)
{
	switch (c->msg->type) {
	case MSG_HEADER_PAGE:
	case MSG_FORMAT:
	case MSG_CMDLINES:
	case MSG_SYMBOLS:
	case MSG_CLOCK:
	case MSG_PRINTK:
		return ingest_push_msg(im->ing, s->sink, c->msg, c->raw, c->rawlen);
	default:
		snprintf(c->err, sizeof(c->err), "a %s message has no place in an import",
			 proto_msg_name(c->msg->type));
		return TC_ERR_PROTO_STATE;
	}
}

static int run_pages(struct importer *im, struct imp_sess *s, struct imp_call *c)
{
	size_t n = c->len / s->page_size;
	int ret = 0;

	if (c->cpu >= s->ncpus || c->len % s->page_size) {
		snprintf(c->err, sizeof(c->err), "pages of CPU %u (%zu bytes) for %u CPUs of "
			 "%u-byte pages", c->cpu, c->len, s->ncpus, s->page_size);
		return TC_ERR_MSG_MALFORMED;
	}
	if (ingest_full(im->ing))
		return -EAGAIN;
	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = ingest_push_page(im->ing, s->sink, c->cpu, c->seq + i,
				       c->pages + i * s->page_size, s->page_size);
	return ret ? ret : ingest_flush(im->ing, s->sink);
}

/* Run a queued call on the loop (loopcall_fn); an END may complete later. */
static void run_call(void *arg, struct loopcall *lc)
{
	struct importer *im = arg;
	struct imp_call *c = lc->arg;
	struct imp_sess *s = NULL;
	int ret;

	if (c->op == IC_BEGIN) {
		call_done(im, c, run_begin(im, c));
		return;
	}
	if (!(s = sess_find(im, c->id)) || strcmp(s->subject, c->subject) != 0) {
		snprintf(c->err, sizeof(c->err), "no import %llu here (ended, or idle for over "
			 "%d s)", (unsigned long long)(c->id & ~IMPORTER_ID_BIT),
			 IMPORTER_IDLE_MS / 1000);
		call_done(im, c, -ENOENT);
		return;
	}
	s->last_ms = util_now_ms();
	if (s->failed && !c->abort) {
		ret = sess_failure(s, c);
		sess_close(im, s, 0);
		call_done(im, c, ret);
		return;
	}
	switch (c->op) {
	case IC_MSG: ret = run_msg(im, s, c); break;
	case IC_PAGES: ret = run_pages(im, s, c); break;
	default:
		if (c->abort) {
			sess_close(im, s, 0);
			call_done(im, c, 0);
			return;
		}
		ret = ingest_push_msg(im->ing, s->sink, c->msg, c->raw, c->rawlen);
		if (ret == 0)
			ret = ingest_flush(im->ing, s->sink);
		if (ret == 0) {
			s->end = c;	/* done or failed completes it */
			return;
		}
		break;
	}
	call_done(im, c, ret);
	return;
}

/* Every few seconds: end imports whose traceq went away. */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct importer *im = arg;
	int64_t now = util_now_ms();
	struct imp_sess *s, *next;

	(void)fd;
	(void)what;
	for (s = im->sessions; s; s = next) {
		next = s->next;
		if (!s->end && now - s->last_ms > IMPORTER_IDLE_MS) {
			log_warn("import %llu: no request for %d s: ended with what it stored",
				 (unsigned long long)(s->id & ~IMPORTER_ID_BIT),
				 IMPORTER_IDLE_MS / 1000);
			sess_close(im, s, 0);
		}
	}
}

/* Queue @c for the loop and wait until it is done. */
static int call(struct importer *im, struct imp_call *c, char *err, size_t errlen)
{
	int ret;

	c->err[0] = 0;
	c->lc.arg = c;
	ret = loopcall_call(im->calls, &c->lc);
	if (c->lc.stopped)
		tc_seterr(err, errlen, "the collector is stopping");
	else if (ret < 0)
		tc_seterr(err, errlen, "%s", c->err[0] ? c->err : tc_strerror(ret));
	return ret;
}

int importer_begin(struct importer *im, const char *subject, struct proto_msg *hello,
		   const void *raw, size_t rawlen, uint64_t *id, char *err, size_t errlen)
{
	struct imp_call c = { .op = IC_BEGIN, .subject = subject, .msg = hello, .raw = raw,
			      .rawlen = rawlen };
	int ret = call(im, &c, err, errlen);

	if (ret == 0)
		*id = c.id;
	return ret;
}

int importer_msg(struct importer *im, const char *subject, uint64_t id, struct proto_msg *m,
		 const void *raw, size_t rawlen, char *err, size_t errlen)
{
	struct imp_call c = { .op = IC_MSG, .subject = subject, .id = id, .msg = m, .raw = raw,
			      .rawlen = rawlen };

	return call(im, &c, err, errlen);
}

int importer_pages(struct importer *im, const char *subject, uint64_t id, uint32_t cpu,
		   uint64_t seq, const uint8_t *pages, size_t len, char *err, size_t errlen)
{
	struct imp_call c;
	int ret;

	do {	/* the ingest is full: wait for it, as an agent's connection would */
		c = (struct imp_call){ .op = IC_PAGES, .subject = subject, .id = id, .cpu = cpu, .seq = seq,
				       .pages = pages, .len = len };
		ret = call(im, &c, err, errlen);
		if (ret == -EAGAIN)
			usleep(IMPORTER_FULL_WAIT_US);
	} while (ret == -EAGAIN);
	return ret;
}

int importer_end(struct importer *im, const char *subject, uint64_t id, bool abort,
		 uint64_t *pages, uint64_t *events, char *err, size_t errlen)
{
	struct proto_msg bye = { .type = MSG_BYE };
	struct proto_buf raw;
	struct imp_call c = { .op = IC_END, .subject = subject, .id = id, .abort = abort, .msg = &bye };
	int ret;

	proto_buf_init(&raw);
	if ((ret = proto_msg_encode(&bye, &raw)) < 0)
		goto out;
	c.raw = raw.data + FRAME_HDR_SIZE;	/* the payload, as a frame carries it */
	c.rawlen = raw.len - FRAME_HDR_SIZE;
	ret = call(im, &c, err, errlen);
	if (ret == 0) {
		*pages = c.out_pages;
		*events = c.out_events;
	}
out:
	proto_buf_free(&raw);
	return ret;
}

/* ---- the ingest's hooks ---- */

/*
 * FORWARD - a hook's call about a connection's sink (@id without
 * IMPORTER_ID_BIT) goes on to the connections' @hook, if they have one.
 * True when it was a connection's: the importer has nothing to do.
 */
#define FORWARD(im, hook, id, ...)						\
	(!((id) & IMPORTER_ID_BIT) &&						\
	 ((im)->inner.hook ? (im)->inner.hook((im)->inner.arg, (id), __VA_ARGS__) : (void)0, true))

static void hook_welcome(void *arg, uint64_t id, uint64_t host_id, bool kallsyms, bool printk)
{
	struct importer *im = arg;

	if (FORWARD(im, welcome, id, host_id, kallsyms, printk))
		return;
	log_debug("import %llu: host %llu stored", (unsigned long long)(id & ~IMPORTER_ID_BIT),
		  (unsigned long long)host_id);
}

static void hook_done(void *arg, uint64_t id, uint64_t pages, uint64_t events)
{
	struct importer *im = arg;
	struct imp_sess *s;

	if (FORWARD(im, done, id, pages, events) || !(s = sess_find(im, id)))
		return;
	if (s->end) {
		s->end->out_pages = pages;
		s->end->out_events = events;
	}
	sess_close(im, s, 0);
}

static void hook_failed(void *arg, uint64_t id, int err, const char *what)
{
	struct importer *im = arg;
	struct imp_sess *s;

	if (FORWARD(im, failed, id, err, what) || !(s = sess_find(im, id)) || s->failed)
		return;
	s->failed = true;
	s->fail_err = err;
	snprintf(s->fail_what, sizeof(s->fail_what), "%s", what);
	log_warn("import %llu failed: %s: %s", (unsigned long long)(id & ~IMPORTER_ID_BIT),
		 what, tc_strerror(err));
	if (s->end) {
		struct imp_call *c = s->end;

		s->end = NULL;
		int ret = sess_failure(s, c);

		sess_close(im, s, 0);
		call_done(im, c, ret);
	}
}

/* The others go to the connections' hooks (an import's id is unknown there). */
static void hook_send(void *arg, uint64_t id, const struct proto_msg *m)
{
	struct importer *im = arg;

	if (!(id & IMPORTER_ID_BIT) && im->inner.send)
		im->inner.send(im->inner.arg, id, m);
}

static void hook_committed(void *arg)
{
	struct importer *im = arg;

	if (im->inner.committed)
		im->inner.committed(im->inner.arg);
}

static void hook_resume(void *arg)
{
	struct importer *im = arg;

	if (im->inner.resume)
		im->inner.resume(im->inner.arg);
}

static void hook_usage(void *arg, const char *host, uint64_t bytes)
{
	struct importer *im = arg;

	if (im->inner.usage)
		im->inner.usage(im->inner.arg, host, bytes);
}

static void hook_page_bytes(void *arg, uint64_t id, uint64_t bytes)
{
	struct importer *im = arg;

	if (!(id & IMPORTER_ID_BIT) && im->inner.page_bytes)
		im->inner.page_bytes(im->inner.arg, id, bytes);
}

void importer_wrap_hooks(struct importer *im, struct ingest_hooks *h)
{
	im->inner = *h;
	*h = (struct ingest_hooks){
		.welcome = hook_welcome, .done = hook_done, .failed = hook_failed,
		.send = hook_send, .committed = hook_committed, .resume = hook_resume,
		.usage = im->inner.usage ? hook_usage : NULL,
		.page_bytes = im->inner.page_bytes ? hook_page_bytes : NULL,
		.arg = im,
	};
}

int importer_new(struct event_base *base, struct importer **out)
{
	struct importer *im = calloc(1, sizeof(*im));
	int ret;

	if (!im)
		return -ENOMEM;
	im->base = base;
	if ((ret = loopcall_new(base, LOG_PREFIX, run_call, im, &im->calls)) < 0)
		goto fail;
	ret = -ENOMEM;
	im->tick = event_new(base, -1, EV_PERSIST, tick_cb, im);
	if (!im->tick || event_add(im->tick, &(struct timeval){ .tv_sec = 5 }) < 0)
		goto fail;
	*out = im;
	return 0;
fail:
	importer_free(im);
	return ret;
}

void importer_set_ingest(struct importer *im, struct ingest *g)
{
	im->ing = g;
}

void importer_stop(struct importer *im)
{
	if (!im)
		return;
	loopcall_stop(im->calls);
	while (im->sessions)
		sess_close(im, im->sessions, -ESHUTDOWN);
}

void importer_free(struct importer *im)
{
	if (!im)
		return;
	loopcall_free(im->calls);
	if (im->tick)
		event_free(im->tick);
	free(im);
}
