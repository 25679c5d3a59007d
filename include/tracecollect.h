/*
 * tracecollect.h - libtracecollect: instrument a program so traceagent
 * ships its events with the kernel's.
 *
 * tc_init() creates the program's ring file (/dev/shm/tracecollect.PID,
 * one lockless buffer per CPU, see common/ring.h); traceagent finds it,
 * maps it and turns writing on. Until then every TC_* macro costs one
 * load and one predictable branch. Events are registered with typed
 * fields; each registration becomes a format description in the kernel's
 * format-file syntax (like events/sched/sched_switch/format), so the
 * collector decodes and filters our events exactly like kernel ones.
 *
 * Thread-safe and async-signal-safe for writing (tc_write, tc_reserve,
 * tc_commit, and TC_WRITE); tc_init, tc_event_register and tc_printf are
 * not async-signal-safe.
 */
#ifndef TRACECOLLECT_H
#define TRACECOLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tc_mode {
	TC_MODE_PRODUCER = 0,	/* buffer full: newest events dropped */
	TC_MODE_OVERWRITE,	/* buffer full: oldest events dropped */
	TC_MODE_FLIGHT,		/* overwrite; shipped only after tc_trigger() */
};

struct tc_options {
	const char *path;	/* NULL: $TRACECOLLECT_DIR (default /dev/shm)
				 * /tracecollect.<pid>, where traceagent looks */
	enum tc_mode mode;
	uint32_t pages_per_cpu;	/* power of 2; 0: 256 (1 MiB per CPU at
				 * 4 KiB pages) */
	bool clock_mono;	/* CLOCK_MONOTONIC instead of the TSC */
	uint32_t thread_bufs;	/* buffers threads may take for themselves
				 * (the function graph tracer's; 0..256) */
	uint32_t page_size;	/* bytes per ring page: a power of 2,
				 * 4096..32768; 0: 4096, the kernel's */
};

/*
 * tc_init - create this process's ring file. Call once, early.
 * @opt: NULL for the defaults.
 * Return: 0; -EALREADY; -errno from creating the file.
 */
int tc_init(const struct tc_options *opt);

/* tc_shutdown - stop writing, unmap and remove the ring file. */
void tc_shutdown(void);

enum tc_type {
	TC_U8, TC_S8, TC_U16, TC_S16, TC_U32, TC_S32, TC_U64, TC_S64,
	TC_STRING,		/* char name[array_len], NUL-padded */
};

struct tc_field {
	const char *name;
	enum tc_type type;
	uint32_t array_len;	/* TC_STRING only: bytes */
};

struct tc_event {
	uint16_t id;		/* common_type in every record */
	uint32_t size;		/* bytes of fields after the 8-byte header */
	uint32_t nfields;
	uint32_t offsets[];	/* each field's offset in the fields blob */
};

/*
 * tc_event_register - register event @provider:@name with @nfields
 * @fields laid out in order at natural alignment (after the kernel's
 * 8 bytes of common fields), and a print format @print_fmt (the text
 * after "print fmt: " in a format file; NULL: all fields). Appends the
 * format description to the ring file.
 *
 * Return: 0 and *@out (free with tc_event_free()); -EINVAL for bad names
 * or types; -ENOSPC when the format table is full; -ENODEV before
 * tc_init(); -ENOMEM.
 */
int tc_event_register(const char *provider, const char *name,
		      const struct tc_field *fields, unsigned nfields,
		      const char *print_fmt, struct tc_event **out);

void tc_event_free(struct tc_event *ev);

/* Non-NULL once tc_init() ran; points at the attach flag. Internal. */
extern const volatile uint32_t *tc__on;

/* tc_enabled - whether an agent is attached (one load, one branch). */
static inline bool tc_enabled(void)
{
	return __builtin_expect(*tc__on != 0, 0);
}

/*
 * tc_write - write one @ev record whose fields (laid out as registered)
 * are the @len bytes at @fields. The 8 common bytes (type, flags,
 * preempt count, pid) are added here.
 * Return: 0; -ENOBUFS when dropped (counted); -E2BIG; -ENODEV when not
 * attached.
 */
int tc_write(const struct tc_event *ev, const void *fields, size_t len);

/* Reserve/commit form: tc_reserve() returns where @len bytes of fields
 * go (ctx->data); fill them, then tc_commit(). */
struct tc_wctx {
	void *data;
	uint64_t priv[10];
};
int tc_reserve(const struct tc_event *ev, size_t len, struct tc_wctx *ctx);
void tc_commit(struct tc_wctx *ctx);

/*
 * tc_printf - a printf-style marker: event tracecollect:print with the
 * kernel print event's layout (ip, buf[]); truncated at 1 KiB.
 * Return: as tc_write.
 */
int tc_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* tc_trigger - flight recorder: ask the agent to ship the buffers now. */
void tc_trigger(void);

/* TC_WRITE - tc_write() only when an agent is attached. */
#define TC_WRITE(ev, fields, len) \
	(tc_enabled() ? tc_write((ev), (fields), (len)) : 0)

#ifdef __cplusplus
}
#endif

#endif
