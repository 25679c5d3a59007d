/*
 * pump.h - the agent's pages on their way to the collector: from the
 * kernel's ring buffers (agent/reader.h) into the spool of pages kept
 * until acknowledged (agent/spool.h) and from there onto the session's
 * connections (agent/session.h), or spliced into them; the traced
 * programs' rings (agent/ubuf.h), shipped straight on the control
 * connection; and the per-CPU counters. pump_run() is the agent's loop.
 *
 * The pump registers itself with its session (struct session_pages): it
 * replays the programs and the un-acknowledged pages on each new
 * connection, reports the counters, and forgets the pages the collector
 * acknowledges. Everything runs on the agent's one thread. Prefix pump_.
 */
#ifndef AGENT_PUMP_H
#define AGENT_PUMP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/reader.h"
#include "agent/recorder.h"
#include "agent/session.h"
#include "agent/tracing.h"
#include "agent/ubuf.h"
#include "common/ring.h"
#include "proto/msg.h"

struct pump;			/* opaque: the pages of one run */

/* The options the pump works by. */
struct pump_conf {
	int flush_ms;			/* ship partly filled pages so often */
	enum reader_mode read_mode;	/* READER_AUTO: by the connection */
	const char *spool_dir;
	size_t spool_mem_mb;
	size_t spool_disk_mb;
	const char *user_dir;		/* programs' rings; NULL: the default,
					 * which may be missing */
	bool no_user;			/* do not look for traced programs */
	/* not an option: set (by a signal handler) to snapshot the programs'
	 * flight recorders; the pump clears it. NULL: never. */
	volatile sig_atomic_t *snapshot;
	/* not an option: the flight recorder (main.c's, --flight-recorder):
	 * while armed no page is read; NULL: pages are shipped as read */
	struct recorder *rec;
};

/*
 * pump_new - a pump for the instance @t, shipping on @s (both borrowed:
 * they must outlive the pump), with @c (copied): the spool (pages of
 * tracing_page_size(@t) and their headers in slots), the programs' ring
 * directory unless @c->no_user (a missing default directory is only
 * logged), programs' TSC stamps converted with @tsc (NULL: their own).
 * Registers with @s (session_set_pages()). No reader yet.
 *
 * Return: 0 and *@out; negative with @why saying why in one line. *@out
 * only on success.
 */
int pump_new(const struct pump_conf *c, struct tracing *t,
	     const struct ring_clock_conv *tsc, struct session *s,
	     struct pump **out, char *why, size_t len);

/*
 * pump_free - detach from the programs, close the readers, free the spool
 * and @p. NULL ok. The session stays (it is not the pump's).
 */
void pump_free(struct pump *p);

/*
 * pump_open_reader - open the kernel's ring buffers in the configured read
 * mode (READER_AUTO: splice when the session can take spliced pages, else
 * read(2)), pages read straight into the spool where they can be, and log
 * how pages will leave the kernel. Call once, after session_start()
 * (connected or not: disconnected, READER_AUTO reads with read(2)).
 *
 * Return: 0; negative with @why saying why in one line.
 */
int pump_open_reader(struct pump *p, char *why, size_t len);

/*
 * pump_run - the agent's loop until @stop(@arg) says stop (asked before
 * each round): reconnect when due, read pages (not while the spool is
 * full: then they wait in the kernel), send what waits in the spool, take
 * ACKs, filters and errors, drain and look for programs, and every 10 s
 * the periodic report. A lost connection is not an error: it comes back
 * in a later round. Waits end by @end (util_now_ms() time; 0: none).
 *
 * Return: 0 once stopped; negative with @why when reading failed.
 */
int pump_run(struct pump *p, int64_t end, bool (*stop)(void *arg), void *arg,
	     char *why, size_t len);

/*
 * pump_drain - the end, tracing off: from now on sending may wait for the
 * collector; send what waits in the spool, read what is left in the ring
 * buffers, then the last of the programs' rings (bounded: a program still
 * writing is cut off).
 *
 * Return: 0; negative with @why when reading failed.
 */
int pump_drain(struct pump *p, char *why, size_t len);

/*
 * pump_bye - session_bye() with the pages each connection carried; on
 * DONE the spool forgets every page (the collector stored them all).
 * Return: session_bye()'s.
 */
int pump_bye(struct pump *p);

/*
 * pump_give_up - count every page still kept as lost and forget it;
 * *@pages and *@events: the pages and events lost in all.
 */
void pump_give_up(struct pump *p, uint64_t *pages, uint64_t *events);

/* pump_cpu_stats - CPU @cpu's counters: the reader's, the spool's, the
 * kernel's as last read. */
void pump_cpu_stats(struct pump *p, int cpu, struct proto_cpu_stats *out);

/* pump_spool_peak - the most memory the spool's pages ever held, in bytes. */
size_t pump_spool_peak(const struct pump *p);

/*
 * pump_user_totals - the programs' rings' totals into *@out; false (and
 * *@out untouched) when the pump does not look for programs.
 */
bool pump_user_totals(const struct pump *p, struct ubuf_totals *out);

#endif
