/*
 * session.c - the agent's connections to its collector: connect and
 * introduce, take ACKs and filters, lose and reconnect with backoff, the
 * periodic clock samples, BYE/DONE (see session.h).
 *
 * A session is one control connection (struct ship) and, with
 * --connections per-cpu, one data connection per CPU; all are up or all
 * are closed. Every HELLO of a run carries the same session id, so the
 * collector knows a reconnect from a new run.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

/* the agent's lines, wherever in the agent they come from */
#define LOG_PREFIX "agent"
#include "agent/comms.h"
#include "agent/funcsyms.h"
#include "agent/kfilter.h"
#include "agent/session.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/printk.h"

#define REPLY_TIMEOUT_MS	30000	/* WELCOME and DONE */
#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		10000
#define FIRST_RETRY_MS		60000	/* a first connect cut by the collector: retry this long */
#define FIRST_RETRY_LOG_MS	10000	/* ... logging at most one line per this long */

struct session {
	struct session_conf c;
	struct session_host h;
	struct session_pages pages;
	uint64_t id;			/* this run's id, in every HELLO */
	struct ship *ctl;		/* NULL while disconnected */
	struct ship **data;		/* --connections per-cpu: one per CPU,
					 * all up exactly while ctl is */
	struct kfilter *kf;		/* filter push-down; NULL with no_pushdown */
	unsigned at;			/* c.addrs[at]: the collector that took the
					 * last connection, tried first */
	int64_t next_try;		/* reconnect not before (ms) */
	int backoff_ms;
	uint64_t reconnects;
	int64_t ack_progress;		/* last ACK or first un-acked page (ms) */
	int64_t deadline;		/* session_set_deadline(); 0: none */
	bool welcomed;			/* a collector WELCOMEd this run once */
	struct proto_done done;
	bool kallsyms_held;		/* the collector holds this boot's kallsyms */
	bool kallsyms_due;		/* not sent on this connection yet */
	bool sym_modules;		/* the collector takes symbols' modules */
	bool printk_due;		/* WELCOME asked for printk_formats */
	struct comms *comms;		/* saved_cmdlines, saved_tgids */
	char err[768];			/* why the last reconnect attempt failed */
};

static int ncpus(const struct session *s)
{
	return tracing_ncpus(s->h.t);
}

/* @ms, or less: what is left until the deadline (at least 1 ms). */
static int cap_to_deadline(const struct session *s, int ms)
{
	int64_t left = s->deadline - util_now_ms();

	if (!s->deadline || left >= ms)
		return ms;
	return left < 1 ? 1 : (int)left;
}

static int send_hello(struct session *s, struct ship *link, char *why,
		      size_t len)
{
	const struct hostinfo *hi = s->h.hi;
	struct proto_hello h = {
		.version = PROTO_VERSION,
		.host = (char *)hi->host, .machine_id = (char *)hi->machine_id,
		.boot_id = (char *)hi->boot_id, .kernel = (char *)hi->kernel,
		.trace_clock = (char *)tracing_clock(s->h.t),
		.tsc0 = s->h.tsc->tsc0, .tsc_mono0 = s->h.tsc->mono0,
		.tsc_mult = s->h.tsc->mult, .tsc_shift = s->h.tsc->shift,
		.ncpus = (uint32_t)ncpus(s),
		.page_size = tracing_page_size(s->h.t),
		.long_size = hi->long_size, .big_endian = hi->big_endian,
		.session = s->id,
		.pushdown = s->kf != NULL && link == s->ctl,
		.clock_probe = true,
		.agent = (char *)"traceagent " PACKAGE_VERSION,
		.recorder = s->h.recorder && link == s->ctl,
		.group = (char *)(s->h.group && link == s->ctl ? s->h.group : ""),
	};
	struct proto_welcome w;
	char reason[512];
	int ret;

	ret = hostinfo_clock_sample(&h.clock, s->h.tsc_clock ? s->h.tsc : NULL);
	if (ret < 0) {
		tc_seterr(why, len, "cannot read the clocks: %s",
			  tc_strerror(ret));
		return ret;
	}
	ret = ship_hello(link, &h, cap_to_deadline(s, REPLY_TIMEOUT_MS), &w,
			 reason, sizeof(reason));
	if (ret < 0) {
		tc_seterr(why, len, "%s", reason);
		return ret;
	}
	if (link == s->ctl) {
		log_info("connected to %s port %s as %s (collector host id %"
			 PRIu64 ")", session_addr(s)->host, session_addr(s)->port, hi->host,
			 w.host_id);
		s->welcomed = true;	/* a failure from here on is a lost connection */
		s->kallsyms_held = w.kallsyms;
		s->kallsyms_due = s->h.kernel_symbols;
		s->printk_due = w.printk_formats;
		s->sym_modules = w.sym_modules;
	}
	ret = ship_welcome_probes(link, &h, &w, cap_to_deadline(s, REPLY_TIMEOUT_MS), reason,
				  sizeof(reason));
	if (ret < 0)
		tc_seterr(why, len, "%s", reason);
	return ret;
}

/* MSG_HEADER_PAGE, then one MSG_FORMAT per enabled event, on @link. */
static int send_formats(struct session *s, struct ship *link, char *why,
			size_t len)
{
	struct proto_msg m = { .type = MSG_HEADER_PAGE };
	const char *sys, *name;
	size_t i, tlen;
	char *text;
	int ret;

	ret = tracing_header_page(s->h.t, &m.header_page.text,
				  &m.header_page.len);
	if (ret < 0) {
		tc_seterr(why, len, "cannot read events/header_page: %s",
			  tc_strerror(ret));
		return ret;
	}
	/* optional: trace.dat exports want it; without it the collector keeps none */
	if (tracing_events_file(s->h.t, "events/header_event", &m.header_page.event,
				&m.header_page.event_len) < 0)
		m.header_page.event = NULL;
	ret = ship_msg(link, &m);
	free(m.header_page.text);
	free(m.header_page.event);
	for (i = 0; ret == 0 && i < tracing_event_count(s->h.t); i++) {
		ret = tracing_format(s->h.t, i, &sys, &name, &text, &tlen);
		if (ret < 0) {
			tc_seterr(why, len, "cannot read the format of event "
				  "#%zu: %s", i, tc_strerror(ret));
			return ret;
		}
		m = (struct proto_msg){ .type = MSG_FORMAT, .format = {
			.system = (char *)sys, .name = (char *)name,
			.text = text, .len = tlen } };
		ret = ship_msg(link, &m);
		free(text);
	}
	if (ret < 0)
		tc_seterr(why, len, "%s", ship_last_error(link));
	return ret;
}

struct ship_relay {
	struct ship *link;
	int err;		/* the first failure to ship */
};

static int ship_relay(void *arg, const struct proto_msg *m)
{
	struct ship_relay *r = arg;
	int ret = ship_msg(r->link, m);

	if (ret < 0 && !r->err)
		r->err = ret;
	return ret;
}

/*
 * /proc/kallsyms as MSG_SYMBOLS (group 0), once per boot: unless the
 * collector's WELCOME said it holds this boot's (kallsyms), on every
 * connection (it keeps one copy per agent run). traceq names the code
 * addresses of events with them (%ps fields such as timer_start's
 * function, and the function tracer's). Only the query side needs them,
 * never the decoding, so they go with the first periodic report (10 s
 * in, agent/pump.c; or the one before BYE) rather than at connect: the
 * collector stores the first pages without first storing ~100k symbols.
 * Unreadable symbols cost only
 * names: a warning.
 */
static int send_kernel_symbols(struct session *s, char *why, size_t len)
{
	struct ship_relay r = { .link = s->ctl };
	int n;

	if (!s->kallsyms_due)
		return 0;
	s->kallsyms_due = false;
	if (s->kallsyms_held) {
		log_info("the collector holds the kernel symbols of this boot: not sent again");
		return 0;
	}
	n = funcsyms_send(0, 0, s->sym_modules, ship_relay, &r);
	if (r.err < 0) {
		tc_seterr(why, len, "%s", ship_last_error(s->ctl));
		return r.err;
	}
	if (n < 0)
		log_warn("no kernel symbols: %s", tc_strerror(n));
	else if (n == 0)
		log_warn("no kernel symbols: /proc/kallsyms hides the addresses");
	return 0;
}

/*
 * The kernel's printk_formats as MSG_PRINTK, when WELCOME asked for them
 * (the collector holds none of this boot): the strings that
 * tracepoint_string() pointers and trace_printk() formats point at, which
 * traceq needs to print those events as trace-cmd report does. Lines the
 * collector would refuse are left out (proto_printk_clean), so that one
 * odd string cannot fail every connection. With the kernel symbols: after
 * the first pages, so that strings of modules loaded meanwhile are in.
 */
static int send_printk(struct session *s)
{
	struct proto_msg m = { .type = MSG_PRINTK };
	size_t len = 0, off = 0, n;
	char *text = NULL;
	int ret;

	if (!s->printk_due)
		return 0;
	s->printk_due = false;
	ret = tracing_printk_formats(&text, &len);
	if (ret < 0) {
		log_warn("cannot read printk_formats: %s", tc_strerror(ret));
		return 0;
	}
	len = proto_printk_clean(text, len);
	while (ret == 0 && off < len && (n = proto_printk_chunk(text + off, len - off))) {
		m.printk.text = text + off;
		m.printk.len = n;
		ret = ship_msg(s->ctl, &m);
		off += n;
	}
	free(text);
	return ret;
}

static int ship_one(void *arg, const struct proto_msg *m)
{
	return ship_msg(arg, m);
}

/*
 * The pid -> comm and pid -> tgid tables on every connection (each one's
 * pages are decoded with its own): read them now, then send the whole
 * tables (@full: a new connection) or what changed since the last read.
 */
static int send_names(struct session *s, bool full)
{
	int cpu, ret = comms_read(s->comms, util_now_ms());

	if (ret == 0)
		ret = comms_send(s->comms, full, ship_one, s->ctl);
	for (cpu = 0; ret == 0 && s->data && cpu < ncpus(s); cpu++)
		ret = comms_send(s->comms, full, ship_one, s->data[cpu]);
	return ret;
}

int64_t session_names_due(const struct session *s)
{
	return comms_next(s->comms);
}

void session_names(struct session *s, bool now)
{
	if (s->ctl && (now || util_now_ms() >= comms_next(s->comms)) && send_names(s, false) < 0)
		session_lost(s, session_links_error(s));
}

struct ship *session_control(struct session *s)
{
	return s->ctl;
}

struct ship *session_link(struct session *s, int cpu)
{
	return s->data && s->ctl && cpu >= 0 && cpu < ncpus(s) ?
	       s->data[cpu] : s->ctl;
}

const char *session_links_error(struct session *s)
{
	int cpu;

	if (!s->ctl || ship_last_error(s->ctl)[0])
		return s->ctl ? ship_last_error(s->ctl) : "not connected";
	for (cpu = 0; s->data && cpu < ncpus(s); cpu++)
		if (s->data[cpu] && ship_last_error(s->data[cpu])[0])
			return ship_last_error(s->data[cpu]);
	return "";
}

/*
 * Close every connection. They go and come back together: a failure of
 * one (the collector restarted, the link is cut) nearly always is a
 * failure of all, and resending after a reconnect stays one code path.
 */
static void links_close(struct session *s)
{
	int cpu;

	for (cpu = 0; s->data && cpu < ncpus(s); cpu++) {
		ship_close(s->data[cpu]);
		s->data[cpu] = NULL;
	}
	ship_close(s->ctl);
	s->ctl = NULL;
}

/* The next wait before trying again: the backoff with jitter (half to all of it), then doubled. */
static int backoff_next(struct session *s)
{
	int delay = s->backoff_ms, half = delay / 2;

	delay = half + (int)((unsigned)random() % (unsigned)(delay - half + 1));
	s->backoff_ms = delay >= BACKOFF_MAX_MS / 2 ? BACKOFF_MAX_MS : delay * 2;
	return delay;
}

void session_lost(struct session *s, const char *why)
{
	int delay = backoff_next(s);

	log_warn("lost the collector: %s; reconnecting in %d ms", why, delay);
	s->next_try = util_now_ms() + delay;
	links_close(s);
	if (s->kf)	/* the next collector may filter less */
		kfilter_clear_all(s->kf);
}

void session_periodic(struct session *s)
{
	struct proto_msg m = { .type = MSG_CLOCK };
	char why[256];
	int cpu, ret;

	if (!s->ctl)
		return;
	ret = hostinfo_clock_sample(&m.clock, s->h.tsc_clock ? s->h.tsc : NULL);
	if (ret == 0)
		ret = ship_msg(s->ctl, &m);
	if (ret == 0)
		ret = send_kernel_symbols(s, why, sizeof(why));
	if (ret == 0)
		ret = send_printk(s);
	/* each connection's pages are decoded with its own clock */
	for (cpu = 0; ret == 0 && s->data && cpu < ncpus(s); cpu++)
		ret = ship_msg(s->data[cpu], &m);
	if (ret == 0 && s->pages.stats)
		ret = s->pages.stats(s->pages.arg);
	if (ret < 0)
		session_lost(s, session_links_error(s));
}

static void on_ack(void *arg, uint32_t stream, uint64_t seq)
{
	struct session *s = arg;

	if (s->pages.acked)
		s->pages.acked(s->pages.arg, (uint16_t)stream, seq);
	s->ack_progress = util_now_ms();
}

/*
 * MSG_FILTER: it waits for kfilter_flush() (after ship_check()); true
 * (read no more now) once the waiting filters or unsent answers are at
 * their bound.
 */
static bool on_filter(void *arg, const struct proto_filter *f)
{
	struct session *s = arg;

	kfilter_apply(s->kf, f);
	return kfilter_full(s->kf);
}

/* MSG_FREEZE: for the pump's flight recorder. */
static void on_freeze(void *arg, const struct proto_freeze *f)
{
	struct session *s = arg;

	if (s->pages.freeze)
		s->pages.freeze(s->pages.arg, f);
}

/* An answer, unless the collector does not take what we send: then 1 (later). */
static int send_filter_status(void *arg, const struct proto_msg *m)
{
	struct session *s = arg;

	if (ship_would_block(s->ctl, 512 + strlen(m->filter_status.error) +
			     strlen(m->filter_status.text)))
		return 1;
	return ship_msg(s->ctl, m);
}

/* ship_clock_fn: the trace clock, for the collector's clock probes. */
static uint64_t trace_now(void *arg)
{
	struct session *s = arg;

	return hostinfo_trace_now(s->h.tsc_clock ? s->h.tsc : NULL);
}

/* One connection, TLS or --insecure-plain, with ACKs going to on_ack(). */
static int link_open(struct session *s, struct ship **out, char *why,
		     size_t len)
{
	char reason[640];
	int ret;

	ret = ship_connect(session_addr(s)->host, session_addr(s)->port,
			   s->c.insecure_plain ? NULL : &s->c.tls, out,
			   reason, sizeof(reason));
	if (ret < 0) {
		tc_seterr(why, len, "%s", reason);
		return ret;
	}
	ship_set_ack_fn(*out, on_ack, s);
	ship_set_clock_fn(*out, trace_now, s);
	ship_set_io_timeout(*out, cap_to_deadline(s, s->c.ack_timeout_ms));
	return 0;
}

/*
 * --connections per-cpu: a data connection per CPU, each introduced like
 * the control connection (HELLO with the same session, the page header
 * and the formats its pages are decoded with), carrying that CPU's pages.
 * Filters are pushed down on the control connection only (the instance
 * is one for all CPUs): data connections do not offer push-down.
 */
static int data_open(struct session *s, char *why, size_t len)
{
	int cpu, ret = 0;

	for (cpu = 0; s->data && ret == 0 && cpu < ncpus(s); cpu++) {
		ret = link_open(s, &s->data[cpu], why, len);
		if (ret == 0)
			ret = send_hello(s, s->data[cpu], why, len);
		if (ret == 0)
			ret = send_formats(s, s->data[cpu], why, len);
	}
	return ret;
}

/* Connect and introduce every connection to the collector at c.addrs[at]. */
static int connect_at(struct session *s, char *why, size_t len)
{
	int ret;

	ret = link_open(s, &s->ctl, why, len);
	if (ret < 0)
		return ret;
	if (s->kf)
		ship_set_filter_fn(s->ctl, on_filter, s);
	if (s->h.recorder)
		ship_set_freeze_fn(s->ctl, on_freeze, s);
	ret = send_hello(s, s->ctl, why, len);
	if (ret == 0)
		ret = send_formats(s, s->ctl, why, len);
	if (ret == 0)
		ret = data_open(s, why, len);
	if (ret == 0 && (ret = send_names(s, true)) < 0)
		tc_seterr(why, len, "%s", session_links_error(s));
	if (ret == 0 && s->pages.replay)
		ret = s->pages.replay(s->pages.arg, why, len);
	if (ret < 0) {
		links_close(s);
		return ret;
	}
	s->backoff_ms = BACKOFF_MIN_MS;
	s->ack_progress = util_now_ms();
	return 0;
}

/*
 * --connect A,B,C: the collector that took the last connection first, then
 * the others in order. A failover is nothing but this: the replay that
 * follows is a reconnect's (PROTOCOL.md, "Failover").
 */
int session_connect(struct session *s, char *why, size_t len)
{
	unsigned first = s->at, i;
	int ret = -EINVAL;

	for (i = 0; i < s->c.naddrs; i++) {
		s->at = (first + i) % s->c.naddrs;
		ret = connect_at(s, why, len);
		if (ret == 0 || s->c.naddrs == 1 || (s->c.stop && *s->c.stop))
			break;
		log_info("collector %s port %s: %s; trying the next", session_addr(s)->host,
			 session_addr(s)->port, why);
	}
	if (ret < 0)
		s->at = first;
	else if (s->at != first)
		log_warn("failed over to the collector at %s port %s",
			 session_addr(s)->host, session_addr(s)->port);
	return ret;
}

const struct session_addr *session_addr(const struct session *s)
{
	return &s->c.addrs[s->at];
}

/*
 * Whether a first connect that failed with @ret is worth another try: the
 * collector closed the connection in the TLS handshake without an alert
 * (-ECONNRESET, ship_connect()) or right after it, before WELCOME, without
 * a word (TC_ERR_PEER_CLOSED): what its handshake caps do to the handshake
 * they give up. A verdict on our certificate comes as an alert; a wrong
 * address or port fails otherwise: those are not retried. Nor is a close
 * at HELLO over --insecure-plain: there it means a collector that speaks
 * TLS, which no retry mends.
 */
static bool first_retryable(const struct session *s, int ret)
{
	return ret == -ECONNRESET || (ret == TC_ERR_PEER_CLOSED && !s->c.insecure_plain);
}

/* Sleep @ms in slices, unless s->c.stop is set meanwhile. Return: false when it was. */
static bool pause_ms(const struct session *s, int ms)
{
	while (ms > 0 && !(s->c.stop && *s->c.stop)) {
		int slice = ms < 100 ? ms : 100;

		nanosleep(&(struct timespec){ 0, slice * 1000000L }, NULL);
		ms -= slice;
	}
	return !(s->c.stop && *s->c.stop);
}

int session_start(struct session *s, char *why, size_t len)
{
	int64_t give_up = util_now_ms() + FIRST_RETRY_MS, logged = 0;
	unsigned tries = 1;
	int ret, delay;

	while ((ret = session_connect(s, why, len)) < 0 && !s->welcomed &&
	       first_retryable(s, ret) && util_now_ms() < give_up) {
		delay = backoff_next(s);
		if (util_now_ms() - logged >= FIRST_RETRY_LOG_MS) {
			logged = util_now_ms();
			log_warn("%s; trying again in %d ms (attempt %u; retrying for up "
				 "to %d s, logged every %d s)", why, delay, tries,
				 FIRST_RETRY_MS / 1000, FIRST_RETRY_LOG_MS / 1000);
		}
		if (!pause_ms(s, delay))
			break;
		tries++;
	}
	if (ret == 0 && tries > 1)
		log_info("connected after %u attempts", tries);
	if (ret < 0 && s->welcomed) {
		session_lost(s, why);
		return 0;
	}
	return ret;
}

void session_set_deadline(struct session *s, int64_t deadline)
{
	int cpu, ms;

	s->deadline = deadline;
	ms = cap_to_deadline(s, s->c.ack_timeout_ms);
	if (s->ctl)
		ship_set_io_timeout(s->ctl, ms);
	for (cpu = 0; s->data && cpu < ncpus(s); cpu++)
		if (s->data[cpu])
			ship_set_io_timeout(s->data[cpu], ms);
}

void session_reconnect(struct session *s)
{
	if (s->ctl || util_now_ms() < s->next_try)
		return;
	s->reconnects++;
	if (session_connect(s, s->err, sizeof(s->err)) < 0) {
		session_lost(s, s->err);
		return;
	}
	session_periodic(s);
}

bool session_connected(const struct session *s)
{
	return s->ctl != NULL;
}

int64_t session_next_try(const struct session *s)
{
	return s->next_try;
}

bool session_filter_stats(const struct session *s, struct kfilter_stats *out)
{
	if (!s->kf)
		return false;
	kfilter_get_stats(s->kf, out);
	return out->received != 0;
}

void session_check(struct session *s)
{
	char why[640];
	int cpu;

	if (!s->ctl)
		return;
	if (s->kf)	/* filters and answers at their bounds: the collector waits */
		ship_hold_reading(s->ctl, kfilter_full(s->kf));
	if (ship_check(s->ctl, why, sizeof(why)) < 0) {
		session_lost(s, why);
		return;
	}
	if (s->kf)
		kfilter_flush(s->kf);
	if (s->kf && kfilter_send(s->kf, send_filter_status, s) < 0) {
		session_lost(s, ship_last_error(s->ctl));
		return;
	}
	for (cpu = 0; s->data && cpu < ncpus(s); cpu++) {
		if (ship_check(s->data[cpu], why, sizeof(why)) < 0) {
			session_lost(s, why);
			return;
		}
	}
	if (s->pages.unacked && s->pages.unacked(s->pages.arg) &&
	    util_now_ms() - s->ack_progress > s->c.ack_timeout_ms) {
		snprintf(why, sizeof(why), "no acknowledgement for %d ms",
			 s->c.ack_timeout_ms);
		session_lost(s, why);
	}
}

int session_wake_fds(const struct session *s, int *fds, int max)
{
	int n = 0;

	if (max > 0)
		fds[n++] = s->ctl ? ship_wake_fd(s->ctl) : -1;
	for (int cpu = 0; s->ctl && s->data && cpu < ncpus(s) && n < max; cpu++)
		fds[n++] = s->data[cpu] ? ship_wake_fd(s->data[cpu]) : -1;
	return n;
}

void session_ack_wait_start(struct session *s)
{
	s->ack_progress = util_now_ms();
}

/*
 * BYE on @link counting @pages and @events, and its DONE added to s->done.
 * Return: 0 or negative (the connections are then given up).
 */
static int link_bye(struct session *s, struct ship *link, uint64_t pages,
		    uint64_t events)
{
	struct proto_bye bye = { .pages = pages, .events = events };
	struct proto_done done;
	char why[640];
	int ret;

	ret = ship_bye(link, &bye, cap_to_deadline(s, REPLY_TIMEOUT_MS), &done,
		       why, sizeof(why));
	if (ret < 0) {
		session_lost(s, why);
		return ret;
	}
	s->done.pages += done.pages;
	s->done.events += done.events;
	s->done.journaled |= done.journaled;
	return 0;
}

int session_bye(struct session *s, session_count_fn count, void *arg)
{
	uint64_t pages = 0, events = 0, p, e;
	int cpu, ret = 0;

	session_periodic(s);
	if (s->ctl && send_names(s, false) < 0)	/* the names of the last pages */
		session_lost(s, session_links_error(s));
	if (!s->ctl)
		return -ENOTCONN;
	s->done = (struct proto_done){ 0 };
	for (cpu = 0; ret == 0 && cpu < ncpus(s); cpu++) {
		count(arg, cpu, &p, &e);
		if (s->data)
			ret = link_bye(s, s->data[cpu], p, e);
		else {
			pages += p;
			events += e;
		}
	}
	if (ret == 0) {
		count(arg, -1, &p, &e);
		pages += p;
		events += e;
		ret = link_bye(s, s->ctl, pages, events);
	}
	return ret;
}

bool session_can_splice(const struct session *s)
{
	return s->ctl && ship_can_splice(s->ctl);
}

uint64_t session_reconnects(const struct session *s)
{
	return s->reconnects;
}

const struct proto_done *session_done(const struct session *s)
{
	return &s->done;
}

void session_set_pages(struct session *s, const struct session_pages *p)
{
	s->pages = *p;
}

int session_new(const struct session_conf *c, const struct session_host *h,
		struct session **out)
{
	struct session *s = calloc(1, sizeof(*s));
	int ret = -ENOMEM;

	if (!s)
		return -ENOMEM;
	s->c = *c;
	s->h = *h;
	if (getrandom(&s->id, sizeof(s->id), 0) != sizeof(s->id) || !s->id)
		s->id = ((uint64_t)getpid() << 32) ^ (uint64_t)util_now_ms();
	srandom((unsigned)s->id);
	s->backoff_ms = BACKOFF_MIN_MS;
	if (c->per_cpu_conns) {
		s->data = calloc((size_t)ncpus(s), sizeof(*s->data));
		if (!s->data)
			goto out;
	}
	if (!c->no_pushdown && kfilter_new(h->t, &s->kf) < 0)
		goto out;
	if (comms_new(&s->comms) < 0)
		goto out;
	*out = s;
	return 0;
out:
	session_free(s);
	return ret;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	links_close(s);
	free(s->data);
	kfilter_free(s->kf);
	comms_free(s->comms);
	free(s);
}
