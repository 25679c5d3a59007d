/*
 * pushdown.h - filter push-down: which of the collector's resolved filters
 * an agent may also set on its own tracefs instance (events/SYS/NAME/
 * filter), so that the kernel drops those events before they are shipped.
 *
 * The collector keeps enforcing every filter (sink.c); push-down only
 * saves shipping. It is offered to agents whose HELLO says "pushdown"
 * (PROTOCOL.md, "filter" and "filter_status"), per connection and per
 * event: the first time an event's resolved filter is pushable, whenever
 * it changes (SIGHUP), and as "" (clear) when it goes away or stops being
 * pushable. The kernel is the judge of its own grammar: what it refuses,
 * the agent reports and the collector logs.
 */
#ifndef SERVER_PUSHDOWN_H
#define SERVER_PUSHDOWN_H

#include <stddef.h>

#include "common/filter.h"
#include "proto/msg.h"
#include "server/ingest/decode.h"

/* MSG_FILTER messages waiting to be sent to one agent. */
struct pushdown_q {
	struct proto_msg *msgs;
	size_t n;
};

/*
 * pushdown_text - the text to set in the kernel for filter @f, bound to the
 * fields of @t (the schema sink.c builds from them, index for index), or
 * NULL when it must stay on the collector; then *@why says why (a static
 * string).
 *
 * A filter is pushed only when the kernel keeps exactly the events we
 * keep, predicate by predicate (one that is not keeps the whole filter
 * here). What differs (kernel/trace/trace_events_filter.c):
 *
 * - COMM: here the agent's pid -> comm table for the event's common_pid,
 *   in the kernel the current task's comm (the next task of a
 *   sched_switch...).
 * - A fixed char[N] (FILTER_STATIC_STRING) is matched with the array's
 *   size as the string's length: a '*suffix' glob compares the array's
 *   last bytes (so "t.sh" never ends in "sh" there), '*infix*' searches
 *   past the NUL into whatever follows it in the array, and a full glob
 *   ('?', '[', '\', or an inner '*') reads up to a NUL, past the array
 *   when it has none. An exact match longer than N matches an unterminated
 *   array's N bytes. Exact (N bytes at most) and 'prefix*' agree.
 * - __data_loc / __rel_loc char[] (strings written by __string()) carry
 *   their length with the NUL, the kernel's contract for its matchers:
 *   every glob kind agrees (checked against the kernel).
 * - A '~' pattern whose first byte (after '!') is a digit is compared
 *   literally (MATCH_INDEX), so one with '*', '?', '[' or '\' differs.
 * - "char *" / "const char *" fields are strings to the kernel (it reads
 *   what they point to), numbers here; other string-like fields (char[]
 *   without a size, u8[N]) are not strings of the kernel's kind.
 */
const char *pushdown_text(const struct filter *f, const struct decode_type *t,
			  const char **why);

/*
 * pushdown_queue - append a MSG_FILTER for @system:@name with @text (NULL:
 * "", clear) to @q; the strings are copied.
 * Return: 0; -ENOMEM (@q unchanged).
 */
int pushdown_queue(struct pushdown_q *q, const char *system, const char *name,
		   const char *text);

/*
 * pushdown_take - move every queued message to the caller: *@msgs (free
 * each with proto_msg_free(), then the array with free()) and *@n; @q is
 * left empty.
 */
void pushdown_take(struct pushdown_q *q, struct proto_msg **msgs, size_t *n);

/* pushdown_q_free - free what @q holds and leave it empty. */
void pushdown_q_free(struct pushdown_q *q);


#endif
