/*
 * comms.h - the kernel's pid -> comm (saved_cmdlines) and pid -> tgid
 * (saved_tgids) tables as the agent ships them in MSG_CMDLINES. Prefix
 * comms_.
 *
 * The kernel keeps the names in a table of fixed size (saved_cmdlines_size,
 * 6552 entries on our 6.18 kernels) that a busy machine turns over: a
 * short-lived task's name is gone once enough other tasks ran, and its
 * events then print "<...>". So the tables are read at an interval that
 * follows the turnover (see comms_read()) rather than every 10 s, and only
 * what changed since the last read is sent (the whole tables on a new
 * connection). An armed flight recorder reads them only at connect and
 * at its freezes (agent/pump.c). The files are read, never resized:
 * saved_cmdlines_size is global, and writing it empties the table for
 * every tracer of the host.
 */
#ifndef AGENT_COMMS_H
#define AGENT_COMMS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/msg.h"

#define COMMS_FIRST_MS	1000	/* the first interval */
#define COMMS_MIN_MS	250	/* a read of both files costs ~2 ms: <= 1% of a CPU */
#define COMMS_MAX_MS	10000

struct comms;

/* comms_new - empty tables, the first read due at once. Return: 0; -ENOMEM. */
int comms_new(struct comms **out);
void comms_free(struct comms *c);

/* comms_next - when the next read is due (util_now_ms() clock). */
int64_t comms_next(const struct comms *c);

/*
 * comms_read - read both tables now (@now: util_now_ms()). The entries
 * new or changed since the last read become the delta comms_send() sends.
 * The interval to the next read halves (down to COMMS_MIN_MS) when more
 * than a quarter of the names changed, doubles (up to COMMS_MAX_MS) when
 * less than 1/32 did. An unreadable file keeps its table as it was (and
 * warns once). Return: 0; -ENOMEM.
 */
int comms_read(struct comms *c, int64_t now);

/*
 * comms_send - the whole tables (@full) or the delta of the last read as
 * MSG_CMDLINES through @send: names first, at most 32768 a message, then
 * tgids, at most 65536 a message; nothing when there is nothing to send.
 * Return: 0; @send's first error.
 */
int comms_send(const struct comms *c, bool full,
	       int (*send)(void *arg, const struct proto_msg *m), void *arg);

/* comms_counts - entries in the tables and in the last delta (for tests, logs). */
void comms_counts(const struct comms *c, uint32_t *names, uint32_t *tgids,
		  uint32_t *names_changed, uint32_t *tgids_changed);

#endif
