/*
 * hist.h - the kernel's hist-trigger syntax (Documentation/trace/
 * histogram.rst), as `traceq --hist SPEC QUERY` takes it: parse it from
 * untrusted text, and print it back as the kernel prints a trigger
 * ("# trigger info: hist:keys=...").
 *
 * What is taken (each as the kernel takes it, kernel/trace/
 * trace_events_hist.c):
 *   [hist:]keys=F[,F[,F]][:vals=V[,V]][:sort=S[,S]][:size=N]
 * - keys (key): up to 3 fields, each with at most one modifier: .hex,
 *   .sym, .execname (common_pid only: checked where the fields are known),
 *   .log2, .buckets=N (or .bucket=N, N > 0). `host` (the host's name) is a
 *   key of ours; common_cpu (or cpu/CPU when the event has no such field)
 *   is the event's CPU; common_timestamp (a key only, in ns of the
 *   collector's wall clock) the event's time, with .buckets=N the time
 *   in buckets of N ns (the page's timeline summaries).
 *   common_stacktrace (or the older spelling stacktrace, both named
 *   common_stacktrace as kernels since 6.5 print it) is the event's
 *   kernel stack: a key once, with no modifier, never a value.
 * - vals (values, val): up to 2 fields to sum, .hex allowed; "hitcount"
 *   is always kept (and may be named).
 * - sort: up to 2 of hitcount, a val or a key (by plain name), each
 *   .descending or .ascending; default hitcount ascending.
 * - size: 65..131072, rounded up to a power of two (default 2048): the
 *   entries kept, first come; the hits of other keys are counted as
 *   Dropped.
 * Refused with a clear error: the kernel's other attributes (name=,
 * clock=, pause, cont, clear, nohitcount, variables, actions, `if`),
 * expressions, and the modifiers we do not print (.sym-offset, .syscall,
 * .usecs, .percent, .graph, .stacktrace).
 *
 * Errors use struct filter_error (common/filter.h): code, byte position
 * and length in the spec text, and a one-line message, so
 * filter_error_format() can put a caret under it.
 */
#ifndef COMMON_HIST_H
#define COMMON_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/filter.h"

#define HIST_SPEC_MAX		4096	/* bytes of spec text */
#define HIST_NAME_MAX		63	/* bytes of a field name */
#define HIST_KEYS_MAX		3	/* the kernel's TRACING_MAP_KEYS_MAX */
#define HIST_VALS_MAX		2	/* sums beside hitcount (TRACING_MAP_VALS_MAX - 1) */
#define HIST_SORT_MAX		2	/* TRACING_MAP_SORT_KEYS_MAX */
#define HIST_SIZE_DEFAULT	2048	/* 1 << TRACING_MAP_BITS_DEFAULT */
#define HIST_SIZE_MAX		131072	/* 1 << TRACING_MAP_BITS_MAX */
#define HIST_SIZE_MIN		128	/* 1 << TRACING_MAP_BITS_MIN */

enum hist_mod {
	HIST_MOD_NONE,
	HIST_MOD_HEX,
	HIST_MOD_SYM,
	HIST_MOD_EXECNAME,
	HIST_MOD_LOG2,
	HIST_MOD_BUCKETS,
};

struct hist_field {
	char name[HIST_NAME_MAX + 1];
	enum hist_mod mod;
	uint64_t buckets;	/* HIST_MOD_BUCKETS: the bucket size (> 0) */
	bool stack;		/* common_stacktrace (or stacktrace): the event's kernel stack */
	size_t pos, len;	/* where it is in the spec text, for errors */
};

enum hist_sort_by { HIST_SORT_HITCOUNT, HIST_SORT_VAL, HIST_SORT_KEY };

struct hist_sort {
	enum hist_sort_by by;
	size_t i;		/* which val or key */
	bool descending;
};

struct hist_spec {
	struct hist_field keys[HIST_KEYS_MAX];
	size_t nkeys;
	struct hist_field vals[HIST_VALS_MAX];
	size_t nvals;
	struct hist_sort sort[HIST_SORT_MAX];
	size_t nsort;		/* >= 1: hitcount ascending when none given */
	uint32_t size;		/* a power of two, HIST_SIZE_MIN..HIST_SIZE_MAX */
};

/*
 * hist_parse - parse @text (at most HIST_SPEC_MAX bytes) into *@out.
 *
 * Return: 0 (*@out set); TC_ERR_SYNTAX, TC_ERR_TOO_LONG, TC_ERR_BAD_NUMBER,
 * TC_ERR_UNKNOWN_FIELD (a sort field that is no key or val), with @err
 * filled (may be NULL). *@out is written only on success.
 */
int hist_parse(const char *text, struct hist_spec *out, struct filter_error *err);

/* hist_mod_name - "hex", "sym", ... for @m; "" for HIST_MOD_NONE. */
const char *hist_mod_name(enum hist_mod m);

/*
 * hist_spec_format - the trigger as the kernel prints it in a hist file's
 * "# trigger info:" line, without " [active]": "hist:keys=...:vals=hitcount
 * [,V...]:sort=...:size=N". Writes at most @len bytes (NUL included).
 * Return: the length it needs (as snprintf).
 */
int hist_spec_format(const struct hist_spec *s, char *buf, size_t len);

#endif
