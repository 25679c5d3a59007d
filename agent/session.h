/*
 * session.h - the agent's connections to its collector for the length of
 * a run: open and introduce them (HELLO with this run's session id, the
 * page header and the event formats, the kernel's symbols), take what
 * comes back (ACKs, pushed-down filters, errors), lose them and try again
 * with exponential backoff and jitter, send the periodic clock samples and
 * cmdlines, and end them with BYE/DONE.
 *
 * One control connection carries the control messages and, by default,
 * every page; with --connections per-cpu each CPU's pages get a data
 * connection of their own. They come and go together (session_lost()).
 * The pages are not the session's: the pump (agent/pump.h) writes them on
 * session_link() and tells the session, through struct session_pages,
 * what a new connection must be sent again, its counters, and where ACKs
 * go.
 *
 * Everything runs on the agent's one thread; the struct session_pages
 * callbacks are called from within session_*() calls. Prefix session_.
 */
#ifndef AGENT_SESSION_H
#define AGENT_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/hostinfo.h"
#include "agent/kfilter.h"
#include "agent/ship.h"
#include "agent/tracing.h"
#include "common/ring.h"
#include "proto/msg.h"
#include "proto/tls.h"

struct session;			/* opaque: the connections of one run */

#define SESSION_ADDRS_MAX	16	/* --connect A,B,C: collectors at most */

/* One collector's address. */
struct session_addr {
	char host[SHIP_HOST_MAX];
	char port[SHIP_PORT_MAX];
};

/* The options the session works by. */
struct session_conf {
	struct session_addr addrs[SESSION_ADDRS_MAX];	/* the collectors (--connect),
							 * tried in this order */
	unsigned naddrs;		/* at least 1 */
	struct tls_files tls;		/* --cert, --key, --ca */
	bool insecure_plain;		/* plain TCP to a loopback collector */
	bool no_pushdown;		/* refuse the collector's filters */
	bool per_cpu_conns;		/* --connections per-cpu */
	int ack_timeout_ms;		/* ACKs or write progress, at least */
	const volatile sig_atomic_t *stop;	/* set (a signal): session_start()
						 * stops retrying; NULL: none */
};

/*
 * What the session tells the collector about this host and its tracefs
 * instance. The pointers are borrowed: what they point to must outlive
 * the session.
 */
struct session_host {
	const struct hostinfo *hi;
	struct tracing *t;			/* the instance: CPUs, formats */
	const struct ring_clock_conv *tsc;	/* its TSC conversion (HELLO) */
	bool tsc_clock;			/* it runs on "x86-tsc": clock
					 * samples read the TSC via @tsc */
	bool kernel_symbols;		/* send /proc/kallsyms (always: the
					 * query side names %ps fields and
					 * function tracer addresses) */
	bool recorder;			/* a flight recorder (HELLO "recorder"):
					 * MSG_FREEZE goes to pages.freeze */
	const char *group;		/* its freeze group (--group); NULL: none */
};

/*
 * What the session asks of the one who keeps the pages (the pump). Each is
 * called on the agent's thread from within a session_*() call.
 */
struct session_pages {
	/*
	 * A new connection is introduced: send again what it must have (the
	 * programs' announcements, every page not acknowledged yet), on
	 * session_control() and session_link(). Return: 0, or negative: the
	 * connection is given up (@why then says why, or is left as it was).
	 */
	int (*replay)(void *arg, char *why, size_t len);
	/*
	 * The periodic report: the pages' counters (MSG_CPU_STATS) on
	 * session_control(). Return: 0 or negative (the connection is lost).
	 */
	int (*stats)(void *arg);
	/* The collector stored the pages of @stream up to @seq. */
	void (*acked)(void *arg, uint16_t stream, uint64_t seq);
	/* Whether any page waits for an ACK (the ACK timeout runs). */
	bool (*unacked)(void *arg);
	/* The collector asks the flight recorder to freeze (h.recorder only). */
	void (*freeze)(void *arg, const struct proto_freeze *f);
	void *arg;
};

/*
 * session_new - a session for @c (copied) introducing itself with @h
 * (copied; see struct session_host), not connected yet: a random session
 * id for every HELLO of this run (which also seeds the backoff's jitter),
 * and the filter push-down state unless @c->no_pushdown.
 *
 * Return: 0 and *@out; -ENOMEM. *@out only on success.
 */
int session_new(const struct session_conf *c, const struct session_host *h,
		struct session **out);

/*
 * session_set_pages - who keeps the pages (copied); set before the first
 * session_connect(). Until then a new connection replays nothing, reports
 * no counters, ACKs go nowhere and no page waits for one.
 */
void session_set_pages(struct session *s, const struct session_pages *p);

/* session_free - close every connection and free @s. NULL ok. */
void session_free(struct session *s);

/*
 * session_connect - connect (TLS, or plain TCP with insecure_plain),
 * to the collector that took the last connection, else to each of the
 * others in --connect's order (wrapping) until one takes it: a failover
 * is a reconnect to another address, with the same replay (every page
 * not acknowledged is sent again);
 * HELLO, page header and formats, the kernel's symbols, the per-CPU data
 * connections likewise, then the pages' replay. On success the backoff
 * starts over and the ACK timeout counts from now.
 *
 * Return: 0; negative with @why saying why in one line (every connection
 * is closed again).
 */
int session_connect(struct session *s, char *why, size_t len);

/*
 * session_start - the run's first session_connect(). A collector that
 * closed the connection in the TLS handshake or before WELCOME without a
 * word (its handshake caps gave this one up, or it is busy) is tried again
 * with the backoff for up to 60 s, one log line per 10 s, until
 * *c->stop is set. Once a collector has
 * welcomed the control connection it is reachable and takes this agent:
 * a failure after that (the collector closed a connection while the
 * agent was still introducing itself, e.g. its first commit met a
 * removed database) is a lost connection like any later one, given to
 * session_lost(), and the run goes on to reconnect.
 *
 * Return: 0 (connected, or welcomed and lost); negative with @why saying
 * why in one line when no collector welcomed this agent (wrong address,
 * certificates, protocol version: nothing to wait for).
 */
int session_start(struct session *s, char *why, size_t len);

/*
 * session_set_deadline - from now on no wait on the connections (reading
 * a reply, a write making no progress) lasts past @deadline (util_now_ms()
 * time; 0: no deadline): the end of the agent's drain.
 */
void session_set_deadline(struct session *s, int64_t deadline);

/*
 * session_reconnect - while disconnected and the backoff's delay is over,
 * one more attempt (counted in session_reconnects()): on success the
 * periodic report (session_periodic()) goes out at once; a failure is
 * logged and schedules the next attempt. Otherwise nothing.
 */
void session_reconnect(struct session *s);

/* session_addr - the collector connected now, or tried next. */
const struct session_addr *session_addr(const struct session *s);

/* session_connected - whether the connections are up. */
bool session_connected(const struct session *s);

/*
 * session_next_try - when the next reconnect attempt is due, in
 * util_now_ms() time (while connected: when the last one was).
 */
int64_t session_next_try(const struct session *s);

/*
 * session_lost - the connections failed (@why, logged): close them all,
 * clear the filters pushed down for them, and schedule a reconnect after
 * the backoff's delay (doubling up to 10 s; half to all of it, at random,
 * so that many agents losing one collector do not return in step).
 */
void session_lost(struct session *s, const char *why);

/*
 * session_check - take what the collector sent (ACKs, filters, errors),
 * answer pushed-down filters, and while pages wait for an ACK (struct
 * session_pages .unacked) give the connection up when none came for the
 * ACK timeout (a silent network cut). A failure calls session_lost().
 * Nothing while disconnected.
 */
void session_check(struct session *s);

/*
 * session_wake_fds - the sockets of the connections to the collector (the
 * control link's, then each data link's), for the pump to wake on (the
 * collector's clock probes, which it sends on every link: answered by
 * session_check()) into @fds, at most @max; -1 for a link disconnected or
 * whose reading is held. Return: how many were written.
 */
int session_wake_fds(const struct session *s, int *fds, int max);

/*
 * session_ack_wait_start - a page goes out while none waits for an ACK:
 * the ACK timeout counts from now.
 */
void session_ack_wait_start(struct session *s);

/*
 * session_periodic - clock sample on every connection (each one's pages
 * are decoded with its own), the kernel's symbols and printk_formats the
 * first time on a connection (unless the collector holds them), then the
 * pages' counters (struct session_pages .stats). A failure calls
 * session_lost(). Nothing while disconnected.
 */
void session_periodic(struct session *s);

/*
 * session_names - when due (session_names_due(), util_now_ms() clock), or
 * at once with @now, read saved_cmdlines and saved_tgids and send what
 * changed on every connection (agent/comms.h: the interval follows the
 * kernel's turnover; a new connection gets the whole tables at connect,
 * BYE the last changes). An armed flight recorder calls it only with
 * @now, at a freeze: its pages are read then only. A failure calls
 * session_lost(). Nothing while disconnected.
 */
void session_names(struct session *s, bool now);
int64_t session_names_due(const struct session *s);

/*
 * session_count_fn - for BYE: the pages and events read from CPU @cpu, or
 * with @cpu -1 those shipped on the control connection besides (the
 * programs' rings).
 */
typedef void (*session_count_fn)(void *arg, int cpu, uint64_t *pages,
				 uint64_t *events);

/*
 * session_bye - the periodic report, then BYE (counts from @count) and its
 * DONE on each connection: each CPU's own first (per-cpu), the control
 * connection last. session_done() sums the DONEs.
 *
 * Return: 0 (everything sent is stored); -ENOTCONN; negative when a BYE
 * failed (the connections are then lost, see session_lost()).
 */
int session_bye(struct session *s, session_count_fn count, void *arg);

/*
 * session_control - the control connection; NULL while disconnected. Valid
 * until a session_*() call that may lose the connections.
 */
struct ship *session_control(struct session *s);

/*
 * session_link - the connection CPU @cpu's pages go on: its own with
 * --connections per-cpu, else (and for the programs' streams, any @cpu
 * outside the CPUs) the control connection; NULL while disconnected.
 * Valid as session_control()'s.
 */
struct ship *session_link(struct session *s, int cpu);

/*
 * session_links_error - why the last write or read failed, on whichever
 * connection it was: "" when none did, "not connected" while
 * disconnected. Valid until the next session or ship call.
 */
const char *session_links_error(struct session *s);

/*
 * session_can_splice - whether connected and pages can be spliced into the
 * connections (kernel TLS, or plain TCP).
 */
bool session_can_splice(const struct session *s);

/* session_reconnects - reconnect attempts so far. */
uint64_t session_reconnects(const struct session *s);

/*
 * session_filter_stats - what the collector's pushed-down filters came to
 * (kfilter.h); false without push-down or when none came.
 */
bool session_filter_stats(const struct session *s, struct kfilter_stats *out);

/* session_done - the DONEs of the last session_bye(), summed. */
const struct proto_done *session_done(const struct session *s);

#endif
