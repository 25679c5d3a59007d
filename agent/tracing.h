/*
 * tracing.h - the agent's tracefs instance: create it, choose its clock and
 * buffer size, enable events, read the format texts and per-CPU kernel
 * statistics, and remove it again. The top-level instance is only ever read
 * (the pid tables, printk_formats), never changed.
 */
#ifndef AGENT_TRACING_H
#define AGENT_TRACING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"

struct tracing;			/* opaque: one instance owned by the agent */
struct tracefs_instance;

#define TRACING_CLOCK	"mono"

/* Kernel counters of one CPU's ring buffer (per_cpu/cpuN/stats). */
struct tracing_cpu_stats {
	uint64_t entries;	/* events in the buffer, not yet read */
	uint64_t overrun;	/* events overwritten before they were read */
	uint64_t commit_overrun;
	uint64_t dropped;	/* events dropped, buffer full */
	uint64_t read;		/* events read so far */
};

/*
 * tracing_open - create the tracefs instance @name, set its trace clock to
 * TRACING_CLOCK and, when @buffer_kb > 0, its per-CPU buffer size. Tracing
 * stays off until tracing_start().
 *
 * A kernel that refuses TRACING_CLOCK leaves the instance on its own clock
 * (tracing_clock() names it, tracing_clock_refused() says why); refused
 * options (record-tgid, buffer_percent) are logged, one line each, and
 * done without. A refused @buffer_kb fails, unless the buffer has that
 * size already.
 *
 * An instance of that name that already exists is not ours: it is left
 * alone and the call fails with -EEXIST. After any failure nothing is left
 * behind and @err holds a one-line reason (which step, which name, why).
 *
 * Return: 0 and *@out (free with tracing_close()); -EEXIST; -errno or
 * TC_ERR_TRACEFS when tracefs refuses (not mounted, not writable, ...);
 * -ENOMEM. *@out only on success.
 */
int tracing_open(const char *name, size_t buffer_kb, struct tracing **out,
		 char *err, size_t errlen);

/*
 * tracing_set_clock - set the instance's trace clock to @clock (a name
 * from its trace_clock file, e.g. "x86-tsc"). Not written when the
 * instance runs on @clock already. On failure the clock stays what it was
 * and @err says why.
 *
 * Return: 0; -errno or TC_ERR_TRACEFS.
 */
int tracing_set_clock(struct tracing *t, const char *clock, char *err, size_t errlen);

/* tracing_clock - the instance's trace clock (TRACING_CLOCK, unless the
 * kernel refused it, until set). */
const char *tracing_clock(const struct tracing *t);

/* tracing_clock_refused - why the instance does not run on TRACING_CLOCK
 * (one line), or NULL when it does or another clock was set since. */
const char *tracing_clock_refused(const struct tracing *t);

/*
 * tracing_set_subbuf - set the instance's sub-buffer (page) size to @kb
 * KiB (buffer_subbuf_size_kb, Linux >= 6.8; the kernel rounds it up to a
 * power-of-two number of pages and keeps the buffer size). Call it before
 * opening readers; tracing_page_size() tells the size in effect. Not
 * written when the instance has that size already (a kernel may refuse
 * every write, even of its own value). On failure @err holds a one-line
 * reason.
 *
 * Return: 0; -EOPNOTSUPP when the kernel has no such setting; -errno or
 * TC_ERR_TRACEFS when it refuses.
 */
int tracing_set_subbuf(struct tracing *t, size_t kb, char *err, size_t errlen);

/*
 * tracing_enable - enable the events named by @spec in the instance:
 * "SYSTEM" (all its events) or "SYSTEM:EVENT". The events are remembered
 * for tracing_format(). On failure @err holds a one-line reason naming
 * @spec.
 *
 * Return: 0; TC_ERR_UNKNOWN_EVENT when @spec names no event (nothing is
 * enabled); TC_ERR_SYNTAX for an empty system or event part; -errno or
 * TC_ERR_TRACEFS when the kernel refuses; -ENOMEM.
 */
int tracing_enable(struct tracing *t, const char *spec, char *err,
		   size_t errlen);

/*
 * tracing_track - remember the event @sys:@ev for tracing_format() without
 * enabling it: events a tracer writes (ftrace:function, ...) have no
 * enable switch, but the collector still needs their formats.
 *
 * Return: 0; -ENOMEM.
 */
int tracing_track(struct tracing *t, const char *sys, const char *ev);

/* tracing_start/stop - switch the instance's tracing_on. Return: 0 or
 * TC_ERR_TRACEFS. */
int tracing_start(struct tracing *t);
int tracing_stop(struct tracing *t);

/*
 * tracing_close - disable the instance's events, switch it off, remove it
 * from tracefs and free @t. Safe with NULL; logs (but survives) a removal
 * failure.
 */
void tracing_close(struct tracing *t);

/* tracing_instance - the libtracefs handle (owned by @t). */
struct tracefs_instance *tracing_instance(struct tracing *t);

/* tracing_name - the instance's name (owned by @t). */
const char *tracing_name(struct tracing *t);

/* tracing_ncpus - CPUs with a per_cpu/cpuN directory in the instance
 * (highest N + 1); their ring buffers are numbered 0..ncpus-1. */
int tracing_ncpus(struct tracing *t);

/* tracing_page_size - the ring buffer's sub-buffer size in bytes
 * (buffer_subbuf_size_kb * 1024, or the page size on kernels without it). */
uint32_t tracing_page_size(struct tracing *t);

/* tracing_has_event - whether @system:@name is one of the instance's events
 * (enabled by tracing_enable() or remembered by tracing_track()). */
bool tracing_has_event(struct tracing *t, const char *system, const char *name);

/* tracing_event_count - how many events tracing_enable() enabled so far. */
size_t tracing_event_count(struct tracing *t);

/*
 * tracing_event_name - the @i-th event remembered (enabled or tracked):
 * its system and name, owned by @t. Return: 0; -ERANGE past the last.
 */
int tracing_event_name(struct tracing *t, size_t i, const char **system, const char **name);

/*
 * tracing_format - the @i-th enabled event's system, name and format text.
 *
 * *@system and *@name stay owned by @t; *@text is malloc()ed for the
 * caller, *@len its length.
 *
 * Return: 0; -ERANGE for a bad @i; -errno or TC_ERR_TRACEFS when the
 * format cannot be read. Out-parameters only on success.
 */
int tracing_format(struct tracing *t, size_t i, const char **system,
		   const char **name, char **text, size_t *len);

/*
 * tracing_header_page - the instance's events/header_page text, malloc()ed
 * for the caller, and its length.
 *
 * Return: 0; -errno or TC_ERR_TRACEFS. Out-parameters only on success.
 */
int tracing_header_page(struct tracing *t, char **text, size_t *len);

/*
 * tracing_events_file - the instance's file @file (e.g.
 * "events/header_event") as tracing_header_page() reads header_page.
 */
int tracing_events_file(struct tracing *t, const char *file, char **text, size_t *len);

/*
 * tracing_cpu_stats - read per_cpu/cpu@cpu/stats of the instance.
 *
 * Return: 0 and *@out; -errno or TC_ERR_TRACEFS when the file cannot be
 * read; TC_ERR_SYNTAX when it has none of the expected keys.
 */
int tracing_cpu_stats(struct tracing *t, int cpu,
		      struct tracing_cpu_stats *out);

/*
 * tracing_parse_stats - parse the text of a per_cpu stats file ("key: N"
 * lines; unknown keys and malformed lines are skipped).
 *
 * Return: 0 and *@out; TC_ERR_SYNTAX when no known key was found.
 */
int tracing_parse_stats(const char *text, size_t len,
			struct tracing_cpu_stats *out);

/*
 * The kernel's pid tables, top-level files shared by all instances (only
 * ever read), and the struct their items are.
 */
enum tracing_table {
	TRACING_CMDLINES,	/* saved_cmdlines, "PID COMM": struct proto_cmdline */
	TRACING_TGIDS,		/* saved_tgids, "PID TGID": struct proto_tgid; filled
				 * while some instance has options/record-tgid
				 * set, as ours does */
};

/*
 * tracing_table_read - the pid table @which, from its file.
 *
 * On success *@items is a malloc()ed array of *@count items of @which's
 * struct (free() it; NULL when *@count is 0).
 *
 * Return: 0; -errno or TC_ERR_TRACEFS when the file cannot be read; -ENOMEM.
 */
int tracing_table_read(enum tracing_table which, void **items, uint32_t *count);

/*
 * tracing_table_parse - the pid table @which from its text, @len bytes.
 * Malformed lines are skipped; comms are truncated to 15 bytes; at most
 * PROTO_MAX_CMDLINES (saved_cmdlines) or PROTO_MAX_TGIDS (saved_tgids)
 * entries are kept.
 *
 * Return: 0, *@items (malloc()ed, NULL when *@count is 0) and *@count;
 * -ENOMEM (nothing written).
 */
int tracing_table_parse(enum tracing_table which, const char *text,
			size_t len, void **items, uint32_t *count);

/*
 * tracing_printk_formats - the top-level printk_formats, verbatim, into
 * *@text (malloc()ed, NUL-terminated; "" when empty) and *@len.
 * Return: 0; -errno or TC_ERR_TRACEFS; -ENOMEM.
 */
int tracing_printk_formats(char **text, size_t *len);

#endif
