/*
 * pump.c - the agent's pages on their way: reader -> spool -> ship, the
 * programs' rings, the counters, and the agent's loop (see pump.h).
 *
 * A kernel page is kept in the spool as a whole frame (frame header, page
 * header, page) until the collector acknowledges it: read(2) fills a spool
 * slot in place (page_room()), the mmap path copies into one. It is sent
 * from there, one write per frame, when the connection takes it without
 * waiting; older pages of a CPU always go first (spool_pending()). On the
 * splice path a page may go from the kernel's pipe into the socket
 * instead, the spool copy then only for resending after a reconnect.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the agent's lines, wherever in the agent they come from */
#define LOG_PREFIX "agent"
#include "agent/pump.h"
#include "agent/ship.h"
#include "agent/spool.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"

#define PERIODIC_MS		10000	/* clock, cpu stats, and the first
					 * time kallsyms and printk_formats
					 * (cmdlines: session_names()) */
#define USER_SCAN_MS		250	/* look for new traced programs */
#define USER_SCAN_ARMED_MS	5000	/* ... armed, while none is attached */
#define USER_POLL_MS		10	/* drain programs' rings while attached */
#define USER_DRAIN_TRIES	50	/* final drain: rounds until nothing is left */
#define FULL_WAIT_MS		20	/* spool full: look for ACKs this often */

struct pump {
	struct pump_conf c;
	struct tracing *t;		/* borrowed */
	struct session *s;		/* borrowed: the connections */
	struct reader *r;		/* NULL until pump_open_reader() */
	struct spool *sp;		/* pages not acknowledged yet */
	uint8_t *room;			/* spool room read(2) fills */
	struct tracing_cpu_stats *kstats;	/* last read, per CPU */
	struct ubuf *u;			/* programs' rings; NULL with no_user */
	struct ubuf_ops uops;
	int64_t user_scan, user_flush;	/* next times, ms */
	int *wake;			/* READER_WAKE_MAX(ncpus): the links' sockets */
	struct pollfd *armed;		/* an armed recorder's poll set: the links'
					 * sockets and its freeze watch (ncpus) */
	bool watch_woken;		/* a freeze watch descriptor polled readable */
	bool pending_block;		/* send_pending()/final drain: may wait */
	bool snapping;			/* reading a frozen flight recorder */
};

void pump_cpu_stats(struct pump *p, int cpu, struct proto_cpu_stats *out)
{
	struct reader_counts c;
	struct spool_counts sc;

	reader_counts(p->r, cpu, &c);
	spool_counts(p->sp, cpu, &sc);
	*out = (struct proto_cpu_stats){
		.cpu = (uint32_t)cpu, .pages = c.pages,
		.events = c.events, .bytes = c.bytes,
		.overrun = p->kstats[cpu].overrun,
		.dropped = p->kstats[cpu].dropped,
		.commit_overrun = p->kstats[cpu].commit_overrun,
		.resent_pages = sc.resent_pages,
		.lost_pages = sc.lost_pages, .lost_events = sc.lost_events,
		.pages_mmap = c.pages_mmap, .pages_splice = c.pages_splice,
		.pages_read = c.pages_read, .copied_bytes = c.copied_bytes };
}

/* MSG_CPU_STATS for every CPU: our counters and the kernel's. */
static int send_cpu_stats(struct pump *p)
{
	struct proto_msg m = { .type = MSG_CPU_STATS };
	int cpu, ret;

	for (cpu = 0; cpu < tracing_ncpus(p->t); cpu++) {
		ret = tracing_cpu_stats(p->t, cpu, &p->kstats[cpu]);
		if (ret < 0)
			log_warn("cpu%d: cannot read stats: %s", cpu,
				 tc_strerror(ret));
		pump_cpu_stats(p, cpu, &m.cpu_stats);
		ret = ship_msg(session_control(p->s), &m);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* session_pages .stats: the CPUs' counters, then the programs'. */
static int report_stats(void *arg)
{
	struct pump *p = arg;
	int ret;

	ret = send_cpu_stats(p);
	if (ret == 0 && p->u)
		ret = ubuf_stats(p->u, &p->uops);
	return ret;
}

/* session_pages .acked */
static void forget_acked(void *arg, uint16_t stream, uint64_t seq)
{
	struct pump *p = arg;

	spool_ack(p->sp, stream, seq);
}

/* session_pages .freeze: the collector's FREEZE, run by pump_run() */
static void freeze_asked(void *arg, const struct proto_freeze *f)
{
	struct pump *p = arg;

	if (p->c.rec)
		recorder_asked(p->c.rec, f);
}

/* session_pages .unacked */
static bool any_unacked(void *arg)
{
	struct pump *p = arg;

	return !spool_empty(p->sp);
}

/* Spooled pages are whole page frames (on_page()): sent as they are. */
static int resend_page(void *arg, const struct spool_page *page)
{
	struct pump *p = arg;

	return ship_frames(session_link(p->s, page->stream), page->data,
			   page->len);
}

/* A flight recorder's last SNAP_ENDs again, on a new control connection. */
static int resend_snap_end(void *arg, const struct proto_snap_end *e)
{
	struct pump *p = arg;
	struct proto_msg m = { .type = MSG_SNAP_END, .snap_end = *e };

	return ship_msg(session_control(p->s), &m);
}

/*
 * session_pages .replay: the programs, a recorder's last snapshot ends,
 * then every page not acknowledged.
 */
static int replay(void *arg, char *why, size_t len)
{
	struct pump *p = arg;
	const char *links;
	int ret = 0;

	if (p->u)
		ret = ubuf_reannounce(p->u, &p->uops);
	if (ret == 0 && p->c.rec)
		ret = recorder_replay(p->c.rec, resend_snap_end, p);
	if (ret == 0 && (ret = spool_resend(p->sp, resend_page, p)) < 0) {
		links = session_links_error(p->s);
		tc_seterr(why, len, "resending: %s",
			  links[0] ? links : tc_strerror(ret));
	}
	return ret;
}

/* A page waiting in the spool, sent from there; while streaming only as
 * much as goes out without waiting (pending_block false). */
static int send_pending_page(void *arg, const struct spool_page *page)
{
	struct pump *p = arg;
	struct ship *link = session_link(p->s, page->stream);

	if (!p->pending_block && ship_would_block(link, page->len))
		return 1;
	return ship_frames(link, page->data, page->len);
}

/* Send the unsent pages of @stream (-1: all) that the socket takes. */
static void send_pending(struct pump *p, int stream)
{
	int ret;

	if (!session_connected(p->s) || !spool_pending(p->sp, stream))
		return;
	ret = spool_send_pending(p->sp, stream, send_pending_page, p);
	if (ret < 0)
		session_lost(p->s, session_links_error(p->s)[0] ?
			     session_links_error(p->s) : tc_strerror(ret));
}

/* Whether splicing page @pg must wait: older pages of its CPU wait in the
 * spool, or the collector is not taking data as fast as we read it. */
static bool must_wait(struct pump *p, const struct reader_page *pg)
{
	return spool_pending(p->sp, pg->cpu) ||
	       ship_would_block(session_link(p->s, pg->cpu),
				FRAME_HDR_SIZE + pg->head_len + pg->len);
}

/* The frame header of @pg followed by its page header, into @pre of
 * FRAME_HDR_SIZE + 64 bytes. Return: bytes written or -EINVAL. */
static int frame_prefix(const struct reader_page *pg, uint8_t flags,
			uint8_t *pre)
{
	struct frame_hdr h = { .type = FRAME_PAGE, .flags = flags,
			       .stream = (uint16_t)pg->cpu, .seq = pg->seq,
			       .len = (uint32_t)(pg->head_len + pg->len) };

	if (pg->head_len > 64 || pg->len > FRAME_MAX_PAYLOAD - pg->head_len)
		return -EINVAL;
	frame_hdr_pack(&h, pre);
	if (pg->head_len)
		memcpy(pre + FRAME_HDR_SIZE, pg->head, pg->head_len);
	return FRAME_HDR_SIZE + (int)pg->head_len;
}

/* reader_buf_fn: read(2) puts pages straight into the spool, after room
 * for their frame header (NULL: the reader's buffer, then copied). */
static uint8_t *page_room(void *arg, int cpu, size_t len)
{
	struct pump *p = arg;

	(void)cpu;
	p->room = spool_reserve(p->sp, FRAME_HDR_SIZE + len);
	return p->room ? p->room + FRAME_HDR_SIZE : NULL;
}

/*
 * A page from the kernel, kept in the spool as a whole frame until the
 * collector acknowledges it: read into it in place (page_room()) or
 * copied there (the mmap path: the page goes back to the kernel when this
 * returns). It is sent from there, one TLS write for the frame, when the
 * socket takes it. On the splice path the page may go into the socket
 * from the pipe instead; the spool copy is then only for resending.
 */
static int on_page(void *arg, const struct reader_page *pg)
{
	struct pump *p = arg;
	uint8_t flags = pg->missed_events ? FRAME_F_MISSED_EVENTS : 0;
	uint8_t pre[FRAME_HDR_SIZE + 64];
	bool sent = false, in_place;
	int n, ret;

	if (p->snapping)
		recorder_page(p->c.rec, pg, tracing_page_size(p->t));
	in_place = p->room && !pg->head_len &&
		   pg->data == p->room + FRAME_HDR_SIZE;
	n = frame_prefix(pg, flags, in_place ? p->room : pre);
	if (n < 0)
		return n;
	if (pg->splice_fd >= 0 && session_can_splice(p->s) &&
	    (p->pending_block || !must_wait(p, pg))) {
		ret = ship_page_splice(session_link(p->s, pg->cpu),
				       (uint16_t)pg->cpu, pg->seq, flags,
				       pg->splice_fd, pg->len);
		if (ret < 0)
			session_lost(p->s, session_links_error(p->s));
		sent = ret == 0;
	}
	if (spool_empty(p->sp))
		session_ack_wait_start(p->s);
	if (in_place)
		ret = spool_commit(p->sp, (uint16_t)pg->cpu, pg->seq, flags,
				   pg->events, p->room, (size_t)n + pg->len,
				   sent);
	else
		ret = spool_add_prefixed(p->sp, (uint16_t)pg->cpu, pg->seq,
					 flags, pg->events, pre, (size_t)n,
					 pg->data, pg->len, sent);
	p->room = NULL;
	if (ret == 0 && !sent)
		send_pending(p, pg->cpu);
	return ret;
}

/* A failed reader call: the reader's reason. */
static int read_failed(struct pump *p, int ret, char *why, size_t len)
{
	tc_seterr(why, len, "reading the ring buffers of instance %s: %s",
		  tracing_name(p->t), tc_strerror(ret));
	return ret;
}

static int user_msg(void *arg, const struct proto_msg *m)
{
	struct pump *p = arg;
	struct ship *ctl = session_control(p->s);

	return ctl ? ship_msg(ctl, m) : -ENOTCONN;
}

static int user_page(void *arg, uint16_t stream, uint64_t seq, bool missed,
		     const void *data, size_t len)
{
	struct pump *p = arg;
	struct ship *ctl = session_control(p->s);

	return ctl ? ship_page(ctl, stream, seq, missed ? FRAME_F_MISSED_EVENTS : 0,
			       NULL, 0, data, len) : -ENOTCONN;
}

/*
 * How often to look for new traced programs: an armed flight recorder,
 * which should cost next to nothing while nothing happens, looks less
 * often while none is attached.
 */
static int user_scan_ms(const struct pump *p)
{
	return p->c.rec && !ubuf_active(p->u) ? USER_SCAN_ARMED_MS : USER_SCAN_MS;
}

/*
 * Traced programs' rings. A program's buffer fills far faster than the
 * agent's --flush-ms, so while any program is attached it is drained every
 * USER_POLL_MS; new programs are looked for every USER_SCAN_MS. Pages are
 * taken only while connected: otherwise they wait in the program's ring,
 * which drops (or overwrites) and counts, as the kernel's does. They do not
 * go through the spool; a page whose connection breaks is counted lost.
 */
static void user_step(struct pump *p, bool flush)
{
	int64_t now = util_now_ms();
	struct ship *ctl;
	int ret = 0;

	if (!p->u || !session_connected(p->s))
		return;
	if (p->c.snapshot && *p->c.snapshot) {
		*p->c.snapshot = 0;
		ubuf_trigger(p->u);
	}
	if (now >= p->user_scan) {
		ret = ubuf_scan(p->u, &p->uops);
		p->user_scan = now + user_scan_ms(p);
	}
	flush = flush || now >= p->user_flush;
	if (flush)
		p->user_flush = now + p->c.flush_ms;
	if (ret == 0)
		ret = ubuf_poll(p->u, &p->uops, flush);
	ctl = session_control(p->s);
	if (ret < 0)
		session_lost(p->s, ship_last_error(ctl)[0] ? ship_last_error(ctl)
							    : tc_strerror(ret));
}

/* The last of the programs' rings: end partial pages, ship until a round
 * finds nothing (bounded: a program still writing is cut off). */
static void user_drain(struct pump *p)
{
	int i, ret;

	for (i = 0; p->u && session_connected(p->s) && i < USER_DRAIN_TRIES; i++) {
		ret = ubuf_scan(p->u, &p->uops);
		if (ret == 0)
			ret = ubuf_poll(p->u, &p->uops, true);
		if (ret < 0) {
			session_lost(p->s, ship_last_error(session_control(p->s)));
			return;
		}
		if (ret == 0 && i > 0)
			return;
		poll(NULL, 0, USER_POLL_MS);
	}
}

/* Open the programs' ring directory; only an explicit --user-dir must exist. */
static int user_open(struct pump *p, const struct ring_clock_conv *tsc,
		     char *why, size_t len)
{
	int ret;

	p->uops = (struct ubuf_ops){ user_msg, user_page, p };
	if (p->c.no_user)
		return 0;
	ret = ubuf_new(p->c.user_dir, &p->u);
	if (ret == 0 && tsc)
		ubuf_set_conv(p->u, tsc);
	if (ret < 0 && p->c.user_dir) {
		tc_seterr(why, len, "--user-dir %s: %s", p->c.user_dir,
			  tc_strerror(ret));
		return ret;
	}
	if (ret < 0)
		log_warn("%s: %s; not looking for traced programs",
			 UBUF_DEFAULT_DIR, tc_strerror(ret));
	return 0;
}

/*
 * How long the loop may sleep: until the next flush, programs' scan or
 * drain, periodic report, names read, reconnect or recorder deadline.
 * An armed flight recorder flushes nothing and reads names only at a
 * freeze, so it sleeps until the periodic report unless something wakes
 * it (agent/recorder.h).
 */
static int next_timeout(struct pump *p, int64_t end, int64_t periodic)
{
	int64_t now = util_now_ms(), t = p->c.rec ? PERIODIC_MS : p->c.flush_ms;
	bool connected = session_connected(p->s);

	if (p->u && ubuf_active(p->u) && t > USER_POLL_MS)
		t = USER_POLL_MS;
	else if (p->u && connected && p->user_scan - now < t)
		t = p->user_scan - now;

	if (end && end - now < t)
		t = end - now;
	if (periodic - now < t)
		t = periodic - now;
	if (connected && !p->c.rec && session_names_due(p->s) - now < t)
		t = session_names_due(p->s) - now;
	if (!connected && session_next_try(p->s) - now < t)
		t = session_next_try(p->s) - now;
	if (connected && spool_pending(p->sp, -1) && t > FULL_WAIT_MS)
		t = FULL_WAIT_MS;
	if (p->c.rec && recorder_wait_ms(p->c.rec, now) >= 0 &&
	    recorder_wait_ms(p->c.rec, now) < t)
		t = recorder_wait_ms(p->c.rec, now);
	return t < 0 ? 0 : (int)t;
}

/*
 * An armed flight recorder reads no page (that would empty the buffer it
 * keeps): it only waits for what the collector sends (a FREEZE, clock
 * probes) and for its freeze watch (the kernel froze it at the
 * --freeze-on event), until the timeout.
 */
static void armed_wait(struct pump *p, int timeout_ms)
{
	int ncpus = tracing_ncpus(p->t), k = 0, w;
	int n = session_wake_fds(p->s, p->wake, READER_WAKE_MAX(ncpus));

	for (int i = 0; i < n; i++)	/* the control link first: FREEZE comes there */
		if (p->wake[i] >= 0)
			p->armed[k++] = (struct pollfd){ .fd = p->wake[i], .events = POLLIN };
	w = k;
	n = recorder_fds(p->c.rec, p->wake, READER_WAKE_MAX(ncpus));
	for (int i = 0; i < n && i < ncpus; i++)
		p->armed[k++] = (struct pollfd){ .fd = p->wake[i], .events = POLLIN };
	p->watch_woken = false;
	if (poll(p->armed, (nfds_t)k, timeout_ms) <= 0)
		return;
	for (int i = w; i < k; i++)
		p->watch_woken |= (p->armed[i].revents & (POLLIN | POLLERR)) != 0;
}

/*
 * Freeze the flight recorder for the collector's FREEZE: tracing off,
 * SNAP_BEGIN, every page of the buffer (spooled and sent as any page),
 * SNAP_END with what they held; tracing on again at the collector's thaw. A lost connection is
 * not an error: its pages are sent again after the reconnect, and the
 * markers are lost with it (the collector's record stays "asked").
 */
static int snapshot(struct pump *p, char *why, size_t len)
{
	struct proto_msg m = { .type = MSG_SNAP_BEGIN };
	int ret = recorder_freeze(p->c.rec, &m.snap_begin);

	if (ret < 0)
		log_warn("flight recorder: cannot switch tracing off: %s", tc_strerror(ret));
	/*
	 * The freeze is done; the drain is not urgent. Agents sharing a host
	 * (containers, bench/run recorder's eight) woke for the same FREEZE:
	 * without the yield, the first one's drain holds a core for its whole
	 * slice while the others wait to switch tracing off, and each later
	 * freeze comes milliseconds later (freeze_ms_max 20-26 ms against 2-10
	 * with it, in A/B runs of bench/run recorder here).
	 */
	sched_yield();
	if (session_connected(p->s) && ship_msg(session_control(p->s), &m) < 0)
		session_lost(p->s, session_links_error(p->s));
	/* the names of the pids in the frozen pages: not read while armed */
	session_names(p->s, true);
	/* the pages go out before SNAP_END: sending may wait for the collector */
	p->snapping = p->pending_block = true;
	ret = reader_drain(p->r, on_page, p);
	if (ret >= 0)
		send_pending(p, -1);
	p->snapping = p->pending_block = false;
	if (ret < 0)
		return read_failed(p, ret, why, len);
	m = (struct proto_msg){ .type = MSG_SNAP_END };
	recorder_end(p->c.rec, &m.snap_end);	/* tracing stays off until the thaw */
	if (session_connected(p->s) && ship_msg(session_control(p->s), &m) < 0)
		session_lost(p->s, session_links_error(p->s));
	return 0;
}

/* The flight recorder's turn: a freeze asked for, or its trigger fired. */
static int recorder_step(struct pump *p, char *why, size_t len)
{
	struct proto_msg m = { .type = MSG_FROZE };

	if (recorder_frozen(p->c.rec, util_now_ms(), p->watch_woken, &m.froze) &&
	    session_connected(p->s) && ship_msg(session_control(p->s), &m) < 0)
		session_lost(p->s, session_links_error(p->s));
	return recorder_due(p->c.rec) ? snapshot(p, why, len) : 0;
}

/* Read pages unless the spool is full: then they wait in the kernel. */
static int read_some(struct pump *p, int timeout_ms, char *why, size_t len)
{
	int ret;

	if (p->c.rec) {
		armed_wait(p, timeout_ms);
		return 0;
	}
	if (spool_full(p->sp)) {
		poll(NULL, 0, timeout_ms < FULL_WAIT_MS ? timeout_ms :
			      FULL_WAIT_MS);
		return 0;
	}
	reader_set_wake_fds(p->r, p->wake, session_wake_fds(p->s, p->wake,
				READER_WAKE_MAX(tracing_ncpus(p->t))));
	ret = reader_poll(p->r, timeout_ms, on_page, p);
	return ret < 0 ? read_failed(p, ret, why, len) : 0;
}

int pump_run(struct pump *p, int64_t end, bool (*stop)(void *arg), void *arg,
	     char *why, size_t len)
{
	int64_t periodic = util_now_ms() + PERIODIC_MS;
	int ret;

	while (!stop(arg)) {
		session_reconnect(p->s);
		ret = read_some(p, next_timeout(p, end, periodic), why, len);
		if (ret < 0)
			return ret;
		send_pending(p, -1);
		session_check(p->s);	/* a FREEZE is taken here: run at once */
		if (p->c.rec && (ret = recorder_step(p, why, len)) < 0)
			return ret;
		user_step(p, false);
		if (util_now_ms() >= periodic) {
			session_periodic(p->s);
			periodic = util_now_ms() + PERIODIC_MS;
		}
		if (!p->c.rec)	/* an armed recorder's: at its freeze */
			session_names(p->s, false);
	}
	return 0;
}

int pump_drain(struct pump *p, char *why, size_t len)
{
	int ret;

	p->pending_block = true;	/* the end: nothing to read on for */
	send_pending(p, -1);
	/* an armed recorder's buffer was asked for by no one: it stays */
	ret = p->c.rec ? 0 : reader_drain(p->r, on_page, p);
	if (ret < 0)
		return read_failed(p, ret, why, len);
	user_drain(p);
	return 0;
}

/* session_count_fn: a CPU's pages as read, or (-1) the programs'. */
static void count_shipped(void *arg, int cpu, uint64_t *pages,
			  uint64_t *events)
{
	struct pump *p = arg;
	struct reader_counts c;
	struct ubuf_totals ut;

	*pages = *events = 0;
	if (cpu >= 0) {
		reader_counts(p->r, cpu, &c);
		*pages = c.pages;
		*events = c.events;
	} else if (p->u) {
		ubuf_totals(p->u, &ut);
		*pages = ut.pages;
		*events = ut.events;
	}
}

int pump_bye(struct pump *p)
{
	int ret = session_bye(p->s, count_shipped, p);

	if (ret < 0)
		return ret;
	spool_ack_all(p->sp);	/* DONE: everything sent is stored */
	return 0;
}

void pump_give_up(struct pump *p, uint64_t *pages, uint64_t *events)
{
	struct spool_counts sc;
	int cpu;

	*pages = *events = 0;
	spool_give_up(p->sp);
	for (cpu = 0; cpu < tracing_ncpus(p->t); cpu++) {
		spool_counts(p->sp, cpu, &sc);
		*pages += sc.lost_pages;
		*events += sc.lost_events;
	}
}

size_t pump_spool_peak(const struct pump *p)
{
	return spool_mem_peak(p->sp);
}

bool pump_user_totals(const struct pump *p, struct ubuf_totals *out)
{
	if (!p->u)
		return false;
	ubuf_totals(p->u, out);
	return true;
}

int pump_open_reader(struct pump *p, char *why, size_t len)
{
	enum reader_mode mode = p->c.read_mode;
	int ret;

	if (mode == READER_AUTO)
		mode = session_can_splice(p->s) ? READER_SPLICE : READER_READ;
	ret = reader_open(tracing_instance(p->t), tracing_ncpus(p->t),
			  tracing_page_size(p->t), mode, &p->r);
	if (ret < 0) {
		tc_seterr(why, len, "%scannot open the ring buffers of instance "
			  "%s: %s", mode == READER_MMAP ? "--read-mode mmap: " : "",
			  tracing_name(p->t), tc_strerror(ret));
		return ret;
	}
	reader_set_buf_fn(p->r, page_room, p);
	p->wake = calloc((size_t)READER_WAKE_MAX(tracing_ncpus(p->t)), sizeof(*p->wake));
	p->armed = calloc((size_t)(READER_WAKE_MAX(tracing_ncpus(p->t)) + tracing_ncpus(p->t)),
			  sizeof(*p->armed));
	if (!p->wake || !p->armed) {
		tc_seterr(why, len, "out of memory");
		return -ENOMEM;
	}
	if (mode == READER_SPLICE)
		log_info("splicing full pages from the ring buffers%s",
			 session_can_splice(p->s) ? " into the socket" :
			 " (copied: this socket cannot take them)");
	else if (p->c.read_mode == READER_AUTO)
		log_info("reading the ring buffers of %d CPUs with read(2): --read-mode auto "
			 "splices only into a socket that takes raw bytes (kernel TLS or "
			 "--insecure-plain), and maps none (a mapped page is copied into the "
			 "spool all the same, and measured slower; --read-mode mmap tries it)",
			 tracing_ncpus(p->t));
	else
		log_info("reading %d of %d CPUs through a mapped ring buffer%s",
			 reader_mapped(p->r), tracing_ncpus(p->t),
			 reader_mapped(p->r) < tracing_ncpus(p->t) ?
			 ", the others with read(2)" : "");
	return 0;
}

/* The spool: a page frame is a frame header, page header, page. */
static int spool_setup(struct pump *p, char *why, size_t len)
{
	int ret;

	ret = spool_open(tracing_ncpus(p->t), p->c.spool_mem_mb << 20,
			 p->c.spool_dir, (uint64_t)p->c.spool_disk_mb << 20,
			 &p->sp);
	/* a page frame: frame header, page header, page, lost-events count */
	if (ret == 0)
		ret = spool_set_slot(p->sp, FRAME_HDR_SIZE + 64 +
				     tracing_page_size(p->t));
	if (ret < 0)
		tc_seterr(why, len, "cannot set up the spool: %s",
			  tc_strerror(ret));
	return ret;
}

int pump_new(const struct pump_conf *c, struct tracing *t,
	     const struct ring_clock_conv *tsc, struct session *s,
	     struct pump **out, char *why, size_t len)
{
	struct session_pages pages = {
		.replay = replay, .stats = report_stats,
		.acked = forget_acked, .unacked = any_unacked, .freeze = freeze_asked,
	};
	struct pump *p = calloc(1, sizeof(*p));
	int ret = -ENOMEM;

	if (p)
		p->kstats = calloc((size_t)tracing_ncpus(t), sizeof(*p->kstats));
	if (!p || !p->kstats) {
		tc_seterr(why, len, "out of memory");
		goto out;
	}
	p->c = *c;
	p->t = t;
	p->s = s;
	ret = spool_setup(p, why, len);
	if (ret == 0)
		ret = user_open(p, tsc, why, len);
	if (ret < 0)
		goto out;
	pages.arg = p;
	session_set_pages(s, &pages);
	*out = p;
	return 0;
out:
	pump_free(p);
	return ret;
}

void pump_free(struct pump *p)
{
	if (!p)
		return;
	ubuf_free(p->u);
	reader_close(p->r);
	spool_close(p->sp);
	free(p->kstats);
	free(p->wake);
	free(p->armed);
	free(p);
}
