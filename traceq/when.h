/*
 * when.h - the times traceq's --since and --until take.
 *
 *   2026-11-26T10:15:00Z     ISO 8601 with a zone (Z, +01:00, -0530)
 *   2026-11-26T10:15:00.25   without a zone: local time ("T" or a space)
 *   2026-11-26               midnight local time
 *   10:15, 10:15:30.5        a time of day, today, local time
 *   now, -10m, now-2h        relative to now
 *   end, end-10s             relative to the newest stored event
 *   @1795693277.745s, @1795693277745000000ns, ...ms, ...us
 *                            raw wall-clock time since the epoch, with a unit
 *
 * Units of a duration or a raw time: ns, us, ms, s, m (or min), h, d; a
 * fraction is allowed (1.5h). A bare number is refused: it was read as
 * nanoseconds before, which is never what a person typing seconds meant.
 * Everything is exact integer arithmetic in nanoseconds; values that do not
 * fit in int64 are refused.
 */
#ifndef TRACEQ_WHEN_H
#define TRACEQ_WHEN_H

#include <stddef.h>
#include <stdint.h>

enum when_base {
	WHEN_ABS,	/* @ns is wall-clock ns since the epoch */
	WHEN_END,	/* @ns is an offset (<= 0) from the newest stored event */
};

struct when {
	enum when_base base;
	int64_t ns;
};

/* The forms, one per line, for error messages and --help. */
extern const char when_forms[];

/*
 * when_parse - read @s (see above) into @out.
 * @now_ns: the wall clock now, in ns since the epoch (a parameter so that
 *          tests need no clock).
 * @err:    on failure, one sentence naming what was wrong.
 *
 * Local time is the process's time zone (TZ). Return: 0; TC_ERR_SYNTAX
 * (@err says why), -ERANGE (outside int64 nanoseconds; @err says so).
 */
int when_parse(const char *s, int64_t now_ns, struct when *out,
	       char *err, size_t errlen);

/* when_now_ns - the wall clock now (CLOCK_REALTIME), ns since the epoch: when_parse()'s @now_ns. */
int64_t when_now_ns(void);

#endif
