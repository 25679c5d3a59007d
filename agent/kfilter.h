/*
 * kfilter.h - filter push-down on the agent: set the filters the collector
 * sends (MSG_FILTER) on the agent's own tracefs instance
 * (events/SYSTEM/EVENT/filter), so that the kernel drops what the collector
 * would drop anyway and it is never shipped, and answer each with what the
 * kernel said (MSG_FILTER_STATUS).
 *
 * The collector keeps enforcing every filter, so a filter the kernel
 * refuses costs only shipping. Filters set for one connection are cleared
 * when it ends (kfilter_clear_all()): the next collector may filter less.
 */
#ifndef AGENT_KFILTER_H
#define AGENT_KFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/tracing.h"
#include "proto/msg.h"

struct kfilter;

/* Bounds on what a collector's filters may cost the agent (kfilter.c). */
#define KFILTER_MAX_WAITING	256	/* events whose filter waits to be written */
#define KFILTER_MAX_ANSWERS	256	/* MSG_FILTER_STATUS not sent yet */
#define KFILTER_WRITES_PER_S	100	/* tracefs filter writes a second ... */
#define KFILTER_WRITE_BURST	1000	/* ... after a burst of this many */
#define KFILTER_LOG_BURST	20	/* log lines about filters per window */
#define KFILTER_LOG_WINDOW_MS	10000

/* What the collector's filters came to (the agent's summary). */
struct kfilter_stats {
	uint64_t received;	/* MSG_FILTERs taken */
	uint64_t replaced;	/* replaced by a later one for the event before written */
	uint64_t written;	/* tracefs filter writes */
	uint64_t log_left_out;	/* log lines left out by the rate limit */
	uint64_t unanswered;	/* answers dropped: too many waiting to be sent */
};

/*
 * kfilter_new - push-down state for the events of @t (which must outlive
 * it). Return: 0 and *@out; -ENOMEM.
 */
int kfilter_new(struct tracing *t, struct kfilter **out);

/*
 * kfilter_apply - take @f->text ("" clears) as the filter of @f's event:
 * it waits for kfilter_flush(), replacing a filter of the same event
 * still waiting (that one is neither written nor answered). An event the
 * agent does not trace is refused at once, without touching tracefs (its
 * answer queued). Out of memory loses the filter or the answer (logged).
 */
void kfilter_apply(struct kfilter *k, const struct proto_filter *f);

/*
 * kfilter_flush - write the waiting filters into the instance, as many as
 * the write budget allows now (KFILTER_WRITES_PER_S, KFILTER_WRITE_BURST),
 * and queue each one's MSG_FILTER_STATUS answer: ok, or the kernel's
 * message (the filter file's text after a refused write; the kernel then
 * filters nothing for that event).
 */
void kfilter_flush(struct kfilter *k);

/*
 * kfilter_full - whether the waiting filters or the unsent answers are at
 * their bound: then the caller reads no more MSG_FILTER (back-pressure on
 * the collector) until kfilter_flush() and kfilter_send() made room.
 */
bool kfilter_full(const struct kfilter *k);

/* kfilter_get_stats - the counts so far. */
void kfilter_get_stats(const struct kfilter *k, struct kfilter_stats *out);

/*
 * kfilter_send - send the queued answers with @send and forget them; @send
 * returns 0 (sent), > 0 (not now: it would wait for the collector) or an
 * error. Return: 0 (sent, or waiting for room: the rest stay queued); the
 * first error of @send (the rest stay queued).
 */
int kfilter_send(struct kfilter *k, int (*send)(void *arg, const struct proto_msg *m),
		 void *arg);

/*
 * kfilter_clear_all - clear every filter set since the last call and drop
 * the queued answers (the connection that asked is gone). Return: how
 * many filters could not be cleared (logged).
 */
size_t kfilter_clear_all(struct kfilter *k);

/* kfilter_set_count - how many events have a pushed-down filter now. */
size_t kfilter_set_count(const struct kfilter *k);

/* kfilter_free - clear every filter and free @k; NULL ok. */
void kfilter_free(struct kfilter *k);

#endif
