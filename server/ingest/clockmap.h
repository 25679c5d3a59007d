/*
 * clockmap.h - one connection's map from the host's trace clock to
 * wall-clock time: a continuous, piecewise-linear offset (wall - trace)
 * that follows the latest clock point by slewing towards it instead of
 * stepping, so that a CPU's placed times never go backwards.
 *
 * A new target line L(t) = O + d (t - T) (a clock point and the drift
 * between the last two) starts a segment at s, the latest trace time
 * placed so far: from s the offset moves linearly from its value there to
 * meet L at s + W, W = max(1 s, |L(s) - offset(s)| / 0.5) of trace time
 * (so the wall clock runs at least at half speed), then follows L. Earlier
 * segments are kept (CLOCKMAP_SEGS), so a CPU whose pages arrive late is
 * placed by the segment its times fall in: the map of a given trace time
 * never changes after a point arrives. A correction of more than
 * CLOCKMAP_STEP_NS is a step (an old agent whose realtime was set): the
 * caller says so in the log.
 *
 * Deterministic: the map is a function of the points and of the trace
 * times noted as placed (clockmap_note()), which the caller takes from the
 * pages' bytes alone (every record of every page it walks, whether its
 * events are stored, filtered out or were stored before a crash), never
 * from which events it stored. So a journal replay of the same points and
 * pages places every event where the first pass did. A rotated journal
 * file does not begin with the points that built the map but with the map
 * itself (clocksrc_save(), a JREC_CLOCKMAP record after the context
 * messages), which its replay takes over whole (clocksrc_load()): a slew
 * under way at the rotation goes on as it did.
 */
#ifndef SERVER_INGEST_CLOCKMAP_H
#define SERVER_INGEST_CLOCKMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLOCKMAP_SEGS		8
#define CLOCKMAP_STEP_NS	INT64_C(1000000000)	/* larger: a step */
#define CLOCKMAP_MAX_DRIFT	1e-3	/* |drift| taken at most (1000 ppm) */

struct clockmap_seg {
	uint64_t t0;		/* trace ns the segment starts at */
	int64_t o0;		/* the offset there */
	double k;		/* offset change per trace ns until t1 */
	uint64_t t1;		/* the end of the slew */
	double d;		/* then: the target's drift */
};

struct clockmap {
	struct clockmap_seg seg[CLOCKMAP_SEGS];	/* ring, oldest first from head */
	unsigned n, head;
	uint64_t placed;	/* latest trace ns placed */
};

/* clockmap_init - an empty map (clockmap_offset() answers @off for all t). */
void clockmap_init(struct clockmap *m);

/*
 * clockmap_target - follow the line through (@trace_ns, @off) with @drift
 * (offset change per trace ns, clamped to CLOCKMAP_MAX_DRIFT) from now
 * on. Return: true when it stepped (a correction over CLOCKMAP_STEP_NS),
 * false when it slews (or is the first).
 */
bool clockmap_target(struct clockmap *m, uint64_t trace_ns, int64_t off, double drift);

/*
 * clockmap_offset - the offset of trace time @t; @fallback when the map
 * has no point yet.
 */
int64_t clockmap_offset(const struct clockmap *m, uint64_t t, int64_t fallback);

/*
 * clockmap_note - trace times up to @t are placed (or may be): a point
 * that arrives later changes the map only after them.
 */
void clockmap_note(struct clockmap *m, uint64_t t);

/*
 * Which clock places a host's events: its own samples (realtime - trace
 * clock, "host") or the collector's measurement ("measured"), the latter
 * when they disagree by more than the measurement's uncertainty plus the
 * tolerance (clock-tolerance). Disagreement: the host's line (its latest
 * sample, carried by the drift between its last two) at the measurement's
 * trace time, less the measured offset: > 0 when the host's realtime is
 * ahead. Drift: between the last two points of a series, at least 1 s
 * apart.
 */
struct clock_pt {
	uint64_t t;		/* trace ns */
	int64_t o;		/* offset: wall - trace */
	bool have;
};

struct clocksrc {
	struct clockmap map;
	struct clock_pt host[2], meas[2];	/* [0] the latest, [1] the one before */
	uint64_t unc;		/* the latest measurement's uncertainty */
	int64_t disagree;	/* see above; valid once a measurement came */
	bool measured;		/* placing by the measurement */
	int64_t tol_ns;		/* clock-tolerance */
};

#define CLOCKSRC_SWITCHED	1	/* the placing source changed */
#define CLOCKSRC_STEPPED	2	/* the map stepped (clockmap_target()) */

/* clocksrc_init - no points yet, tolerance @tol_ns. */
void clocksrc_init(struct clocksrc *c, int64_t tol_ns);

/* clocksrc_host - the host's sample (@t, @o). Return: CLOCKSRC_* flags. */
int clocksrc_host(struct clocksrc *c, uint64_t t, int64_t o);

/* clocksrc_measure - a measurement (@t, @o, uncertainty @unc). Return: CLOCKSRC_* flags. */
int clocksrc_measure(struct clocksrc *c, uint64_t t, int64_t o, uint64_t unc);

/* clocksrc_drift - the drift of series @pt (ppb; 0 before two points). */
int64_t clocksrc_drift_ppb(const struct clock_pt pt[2]);

/*
 * The whole state of a struct clocksrc but its tolerance, as bytes
 * (little-endian, fixed size): what a rotated journal file carries so
 * that its replay places events as the first pass did (clockmap.h's
 * head comment).
 *   0  u32 version (1)   4  u32 segments n (<= CLOCKMAP_SEGS)
 *   8  u64 placed       16  u64 unc   24  i64 disagree   32  u64 measured
 *  40  host[0], host[1], meas[0], meas[1]: u64 t, i64 o, u64 have (24 each)
 * 136  n segments, oldest first: u64 t0, i64 o0, f64 k, u64 t1, f64 d (40 each)
 */
#define CLOCKSRC_SAVE_VERSION	1
#define CLOCKSRC_SAVE_MAX	(136 + CLOCKMAP_SEGS * 40)

/* clocksrc_save - @c into @buf (CLOCKSRC_SAVE_MAX bytes). Return: the bytes written. */
size_t clocksrc_save(const struct clocksrc *c, uint8_t *buf);

/*
 * clocksrc_load - @c as clocksrc_save() wrote @len bytes @buf; @c keeps
 * its tolerance. Return: 0; TC_ERR_MSG_MALFORMED (another version, a size
 * or count that does not fit, a factor clockmap_target() does not make), @c
 * untouched.
 */
int clocksrc_load(struct clocksrc *c, const uint8_t *buf, size_t len);

#endif
