/*
 * stacks.c - --stacktrace: the instance's options/stacktrace for every
 * event, or a `stacktrace [if FILTER]` trigger per event named (see
 * stacks.h). The kernel's trigger syntax is in its
 * Documentation/trace/events.rst ("Event triggers"); a trigger is removed
 * by writing its command with a leading '!'.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracefs.h>

#include "common/log.h"
#include "common/query.h"
#include "common/tc_error.h"
#include "agent/stacks.h"
#include "agent/tracing.h"

/* One trigger set, to be removed at the end. */
struct stacks_trigger {
	char *system, *name;
};

struct stacks {
	struct stacks_trigger *t;
	size_t n;
};

int stacks_check(const char *spec, char *err, size_t errlen)
{
	struct filter_error fe = { 0 };
	struct query q;
	int ret = query_parse(spec, &q, &fe);

	if (ret < 0) {
		char pos[512];
		size_t n;

		filter_error_format(spec, &fe, pos, sizeof(pos));
		n = strlen(pos);
		if (n && pos[n - 1] == '\n')
			pos[n - 1] = '\0';
		snprintf(err, errlen, "bad --stacktrace '%s':\n%s", spec, pos);
		return ret;
	}
	query_free(&q);
	return 0;
}

/* errno after a failed libtracefs call, or TC_ERR_TRACEFS when it set none. */
static int stacks_err(void)
{
	return errno > 0 ? -errno : TC_ERR_TRACEFS;
}

static int stacks_remember(struct stacks *s, const char *sys, const char *name)
{
	struct stacks_trigger *t = realloc(s->t, (s->n + 1) * sizeof(*t));

	if (!t)
		return -ENOMEM;
	s->t = t;
	t[s->n].system = strdup(sys);
	t[s->n].name = strdup(name);
	if (!t[s->n].system || !t[s->n].name) {
		free(t[s->n].system);
		free(t[s->n].name);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

/*
 * Whether selector @sel names @sys:@name: as common/query.h resolves a
 * bare word, the events of that name, else (@as_system) the subsystem's.
 */
static bool stacks_matches(const struct query_sel *sel, const char *sys, const char *name,
			   bool as_system)
{
	if (as_system)
		return !sel->system && !fnmatch(sel->event, sys, 0);
	return query_sel_matches(sel, sys, name);
}

/* `stacktrace [if FILTER]` on @sys:@name, remembered in @s. */
static int stacks_trigger(struct tracing *t, struct stacks *s, const char *sys,
			  const char *name, const char *filter, char *err, size_t errlen)
{
	struct tracefs_instance *inst = tracing_instance(t);
	char *cmd;
	int ret = 0;

	if (!tracefs_event_file_exists(inst, sys, name, "trigger")) {
		snprintf(err, errlen, "this kernel has no event triggers (no %s:%s trigger file)",
			 sys, name);
		return -EOPNOTSUPP;
	}
	if (asprintf(&cmd, "stacktrace%s%s", filter ? " if " : "", filter ? filter : "") < 0)
		return -ENOMEM;
	errno = 0;
	if (tracefs_event_file_write(inst, sys, name, "trigger", cmd) < 0) {
		ret = stacks_err();
		snprintf(err, errlen, "the kernel refused trigger '%s' on %s:%s: %s", cmd, sys,
			 name, tc_strerror(ret));
	}
	free(cmd);
	return ret ?: stacks_remember(s, sys, name);
}

/* The triggers of one --stacktrace spec on the enabled events it names. */
static int stacks_spec(struct tracing *t, struct stacks *s, const char *spec, char *err,
		       size_t errlen)
{
	const char *sys, *name, *filter;
	size_t hits = 0;
	struct query q;
	int ret = query_parse(spec, &q, NULL);

	if (ret < 0) {
		snprintf(err, errlen, "bad --stacktrace '%s'", spec);
		return ret;
	}
	filter = q.filter ? spec + q.filter_offset : NULL;
	for (int pass = 0; pass < 2 && hits == 0 && ret == 0; pass++)
		for (size_t i = 0; ret == 0 && tracing_event_name(t, i, &sys, &name) == 0; i++)
			for (size_t j = 0; j < q.nsel; j++)
				if (stacks_matches(&q.sel[j], sys, name, pass == 1) &&
				    strcmp(sys, "ftrace")) {
					ret = stacks_trigger(t, s, sys, name, filter, err, errlen);
					hits++;
					break;
				}
	query_free(&q);
	if (ret == 0 && hits == 0) {
		snprintf(err, errlen, "--stacktrace '%s' names none of the traced events (-e)",
			 spec);
		ret = TC_ERR_UNKNOWN_EVENT;
	}
	return ret;
}

/* options/@opt ("stacktrace", "userstacktrace"): after every event of the instance. */
static int stacks_option(struct tracing *t, const char *opt, char *err, size_t errlen)
{
	struct tracefs_instance *inst = tracing_instance(t);
	char file[64];
	int ret;

	snprintf(file, sizeof(file), "options/%s", opt);
	if (!tracefs_file_exists(inst, file)) {
		snprintf(err, errlen, "this kernel has no %s", file);
		return -EOPNOTSUPP;
	}
	errno = 0;
	if (tracefs_instance_file_write(inst, file, "1") >= 0)
		return 0;
	ret = stacks_err();
	snprintf(err, errlen, "the kernel refused %s: %s", file, tc_strerror(ret));
	return ret;
}

int stacks_user(struct tracing *t)
{
	char why[256];
	int ret = stacks_option(t, "userstacktrace", why, sizeof(why));

	if (ret < 0) {
		log_warn("%s: tracing without user stacks", why);
		return 0;
	}
	return tracing_track(t, "ftrace", "user_stack");
}

int stacks_start(struct tracing *t, bool all, const char *const *specs, size_t nspecs,
		 struct stacks **out, char *err, size_t errlen)
{
	struct stacks *s = calloc(1, sizeof(*s));
	int ret = s ? 0 : -ENOMEM;

	*out = s;
	if (ret == 0 && (all || nspecs))
		ret = tracing_track(t, "ftrace", "kernel_stack");
	if (ret == 0 && all)
		ret = stacks_option(t, "stacktrace", err, errlen);
	for (size_t i = 0; ret == 0 && !all && i < nspecs; i++)
		ret = stacks_spec(t, s, specs[i], err, errlen);
	if (ret == -EOPNOTSUPP) {
		log_warn("%s: tracing without kernel stacks", err);
		ret = 0;
	}
	return ret;
}

void stacks_stop(struct tracing *t, struct stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		tracefs_event_file_write(tracing_instance(t), s->t[i].system, s->t[i].name,
					 "trigger", "!stacktrace");
		free(s->t[i].system);
		free(s->t[i].name);
	}
	free(s->t);
	free(s);
}
