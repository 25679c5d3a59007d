/*
 * conn.c - one agent connection: TLS, framing, and a state machine.
 *
 *   HANDSHAKE --TLS ok--> HELLO --hello/welcome--> STREAM --bye/done--> CLOSING
 *
 * Reading is "header, then payload": a frame is handled only once all of it
 * is buffered, by one handler per message type. The event loop never
 * touches the store: messages and pages are handed to the ingest worker
 * (ingest.h), which decodes, filters and stores them and answers through
 * the hooks at the end of this file, on the event loop (WELCOME after
 * HELLO, DONE after BYE once committed, a failure, a filter to push down,
 * "committed": ACK). While the worker's queue is full a connection stops
 * reading (TCP flow control pushes back on its agent) until the worker
 * says "resume".
 * Any protocol violation answers ERROR and closes. A refused handshake is
 * logged with OpenSSL's reason, and its socket lingers (conn_linger()):
 * closing it at once, with the agent's Finished unread, would reset the
 * connection and could take the TLS alert with it, so the agent could not
 * say why it was refused.
 *
 * Limits (struct collector_limits): handshakes (TLS, not yet authenticated)
 * are a pool of their own, max_handshakes in all and max_handshakes_source
 * per source address; a new connection from an address at its per-source
 * cap is closed at once (agents retry), and when the pool is full the one
 * given up for a new one is the oldest handshake of the source holding the
 * most (fair eviction, conn_victim()): a stranger holding handshakes open
 * from many addresses cannot keep a real agent's out. One timer per
 * connection closes it when the handshake
 * and HELLO take longer than handshake_ms, when streaming sends no complete
 * frame for idle_ms (unless it is not read: paused), and when closing
 * cannot hand its last bytes over. Input is bounded: a connection buffers
 * CONN_INPUT_BASE (its bufferevent's read watermark); a frame bigger than
 * that needs a grant from the collector's input_bytes, and while none is
 * to be had the connection is not read. Grants go back after the frame,
 * or with the connection, and wake the waiting connections in list order.
 *
 * Host limits (hostlimit.h): before a page frame is read, and before a
 * metadata message (CMDLINES, SYMBOLS, PRINTK) is taken, its host's
 * limits are asked; over its events/s or its quota, the connection is
 * "held": not read (TCP pushes back on the agent, which keeps the pages),
 * until a timer of its own says the bucket has a token again (or, for the
 * quota, that it is time to look again). Each page that waited and the
 * time it waited are counted per CPU (a metadata message as a page of CPU
 * 0, as programs' rings are) and handed to the worker
 * (ingest_count_held()) at most once a second, at BYE and at the end:
 * traceq --stats rate_held_* and quota_held_*.
 */
#include "config.h"

#define LOG_PREFIX "conn"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "common/cpuslots.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"
#include "proto/msg.h"
#include "proto/tls.h"
#include "server/conn/clockprobe.h"
#include "server/conn/conn.h"
#include "server/conn/freeze.h"
#include "server/ingest/ingest.h"

/*
 * Input a connection buffers without a grant (its read watermark): frames
 * up to this size (an agent's default 64 KiB pages) are read at once.
 */
#define CONN_INPUT_BASE	(128u << 10)
/*
 * Journaled pages are ACKed once CONN_ACK_PAGES of them wait, or
 * CONN_ACK_DELAY_MS after the first of them: not one ACK per read
 * callback. libevent's TLS reads call back after at most two records, so
 * 4 KiB pages drew about one ACK each, and the agent spent two read(2)s,
 * a poll and a decryption on every one. An agent keeps unacknowledged
 * pages in its spool (no send window waits on them), so a few ms more
 * cost it only spool memory. BYE flushes at once.
 */
#define CONN_ACK_PAGES		64
#define CONN_ACK_DELAY_MS	2

/* Freed memory goes back to the system this long after connections close. */
#define CONN_TRIM_MS	1000

/* Counts of pages held back by host limits go to the worker this often. */
#define CONN_HELD_REPORT_MS	1000

/*
 * The collector's lists of connections and of lingering sockets are
 * doubly linked through next and pprev (the pointer that points at the
 * node), so that a node unlinks itself: DLIST_PUSH puts @n first on the
 * list at *@head, DLIST_UNLINK takes @n off its list.
 */
#define DLIST_PUSH(head, n)						\
	do {								\
		(n)->next = *(head);					\
		if ((n)->next)						\
			(n)->next->pprev = &(n)->next;			\
		(n)->pprev = (head);					\
		*(head) = (n);						\
	} while (0)
#define DLIST_UNLINK(n)							\
	do {								\
		*(n)->pprev = (n)->next;				\
		if ((n)->next)						\
			(n)->next->pprev = (n)->pprev;			\
	} while (0)

enum conn_state {
	CONN_HANDSHAKE,
	CONN_HELLO,
	CONN_STREAM,
	CONN_BYE,		/* BYE handed over: waiting for the commit */
	CONN_CLOSING,
};

struct conn_cpu {
	uint64_t next_seq;	/* expected page sequence number */
	uint64_t gaps;		/* pages missing in the sequence */
	uint64_t committed_seq;	/* highest page known to be on disk */
	uint64_t acked_seq;	/* highest page acknowledged to the agent */
	/* held back by its host's limits, by why (hostlimit_hold - 1), not yet
	 * handed to the worker: pages and ns */
	uint64_t held_pages[2], held_ns[2];
};

struct conn {
	struct collector *col;
	struct conn *next, **pprev;
	struct bufferevent *bev;
	enum conn_state state;
	char peer[64];		/* address:port */
	char addr[48];		/* source address, for the per-source cap */
	bool unauth;		/* counted in col->nhandshakes */
	struct event *timer;	/* handshake deadline, idle check, closing deadline */
	struct event *ack_timer;	/* a delayed ACK (CONN_ACK_DELAY_MS) */
	int64_t last_frame;	/* util_now_ms() of the last complete frame */
	uint32_t grant;		/* input memory granted for the frame being received */
	bool waiting;		/* for a grant: reading stopped */
	char subject[128];	/* certificate CN */
	char *host;		/* name from hello */
	struct frame_hdr hdr;
	bool have_hdr;
	uint64_t id;		/* names this connection in ingest results */
	struct sink *sink;	/* the ingest worker's side */
	bool paused;		/* reading stopped: the ingest queue is full */
	bool session;		/* the agent announced a session: ACK its pages */
	bool pushdown;		/* the agent takes MSG_FILTER (push-down) */
	uint32_t ncpus;		/* declared in HELLO */
	struct cpuslots cpus;	/* struct conn_cpu of the CPUs that sent */
	uint64_t pages;		/* handed to ingest */
	int err;		/* the error that ends the session, if any */
	struct hostlimit_host *lim;	/* its host's limits (col->hl); NULL: none */
	struct page_layout layout;	/* of its pages, to count their events */
	struct event *hold;	/* the end of a hold */
	enum hostlimit_hold held;	/* reading stopped by a host limit: why */
	bool hdr_held;		/* the frame whose header is read was counted held */
	uint32_t held_cpu;	/* the CPU the held page is counted on */
	int64_t held_since;	/* conn_now_ns() the hold began */
	int64_t held_reported;	/* util_now_ms() of the last count handed over */
	uint64_t page_bytes;	/* of the pages handed to ingest, for the quota */
	uint64_t page_bytes_committed;	/* ... of which committed (ingest says) */
	uint64_t live_id;	/* welcomed: its host id in col->live; 0: not */
	bool clock_probe;	/* the agent answers MSG_CLOCK_PROBE */
	struct clockprobe probe;	/* its clock measured (clockprobe.h) */
	struct event *probe_timer;	/* the next burst */
	bool recorder;		/* a flight recorder: takes MSG_FREEZE */
	char *group;		/* its freeze group; NULL: none */
};

static void conn_input_release(struct conn *c);
static void conn_hold_end(struct conn *c);
static void conn_held_report(struct conn *c);
static void conn_hold_cb(evutil_socket_t fd, short what, void *arg);
static void conn_read_again(struct conn *c);

/* CLOCK_MONOTONIC in ns, the host limits' clock. */
static int64_t conn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The handshake is done (or, with --insecure-plain, the HELLO taken). */
static void conn_authenticated(struct conn *c)
{
	if (c->unauth)
		c->col->nhandshakes--;
	c->unauth = false;
}

static void conn_arm(struct conn *c, int64_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	evtimer_add(c->timer, &tv);
}

/* The trim timer: give the heap's free memory back to the system. */
static void conn_trim_cb(evutil_socket_t fd, short what, void *arg)
{
	malloc_trim(0);
}

/*
 * A connection went: its buffers, its TLS state and (on the worker) its
 * sink were freed, but glibc keeps freed heap memory for reuse, so after
 * many connections close the collector would stay at its peak. Trim once,
 * CONN_TRIM_MS after the first close of a series (malloc_trim() walks the
 * heap: not once per connection).
 */
static void conn_trim_later(struct collector *col)
{
	struct timeval tv = { CONN_TRIM_MS / 1000, (CONN_TRIM_MS % 1000) * 1000 };

	if (!col->trim)
		col->trim = evtimer_new(col->base, conn_trim_cb, col);
	if (col->trim && !evtimer_pending(col->trim, NULL))
		evtimer_add(col->trim, &tv);
}

static void conn_free(struct conn *c)
{
	struct collector *col = c->col;

	DLIST_UNLINK(c);
	col->nconns--;
	conn_authenticated(c);
	if (c->waiting)
		col->input_waiting--;
	c->waiting = false;
	conn_input_release(c);	/* may wake others: c is off the list */
	conn_hold_end(c);
	conn_held_report(c);
	if (c->hold)
		event_free(c->hold);
	if (c->probe_timer)
		event_free(c->probe_timer);
	if (c->lim)	/* what is on its way is no longer this connection's to count */
		hostlimit_committed(c->lim, c->page_bytes - c->page_bytes_committed);
	if (col->hl)
		hostlimit_detach(col->hl, c->lim);
	if (c->timer)
		event_free(c->timer);
	if (c->ack_timer)
		event_free(c->ack_timer);
	if (c->bev)
		bufferevent_free(c->bev);
	ingest_sink_close(col->ing, c->sink);
	livehosts_del(col->live, c->live_id);
	cpuslots_free(&c->cpus);
	free(c->host);
	free(c->group);
	free(c);
	conn_trim_later(col);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->state == CONN_CLOSING &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_free(c);
}

/* Queue @m; Return: 0 or an encoding error. */
static int conn_send(struct conn *c, const struct proto_msg *m)
{
	struct proto_buf b;
	int ret;

	proto_buf_init(&b);
	ret = proto_msg_encode(m, &b);
	if (ret == 0 && bufferevent_write(c->bev, b.data, b.len) < 0)
		ret = -ENOMEM;
	proto_buf_free(&b);
	return ret;
}

/*
 * Close after what is queued has been sent; reading stops now. The
 * connection is freed later, from the write callback (deferred even when
 * nothing is queued), never under the caller's feet.
 */
static void conn_finish(struct conn *c)
{
	c->state = CONN_CLOSING;
	conn_arm(c, c->col->lim.handshake_ms);	/* a peer that does not read */
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_trigger(c->bev, EV_WRITE,
			    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/* The agent's name for log lines, escaped (log_escape): its HELLO's, or its certificate's. */
static const char *conn_name(const struct conn *c, char *buf, size_t len)
{
	return log_escape(c->host ? c->host : c->subject, buf, len);
}

/*
 * Tell the agent why, log it, close. @what holds no peer bytes unescaped
 * (it goes to the log as it is).
 */
static void conn_fail(struct conn *c, int err, const char *what)
{
	struct proto_msg m = { .type = MSG_ERROR };
	char text[512], name[LOG_ESC_LEN];

	snprintf(text, sizeof(text), "%s: %s", what, tc_strerror(err));
	log_warn("%s (%s): closing: %s", c->peer, conn_name(c, name, sizeof(name)), text);
	m.error.code = err;
	m.error.text = text;
	conn_send(c, &m);
	conn_finish(c);
}

/*
 * The host's limits (shared by all its connections), the layout of its
 * pages, and the timer that ends a hold.
 */
static int conn_limits(struct conn *c, const struct proto_hello *h)
{
	if (!c->col->hl)
		return 0;
	c->layout = (struct page_layout){ .page_size = h->page_size,
					  .long_size = h->long_size,
					  .big_endian = h->big_endian };
	c->hold = evtimer_new(c->col->base, conn_hold_cb, c);
	if (!c->hold)
		return -ENOMEM;
	return hostlimit_attach(c->col->hl, h->host, &c->lim);
}

/*
 * Whether the agent may store as @host: its certificate's own name (CN or
 * a DNS name), or a name the collector's host-map gives its CN. With
 * --insecure-plain there is no certificate: any name (tests only).
 */
static bool conn_may_claim(struct conn *c, const char *host)
{
	if (!c->col->tls)
		return true;
	return tls_peer_has_name(bufferevent_openssl_get_ssl(c->bev), host) ||
	       hostmap_allows(c->col->hostmap, c->subject, host);
}

/* Refuse a HELLO for who the certificate is (@text, escaped): both sides say why. */
static void conn_refuse_identity(struct conn *c, const char *text)
{
	struct proto_msg m = { .type = MSG_ERROR };

	c->col->refused++;
	log_warn("%s: refused agent: %s", c->peer, text);
	m.error.code = TC_ERR_IDENTITY;
	m.error.text = (char *)text;
	conn_send(c, &m);
	conn_finish(c);
}

/* A HELLO naming a host the certificate may not. */
static void conn_refuse_host(struct conn *c, const char *host)
{
	char text[1536], h[LOG_ESC_LEN], cn[LOG_ESC_LEN];

	log_escape(host, h, sizeof(h));
	log_escape(c->subject, cn, sizeof(cn));
	snprintf(text, sizeof(text), "host name '%s' is not one of certificate %s's names "
		 "(its CN and DNS names) and no host-map entry of the collector allows it "
		 "for %s", h, cn, cn);
	conn_refuse_identity(c, text);
}

/*
 * A recorder's --group claim, as the collector takes it: only where its
 * freeze-group lines put the host in that group (freeze.h). Logged once a
 * connection; a trigger re-checks it against the lines then in force.
 */
static void conn_group_said(struct conn *c)
{
	char h[LOG_ESC_LEN], g[LOG_ESC_LEN];

	if (!c->recorder || !c->group)
		return;
	log_escape(c->host, h, sizeof(h));
	log_escape(c->group, g, sizeof(g));
	if (hostmap_allows(c->col->freeze_groups, c->group, c->host))
		log_info("host %s: freeze group %s, as a freeze-group line puts it", h, g);
	else
		log_warn("host %s: its claim of freeze group %s ignored: no freeze-group line of "
			 "the collector puts it there", h, g);
}

/* A query client's certificate (OU=query) on the agent port. */
static void conn_refuse_role(struct conn *c)
{
	char text[1024], cn[LOG_ESC_LEN];

	snprintf(text, sizeof(text), "certificate %s was made for a query client (OU=query): "
		 "it may read, not send data", log_escape(c->subject, cn, sizeof(cn)));
	conn_refuse_identity(c, text);
}

/*
 * Whether a HELLO would take @c past the caps on established connections
 * (--max-agent-conns in all, --max-agent-conns-per-cert for one
 * certificate: an agent holds one per CPU and one for control); then it
 * is refused with the cap in the ERROR and the log, and counted. Scans the
 * connections, as conn_over_cap() does at accept.
 */
static bool conn_over_identity_cap(struct conn *c)
{
	const struct collector_limits *lim = &c->col->lim;
	unsigned all = 0, mine = 0;
	char why[320], cn[LOG_ESC_LEN];
	const struct conn *o;

	for (o = c->col->conns; o; o = o->next) {
		if (o == c || !o->host)		/* not past HELLO */
			continue;
		all++;
		mine += !strcmp(o->subject, c->subject);
	}
	if (lim->max_conns && all >= lim->max_conns)
		snprintf(why, sizeof(why), "hello: %u agent connections established already, "
			 "the most the collector takes (--max-agent-conns)", all);
	else if (lim->max_conns_cert && mine >= lim->max_conns_cert)
		snprintf(why, sizeof(why), "hello: certificate %s has %u connections "
			 "established already, the most one certificate may hold "
			 "(--max-agent-conns-per-cert)",
			 log_escape(c->subject, cn, sizeof(cn)), mine);
	else
		return false;
	c->col->refused_limit++;
	conn_fail(c, -EUSERS, why);
	return true;
}

/* Check the HELLO here, let the worker store the host; WELCOME follows. */
static int on_hello(struct conn *c, struct proto_msg *m, const uint8_t *raw, size_t len)
{
	const struct proto_hello *h = &m->hello;
	char esc[4][LOG_ESC_LEN];
	int ret;

	if (h->version != PROTO_VERSION)
		return TC_ERR_PROTO_VERSION;
	if (h->ncpus == 0 || h->ncpus > c->col->lim.max_cpus) {
		char why[160];

		snprintf(why, sizeof(why), "hello: ncpus %u is %s (a kernel has at most "
			 "%u CPUs: --max-agent-cpus)", h->ncpus, h->ncpus ? "over the most a "
			 "host may declare" : "not a number of CPUs", c->col->lim.max_cpus);
		conn_fail(c, TC_ERR_MSG_MALFORMED, why);
		return 0;
	}
	if (!strncmp(h->machine_id, "import:", 7)) {
		conn_fail(c, TC_ERR_MSG_MALFORMED,
			  "hello: a machine_id of \"import:...\" names an imported recording");
		return 0;
	}
	if (h->page_size > FRAME_MAX_PAYLOAD) {	/* such a page could never arrive */
		char why[128];

		snprintf(why, sizeof(why), "hello: page_size %u is over the largest "
			 "frame (%u bytes)", h->page_size, FRAME_MAX_PAYLOAD);
		conn_fail(c, TC_ERR_FRAME_TOO_LARGE, why);
		return 0;
	}
	if (c->col->tls && (tls_peer_role(bufferevent_openssl_get_ssl(c->bev)) & TLS_CERT_QUERY)) {
		conn_refuse_role(c);
		return 0;
	}
	if (!conn_may_claim(c, h->host)) {
		conn_refuse_host(c, h->host);
		return 0;
	}
	if (conn_over_identity_cap(c))
		return 0;
	c->host = strdup(h->host);
	if (!c->host)
		return -ENOMEM;
	c->ncpus = h->ncpus;
	ret = conn_limits(c, h);
	if (ret < 0)
		return ret;
	c->session = h->session != 0;	/* agents that announce one want ACKs */
	c->pushdown = h->pushdown;
	c->clock_probe = h->clock_probe;
	c->recorder = h->recorder;
	if (h->group && h->group[0] && !(c->group = strdup(h->group)))
		return -ENOMEM;
	ret = ingest_sink_new(c->col->ing, c->id, c->subject, &c->sink);
	if (ret < 0)
		return ret;
	log_info("%s: agent %s (%s, kernel %s, %u CPUs, clock %s) connected", c->peer,
		 log_escape(h->host, esc[0], sizeof(esc[0])),
		 log_escape(c->subject, esc[3], sizeof(esc[3])),
		 log_escape(h->kernel, esc[1], sizeof(esc[1])), h->ncpus,
		 log_escape(h->trace_clock, esc[2], sizeof(esc[2])));
	conn_group_said(c);
	c->state = CONN_STREAM;
	conn_authenticated(c);
	c->last_frame = util_now_ms();
	if (c->col->lim.idle_ms)
		conn_arm(c, c->col->lim.idle_ms);
	else
		evtimer_del(c->timer);
	return ingest_push_msg(c->col->ing, c->sink, m, raw, len);
}

static void conn_ack(struct conn *c);

static void conn_ack_cb(evutil_socket_t fd, short what, void *arg)
{
	conn_ack(arg);
}

/*
 * Everything received is in the receive journal: ACK all of it, at once
 * with @now, else as CONN_ACK_PAGES and CONN_ACK_DELAY_MS say.
 */
static void conn_journaled(struct conn *c, bool now)
{
	static const struct timeval delay = { 0, CONN_ACK_DELAY_MS * 1000 };
	uint64_t waiting = 0;

	for (uint32_t i = 0; i < c->cpus.n; i++) {
		struct conn_cpu *cpu = cpuslots_at(&c->cpus, i);

		if (cpu->next_seq && cpu->next_seq - 1 > cpu->committed_seq)
			cpu->committed_seq = cpu->next_seq - 1;
		waiting += cpu->committed_seq - cpu->acked_seq;
	}
	if (!c->session || !waiting)
		return;
	if (now || waiting >= CONN_ACK_PAGES || !c->ack_timer)
		conn_ack(c);
	else if (!evtimer_pending(c->ack_timer, NULL))
		evtimer_add(c->ack_timer, &delay);
}

/*
 * BYE: no more input. DONE goes out once the worker has committed, or, with
 * a receive journal, at once: everything is in it (and is stored behind).
 */
static int on_bye(struct conn *c, struct proto_msg *m, const uint8_t *raw, size_t len)
{
	struct proto_msg done = { .type = MSG_DONE };
	int ret;

	c->state = CONN_BYE;
	bufferevent_disable(c->bev, EV_READ);
	conn_held_report(c);
	ret = ingest_push_msg(c->col->ing, c->sink, m, raw, len);
	if (ret < 0 || !ingest_journaled(c->col->ing))
		return ret;
	conn_journaled(c, true);
	done.done.pages = c->pages;
	done.done.journaled = true;
	ret = conn_send(c, &done);
	if (ret == 0)
		conn_finish(c);
	return ret;
}

static bool conn_held(struct conn *c);

/* conn_on_msg(): the message waits for its host's limits (not consumed). */
#define CONN_MSG_HELD	1

/*
 * An agent's MSG_FILTER_STATUS for host @host: info when the kernel took
 * the filter, a warning with the kernel's message when it refused it (the
 * collector still enforces it).
 */
static void filter_status_log(const char *host, const struct proto_filter_status *st)
{
	char h[LOG_ESC_LEN], sys[LOG_ESC_LEN], ev[LOG_ESC_LEN], text[LOG_ESC_LEN];
	char err[LOG_ESC_LEN];

	/* the agent's words: its system, name and text match ours, its error is its own */
	log_escape(host, h, sizeof(h));
	log_escape(st->system, sys, sizeof(sys));
	log_escape(st->name, ev, sizeof(ev));
	log_escape(st->text, text, sizeof(text));
	log_escape(st->error[0] ? st->error : "(no reason given)", err, sizeof(err));
	if (!st->text[0] && st->ok)
		log_info("host %s: %s:%s: filter cleared in the agent's instance", h, sys, ev);
	else if (st->ok)
		log_info("host %s: %s:%s: the kernel took filter '%s' (pushed down)", h, sys,
			 ev, text);
	else
		log_warn("host %s: %s:%s: the kernel refused filter '%s': %s; the collector "
			 "still enforces it", h, sys, ev, text, err);
}

/* ---- the clock exchange (clockprobe.h) ---- */

static int64_t conn_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * A burst's result into the receive journal and the decoder, as
 * MSG_CLOCK_MEASURE: it places the events that follow on this connection
 * (replay places them the same way).
 */
static int probe_measured(struct conn *c, const struct proto_clock_measure *cm)
{
	struct proto_msg m = { .type = MSG_CLOCK_MEASURE, .clock_measure = *cm };
	struct proto_buf b;
	int ret;

	proto_buf_init(&b);
	ret = proto_msg_encode(&m, &b);
	if (ret == 0)
		ret = ingest_push_msg(c->col->ing, c->sink, &m, b.data + FRAME_HDR_SIZE,
				      b.len - FRAME_HDR_SIZE);
	proto_buf_free(&b);
	return ret;
}

static void probe_arm(struct conn *c)
{
	struct timeval tv = { CLOCKPROBE_INTERVAL_MS / 1000,
			      (CLOCKPROBE_INTERVAL_MS % 1000) * 1000 };

	evtimer_add(c->probe_timer, &tv);
}

/* The burst's next probe, or its end: the measurement and the next burst's timer. */
static int probe_go(struct conn *c)
{
	struct proto_msg m = { .type = MSG_CLOCK_PROBE };
	struct proto_clock_measure cm;
	int ret = 0;

	if (clockprobe_next(&c->probe, conn_realtime_ns(), conn_now_ns(), &m.clock_probe))
		return conn_send(c, &m);
	if (clockprobe_result(&c->probe, &cm))
		ret = probe_measured(c, &cm);
	probe_arm(c);
	return ret;
}

int conn_recorders(struct collector *col,
		   int (*fn)(void *ctx, struct conn *c, const char *host, const char *group),
		   void *ctx)
{
	int ret = 0;

	for (struct conn *c = col->conns; c && ret == 0; c = c->next)
		if (c->state == CONN_STREAM && c->recorder)
			ret = fn(ctx, c, c->host, c->group);
	return ret;
}

int conn_freeze(struct conn *c, const struct proto_freeze *f)
{
	struct proto_msg m = { .type = MSG_FREEZE, .freeze = *f }, own;
	struct proto_buf b;
	int ret;

	proto_buf_init(&b);
	ret = proto_msg_encode(&m, &b);
	/* the record first (the worker takes a decoded copy it owns), then the agent's answer */
	if (ret == 0)
		ret = proto_msg_decode(b.data + FRAME_HDR_SIZE, b.len - FRAME_HDR_SIZE, &own);
	if (ret == 0)
		ret = ingest_push_msg(c->col->ing, c->sink, &own, b.data + FRAME_HDR_SIZE,
				      b.len - FRAME_HDR_SIZE);
	if (ret == 0 && bufferevent_write(c->bev, b.data, b.len) < 0)
		ret = -ENOMEM;
	proto_buf_free(&b);
	if (ret < 0)
		conn_fail(c, ret, "freeze");
	return ret;
}

int conn_thaw(struct conn *c, uint64_t id)
{
	struct proto_msg m = { .type = MSG_FREEZE,
			       .freeze = { .id = id, .reason = (char *)"", .who = (char *)"",
					   .thaw = true } };
	int ret = conn_send(c, &m);

	if (ret < 0)
		conn_fail(c, ret, "thaw");
	return ret;
}

/* MSG_CLOCK_ECHO: one round trip; a late or impossible one is ignored. */
static int probe_echo(struct conn *c, const struct proto_clock_echo *e)
{
	int ret = clockprobe_echo(&c->probe, e, conn_now_ns());

	if (ret < 0 && !c->probe.answers) {
		char h[LOG_ESC_LEN];

		log_warn("host %s: a clock echo holds the probe longer than its round trip: "
			 "ignored", conn_name(c, h, sizeof(h)));
	}
	if (ret == 1 || c->state != CONN_STREAM)
		return 0;
	return probe_go(c);
}

/* The probe timer: a burst whose echo did not come is ended; the next begins. */
static void probe_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct proto_clock_measure cm;
	int ret = 0;

	if (c->state != CONN_STREAM)
		return;
	if (clockprobe_waiting(&c->probe) && clockprobe_result(&c->probe, &cm))
		ret = probe_measured(c, &cm);
	clockprobe_burst(&c->probe, CLOCKPROBE_PERIODIC);
	if (ret == 0)
		ret = probe_go(c);
	if (ret < 0)
		conn_fail(c, ret, "clock probe");
}

/* After WELCOME (which announced @n probes): the first burst. */
static int probe_start(struct conn *c, unsigned n)
{
	c->probe_timer = evtimer_new(c->col->base, probe_timer_cb, c);
	if (!c->probe_timer)
		return -ENOMEM;
	clockprobe_burst(&c->probe, n);
	return probe_go(c);
}

/*
 * One control message. One that does not decode is answered here with the
 * decoder's reason (which key broke which limit; no peer bytes in it), and
 * the connection closes (c->state CONN_CLOSING). CONN_MSG_HELD: the
 * message waits for its host's limits, unconsumed (reading stopped).
 */
static int conn_on_msg(struct conn *c, const uint8_t *payload, size_t len)
{
	struct proto_msg m;
	char why[256], esc[LOG_ESC_LEN];
	int ret;

	ret = proto_msg_decode_why(payload, len, &m, why, sizeof(why));
	if (ret < 0 && why[0]) {
		char what[300];

		snprintf(what, sizeof(what), "message: %s", why);
		conn_fail(c, ret, what);
		return 0;
	}
	if (ret < 0)
		return ret;
	if ((c->state == CONN_HELLO) != (m.type == MSG_HELLO)) {
		ret = TC_ERR_PROTO_STATE;
		goto out;
	}
	switch (m.type) {
	case MSG_HELLO: ret = on_hello(c, &m, payload, len); break;
	case MSG_CMDLINES:
	case MSG_SYMBOLS:
	case MSG_PRINTK:
		if (c->lim && conn_held(c)) {	/* counted as a page of CPU 0 */
			ret = CONN_MSG_HELD;
			break;
		}
		if (c->lim)
			hostlimit_charge_meta(c->lim, len, conn_now_ns());
		ret = ingest_push_msg(c->col->ing, c->sink, &m, payload, len);
		break;
	case MSG_HEADER_PAGE:
	case MSG_FORMAT:
	case MSG_CLOCK:
	case MSG_CPU_STATS:
	case MSG_GROUP:
		ret = ingest_push_msg(c->col->ing, c->sink, &m, payload, len);
		break;
	case MSG_BYE: ret = on_bye(c, &m, payload, len); break;
	case MSG_SNAP_BEGIN:	/* only from a flight recorder */
	case MSG_SNAP_END: {
		uint64_t id = m.type == MSG_SNAP_END ? m.snap_end.id : 0;

		ret = c->recorder ? ingest_push_msg(c->col->ing, c->sink, &m, payload, len) :
		      TC_ERR_PROTO_STATE;
		if (ret == 0 && id)	/* the snapshot may be whole: thaw its recorders */
			freezer_ended(c->col->fz, id);
		break;
	}
	case MSG_FROZE:		/* its trigger fired: freeze its groups */
		ret = c->recorder ? 0 : TC_ERR_PROTO_STATE;
		if (ret == 0)
			freezer_froze(c->col->fz, c, c->host, c->group, &m.froze);
		break;
	case MSG_CLOCK_ECHO:	/* only an answer to our MSG_CLOCK_PROBE */
		ret = c->clock_probe ? probe_echo(c, &m.clock_echo) : TC_ERR_PROTO_STATE;
		break;
	case MSG_FILTER_STATUS:	/* only an answer to our MSG_FILTER */
		ret = c->pushdown ? 0 : TC_ERR_PROTO_STATE;
		if (ret == 0)
			filter_status_log(c->host, &m.filter_status);
		break;
	case MSG_ERROR:
		log_warn("%s: agent reports error %d: %s", c->peer, m.error.code,
			 log_escape(m.error.text, esc, sizeof(esc)));
		ret = TC_ERR_PEER_CLOSED;
		break;
	default: ret = TC_ERR_PROTO_STATE; break;
	}
out:
	proto_msg_free(&m);
	return ret;
}

static int conn_on_page(struct conn *c, const uint8_t *page, size_t len)
{
	struct conn_cpu *cpu;
	int ret;

	if (c->state != CONN_STREAM)
		return TC_ERR_PROTO_STATE;
	if (c->lim)
		hostlimit_charge(c->lim, c->lim->v.rate ?
				 hostlimit_page_events(&c->layout, page, len) : 1,
				 len, conn_now_ns());
	c->page_bytes += len;
	if (c->hdr.stream >= PROTO_USER_STREAM_BASE) {	/* a program's ring: the worker checks */
		c->pages++;
		return ingest_push_page(c->col->ing, c->sink, c->hdr.stream, c->hdr.seq, page,
					len);
	}
	if (c->hdr.stream >= c->ncpus)
		return TC_ERR_MSG_MALFORMED;
	ret = cpuslots_get(&c->cpus, c->hdr.stream, (void **)&cpu);
	if (ret < 0)
		return ret;
	if (cpu->next_seq && c->hdr.seq != cpu->next_seq) {
		cpu->gaps += c->hdr.seq > cpu->next_seq ? c->hdr.seq - cpu->next_seq : 1;
		log_warn("%s: cpu%u: page %llu arrived, %llu expected", c->peer,
			 c->hdr.stream, (unsigned long long)c->hdr.seq,
			 (unsigned long long)cpu->next_seq);
	}
	cpu->next_seq = c->hdr.seq + 1;
	c->pages++;
	return ingest_push_page(c->col->ing, c->sink, c->hdr.stream, c->hdr.seq, page, len);
}

/*
 * Whether the page whose header was read must wait for its host's limits:
 * then reading stops (c->held says why), the page is counted held once on
 * its CPU (pages of programs' rings on CPU 0's) and the hold timer set.
 */
static bool conn_held(struct conn *c)
{
	int64_t now = conn_now_ns(), wait = 0;
	enum hostlimit_hold why = hostlimit_check(c->lim, now, &wait);
	struct conn_cpu *cpu;
	struct timeval tv;

	if (why == HOSTLIMIT_GO)
		return false;
	c->held = why;
	c->held_since = now;
	c->held_cpu = c->hdr.stream < c->ncpus ? c->hdr.stream : 0;
	if (!c->hdr_held && cpuslots_get(&c->cpus, c->held_cpu, (void **)&cpu) == 0)
		cpu->held_pages[why - 1]++;	/* out of memory: not counted */
	c->hdr_held = true;
	bufferevent_disable(c->bev, EV_READ);
	tv.tv_sec = wait / 1000000000;
	tv.tv_usec = (wait % 1000000000) / 1000;
	evtimer_add(c->hold, &tv);
	return true;
}

/* The hold is over (or the connection): count its time. */
static void conn_hold_end(struct conn *c)
{
	struct conn_cpu *cpu;

	if (!c->held)
		return;
	if (cpuslots_get(&c->cpus, c->held_cpu, (void **)&cpu) == 0)
		cpu->held_ns[c->held - 1] += (uint64_t)(conn_now_ns() - c->held_since);
	c->held = HOSTLIMIT_GO;
}

/* Hand the held counts to the worker (traceq --stats), and zero them. */
static void conn_held_report(struct conn *c)
{
	struct ingest_held h[64];
	size_t n = 0;
	int ret = 0;

	c->held_reported = util_now_ms();
	for (uint32_t i = 0; c->sink && i < c->cpus.n && ret == 0; i++) {
		struct conn_cpu *cpu = cpuslots_at(&c->cpus, i);

		if (!cpu->held_pages[0] && !cpu->held_pages[1] &&
		    cpu->held_ns[0] < 1000000 && cpu->held_ns[1] < 1000000)
			continue;
		h[n++] = (struct ingest_held){ .cpu = c->cpus.cpu[i],
			.rate_pages = cpu->held_pages[0], .rate_ms = cpu->held_ns[0] / 1000000,
			.quota_pages = cpu->held_pages[1], .quota_ms = cpu->held_ns[1] / 1000000 };
		/* the ns under a ms stay for the next report */
		cpu->held_pages[0] = cpu->held_pages[1] = 0;
		cpu->held_ns[0] %= 1000000;
		cpu->held_ns[1] %= 1000000;
		if (n == sizeof(h) / sizeof(h[0])) {
			ret = ingest_count_held(c->col->ing, c->sink, h, n);
			n = 0;
		}
	}
	if (n && ret == 0)
		ret = ingest_count_held(c->col->ing, c->sink, h, n);
	if (ret < 0)
		log_warn("%s: counting pages held back by host limits: %s", c->peer,
			 tc_strerror(ret));
}

/* The hold timer: read again (conn_held() decides anew). */
static void conn_hold_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	conn_hold_end(c);
	if (util_now_ms() - c->held_reported >= CONN_HELD_REPORT_MS)
		conn_held_report(c);
	conn_read_again(c);
}

/* The ingest queue is full: stop reading until the worker says "resume". */
static void conn_pause(struct conn *c)
{
	c->paused = true;
	bufferevent_disable(c->bev, EV_READ);
}

/* Read again, unless still paused, waiting or held, and look at what is buffered. */
static void conn_read_again(struct conn *c)
{
	if (c->paused || c->waiting || c->held ||
	    (c->state != CONN_STREAM && c->state != CONN_HELLO))
		return;
	bufferevent_enable(c->bev, EV_READ);
	bufferevent_trigger(c->bev, EV_READ,
			    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/*
 * Room for the payload of the frame whose header was read: true when it
 * fits CONN_INPUT_BASE or was granted (the watermark is raised to it);
 * false when input_bytes has no room now (reading stops, c->waiting).
 */
static bool conn_input_room(struct conn *c)
{
	struct collector *col = c->col;
	uint32_t len = c->hdr.len;

	if (len <= CONN_INPUT_BASE || c->grant >= len)
		return true;
	if (col->input_used + len > col->lim.input_bytes) {
		if (!col->input_waiting && util_now_ms() - col->input_full_ms >= 60000) {
			col->input_full_ms = util_now_ms();
			log_info("input memory full (%llu of %llu bytes in frames being "
				 "received): connections wait unread (logged once a minute)",
				 (unsigned long long)col->input_used,
				 (unsigned long long)col->lim.input_bytes);
		}
		if (!c->waiting)
			col->input_waiting++;
		c->waiting = true;
		bufferevent_disable(c->bev, EV_READ);
		return false;
	}
	if (c->waiting)
		col->input_waiting--;
	c->waiting = false;
	col->input_used += len;
	c->grant = len;
	bufferevent_setwatermark(c->bev, EV_READ, 0, len);
	return true;
}

/* Give the frame's grant back; waiting connections take it in list order. */
static void conn_input_release(struct conn *c)
{
	struct collector *col = c->col;
	struct conn *w;

	if (!c->grant)
		return;
	col->input_used -= c->grant;
	c->grant = 0;
	if (c->bev)
		bufferevent_setwatermark(c->bev, EV_READ, 0, CONN_INPUT_BASE);
	for (w = col->conns; w && col->input_waiting; w = w->next)
		if (w->waiting && conn_input_room(w))
			conn_read_again(w);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg);

/* Handle every complete frame in the input buffer. */
static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct conn *c = arg;
	uint8_t raw[FRAME_HDR_SIZE];
	const uint8_t *payload;
	int ret;

	if (c->state == CONN_HANDSHAKE)		/* data implies a finished handshake */
		conn_event_cb(bev, BEV_EVENT_CONNECTED, c);
	while (c->state == CONN_HELLO || c->state == CONN_STREAM) {
		if (!c->have_hdr) {
			if (evbuffer_copyout(in, raw, sizeof(raw)) < (ssize_t)sizeof(raw))
				break;
			ret = frame_hdr_parse(raw, sizeof(raw), &c->hdr);
			if (ret < 0 && !c->col->tls && raw[0] == 0x16) {
				conn_fail(c, ret, "the agent speaks TLS but this "
					  "collector runs --insecure-plain");
				return;
			}
			if (ret < 0) {
				conn_fail(c, ret, "bad frame");
				return;
			}
			evbuffer_drain(in, sizeof(raw));
			c->have_hdr = true;
		}
		/* a frame granted input memory is read: the grant is not to wait */
		if (c->hdr.type != FRAME_MSG && c->lim && !c->grant && conn_held(c))
			break;
		if (!conn_input_room(c))
			break;
		if (evbuffer_get_length(in) < c->hdr.len)
			break;
		if (c->hdr.type != FRAME_MSG && ingest_full(c->col->ing)) {
			conn_pause(c);
			break;
		}
		payload = evbuffer_pullup(in, c->hdr.len);
		if (!payload && c->hdr.len) {
			conn_fail(c, -ENOMEM, "frame");
			return;
		}
		if (c->hdr.type == FRAME_MSG)
			ret = conn_on_msg(c, payload, c->hdr.len);
		else
			ret = conn_on_page(c, payload, c->hdr.len);
		if (c->state == CONN_CLOSING)
			return;
		if (ret == CONN_MSG_HELD)	/* read again when the hold ends */
			break;
		evbuffer_drain(in, c->hdr.len);
		c->have_hdr = false;
		c->hdr_held = false;
		c->last_frame = util_now_ms();
		conn_input_release(c);
		if (ret < 0) {
			conn_fail(c, ret, c->hdr.type == FRAME_MSG ? "message" : "page");
			return;
		}
	}
	if (c->sink && (ret = ingest_flush(c->col->ing, c->sink)) < 0)
		conn_fail(c, ret, "page");
	else if (c->sink && c->state == CONN_STREAM && ingest_journaled(c->col->ing))
		conn_journaled(c, false);
}

/*
 * Why a handshake failed: the peer-verification result when there is one
 * (tls_errors), else the first reason libevent took off OpenSSL's queue.
 */
static void log_refusal(struct conn *c)
{
	SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
	const char *reason;
	char why[512];
	unsigned long e;

	tls_errors(ssl, why, sizeof(why));
	while ((e = bufferevent_get_openssl_error(c->bev))) {
		reason = ERR_reason_error_string(e);
		if (reason && !why[0])
			snprintf(why, sizeof(why), "%s", reason);
	}
	c->col->refused++;
	log_warn("%s: refused agent: TLS handshake failed: %s%s", c->peer,
		 why[0] ? why : "connection closed during the handshake",
		 strstr(why, "wrong version number") ? " (a plain-TCP agent? only "
		 "a collector started with --insecure-plain takes those)" : "");
}

/* Lingering refused sockets: at most this many at once, each this long and this much. */
#define CONN_LINGER_MAX		64
#define CONN_LINGER_MS		2000
#define CONN_LINGER_BYTES	(64u << 10)

struct conn_linger {
	struct collector *col;
	struct conn_linger *next, **pprev;
	struct event *ev;
	evutil_socket_t fd;
	size_t read;
	int64_t deadline_ms;
};

static void linger_free(struct conn_linger *l)
{
	DLIST_UNLINK(l);
	l->col->nlingers--;
	event_free(l->ev);
	evutil_closesocket(l->fd);
	free(l);
}

/* What the refused agent still sends, dropped until it closes, a cap, or the deadline. */
static void linger_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn_linger *l = arg;
	int64_t left = l->deadline_ms - util_now_ms();
	char buf[4096];
	ssize_t n = 0;

	if (what & EV_READ)
		n = recv(fd, buf, sizeof(buf), 0);
	if (n > 0)
		l->read += (size_t)n;
	if (!(what & EV_READ) || n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ||
	    l->read >= CONN_LINGER_BYTES || left <= 0) {
		linger_free(l);
		return;
	}
	event_add(l->ev, &(struct timeval){ left / 1000, (left % 1000) * 1000 });
}

/*
 * Keep the socket of @c, refused at its handshake, a moment past the
 * connection: its own descriptor, the write side shut after the TLS alert
 * (a FIN follows it instead of a reset), its input read and dropped. Over
 * CONN_LINGER_MAX lingering sockets, it just closes.
 */
static void conn_linger(struct conn *c)
{
	struct collector *col = c->col;
	evutil_socket_t fd = c->bev ? bufferevent_getfd(c->bev) : -1;
	struct conn_linger *l;

	if (fd < 0 || col->nlingers >= CONN_LINGER_MAX || !(l = calloc(1, sizeof(*l))))
		return;
	l->fd = dup(fd);
	l->ev = l->fd < 0 ? NULL : event_new(col->base, l->fd, EV_READ, linger_cb, l);
	if (!l->ev) {
		if (l->fd >= 0)
			close(l->fd);
		free(l);
		return;
	}
	shutdown(l->fd, SHUT_WR);
	l->col = col;
	l->deadline_ms = util_now_ms() + CONN_LINGER_MS;
	DLIST_PUSH(&col->lingers, l);
	col->nlingers++;
	event_add(l->ev, &(struct timeval){ CONN_LINGER_MS / 1000, 0 });
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	char name[LOG_ESC_LEN];

	if (what & BEV_EVENT_CONNECTED) {
		if (c->state != CONN_HANDSHAKE)
			return;
		tls_peer_subject(bufferevent_openssl_get_ssl(bev), c->subject,
				 sizeof(c->subject));
		c->state = CONN_HELLO;
		conn_authenticated(c);
		return;
	}
	if (c->state == CONN_HANDSHAKE) {
		log_refusal(c);
		conn_linger(c);
	} else if (c->state != CONN_CLOSING)
		log_warn("%s: agent %s disconnected before DONE (%llu pages received)",
			 c->peer, conn_name(c, name, sizeof(name)), (unsigned long long)c->pages);
	conn_free(c);
}

/*
 * A connection closed by a limit: counted; logged with @why the first time
 * its source address @addr is refused (the last COLLECTOR_REFUSAL_SOURCES
 * addresses are remembered; one pushed out says how many more it had).
 */
static void conn_refused(struct collector *col, const char *addr, const char *why)
{
	struct collector_refusal *r;
	unsigned i;

	col->refused_limit++;
	for (i = 0; i < COLLECTOR_REFUSAL_SOURCES; i++)
		if (col->refusals[i].count && !strcmp(col->refusals[i].addr, addr)) {
			col->refusals[i].count++;
			return;
		}
	r = &col->refusals[col->refusal_next];
	col->refusal_next = (col->refusal_next + 1) % COLLECTOR_REFUSAL_SOURCES;
	if (r->count > 1)
		log_info("%s: %llu more connections closed by limits", r->addr,
			 (unsigned long long)(r->count - 1));
	snprintf(r->addr, sizeof(r->addr), "%s", addr);
	r->count = 1;
	log_warn("%s: connection closed: %s (more from this address are counted, "
		 "not logged)", addr, why);
}

/*
 * The connection's timer: the handshake (and HELLO) deadline, then the
 * idle check of a streaming connection, or the deadline of one closing.
 */
static void conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct collector *col = c->col;
	int64_t left;
	char why[128];

	switch (c->state) {
	case CONN_HANDSHAKE:
		snprintf(why, sizeof(why), "TLS handshake not done within %d ms",
			 col->lim.handshake_ms);
		conn_refused(col, c->addr, why);
		conn_free(c);
		return;
	case CONN_HELLO:
		snprintf(why, sizeof(why), "no HELLO within %d ms", col->lim.handshake_ms);
		col->refused_limit++;
		conn_fail(c, TC_ERR_TIMEOUT, why);
		return;
	case CONN_STREAM:
		left = c->last_frame + col->lim.idle_ms - util_now_ms();
		if (c->paused || c->waiting || c->held)	/* not read: not idle */
			left = col->lim.idle_ms;
		if (left > 0) {
			conn_arm(c, left);
			return;
		}
		snprintf(why, sizeof(why), "no complete frame for %d ms", col->lim.idle_ms);
		col->refused_limit++;
		conn_fail(c, TC_ERR_TIMEOUT, why);
		return;
	case CONN_BYE:		/* the worker's turn: wait */
		conn_arm(c, col->lim.idle_ms ? col->lim.idle_ms : col->lim.handshake_ms);
		return;
	case CONN_CLOSING:	/* the peer does not take our last bytes */
		conn_free(c);
		return;
	}
}

/*
 * The handshake to give up for a new one, @nc from @addr: @nc itself when
 * @addr holds max_handshakes_source already (a burst from one address
 * waits its turn: agents retry, and the handshakes it has in flight get to
 * finish rather than be given up one after the other); else, when
 * max_handshakes are in the handshake, the oldest of the source holding
 * the most (ties: the one whose oldest is oldest), so that strangers
 * holding handshakes open from many addresses cannot keep a new address
 * out. @why says which cap. NULL: room for it.
 *
 * O(n^2) in the handshakes, only when the pool is full: the caps keep
 * them few (the default 256).
 */
static struct conn *conn_victim(const struct collector *col, struct conn *nc,
				const char *addr, char *why, size_t len)
{
	struct conn *c, *d, *best = NULL;
	unsigned n_mine = 0, n_best = 0;

	for (c = col->conns; c; c = c->next)
		n_mine += c->unauth && !strcmp(c->addr, addr);
	if (n_mine >= col->lim.max_handshakes_source) {
		snprintf(why, len, "%u connections from it in the TLS handshake already "
			 "(--max-handshakes-per-source)", n_mine);
		return nc;
	}
	if (col->nhandshakes < col->lim.max_handshakes)
		return NULL;
	for (c = col->conns; c; c = c->next) {
		unsigned n = 0;
		struct conn *oldest = c;

		if (!c->unauth)
			continue;
		for (d = col->conns; d; d = d->next)
			if (d->unauth && !strcmp(d->addr, c->addr)) {
				n++;
				if (d->id < oldest->id)
					oldest = d;
			}
		if (oldest != c)	/* each source once: at its oldest */
			continue;
		if (n > n_best || (n == n_best && best && c->id < best->id)) {
			n_best = n;
			best = c;
		}
	}
	snprintf(why, len, "its oldest TLS handshake given up for another source's: "
		 "%u connections in the TLS handshake already (--max-handshakes), %u of "
		 "them from it, the most of any source", col->nhandshakes, n_best);
	return best;
}

/* @sa as "address:port" in @buf and as the address alone in @addr. */
static void format_peer(const struct sockaddr *sa, char *buf, size_t len,
			char *addr, size_t alen)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
	}
	snprintf(buf, len, sa->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, port);
	snprintf(addr, alen, "%s", ip);
}

/* The bufferevent of a new connection: TLS, or plain with --insecure-plain
 * (no handshake: straight to HELLO). */
static struct bufferevent *conn_bev(struct conn *c, struct collector *col,
				    int fd, SSL *ssl)
{
	if (!col->tls) {
		snprintf(c->subject, sizeof(c->subject), "insecure-plain");
		c->state = CONN_HELLO;
		return bufferevent_socket_new(col->base, fd, BEV_OPT_CLOSE_ON_FREE);
	}
	snprintf(c->subject, sizeof(c->subject), "?");
	return bufferevent_openssl_socket_new(col->base, fd, ssl,
		BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
}

void conn_accept(struct collector *col, int fd, const struct sockaddr *peer, int socklen)
{
	struct conn *c = calloc(1, sizeof(*c)), *victim;
	SSL *ssl = NULL;
	char why[256];

	if (!c) {
		log_err("out of memory accepting a connection");
		goto fail;
	}
	format_peer(peer, c->peer, sizeof(c->peer), c->addr, sizeof(c->addr));
	if ((victim = conn_victim(col, c, c->addr, why, sizeof(why))) == c) {
		conn_refused(col, c->addr, why);
		goto fail;
	} else if (victim) {
		conn_refused(col, victim->addr, why);
		conn_free(victim);
	}
	ssl = col->tls ? SSL_new(col->tls) : NULL;
	c->timer = evtimer_new(col->base, conn_timer_cb, c);
	c->ack_timer = evtimer_new(col->base, conn_ack_cb, c);
	if ((col->tls && !ssl) || !c->timer || !c->ack_timer) {
		log_err("out of memory accepting a connection");
		goto fail;
	}
	c->bev = conn_bev(c, col, fd, ssl);
	if (!c->bev)
		goto fail;
	c->col = col;
	cpuslots_init(&c->cpus, sizeof(struct conn_cpu));
	c->unauth = true;
	col->nhandshakes++;
	conn_arm(c, col->lim.handshake_ms);
	c->id = ++col->next_conn_id;
	DLIST_PUSH(&col->conns, c);
	col->nconns++;
	if (ssl)
		bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
	bufferevent_setwatermark(c->bev, EV_READ, 0, CONN_INPUT_BASE);
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	return;
fail:
	if (!c || !c->bev) {
		SSL_free(ssl);
		evutil_closesocket(fd);
	}
	if (c && c->timer)
		event_free(c->timer);
	if (c && c->ack_timer)
		event_free(c->ack_timer);
	free(c);
}

/*
 * ACK every stream of @c whose committed mark moved since the last ACK, in
 * one write: one TLS record for them all, not one per stream (the agent
 * reads each record with two read(2)s, and the collector encrypts each).
 */
static void conn_ack(struct conn *c)
{
	struct proto_msg m = { .type = MSG_ACK };
	struct conn_cpu *cpu;
	struct proto_buf b;
	uint32_t i;
	int ret = 0;

	if (c->ack_timer)
		evtimer_del(c->ack_timer);
	proto_buf_init(&b);
	for (i = 0; i < c->cpus.n && ret == 0; i++) {
		cpu = cpuslots_at(&c->cpus, i);
		if (cpu->committed_seq <= cpu->acked_seq)
			continue;
		m.ack.stream = c->cpus.cpu[i];
		m.ack.seq = cpu->committed_seq;
		ret = proto_msg_encode(&m, &b);
	}
	if (ret == 0 && b.len && bufferevent_write(c->bev, b.data, b.len) == 0)
		for (i = 0; i < c->cpus.n; i++) {
			cpu = cpuslots_at(&c->cpus, i);
			cpu->acked_seq = cpu->committed_seq;
		}
	proto_buf_free(&b);
}

/* ---- the hooks ingest calls on the event loop (ingest.h) ---- */

/* hooks.resume: the ingest queue drained; paused connections read again. */
static void conn_resume_all(void *arg)
{
	struct collector *col = arg;
	struct conn *c;

	for (c = col->conns; c; c = c->next) {
		if (!c->paused || c->state != CONN_STREAM)
			continue;
		c->paused = false;
		conn_read_again(c);
	}
}

/*
 * hooks.committed: a commit made durable everything the worker had taken
 * over before that commit began; each connection's cpus[].committed_seq is
 * then the highest page of that CPU on disk (resends dropped as duplicates
 * included), and a connection whose agent announced a session sends it
 * MSG_ACK for every stream whose mark moved. With a journal, pages were
 * ACKed when journaled: the files may rotate now.
 */
static void conn_committed_all(void *arg)
{
	struct collector *col = arg;
	struct conn *c;
	uint32_t i;

	if (ingest_journaled(col->ing)) {	/* ACKed when journaled; files may go */
		for (c = col->conns; c; c = c->next)
			if (c->sink && c->state == CONN_STREAM)
				ingest_journal_tidy(col->ing, c->sink);
		if (!ingest_full(col->ing))
			conn_resume_all(col);
		return;
	}
	for (c = col->conns; c; c = c->next) {
		for (i = 0; c->sink && i < c->cpus.n; i++)
			((struct conn_cpu *)cpuslots_at(&c->cpus, i))->committed_seq =
				ingest_sink_committed(col->ing, c->sink, c->cpus.cpu[i]);
		if (c->session && c->state == CONN_STREAM)
			conn_ack(c);
	}
}

/* The connection @id names; NULL when it is gone or closing (ignore the result). */
static struct conn *conn_live(struct collector *col, uint64_t id)
{
	struct conn *c;

	for (c = col->conns; c && c->id != id; c = c->next)
		;
	return c && c->state != CONN_CLOSING ? c : NULL;
}

/* Send reply @m (WELCOME, DONE); after DONE the connection closes. */
static void conn_reply(struct conn *c, const struct proto_msg *m)
{
	int ret = conn_send(c, m);

	if (ret < 0)
		conn_fail(c, ret, "reply");
	else if (m->type == MSG_DONE)
		conn_finish(c);
}

/*
 * hooks.welcome: HELLO is stored (and whether this boot's kernel symbols
 * are; whether to ask for its printk_formats).
 */
static void conn_welcome(void *arg, uint64_t id, uint64_t host_id, bool kallsyms, bool printk)
{
	struct conn *c = conn_live(arg, id);
	int ret;
	struct proto_msg m = { .type = MSG_WELCOME,
			       .welcome = { .version = PROTO_VERSION, .host_id = host_id,
					    .kallsyms = kallsyms, .printk_formats = printk,
					    .sym_modules = true } };

	if (!c)
		return;
	if (!c->live_id && livehosts_add(c->col->live, host_id) == 0)
		c->live_id = host_id;	/* --hosts: connected */
	if (c->clock_probe && c->state == CONN_STREAM && !c->probe_timer)
		m.welcome.clock_probes = CLOCKPROBE_CONNECT;
	conn_reply(c, &m);
	if (m.welcome.clock_probes && c->state == CONN_STREAM &&
	    (ret = probe_start(c, CLOCKPROBE_CONNECT)) < 0)
		conn_fail(c, ret, "clock probe");
}

/* hooks.done: BYE, and everything before it is committed. */
static void conn_done(void *arg, uint64_t id, uint64_t pages, uint64_t events)
{
	struct conn *c = conn_live(arg, id);
	struct proto_msg m = { .type = MSG_DONE, .done = { .pages = pages, .events = events } };

	if (c)
		conn_reply(c, &m);
}

/* hooks.failed: a message, page or commit of the connection failed. */
static void conn_failed(void *arg, uint64_t id, int err, const char *what)
{
	struct conn *c = conn_live(arg, id);

	if (c)
		conn_fail(c, err, what);
}

/* hooks.send: a message from the worker (MSG_FILTER push-down) while streaming. */
static void conn_send_hook(void *arg, uint64_t id, const struct proto_msg *m)
{
	struct conn *c = conn_live(arg, id);
	int ret;

	if (c && c->state == CONN_STREAM && (ret = conn_send(c, m)) < 0)
		conn_fail(c, ret, proto_msg_name(m->type));
}

/* hooks.page_bytes: pages of @id committed leave their host's pending bytes. */
static void conn_page_bytes(void *arg, uint64_t id, uint64_t bytes)
{
	struct conn *c = conn_live(arg, id);

	if (!c || !c->lim || bytes <= c->page_bytes_committed)
		return;
	hostlimit_committed(c->lim, bytes - c->page_bytes_committed);
	c->page_bytes_committed = bytes;
}

/* hooks.usage: a host's bytes stored, for its quota. */
static void conn_usage(void *arg, const char *host, uint64_t bytes)
{
	struct collector *col = arg;

	if (col->hl)
		hostlimit_usage(col->hl, host, bytes);
}

void conn_ingest_hooks(struct collector *col, struct ingest_hooks *out)
{
	*out = (struct ingest_hooks){
		.welcome = conn_welcome,
		.done = conn_done,
		.failed = conn_failed,
		.send = conn_send_hook,
		.committed = conn_committed_all,
		.resume = conn_resume_all,
		.usage = conn_usage,
		.page_bytes = conn_page_bytes,
		.arg = col,
	};
}

void conn_close_all(struct collector *col)
{
	struct conn *c;

	/*
	 * Nobody waits for input memory any more: freeing a connection
	 * would otherwise wake the next waiter with a deferred read, whose
	 * reference keeps that connection's bufferevent alive past the loop.
	 */
	for (c = col->conns; c; c = c->next)
		c->waiting = false;
	col->input_waiting = 0;
	while (col->conns)
		conn_free(col->conns);
	while (col->lingers)
		linger_free(col->lingers);
	if (col->trim)
		event_free(col->trim);
	col->trim = NULL;
	if (col->refused_limit)
		log_info("%llu connections were closed by limits (handshake caps and "
			 "timeouts)", (unsigned long long)col->refused_limit);
}
