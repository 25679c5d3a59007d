/*
 * tracing.c - the agent's own tracefs instance (see tracing.h), driven
 * through libtracefs. The instance uses the "mono" trace clock so that the
 * clock samples of hostinfo.c relate its timestamps to CLOCK_REALTIME; the
 * design's later choice on x86 is "x86-tsc", shared with the user-space
 * ring buffer.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tracefs.h>

#define LOG_PREFIX "tracing"
#include "common/log.h"
#include "common/tc_error.h"
#include "agent/tracing.h"

#define TRACING_MAX_CPUS	65536	/* the wire's stream is 16 bits */

struct tracing_event {
	char *system;
	char *name;
};

struct tracing {
	struct tracefs_instance *inst;
	struct tracing_event *events;
	size_t nevents;
	int ncpus;
	uint32_t page_size;
	char clock[32];		/* the instance's trace clock */
	char clock_why[256];	/* why not TRACING_CLOCK; "" when it is */
};

/* errno after a failed libtracefs call, or TC_ERR_TRACEFS when it set none. */
static int tracefs_err(void)
{
	return errno > 0 ? -errno : TC_ERR_TRACEFS;
}

static int count_cpus(struct tracefs_instance *inst)
{
	char dir[32];
	int n;

	for (n = 0; n < TRACING_MAX_CPUS; n++) {
		snprintf(dir, sizeof(dir), "per_cpu/cpu%d", n);
		if (!tracefs_dir_exists(inst, dir))
			break;
	}
	return n;
}

static uint32_t subbuf_size(struct tracefs_instance *inst)
{
	long long kb;

	if (tracefs_file_exists(inst, "buffer_subbuf_size_kb") &&
	    tracefs_instance_file_read_number(inst, "buffer_subbuf_size_kb",
					      &kb) == 0 &&
	    kb > 0 && kb * 1024 <= (1 << 20))
		return (uint32_t)kb * 1024;
	return (uint32_t)getpagesize();
}

/* The instance's trace clock (the bracketed name in trace_clock) into @buf. */
static int read_clock(struct tracefs_instance *inst, char *buf, size_t len)
{
	char *text, *open, *close;
	int ret = 0;

	errno = 0;
	text = tracefs_instance_file_read(inst, "trace_clock", NULL);
	if (!text)
		return tracefs_err();
	open = strchr(text, '[');
	close = open ? strchr(open, ']') : NULL;
	if (close && (size_t)(close - open) <= len)
		snprintf(buf, len, "%.*s", (int)(close - open - 1), open + 1);
	else
		ret = TC_ERR_TRACEFS;
	free(text);
	return ret;
}

/*
 * Write @value to the instance's @file unless it holds that already
 * (@same says so): a kernel that refuses every write to a knob still runs
 * with the value asked for when it is the value it has.
 */
static int knob_write(struct tracefs_instance *inst, const char *file,
		      const char *value, bool same)
{
	if (same)
		return 0;
	errno = 0;
	if (tracefs_instance_file_write(inst, file, value) < 0)
		return tracefs_err();
	return 0;
}

/*
 * TRACING_CLOCK, or, where the kernel refuses it, the clock it has (a
 * kernel's answer, not a failure: tracing_clock_refused() keeps the reason
 * for the caller, who decides whether the user asked for it).
 */
static int setup_clock(struct tracing *t, const char *name)
{
	int ret, wret;

	ret = read_clock(t->inst, t->clock, sizeof(t->clock));
	if (ret < 0)
		return ret;
	wret = knob_write(t->inst, "trace_clock", TRACING_CLOCK,
			  !strcmp(t->clock, TRACING_CLOCK));
	if (wret == 0) {
		snprintf(t->clock, sizeof(t->clock), "%s", TRACING_CLOCK);
		return 0;
	}
	snprintf(t->clock_why, sizeof(t->clock_why), "tracefs instance %s: "
		 "cannot set trace_clock %s: %s", name, TRACING_CLOCK,
		 tc_strerror(wret));
	return 0;
}

#define TRACING_WAKE_PERCENT	"25"	/* buffer_percent: see tracing_setup() */

/*
 * --buffer-kb: explicit, so a refusal fails, unless the buffer already has
 * that size (the kernel rounds up to whole sub-buffers: at least @kb and
 * less than one sub-buffer more counts as that size).
 */
static int set_buffer_kb(struct tracing *t, size_t kb)
{
	ssize_t cur;
	int ret;

	if (!kb)
		return 0;
	errno = 0;
	if (tracefs_instance_set_buffer_size(t->inst, kb, -1) == 0)
		return 0;
	ret = tracefs_err();
	cur = tracefs_instance_get_buffer_size(t->inst, 0);
	if (cur >= (ssize_t)kb && (size_t)cur < kb + subbuf_size(t->inst) / 1024)
		return 0;
	return ret;
}

/* A knob the agent can do without: 0, -ENOENT when the kernel has no such
 * file, or why it refused the value. */
static int optional_knob(struct tracing *t, const char *file, const char *value)
{
	if (!tracefs_file_exists(t->inst, file))
		return -ENOENT;
	return knob_write(t->inst, file, value, false);
}

/* Clock, buffer size and geometry of a freshly created instance. */
static int tracing_setup(struct tracing *t, size_t buffer_kb, char *err,
			 size_t errlen)
{
	const char *name = tracefs_instance_get_name(t->inst);
	int ret;

	/*
	 * A new instance records from the start; keep it off until
	 * tracing_start(), so that tracing_on = 1 means every requested event
	 * is enabled and the readers are in place.
	 */
	errno = 0;
	if (tracefs_trace_off(t->inst) < 0) {
		ret = tracefs_err();
		tc_seterr(err, errlen, "tracefs instance %s: cannot switch "
		       "tracing off while setting up: %s", name, tc_strerror(ret));
		return ret;
	}
	ret = setup_clock(t, name);
	if (ret < 0) {
		tc_seterr(err, errlen, "tracefs instance %s: cannot read "
			  "trace_clock: %s", name, tc_strerror(ret));
		return ret;
	}
	ret = set_buffer_kb(t, buffer_kb);
	if (ret < 0) {
		tc_seterr(err, errlen, "tracefs instance %s: cannot set "
		       "buffer_size_kb to %zu: %s", name, buffer_kb,
		       tc_strerror(ret));
		return ret;
	}
	/*
	 * Wake the reader when a quarter of a CPU's buffer is full rather
	 * than half (the kernel's default): under a storm the reader then has
	 * three quarters of the buffer, not one half, to cover the time it
	 * waits for a CPU before the kernel overwrites. Idle hosts still
	 * sleep (partly filled pages go out every --flush-ms). Old kernels
	 * without the file keep their behaviour.
	 */
	/*
	 * The kernel records a task's tgid (saved_tgids) only while an
	 * instance asks for it; the agent ships them with the cmdlines. Our
	 * own instance's option: nothing global is changed.
	 */
	ret = optional_knob(t, "options/record-tgid", "1");
	if (ret == -ENOENT)
		log_info("tracefs instance %s: no options/record-tgid: tgids "
			 "only where the kernel records them anyway", name);
	else if (ret < 0)
		log_warn("tracefs instance %s: cannot set options/record-tgid: "
			 "%s; tgids only where the kernel records them anyway",
			 name, tc_strerror(ret));
	ret = optional_knob(t, "buffer_percent", TRACING_WAKE_PERCENT);
	if (ret < 0 && ret != -ENOENT)
		log_warn("tracefs instance %s: cannot set buffer_percent to "
			 TRACING_WAKE_PERCENT ": %s; the reader wakes at the "
			 "kernel's fill level", name, tc_strerror(ret));
	t->ncpus = count_cpus(t->inst);
	t->page_size = subbuf_size(t->inst);
	if (t->ncpus == 0) {
		tc_seterr(err, errlen, "tracefs instance %s has no per_cpu "
		       "directories", name);
		return TC_ERR_TRACEFS;
	}
	return 0;
}

/* Create the instance, refusing one that existed before us. */
static int instance_create(const char *name, struct tracefs_instance **out,
			   char *err, size_t errlen)
{
	struct tracefs_instance *inst;
	const char *dir;
	int ret;

	errno = 0;
	inst = tracefs_instance_create(name);
	if (!inst) {
		ret = tracefs_err();
		dir = tracefs_tracing_dir();
		tc_seterr(err, errlen, "cannot create tracefs instance %s under "
		       "%s: %s", name, dir ? dir : "(tracefs not mounted)",
		       tc_strerror(ret));
		return ret;
	}
	if (!tracefs_instance_is_new(inst)) {
		tc_seterr(err, errlen, "tracefs instance %s already exists (not "
		       "ours; left alone)", name);
		tracefs_instance_free(inst);
		return -EEXIST;
	}
	*out = inst;
	return 0;
}

int tracing_set_clock(struct tracing *t, const char *clock, char *err, size_t errlen)
{
	int ret;

	ret = knob_write(t->inst, "trace_clock", clock, !strcmp(t->clock, clock));
	if (ret < 0) {
		tc_seterr(err, errlen, "tracefs instance %s: cannot set trace_clock %s: %s",
			  tracefs_instance_get_name(t->inst), clock, tc_strerror(ret));
		return ret;
	}
	snprintf(t->clock, sizeof(t->clock), "%s", clock);
	t->clock_why[0] = '\0';
	return 0;
}

const char *tracing_clock(const struct tracing *t)
{
	return t->clock;
}

const char *tracing_clock_refused(const struct tracing *t)
{
	return t->clock_why[0] ? t->clock_why : NULL;
}

int tracing_open(const char *name, size_t buffer_kb, struct tracing **out,
		 char *err, size_t errlen)
{
	struct tracing *t;
	int ret;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ret = instance_create(name, &t->inst, err, errlen);
	if (ret < 0) {
		free(t);
		return ret;
	}
	ret = tracing_setup(t, buffer_kb, err, errlen);
	if (ret < 0) {
		tracing_close(t);
		return ret;
	}
	*out = t;
	return 0;
}

static void events_free(struct tracing *t)
{
	size_t i;

	for (i = 0; i < t->nevents; i++) {
		free(t->events[i].system);
		free(t->events[i].name);
	}
	free(t->events);
	t->events = NULL;
	t->nevents = 0;
}

void tracing_close(struct tracing *t)
{
	const char *name;

	if (!t)
		return;
	name = tracefs_instance_get_name(t->inst);
	tracefs_trace_off(t->inst);
	tracefs_event_disable(t->inst, NULL, NULL);
	errno = 0;
	if (tracefs_instance_destroy(t->inst) < 0)
		log_err("cannot remove tracefs instance %s: %s", name,
			tc_strerror(tracefs_err()));
	tracefs_instance_free(t->inst);
	events_free(t);
	free(t);
}

struct tracefs_instance *tracing_instance(struct tracing *t)
{
	return t->inst;
}

const char *tracing_name(struct tracing *t)
{
	return tracefs_instance_get_name(t->inst);
}

int tracing_ncpus(struct tracing *t)
{
	return t->ncpus;
}

int tracing_set_subbuf(struct tracing *t, size_t kb, char *err, size_t errlen)
{
	const char *name = tracefs_instance_get_name(t->inst);
	char num[32];
	int ret;

	if (!tracefs_file_exists(t->inst, "buffer_subbuf_size_kb")) {
		if (t->page_size == kb * 1024)
			return 0;	/* what it has, and all it has */
		tc_seterr(err, errlen, "tracefs instance %s: this kernel cannot "
		       "change the sub-buffer size (no buffer_subbuf_size_kb)",
		       name);
		return -EOPNOTSUPP;
	}
	snprintf(num, sizeof(num), "%zu", kb);
	ret = knob_write(t->inst, "buffer_subbuf_size_kb", num,
			 subbuf_size(t->inst) == kb * 1024);
	if (ret < 0) {
		tc_seterr(err, errlen, "tracefs instance %s: cannot set "
		       "buffer_subbuf_size_kb to %zu: %s", name, kb,
		       tc_strerror(ret));
		return ret;
	}
	t->page_size = subbuf_size(t->inst);
	return 0;
}

uint32_t tracing_page_size(struct tracing *t)
{
	return t->page_size;
}

bool tracing_has_event(struct tracing *t, const char *system, const char *name)
{
	for (size_t i = 0; i < t->nevents; i++)
		if (!strcmp(t->events[i].system, system) && !strcmp(t->events[i].name, name))
			return true;
	return false;
}

size_t tracing_event_count(struct tracing *t)
{
	return t->nevents;
}

int tracing_event_name(struct tracing *t, size_t i, const char **system, const char **name)
{
	if (i >= t->nevents)
		return -ERANGE;
	*system = t->events[i].system;
	*name = t->events[i].name;
	return 0;
}

int tracing_start(struct tracing *t)
{
	return tracefs_trace_on(t->inst) < 0 ? TC_ERR_TRACEFS : 0;
}

int tracing_stop(struct tracing *t)
{
	return tracefs_trace_off(t->inst) < 0 ? TC_ERR_TRACEFS : 0;
}

/* A system or event name: non-empty, no path separators or dot-dirs. */
static bool name_ok(const char *s)
{
	return *s && *s != '.' && !strchr(s, '/');
}

static bool event_known(struct tracing *t, const char *sys, const char *ev)
{
	size_t i;

	for (i = 0; i < t->nevents; i++)
		if (!strcmp(t->events[i].system, sys) &&
		    !strcmp(t->events[i].name, ev))
			return true;
	return false;
}

/* Remember one exact event, enabling it first when @enable. */
static int enable_one_as(struct tracing *t, const char *sys, const char *ev,
			 bool enable)
{
	struct tracing_event *n;

	if (event_known(t, sys, ev))
		return 0;
	n = realloc(t->events, (t->nevents + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	t->events = n;
	n = &t->events[t->nevents];
	n->system = strdup(sys);
	n->name = strdup(ev);
	if (!n->system || !n->name) {
		free(n->system);
		free(n->name);
		return -ENOMEM;
	}
	errno = 0;
	if (enable && tracefs_event_enable(t->inst, sys, ev) < 0) {
		free(n->system);
		free(n->name);
		return tracefs_err();
	}
	t->nevents++;
	return 0;
}

/*
 * Enable one exact event and remember it. The ftrace system's events
 * (print: what trace_marker is written, ...) have no enable file: the
 * kernel records them whenever they happen; they are only remembered, so
 * their formats ship.
 */
static int enable_one(struct tracing *t, const char *sys, const char *ev)
{
	return enable_one_as(t, sys, ev, tracefs_event_file_exists(t->inst, sys, ev, "enable"));
}

int tracing_track(struct tracing *t, const char *sys, const char *ev)
{
	return enable_one_as(t, sys, ev, false);
}

/* Enable @ev of @sys (all of @sys when @ev is NULL) out of @list. */
static int enable_matching(struct tracing *t, const char *sys,
			   const char *ev, char **list)
{
	bool found = false;
	int ret;

	for (; *list; list++) {
		if (ev && strcmp(ev, *list))
			continue;
		found = true;
		ret = enable_one(t, sys, *list);
		if (ret < 0)
			return ret;
	}
	return found ? 0 : TC_ERR_UNKNOWN_EVENT;
}

int tracing_enable(struct tracing *t, const char *spec, char *err,
		   size_t errlen)
{
	char *sys, *ev, **list = NULL;
	int ret;

	sys = strdup(spec);
	if (!sys)
		return -ENOMEM;
	ev = strchr(sys, ':');
	if (ev)
		*ev++ = '\0';
	ret = TC_ERR_SYNTAX;
	if (!name_ok(sys) || (ev && !name_ok(ev)))
		goto out;
	ret = TC_ERR_UNKNOWN_EVENT;
	list = tracefs_system_events(NULL, sys);
	if (!list || !*list)
		goto out;
	ret = enable_matching(t, sys, ev, list);
out:
	if (ret == TC_ERR_UNKNOWN_EVENT)
		tc_seterr(err, errlen, "no such event: '%s'", spec);
	else if (ret == TC_ERR_SYNTAX)
		tc_seterr(err, errlen, "bad event '%s': want SYSTEM or "
		       "SYSTEM:EVENT", spec);
	else if (ret < 0)
		tc_seterr(err, errlen, "cannot enable event '%s': %s", spec,
		       tc_strerror(ret));
	tracefs_list_free(list);
	free(sys);
	return ret;
}

int tracing_format(struct tracing *t, size_t i, const char **system,
		   const char **name, char **text, size_t *len)
{
	struct tracing_event *e;
	char *s;
	int size = 0;

	if (i >= t->nevents)
		return -ERANGE;
	e = &t->events[i];
	errno = 0;
	s = tracefs_event_file_read(t->inst, e->system, e->name, "format",
				    &size);
	if (!s || size <= 0) {
		free(s);
		return tracefs_err();
	}
	*system = e->system;
	*name = e->name;
	*text = s;
	*len = (size_t)size;
	return 0;
}

int tracing_header_page(struct tracing *t, char **text, size_t *len)
{
	return tracing_events_file(t, "events/header_page", text, len);
}

int tracing_events_file(struct tracing *t, const char *file, char **text, size_t *len)
{
	char *s;
	int size = 0;

	errno = 0;
	s = tracefs_instance_file_read(t->inst, file, &size);
	if (!s || size <= 0) {
		free(s);
		return tracefs_err();
	}
	*text = s;
	*len = (size_t)size;
	return 0;
}

/* Store @value under @key in @st when the key is one we track. */
static bool stats_set(struct tracing_cpu_stats *st, const char *key,
		      size_t klen, uint64_t value)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "entries", offsetof(struct tracing_cpu_stats, entries) },
		{ "overrun", offsetof(struct tracing_cpu_stats, overrun) },
		{ "commit overrun",
		  offsetof(struct tracing_cpu_stats, commit_overrun) },
		{ "dropped events", offsetof(struct tracing_cpu_stats, dropped) },
		{ "read events", offsetof(struct tracing_cpu_stats, read) },
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strlen(keys[i].key) == klen &&
		    !memcmp(keys[i].key, key, klen)) {
			memcpy((char *)st + keys[i].off, &value, sizeof(value));
			return true;
		}
	}
	return false;
}

/* Parse one "key: N" line of @len bytes; false when it is not one. */
static bool stats_line(struct tracing_cpu_stats *st, const char *line,
		       size_t len)
{
	const char *colon = memchr(line, ':', len);
	uint64_t v = 0;
	size_t i;

	if (!colon)
		return false;
	i = (size_t)(colon - line) + 1;
	while (i < len && line[i] == ' ')
		i++;
	if (i == len || !isdigit((unsigned char)line[i]))
		return false;
	for (; i < len && isdigit((unsigned char)line[i]); i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(line[i] - '0');
	}
	if (i != len)		/* "oldest event ts: 12.34" and the like */
		return false;
	return stats_set(st, line, (size_t)(colon - line), v);
}

int tracing_parse_stats(const char *text, size_t len,
			struct tracing_cpu_stats *out)
{
	struct tracing_cpu_stats st;
	const char *p = text, *end = text + len, *nl;
	bool any = false;

	memset(&st, 0, sizeof(st));
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (stats_line(&st, p, (size_t)(nl - p)))
			any = true;
		p = nl + 1;
	}
	if (!any)
		return TC_ERR_SYNTAX;
	*out = st;
	return 0;
}

int tracing_cpu_stats(struct tracing *t, int cpu,
		      struct tracing_cpu_stats *out)
{
	char path[48];
	char *s;
	int size = 0, ret;

	snprintf(path, sizeof(path), "per_cpu/cpu%d/stats", cpu);
	errno = 0;
	s = tracefs_instance_file_read(t->inst, path, &size);
	if (!s)
		return tracefs_err();
	ret = tracing_parse_stats(s, size > 0 ? (size_t)size : 0, out);
	free(s);
	return ret;
}

/* Parse "PID COMM" (@len bytes, no newline) into the proto_cmdline @item;
 * false if malformed. */
static bool cmdline_line(const char *line, size_t len, void *item)
{
	struct proto_cmdline *c = item;
	size_t i = 0, n;
	int64_t pid = 0;

	if (len == 0 || !isdigit((unsigned char)line[0]))
		return false;
	for (; i < len && isdigit((unsigned char)line[i]); i++) {
		pid = pid * 10 + (line[i] - '0');
		if (pid > INT32_MAX)
			return false;
	}
	if (i + 1 >= len || line[i] != ' ')
		return false;
	n = len - i - 1;
	if (n > sizeof(c->comm) - 1)
		n = sizeof(c->comm) - 1;
	memcpy(c->comm, line + i + 1, n);
	c->comm[n] = '\0';
	if (strlen(c->comm) != n)	/* embedded NUL */
		return false;
	c->pid = (int32_t)pid;
	return true;
}

/* Parse "PID TGID" (@len bytes, no newline) into the proto_tgid @item;
 * false if malformed. */
static bool tgid_line(const char *line, size_t len, void *item)
{
	struct proto_tgid *t = item;
	int64_t v[2] = { 0, 0 };
	size_t i = 0;

	for (int k = 0; k < 2; k++) {
		if (i >= len || !isdigit((unsigned char)line[i]))
			return false;
		for (; i < len && isdigit((unsigned char)line[i]); i++) {
			v[k] = v[k] * 10 + (line[i] - '0');
			if (v[k] > INT32_MAX)
				return false;
		}
		if (k == 0 && (i >= len || line[i++] != ' '))
			return false;
	}
	if (i != len)
		return false;
	t->pid = (int32_t)v[0];
	t->tgid = (int32_t)v[1];
	return true;
}

static size_t count_lines(const char *text, size_t len)
{
	size_t n = 1, i;

	for (i = 0; i < len; i++)
		n += text[i] == '\n';
	return n;
}

/* A top-level tracefs file, whole: *@text malloc()ed ("" when empty). */
static int top_file(const char *file, char **text, size_t *len)
{
	int size = 0;
	char *s;

	errno = 0;
	s = tracefs_instance_file_read(NULL, file, &size);
	if (!s && errno != 0)
		return tracefs_err();
	if (!s && !(s = strdup("")))
		return -ENOMEM;
	*text = s;
	*len = size > 0 ? (size_t)size : 0;
	return 0;
}

/* How a table of enum tracing_table reads: its file, its line, its cap. */
struct table_kind {
	const char *file;
	bool (*line)(const char *line, size_t len, void *item);
	size_t size;		/* of an item */
	size_t max;
};

static const struct table_kind table_kinds[] = {
	[TRACING_CMDLINES] = { "saved_cmdlines", cmdline_line,
			       sizeof(struct proto_cmdline), PROTO_MAX_CMDLINES },
	[TRACING_TGIDS] = { "saved_tgids", tgid_line, sizeof(struct proto_tgid),
			    PROTO_MAX_TGIDS },
};

int tracing_table_parse(enum tracing_table which, const char *text,
			size_t len, void **items, uint32_t *count)
{
	const struct table_kind *k = &table_kinds[which];
	const char *p = text, *end = text + len, *nl;
	size_t max = count_lines(text, len), n = 0;
	char *buf = NULL;

	if (max > k->max)
		max = k->max;
	if (len && !(buf = calloc(max, k->size)))
		return -ENOMEM;
	while (p < end && n < max) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (k->line(p, (size_t)(nl - p), buf + n * k->size))
			n++;
		p = nl + 1;
	}
	if (n == 0) {
		free(buf);
		buf = NULL;
	}
	*items = buf;
	*count = (uint32_t)n;
	return 0;
}

int tracing_table_read(enum tracing_table which, void **items, uint32_t *count)
{
	size_t len;
	char *s;
	int ret = top_file(table_kinds[which].file, &s, &len);

	if (ret < 0)
		return ret;
	ret = tracing_table_parse(which, s, len, items, count);
	free(s);
	return ret;
}

int tracing_printk_formats(char **text, size_t *len)
{
	return top_file("printk_formats", text, len);
}
