/*
 * recorder.h - the agent's flight recorder (issue 38, --flight-recorder):
 * the instance's ring buffer in overwrite mode (options/overwrite 1),
 * read by no one while armed, so it always holds the newest events; on
 * the collector's MSG_FREEZE (or the agent's own --freeze-on trigger) its
 * tracing is switched off, the whole buffer read and shipped as ordinary
 * pages between MSG_SNAP_BEGIN and MSG_SNAP_END, and tracing switched on
 * again. The pump runs the freeze (pump.c): this module keeps the state,
 * the instance's knobs and what the snapshot's pages hold. Prefix recorder_.
 *
 * Knowing that the kernel froze the instance (a `traceoff` trigger fired)
 * is recorder_frozen_poll()'s: the one hook a cheaper watch replaces.
 */
#ifndef AGENT_RECORDER_H
#define AGENT_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"

struct reader_page;
struct recorder;
struct tracing;

#define RECORDER_MB_MAX		4096	/* --flight-recorder: MiB per CPU, at most */
#define RECORDER_ASKED_MAX	8	/* freezes waiting their turn; more are dropped */
#define RECORDER_POLL_MS	10	/* PLACEHOLDER watch: tracing_on read this often */
#define RECORDER_FROZE_WAIT_MS	5000	/* frozen by its trigger, no FREEZE came: re-arm */
#define RECORDER_KEEP		8	/* SNAP_ENDs sent again on each new connection */
#define RECORDER_THAW_WAIT_MS	10000	/* a snapshot ended, no thaw came: re-arm */

struct recorder_conf {
	size_t mb;			/* MiB per CPU; 0: not a recorder */
	const char *freeze_on;		/* 'EVENT [where FILTER]': a traceoff trigger; NULL: none */
	const char *group;		/* the freeze group (--group); NULL: none */
};

/* A --freeze-on argument is checked as a --stacktrace one: stacks_check_opt(). */


/*
 * recorder_new - arm instance @t (its buffer size is the caller's,
 * tracing_open()): options/overwrite 1, and with @c->freeze_on a
 * `traceoff if FILTER` trigger on each traced event it names (removed by
 * recorder_free()). @c is copied, its strings borrowed.
 * Return: 0 and *@out; -errno, TC_ERR_TRACEFS, TC_ERR_UNKNOWN_EVENT with
 * @err saying why.
 */
int recorder_new(const struct recorder_conf *c, struct tracing *t, struct recorder **out,
		 char *err, size_t errlen);

/* recorder_free - remove the triggers and free @r (the instance stays). NULL ok. */
void recorder_free(struct recorder *r);

/*
 * recorder_asked - the collector's MSG_FREEZE @f: a freeze is due; with
 * "thaw", the snapshot the recorder holds (ended, tracing off) is whole:
 * tracing on again (a thaw of another snapshot is ignored).
 */
void recorder_asked(struct recorder *r, const struct proto_freeze *f);

/* recorder_due - whether a freeze waits (recorder_freeze() takes it). */
bool recorder_due(const struct recorder *r);

/*
 * recorder_freeze - the next freeze: the instance's tracing off (already
 * off when its trigger froze it), counts zeroed, *@b to send.
 * Return: 0; TC_ERR_TRACEFS (tracing could not be switched off).
 */
int recorder_freeze(struct recorder *r, struct proto_snap_begin *b);

/* recorder_page - count a page of the frozen buffer (pages, events, window). */
void recorder_page(struct recorder *r, const struct reader_page *pg, uint32_t page_size);

/*
 * recorder_end - the buffer is read: *@e to send (the loss: what the
 * kernel's overrun, summed over CPUs, grew since the last snapshot).
 * Tracing stays off until the collector's thaw (recorder_asked()) or
 * RECORDER_THAW_WAIT_MS (recorder_frozen_poll()).
 */
void recorder_end(struct recorder *r, struct proto_snap_end *e);

/*
 * recorder_frozen_poll - THE HOOK for the watch that notices the kernel
 * froze the instance (its --freeze-on trigger fired). Return: 1 once per
 * trigger freeze, with *@f to send (MSG_FROZE); 0 otherwise (only with
 * --freeze-on). It also re-arms a recorder whose thaw did not come.
 *
 * PLACEHOLDER, to be replaced by the freezewatch module: it reads the
 * instance's tracing_on every RECORDER_POLL_MS (one pread(2) of the file
 * kept open, and a wakeup: 100 a second while armed), so it
 * notices a freeze up to RECORDER_POLL_MS late and the event's time it
 * sends is the trace clock when it noticed, not the event's own.
 */
int recorder_frozen_poll(struct recorder *r, int64_t now_ms, struct proto_froze *f);

/*
 * recorder_wait_ms - how long the pump may sleep from @now_ms before the
 * recorder needs it (the placeholder watch, a trigger freeze that got no
 * FREEZE); -1: no limit.
 */
int recorder_wait_ms(const struct recorder *r, int64_t now_ms);

/*
 * recorder_replay - call @fn with each of the last RECORDER_KEEP
 * snapshots' SNAP_END, oldest first, for a new connection: a collector
 * that died before it journaled one gets it again (it stores a snapshot's
 * end once however often it comes), as un-acknowledged pages are resent.
 * Return: 0, or @fn's first negative return.
 */
int recorder_replay(const struct recorder *r, int (*fn)(void *arg, const struct proto_snap_end *e),
		    void *arg);

/* recorder_stats - snapshots shipped and tracing_on reads by the watch so far. */
void recorder_stats(const struct recorder *r, uint64_t *snapshots, uint64_t *polls);

#endif
