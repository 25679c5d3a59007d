/*
 * freezewatch.c - the watch on a freeze-by-event trigger (see
 * freezewatch.h): a `traceoff if FILTER` trigger on the main instance
 * (the kernel's Documentation/trace/events.rst, "Event triggers"; removed
 * by writing "!traceoff"), and a second instance that records only the
 * matching events, whose per-CPU trace_pipe_raw poll wakes the agent.
 *
 * Why a second instance and not the trigger alone: tracefs offers no
 * wakeup on tracing_on, and the main instance's pipes always hold data
 * (a flight recorder). A poll on trace_pipe_raw sleeps in
 * ring_buffer_poll_wait() until a record is committed when buffer_percent
 * is 0, so the watch costs the agent nothing until the event fires; in
 * the kernel it costs a second probe and filter evaluation per hit of
 * EVENT (bench/run freezewatch on 6.18, filters never true: the trigger
 * alone 31 ns per hit, the watch 121 ns more: at 8k hits/s of EVENT the
 * watch alone takes 0.1% of a core).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracefs.h>

#define LOG_PREFIX "freezewatch"
#include "common/log.h"
#include "common/page.h"
#include "common/query.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "agent/freezewatch.h"

#define FW_MAX_CPUS	4096	/* per_cpu directories looked at */
#define FW_WATCH_KB	"4"	/* the watch's buffer per CPU: a few hits */
#define FW_MAX_READS	64	/* pages read from one CPU per check */
/* The trigger and filter files take less than a page per write. */
#define FW_MAX_FILTER	3900

struct freezewatch {
	struct tracefs_instance *main;	/* the agent's; not ours to remove */
	struct tracefs_instance *watch;	/* ours */
	char *system, *name;		/* the event */
	bool trigger_set;		/* traceoff on main's event */
	int *fds;			/* watch's per_cpu/cpuN/trace_pipe_raw */
	int nfds;
	int tick_ms;			/* -1: the fds wake; see freezewatch.h */
	struct page_layout layout;
	uint8_t *page;			/* one page read */
	int drain_err;			/* the last re-arm's drain error logged; 0: none */
};

/* errno after a failed libtracefs call, or TC_ERR_TRACEFS when it set none. */
static int fw_err(void)
{
	return errno > 0 ? -errno : TC_ERR_TRACEFS;
}

/* ---- the spec ---------------------------------------------------------- */

static bool fw_has_glob(const char *s)
{
	return s && strpbrk(s, "*?[]!^") != NULL;
}

/* The parse error of @spec under a caret, into @err. */
static void fw_syntax_err(const char *spec, const struct filter_error *fe, char *err,
			  size_t errlen)
{
	char pos[512];
	size_t n;

	filter_error_format(spec, fe, pos, sizeof(pos));
	n = strlen(pos);
	if (n && pos[n - 1] == '\n')
		pos[n - 1] = '\0';
	tc_seterr(err, errlen, "bad --freeze-on '%s':\n%s", spec, pos);
}

/* The filter text of @q in @spec, blanks made spaces (one line for tracefs). */
static int fw_filter_text(const char *spec, const struct query *q, char **out)
{
	char *f;

	*out = NULL;
	if (!q->filter)
		return 0;
	f = strdup(spec + q->filter_offset);
	if (!f)
		return -ENOMEM;
	for (char *p = f; *p; p++)
		if (util_is_space(*p))
			*p = ' ';
	*out = f;
	return 0;
}

/* One selector, no glob, a filter that fits a trigger write. */
static int fw_spec_shape(const char *spec, const struct query *q, char *err, size_t errlen)
{
	const struct query_sel *s = &q->sel[0];

	if (q->nsel != 1 || fw_has_glob(s->event) || fw_has_glob(s->system)) {
		tc_seterr(err, errlen, "bad --freeze-on '%s': name one event "
			  "(NAME or SYSTEM:NAME, no list, no glob)", spec);
		return TC_ERR_SYNTAX;
	}
	if (q->filter && strlen(spec + q->filter_offset) > FW_MAX_FILTER) {
		tc_seterr(err, errlen, "bad --freeze-on: the filter is longer than %d bytes",
			  FW_MAX_FILTER);
		return TC_ERR_TOO_LONG;
	}
	return 0;
}

int freezewatch_parse(const char *spec, char **event, char **filter, char *err,
		      size_t errlen)
{
	struct filter_error fe = { 0 };
	char *ev = NULL, *fl = NULL;
	struct query q;
	int ret = query_parse(spec, &q, &fe);

	if (ret < 0) {
		fw_syntax_err(spec, &fe, err, errlen);
		return ret;
	}
	ret = fw_spec_shape(spec, &q, err, errlen);
	if (ret == 0 && event) {
		if (q.sel[0].system)
			ret = asprintf(&ev, "%s:%s", q.sel[0].system, q.sel[0].event) < 0 ?
			      -ENOMEM : 0;
		else
			ret = (ev = strdup(q.sel[0].event)) ? 0 : -ENOMEM;
	}
	if (ret == 0 && filter)
		ret = fw_filter_text(spec, &q, &fl);
	query_free(&q);
	if (ret < 0) {
		free(ev);
		return ret;
	}
	if (event)
		*event = ev;
	if (filter)
		*filter = fl;
	return 0;
}

/* ---- the event --------------------------------------------------------- */

/* @name's subsystem among the main instance's events: exactly one. */
static int fw_find_system(struct freezewatch *w, const char *name, char *err,
			  size_t errlen)
{
	char *dir = tracefs_instance_get_dir(w->main);
	char **systems = dir ? tracefs_event_systems(dir) : NULL;
	int ret = 0;

	tracefs_put_tracing_file(dir);

	for (size_t i = 0; systems && systems[i] && ret == 0; i++) {
		if (!tracefs_event_file_exists(w->main, systems[i], name, "enable"))
			continue;
		if (w->system) {
			tc_seterr(err, errlen, "--freeze-on: event %s is in subsystems %s and %s: "
				  "say SYSTEM:%s", name, w->system, systems[i], name);
			ret = TC_ERR_AMBIGUOUS;
		} else if (!(w->system = strdup(systems[i]))) {
			ret = -ENOMEM;
		}
	}
	tracefs_list_free(systems);
	if (ret == 0 && !w->system) {
		tc_seterr(err, errlen, "--freeze-on: this kernel has no event %s", name);
		ret = TC_ERR_UNKNOWN_EVENT;
	}
	return ret;
}

/* @event ("SYSTEM:NAME" or "NAME") into w->system, w->name; it must exist. */
static int fw_resolve(struct freezewatch *w, const char *event, char *err, size_t errlen)
{
	const char *colon = strchr(event, ':');
	int ret = 0;

	if (colon)
		w->system = strndup(event, colon - event);
	w->name = strdup(colon ? colon + 1 : event);
	if (!w->name || (colon && !w->system))
		return -ENOMEM;
	if (!colon)
		ret = fw_find_system(w, w->name, err, errlen);
	if (ret == 0 && !tracefs_event_file_exists(w->main, w->system, w->name, "enable")) {
		tc_seterr(err, errlen, "--freeze-on: this kernel has no event %s:%s",
			  w->system, w->name);
		ret = TC_ERR_UNKNOWN_EVENT;
	}
	if (ret == 0 && !tracefs_event_file_exists(w->main, w->system, w->name, "trigger")) {
		tc_seterr(err, errlen, "--freeze-on: this kernel has no event triggers "
			  "(no %s:%s trigger file)", w->system, w->name);
		ret = -EOPNOTSUPP;
	}
	return ret;
}

/*
 * What the kernel said about a refused write to @inst's @what: its
 * error_log line when it left one, else @ret's meaning.
 */
static int fw_refused(struct tracefs_instance *inst, int ret, const char *what, char *err,
		      size_t errlen)
{
	char *why = tracefs_error_last(inst);
	char esc[LOG_ESC_LEN];

	if (why && *why) {
		size_t n = strlen(why);

		while (n && why[n - 1] == '\n')
			why[--n] = '\0';
		tc_seterr(err, errlen, "the kernel refused %s: %s (%s)", what,
			  tc_strerror(ret), log_escape(why, esc, sizeof(esc)));
	} else {
		tc_seterr(err, errlen, "the kernel refused %s: %s", what, tc_strerror(ret));
	}
	free(why);
	return ret;
}

/* ---- the watch instance ------------------------------------------------ */

/* @value into the watch's @file; -errno on refusal. */
static int fw_write(struct tracefs_instance *inst, const char *file, const char *value)
{
	errno = 0;
	return tracefs_instance_file_write(inst, file, value) < 0 ? fw_err() : 0;
}

/* The sub-buffer size the watch's pages have. */
static uint32_t fw_page_size(struct tracefs_instance *inst)
{
	long long kb;

	if (tracefs_file_exists(inst, "buffer_subbuf_size_kb") &&
	    tracefs_instance_file_read_number(inst, "buffer_subbuf_size_kb", &kb) == 0 &&
	    kb > 0 && kb * 1024 <= (1 << 20))
		return (uint32_t)kb * 1024;
	return (uint32_t)getpagesize();
}

/* The main instance's trace clock (the bracketed name) into @buf. */
static int fw_main_clock(struct freezewatch *w, char *buf, size_t len)
{
	char *clock;

	errno = 0;
	clock = tracefs_get_clock(w->main);
	if (!clock)
		return fw_err();
	snprintf(buf, len, "%s", clock);
	free(clock);
	return 0;
}

/* Create the watch instance, "<main>" FREEZEWATCH_SUFFIX; never an existing one. */
static int fw_create_watch(struct freezewatch *w, const char *main_name, char *err,
			   size_t errlen)
{
	char name[256];

	if (snprintf(name, sizeof(name), "%s%s", main_name, FREEZEWATCH_SUFFIX) >=
	    (int)sizeof(name)) {
		tc_seterr(err, errlen, "--freeze-on: instance name %s too long", main_name);
		return TC_ERR_TOO_LONG;
	}
	if (tracefs_instance_exists(name)) {
		tc_seterr(err, errlen, "--freeze-on: tracefs instance %s exists already "
			  "(another agent's, or left behind: remove it with rmdir)", name);
		return -EEXIST;
	}
	errno = 0;
	w->watch = tracefs_instance_create(name);
	if (!w->watch) {
		int ret = fw_err();

		tc_seterr(err, errlen, "--freeze-on: cannot create tracefs instance %s: %s",
			  name, tc_strerror(ret));
		return ret;
	}
	return 0;
}

/*
 * buffer_percent 0: poll wakes at the first record. A kernel without the
 * file wakes there anyway (it came with the percentage); one that refuses
 * 0 is checked every FREEZEWATCH_TICK_MS instead.
 */
static void fw_wakeup_mode(struct freezewatch *w)
{
	int ret;

	w->tick_ms = -1;
	if (!tracefs_file_exists(w->watch, "buffer_percent"))
		return;
	ret = fw_write(w->watch, "buffer_percent", "0");
	if (ret == 0)
		return;
	w->tick_ms = FREEZEWATCH_TICK_MS;
	log_warn("the kernel refused buffer_percent 0 on instance %s (%s): checking the "
		 "freeze watch every %d ms instead of waiting for it", tracefs_instance_get_name(w->watch),
		 tc_strerror(ret), FREEZEWATCH_TICK_MS);
}

/* The watch's knobs: clock, size, no overwrite, wakeup, filter, event on. */
static int fw_setup_watch(struct freezewatch *w, const char *clock, const char *filter,
			  char *err, size_t errlen)
{
	char what[300];
	int ret;

	ret = fw_write(w->watch, "trace_clock", clock);
	if (ret < 0)
		return fw_refused(w->watch, ret, "the main instance's trace_clock on the watch",
				  err, errlen);
	if (fw_write(w->watch, "buffer_size_kb", FW_WATCH_KB) < 0)
		log_info("kept the kernel's buffer size for the freeze watch instance");
	if (tracefs_option_disable(w->watch, TRACEFS_OPTION_OVERWRITE) < 0)
		log_warn("the freeze watch instance stays in overwrite mode: a burst of hits "
			 "may overwrite the first one's timestamp");
	fw_wakeup_mode(w);
	snprintf(what, sizeof(what), "the filter on %s:%s", w->system, w->name);
	errno = 0;
	if (filter && tracefs_event_file_write(w->watch, w->system, w->name, "filter",
					       filter) < 0)
		return fw_refused(w->watch, fw_err(), what, err, errlen);
	errno = 0;
	if (tracefs_event_enable(w->watch, w->system, w->name) < 0)
		return fw_refused(w->watch, fw_err(), "enabling the watched event", err, errlen);
	ret = fw_write(w->watch, "tracing_on", "1");
	return ret < 0 ? fw_refused(w->watch, ret, "tracing_on on the watch", err, errlen) : 0;
}

/* The watch's per_cpu/cpuN/trace_pipe_raw, non-blocking, into w->fds. */
static int fw_open_pipes(struct freezewatch *w, char *err, size_t errlen)
{
	char file[64];
	int n = 0;

	while (n < FW_MAX_CPUS) {
		snprintf(file, sizeof(file), "per_cpu/cpu%d", n);
		if (!tracefs_dir_exists(w->watch, file))
			break;
		n++;
	}
	w->fds = malloc((n ? n : 1) * sizeof(*w->fds));
	if (!w->fds)
		return -ENOMEM;
	for (; w->nfds < n; w->nfds++) {
		snprintf(file, sizeof(file), "per_cpu/cpu%d/trace_pipe_raw", w->nfds);
		errno = 0;
		w->fds[w->nfds] = tracefs_instance_file_open(w->watch, file,
							     O_RDONLY | O_NONBLOCK);
		if (w->fds[w->nfds] < 0) {
			int ret = fw_err();

			tc_seterr(err, errlen, "--freeze-on: cannot open the watch's %s: %s",
				  file, tc_strerror(ret));
			return ret;
		}
	}
	return 0;
}

/* `traceoff [if FILTER]` on the main instance's event. */
static int fw_set_trigger(struct freezewatch *w, const char *filter, char *err,
			  size_t errlen)
{
	char *cmd, what[512];
	int ret = 0;

	if (asprintf(&cmd, "traceoff%s%s", filter ? " if " : "", filter ? filter : "") < 0)
		return -ENOMEM;
	errno = 0;
	if (tracefs_event_file_write(w->main, w->system, w->name, "trigger", cmd) < 0) {
		snprintf(what, sizeof(what), "the trigger 'traceoff%s' on %s:%s of instance %s",
			 filter ? " if ..." : "", w->system, w->name,
			 tracefs_instance_get_name(w->main));
		ret = fw_refused(w->main, fw_err(), what, err, errlen);
	}
	free(cmd);
	w->trigger_set = ret == 0;
	return ret;
}

int freezewatch_open(const char *main_instance, const char *event, const char *filter,
		     const char *clock, struct freezewatch **out, char *err, size_t errlen)
{
	struct freezewatch *w = calloc(1, sizeof(*w));
	char main_clock[64];
	int ret = w ? 0 : -ENOMEM;

	if (ret == 0 && !tracefs_instance_exists(main_instance)) {
		tc_seterr(err, errlen, "--freeze-on: no tracefs instance %s", main_instance);
		ret = -ENOENT;
	}
	if (ret == 0 && !(w->main = tracefs_instance_alloc(NULL, main_instance)))
		ret = -ENOMEM;
	if (ret == 0)
		ret = fw_resolve(w, event, err, errlen);
	if (ret == 0 && !clock) {
		ret = fw_main_clock(w, main_clock, sizeof(main_clock));
		if (ret < 0)
			tc_seterr(err, errlen, "--freeze-on: cannot read instance %s's trace_clock: %s",
				  main_instance, tc_strerror(ret));
		clock = main_clock;
	}
	if (ret == 0)
		ret = fw_create_watch(w, main_instance, err, errlen);
	if (ret == 0)
		ret = fw_setup_watch(w, clock, filter, err, errlen);
	if (ret == 0)
		ret = fw_open_pipes(w, err, errlen);
	if (ret == 0) {
		w->layout = page_layout_host(fw_page_size(w->watch));
		ret = (w->page = malloc(w->layout.page_size)) ? 0 : -ENOMEM;
	}
	if (ret == 0)
		ret = fw_set_trigger(w, filter, err, errlen);
	if (ret < 0) {
		freezewatch_close(w);
		return ret;
	}
	*out = w;
	return 0;
}

int freezewatch_fds(const struct freezewatch *w, int *fds, int max)
{
	for (int i = 0; i < w->nfds && i < max; i++)
		fds[i] = w->fds[i];
	return w->nfds;
}

int freezewatch_tick_ms(const struct freezewatch *w)
{
	return w->tick_ms;
}

/* ---- checking ---------------------------------------------------------- */

/* The data records of the page in w->page (@len bytes): count, earliest ts. */
static int fw_page_records(struct freezewatch *w, size_t len, uint64_t *min_ts,
			   unsigned *hits)
{
	struct page_record rec;
	struct page_info pi;
	struct page_iter it;
	int ret = page_check(&w->layout, w->page, len, &pi);

	if (ret < 0)
		return ret;
	page_iter_init(&it, &w->layout, &pi);
	while ((ret = page_next_record(&it, &rec)) == 1) {
		if (!page_record_is_data(&rec))
			continue;
		if (*hits == 0 || rec.ts < *min_ts)
			*min_ts = rec.ts;
		(*hits)++;
	}
	return ret;
}

/*
 * Read CPU @i's watch pipe empty (at most FW_MAX_READS pages), past a
 * page the walk refuses (it is consumed all the same): the first such
 * error is returned, the pages after it still counted.
 */
static int fw_drain_cpu(struct freezewatch *w, int i, uint64_t *min_ts, unsigned *hits)
{
	int first = 0;

	for (int r = 0; r < FW_MAX_READS; r++) {
		ssize_t n = read(w->fds[i], w->page, w->layout.page_size);
		int ret;

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? first : -errno;
		if (n == 0)
			break;
		ret = fw_page_records(w, (size_t)n, min_ts, hits);
		if (ret < 0 && !first)
			first = ret;
	}
	return first;
}

/*
 * Every CPU's watch pipe drained, whatever one of them said (a CPU left
 * undrained would keep hits from before a re-arm for the next check);
 * the hits, the earliest ts and the first error.
 */
static int fw_drain(struct freezewatch *w, uint64_t *min_ts, unsigned *hits)
{
	int first = 0;

	*hits = 0;
	for (int i = 0; i < w->nfds; i++) {
		int ret = fw_drain_cpu(w, i, min_ts, hits);

		if (ret < 0 && !first)
			first = ret;
	}
	return first;
}

int freezewatch_check(struct freezewatch *w, uint64_t *trigger_ts)
{
	uint64_t ts = 0;
	unsigned hits;
	int ret = fw_drain(w, &ts, &hits);

	if (hits == 0)
		return ret;
	errno = 0;
	if (tracefs_trace_off(w->main) < 0)	/* the trigger did, unless it came early */
		log_warn("cannot set tracing_on 0 on instance %s after the freeze event: %s",
			 tracefs_instance_get_name(w->main), tc_strerror(fw_err()));
	*trigger_ts = ts;
	return 1;
}

/*
 * A drain that failed (past the pages the walk refuses, which it reads
 * through): said once per kind of error, as it may come at every re-arm.
 */
static void fw_drain_failed(struct freezewatch *w, int ret)
{
	char esc[LOG_ESC_LEN];

	if (ret == w->drain_err)
		return;
	w->drain_err = ret;
	log_warn("instance %s: cannot empty the freeze watch before tracing again: %s; "
		 "a hit it kept from the freeze may freeze the instance once more",
		 log_escape(tracefs_instance_get_name(w->watch), esc, sizeof(esc)),
		 tc_strerror(ret));
}

int freezewatch_rearm(struct freezewatch *w)
{
	uint64_t ts;
	unsigned hits;
	int ret = fw_drain(w, &ts, &hits);

	if (ret < 0 && ret != TC_ERR_PAGE_MALFORMED)
		fw_drain_failed(w, ret);	/* a recorder left off would be worse */
	errno = 0;
	return tracefs_trace_on(w->main) < 0 ? fw_err() : 0;
}

void freezewatch_close(struct freezewatch *w)
{
	if (!w)
		return;
	if (w->trigger_set)
		tracefs_event_file_write(w->main, w->system, w->name, "trigger", "!traceoff");
	for (int i = 0; i < w->nfds; i++)
		close(w->fds[i]);
	if (w->watch) {
		tracefs_event_disable(w->watch, NULL, NULL);
		tracefs_instance_destroy(w->watch);
		tracefs_instance_free(w->watch);
	}
	tracefs_instance_free(w->main);
	free(w->fds);
	free(w->page);
	free(w->system);
	free(w->name);
	free(w);
}
