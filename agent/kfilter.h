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

#include <stddef.h>

#include "agent/tracing.h"
#include "proto/msg.h"

struct kfilter;

/*
 * kfilter_new - push-down state for the events of @t (which must outlive
 * it). Return: 0 and *@out; -ENOMEM.
 */
int kfilter_new(struct tracing *t, struct kfilter **out);

/*
 * kfilter_apply - set @f->text ("" clears) as the filter of @f's event in
 * the instance and queue the MSG_FILTER_STATUS answer: ok, or the kernel's
 * message (the filter file's text after a refused write; the kernel then
 * filters nothing for that event). An event the agent does not trace is
 * refused without touching tracefs. Out of memory loses the answer only
 * (logged).
 */
void kfilter_apply(struct kfilter *k, const struct proto_filter *f);

/*
 * kfilter_send - send the queued answers with @send (e.g. ship_msg()) and
 * forget them. Return: 0; the first error of @send (the rest stay queued).
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
