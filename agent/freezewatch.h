/*
 * freezewatch.h - the agent's side of "freezing by an event" (issue 38,
 * `traceagent --freeze-on 'EVENT where FILTER'`): the kernel freezes the
 * agent's flight-recorder instance at the event itself, and the agent
 * learns of it within a millisecond at no cost while nothing happens.
 * Prefix freezewatch_.
 *
 *   main instance   the agent's (overwrite mode, the flight recorder):
 *                   carries `traceoff if FILTER` on EVENT, so the kernel
 *                   stops it at the matching event, in the event's context.
 *   watch instance  ours, tiny, "<main>-freezewatch": only EVENT enabled,
 *                   with FILTER as its event filter, on the main
 *                   instance's trace clock, buffer_percent 0, not in
 *                   overwrite mode. Its per_cpu/cpuN/trace_pipe_raw
 *                   descriptors poll readable when a record arrives, so
 *                   the agent's poll sleeps until the event fires; the
 *                   record's timestamp is the event's.
 *
 * The timestamp is the event's as the watch instance recorded it: the
 * same tracepoint hit on the same clock, read once more for the second
 * buffer, so not bit-equal to the main buffer's copy (on 6.18 about 1 us
 * after it, the main instance's probe and trigger running first, with no
 * other record of that CPU between: tests/test_freezewatch.c). The
 * trigger event in the main buffer is the last record of EVENT at or
 * before it.
 *
 * Where the kernel refuses buffer_percent 0 (poll would wait for a
 * fraction of the buffer), the watch still records, and the agent checks
 * it every FREEZEWATCH_TICK_MS instead (freezewatch_tick_ms(); one log
 * line says so).
 *
 * Not thread-safe: one thread (the agent's loop) owns a struct freezewatch.
 */
#ifndef AGENT_FREEZEWATCH_H
#define AGENT_FREEZEWATCH_H

#include <stddef.h>
#include <stdint.h>

#define FREEZEWATCH_TICK_MS	1	/* the fallback's check interval */
#define FREEZEWATCH_SUFFIX	"-freezewatch"	/* the watch instance: MAIN + this */

struct freezewatch;

/*
 * freezewatch_parse - split a --freeze-on spec, 'EVENT [where FILTER]',
 * parsed by common/query.h: one selector without glob characters
 * ("sched_switch" or "sched:sched_switch") and an optional filter in the
 * kernel's filter language.
 * @spec:   the text (at most QUERY_MAX_LEN bytes).
 * @event:  on success, "SYSTEM:NAME" or "NAME" (malloc'ed, the caller's).
 * @filter: on success, the filter text with blanks made spaces, or NULL
 *          without "where" (malloc'ed, the caller's). May be NULL to only
 *          check.
 * @err:    on failure, one or more lines saying where and why (the
 *          offending token under a caret for syntax errors).
 *
 * Return: 0; a query_parse() error; TC_ERR_SYNTAX (several events, a
 * glob); TC_ERR_TOO_LONG (a filter the kernel's trigger file cannot take
 * in one write); -ENOMEM.
 */
int freezewatch_parse(const char *spec, char **event, char **filter, char *err,
		      size_t errlen);

/*
 * freezewatch_open - arm: create the watch instance for instance
 * @main_instance and set `traceoff [if FILTER]` on @event there.
 * @event:  "SYSTEM:NAME", or "NAME" when one subsystem has it.
 * @filter: the kernel's filter language, or NULL (every hit freezes).
 * @clock:  the main instance's trace clock, or NULL to read it there.
 * @out:    on success, the armed watch (freezewatch_close() it).
 * @err:    on failure, one line (the kernel's error_log line where it
 *          gave one).
 *
 * The watch is armed before the trigger is set, so no freeze goes
 * unseen; on failure nothing is left behind.
 *
 * Return: 0; -ENOENT (no such main instance); TC_ERR_UNKNOWN_EVENT;
 * TC_ERR_AMBIGUOUS (a bare NAME in several subsystems); -EEXIST (the
 * watch instance exists, or the event has a traceoff trigger already);
 * -EOPNOTSUPP (no event triggers); -EINVAL (the kernel refused the
 * filter); -errno or TC_ERR_TRACEFS for other tracefs refusals; -ENOMEM.
 */
int freezewatch_open(const char *main_instance, const char *event, const char *filter,
		     const char *clock, struct freezewatch **out, char *err, size_t errlen);

/*
 * freezewatch_fds - the descriptors to poll for POLLIN (the watch's
 * per-CPU trace_pipe_raw, non-blocking), up to @max into @fds.
 * Return: how many there are (may exceed @max: then only @max written).
 */
int freezewatch_fds(const struct freezewatch *w, int *fds, int max);

/*
 * freezewatch_tick_ms - -1 when the descriptors wake the loop; else the
 * kernel refused buffer_percent 0 and the loop must call
 * freezewatch_check() at least every this many ms.
 */
int freezewatch_tick_ms(const struct freezewatch *w);

/*
 * freezewatch_check - whether the event fired: drains the watch (every
 * record on every CPU) and, when it held one, makes sure the main
 * instance is off (the kernel turned it off at the event; a hit that came
 * while it was off already, before freezewatch_rearm() turned it on, is
 * frozen here) and gives the earliest record's timestamp (the main
 * instance's trace clock) in *@trigger_ts.
 * Return: 1 fired (and *@trigger_ts; a failure to set tracing_on 0 is
 * logged, the trigger having done it); 0 not; -errno or
 * TC_ERR_PAGE_MALFORMED (a page the walk refused, and no hit found in it
 * nor in the pages and CPUs read past it).
 */
int freezewatch_check(struct freezewatch *w, uint64_t *trigger_ts);

/*
 * freezewatch_rearm - after the frozen buffer was taken: drain the watch
 * on every CPU, past pages the walk refuses (hits while frozen are not new
 * freezes), then tracing_on 1 on the main instance, whatever the drain
 * said: a drain that failed is logged (once per kind of error; a hit it
 * left may freeze the instance again at the next freezewatch_check()),
 * never a reason to leave the recorder off. The trigger stays set
 * throughout.
 * Return: 0; -errno or TC_ERR_TRACEFS (tracing_on 1 failed).
 */
int freezewatch_rearm(struct freezewatch *w);

/*
 * freezewatch_close - disarm: remove the trigger from the main instance,
 * close the descriptors, remove the watch instance, free @w. The main
 * instance's tracing_on is left as it is. NULL is fine.
 */
void freezewatch_close(struct freezewatch *w);

#endif
