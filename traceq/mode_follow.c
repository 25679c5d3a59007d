/*
 * mode_follow.c - traceq --follow QUERY: the rows as the collector stores
 * them, page after page of QOP_TAIL from a cursor, until SIGINT, SIGTERM
 * or --limit; it rides out a lost collector (client_reconnect()).
 * The cursor is follow.h's (serve_live.c follows with it too).
 * Where the kernels lost events (losses.h), a loss line comes before the
 * first row at or after it, as select prints them: before each page the
 * losses from its earliest row on are asked for again (a loss is stored
 * with its page's events, so it is there by the time they are; a CPU's
 * pages, and their losses, may come after later ones of another CPU),
 * those printed already left out. (Not only those from the first row
 * on, as a window relative to the end has select print them: the first
 * row stored may be another CPU's, after the loss.)
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/follow.h"
#include "traceq/losses.h"
#include "traceq/modes.h"
#include "traceq/printer.h"
#include "traceq/traceq.h"

#define TRACEQ_FOLLOW_POLL_MS	100	/* --follow: the wait after an empty page */
#define TRACEQ_FOLLOW_RETRY_MS	500	/* --follow: the wait after no answer */

static volatile sig_atomic_t follow_stop;

static void follow_signal(int sig)
{
	(void)sig;
	follow_stop = 1;
}

/* Sleep @ms, or less when a signal comes. */
static void follow_sleep(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	if (!follow_stop)
		nanosleep(&ts, NULL);
}

/*
 * After a call that got no answer: over nng the socket dials again by
 * itself; a TLS connection is made anew, until it is back or a signal
 * comes. Return: 0 (try again), 1 (stopped).
 */
static int follow_reconnect(struct client *c, bool *said)
{
	if (!*said)
		fprintf(stderr, "traceq: --follow: lost the collector; trying again\n");
	*said = true;
	while (!follow_stop) {
		follow_sleep(TRACEQ_FOLLOW_RETRY_MS);
		if (client_reconnect(c) == 0)
			return 0;
	}
	return 1;
}

/*
 * --follow: pages of QOP_TAIL_WRITERS, the cursors (one per collector that
 * stores into the collector's database, issue 35) carried from one to the
 * next, across a lost collector too; QOP_TAIL and its one cursor
 * (last_id) with a collector from before it. An empty page waits a little
 * before the next; the collector keeps nothing for us between pages.
 */
int mode_follow_run(struct client *c, const struct traceq_opts *o)
{
	struct tq_follow fol;
	struct printer *out = NULL;
	struct losses *lost = NULL;
	struct sigaction sa = { .sa_handler = follow_signal };
	uint64_t printed = 0;
	bool said = false;
	int ret = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	tq_follow_init(&fol, o, 0);
	if (printer_new(c, o, &out) < 0 || losses_open(c, &o->sel, &lost) < 0) {
		printer_free(out);
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	printer_losses(out, lost, false);	/* bounded by losses_from() instead */
	while (ret == 0 && !follow_stop && (!o->limit || printed < o->limit)) {
		struct qmsg_reply rep;
		uint32_t limit = TRACEQ_PAGE_ROWS;
		bool waited = fol.waiting;

		if (o->limit && o->limit - printed < limit)
			limit = (uint32_t)(o->limit - printed);
		ret = tq_follow_page(c, &fol, limit, printed, &rep);
		if (ret == 1 && client_lost(c) && !follow_stop) {
			ret = follow_reconnect(c, &said);
			continue;
		}
		if (ret == 3) {	/* no stored event matches a selector yet */
			if (!waited)
				fprintf(stderr, "traceq: --follow: no event the query selects is "
					"stored yet; waiting for it (interrupt to stop)\n");
			ret = 0;
			follow_sleep(TRACEQ_FOLLOW_RETRY_MS);
			continue;
		}
		if (ret)
			break;
		if (said)
			fprintf(stderr, "traceq: --follow: the collector is back\n");
		said = false;
		if (rep.reset)
			fprintf(stderr, "traceq: --follow: the collector's database is not the one "
				"followed so far (replaced or emptied): following it from its start\n");
		if (rep.missed && !fol.from_start)	/* what retention took before we began: not ours */
			fprintf(stderr, "traceq: --follow: fell behind: %" PRIu64 " events were "
				"stored and removed by the collector's retention before they could "
				"be printed (of every event, matching or not)\n", rep.missed);
		if (rep.nrows)	/* those stored with this page's events, at or after its first */
			losses_from(lost, tq_follow_first_ts(&rep));
		ret = printer_page(out, &rep);
		printed += rep.nrows;
		if (ret == 0 && fflush(stdout) != 0)
			ret = 1;
		if (ret == 0 && !rep.more && !rep.nrows)
			follow_sleep(TRACEQ_FOLLOW_POLL_MS);
		qmsg_reply_free(&rep);
	}
	printer_free(out);
	losses_close(lost);
	return ret;
}
