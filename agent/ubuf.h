/*
 * ubuf.h - traced programs' ring buffers (our user-space ring in shared
 * memory, common/ring.h): discovery, attach, drain, and shipping through
 * callbacks the agent supplies. Prefix ubuf_.
 */
#ifndef AGENT_UBUF_H
#define AGENT_UBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ring.h"
#include "proto/msg.h"

#define UBUF_DEFAULT_DIR	"/dev/shm"
#define UBUF_FILE_PREFIX	"tracecollect."

/* How ubuf hands things to the shipper; a negative return stops the call. */
struct ubuf_ops {
	int (*msg)(void *arg, const struct proto_msg *m);
	int (*page)(void *arg, uint16_t stream, uint64_t seq, bool missed,
		    const void *data, size_t len);
	void *arg;
};

struct ubuf_totals {
	uint64_t programs;	/* attached so far */
	uint64_t pages, events, bytes;
	uint64_t lost;		/* dropped, overwritten or unfinished */
};

struct ubuf;

/*
 * ubuf_new - watch @dir (NULL: UBUF_DEFAULT_DIR) for files named
 * UBUF_FILE_PREFIX<pid>. Nothing is attached until ubuf_scan().
 * Return: 0 and *@out; -ENOMEM; -ENOENT/-ENOTDIR if @dir is no directory.
 */
int ubuf_new(const char *dir, struct ubuf **out);

/*
 * ubuf_set_conv - convert programs' TSC stamps with @c (the kernel
 * instance's, on "x86-tsc") instead of a conversion of the ubuf's own, so
 * that both kinds of events of one TSC value get one time.
 */
void ubuf_set_conv(struct ubuf *u, const struct ring_clock_conv *c);

/*
 * ubuf_scan - attach programs whose files appeared since the last scan
 * (their writes start now), announce each with MSG_GROUP and its
 * function symbols (MSG_SYMBOLS), and send the formats any attached program registered since. A file that is not a
 * valid ring is skipped with a warning, once.
 * Return: 0 or the first negative return of @ops.
 */
int ubuf_scan(struct ubuf *u, const struct ubuf_ops *ops);

/*
 * ubuf_poll - ship every complete page; with @flush, first end the partly
 * filled pages (idle CPUs, or at the end). Flight-recorder rings ship only
 * after their trigger sequence moved. Programs that died are recovered
 * (unfinished events counted), drained, announced with a final stats
 * message, detached, and their files removed.
 * Return: pages shipped (>= 0) or the first negative return of @ops.
 */
int ubuf_poll(struct ubuf *u, const struct ubuf_ops *ops, bool flush);

/*
 * ubuf_reannounce - on a new connection: MSG_GROUP, every format and the
 * symbols of every attached program again (the collector knows nothing of them).
 * Pages are never resent: a page whose connection broke is counted lost.
 * Return: 0 or @ops' negative return.
 */
int ubuf_reannounce(struct ubuf *u, const struct ubuf_ops *ops);

/* ubuf_trigger - trigger every attached flight-recorder ring (a snapshot). */
void ubuf_trigger(struct ubuf *u);

/*
 * ubuf_stats - one MSG_CPU_STATS per user stream (cpu = the stream id):
 * pages, events, bytes shipped; overrun = overwritten, dropped = dropped
 * when full plus unfinished. Return: 0 or @ops' negative return.
 */
int ubuf_stats(struct ubuf *u, const struct ubuf_ops *ops);

void ubuf_totals(const struct ubuf *u, struct ubuf_totals *out);

/* ubuf_active - how many programs are attached now. */
unsigned ubuf_active(const struct ubuf *u);

/* ubuf_free - detach from every program (their writes stop) and free. */
void ubuf_free(struct ubuf *u);

#endif
