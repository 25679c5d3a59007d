/*
 * mode_stats.c - traceq --stats and --drops: the collector's counter
 * tables, printed by stats.h; on stderr, what it has received and not
 * stored yet, and since when its storing is held up (a store down or locked).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/modes.h"
#include "traceq/stats.h"
#include "traceq/traceq.h"

int mode_stats_run(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_reply rep;
	int ret = client_ask(c, o->drops ? QOP_DROPS : QOP_STATS, NULL, &o->sel, &rep);

	if (ret)
		return ret;
	if (tq_stats_print(stdout, &rep, &o->sel, !o->drops, o->format == OUT_JSON) < 0) {
		fprintf(stderr, "traceq: out of memory\n");
		ret = 1;
	}
	if (client_say_stall(&rep))	/* stderr: the rows above stay the same shape */
		;
	else if (rep.unstored)
		fprintf(stderr, "traceq: the collector is still storing: %" PRIu64 " batches "
			"received and not yet stored, receive journal %.1f MB (--sync waits "
			"for them)\n", rep.unstored, (double)rep.journal_bytes / (1 << 20));
	qmsg_reply_free(&rep);
	return ret ? ret : fflush(stdout) == 0 ? 0 : 1;
}
