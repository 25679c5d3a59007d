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
 * Knowing that the kernel froze the instance (--freeze-on's `traceoff`
 * trigger fired) is the freeze watch's (freezewatch.h): the pump polls
 * recorder_fds() with the collector's sockets and calls recorder_frozen().
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
#define RECORDER_FROZE_WAIT_MS	5000	/* frozen by its trigger, no FREEZE came: re-arm */
#define RECORDER_KEEP		8	/* SNAP_ENDs sent again on each new connection */
#define RECORDER_THAW_WAIT_MS	10000	/* a snapshot ended, no thaw came: re-arm */

struct recorder_conf {
	size_t mb;			/* MiB per CPU; 0: not a recorder */
	const char *freeze_on;		/* 'EVENT [where FILTER]': a freeze watch; NULL: none */
	const char *group;		/* the freeze group (--group); NULL: none */
};

/* A --freeze-on argument is checked by freezewatch_parse(). */

/*
 * recorder_new - arm instance @t (its buffer size is the caller's,
 * tracing_open(), its clock set): options/overwrite 1, and with
 * @c->freeze_on a freeze watch (freezewatch_open(): `traceoff [if FILTER]`
 * on the event and the watch instance, both removed by recorder_free()).
 * @c is copied, its strings borrowed.
 * Return: 0 and *@out; freezewatch_parse()'s and freezewatch_open()'s
 * errors, -errno, TC_ERR_TRACEFS, with @err saying why.
 */
int recorder_new(const struct recorder_conf *c, struct tracing *t, struct recorder **out,
		 char *err, size_t errlen);

/*
 * recorder_free - close the freeze watch (no trigger, no watch instance
 * left) and free @r (the instance stays). NULL ok.
 */
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
 * kernel's overrun, summed over CPUs, grew since the last snapshot; off_ns:
 * the trace clock read once tracing was off for sure, by
 * recorder_freeze() after its tracing_on 0, or by recorder_frozen() when
 * it noticed the trigger: the freeze's measured moment, at or after every
 * event shipped).
 * Tracing stays off until the collector's thaw (recorder_asked()) or
 * RECORDER_THAW_WAIT_MS (recorder_frozen()).
 */
void recorder_end(struct recorder *r, struct proto_snap_end *e);

/*
 * recorder_fds - the freeze watch's descriptors to poll for POLLIN, up to
 * @max into @fds, while the recorder waits for its trigger (none while a
 * freeze is asked, being shipped, or held for its thaw: the watch is
 * drained at the thaw, so they would only keep poll() awake).
 * Return: how many (may exceed @max: then only @max written); 0 without
 * --freeze-on.
 */
int recorder_fds(const struct recorder *r, int *fds, int max);

/*
 * recorder_frozen - whether the kernel froze the instance (its --freeze-on
 * trigger fired): with @woken (a recorder_fds() descriptor polled
 * readable), or when the watch's fallback tick is due
 * (freezewatch_tick_ms()), the watch is checked. Also re-arms a recorder
 * whose thaw, or whose FREEZE after a FROZE, did not come in time.
 * Return: 1 once per trigger freeze, with *@f to send (MSG_FROZE; its
 * trace_ns is the trigger event's own timestamp on the instance's trace
 * clock, as the watch recorded it); 0 otherwise.
 */
int recorder_frozen(struct recorder *r, int64_t now_ms, bool woken, struct proto_froze *f);

/*
 * recorder_wait_ms - how long the pump may sleep from @now_ms before the
 * recorder needs it (a thaw or a FREEZE that did not come, the watch's
 * fallback tick); -1: no limit (the watch's descriptors wake the pump).
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

#endif
