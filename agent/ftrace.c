/*
 * ftrace.c - the kernel's function tracers in the agent's instance (see
 * ftrace.h), driven through libtracefs's instance files. A locked-down
 * kernel refuses writes to set_ftrace_filter and current_tracer with EPERM
 * even for root; a kernel without CONFIG_FUNCTION_GRAPH_TRACER answers
 * EINVAL for a tracer missing from available_tracers.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracefs.h>

#define LOG_PREFIX "ftrace"
#include "common/log.h"
#include "common/tc_error.h"
#include "agent/ftrace.h"

static const char *const function_events[] = { "function", NULL };
static const char *const graph_events[] = {
	"funcgraph_entry", "funcgraph_exit", NULL,
};

static int write_err(void)
{
	return errno > 0 ? -errno : TC_ERR_TRACEFS;
}

bool ftrace_tracer_ok(const char *name)
{
	return !strcmp(name, "function") || !strcmp(name, "function_graph");
}

bool ftrace_refused(int ret)
{
	return ret == -EPERM || ret == -EACCES || ret == -ENODEV;
}

const char *ftrace_event(const char *tracer, size_t i)
{
	const char *const *list;

	list = strcmp(tracer, "function") ? graph_events : function_events;
	for (; *list && i; list++, i--)
		;
	return *list;
}

/* Whether @tracer is listed in the instance's available_tracers. */
static bool tracer_available(struct tracefs_instance *inst,
			     const char *tracer)
{
	char *text, *tok, *save;
	bool found = false;

	text = tracefs_instance_file_read(inst, "available_tracers", NULL);
	if (!text)
		return true;	/* cannot tell: let the write decide */
	for (tok = strtok_r(text, " \t\n", &save); tok && !found;
	     tok = strtok_r(NULL, " \t\n", &save))
		found = !strcmp(tok, tracer);
	free(text);
	return found;
}

/* The one line for a refusal or failure of @what (a file, a glob). */
static void explain(int ret, const char *tracer, const char *what,
		    char *err, size_t errlen)
{
	if (ret == -EPERM || ret == -EACCES)
		tc_seterr(err, errlen, "the kernel refuses the %s tracer (locked "
		       "down: %s)", tracer, ret == -EPERM ? "EPERM" : "EACCES");
	else if (ret == -ENODEV)
		tc_seterr(err, errlen, "the kernel has no %s tracer (not in "
		       "available_tracers)", tracer);
	else if (ret == -EINVAL)
		tc_seterr(err, errlen, "--ftrace-filter '%s' matches no kernel "
		       "function", what);
	else
		tc_seterr(err, errlen, "cannot start the %s tracer (%s): %s",
		       tracer, what, tc_strerror(ret));
}

static int set_filters(struct tracefs_instance *inst,
		       const char *const *filters, size_t n, size_t *bad)
{
	size_t i;

	for (i = 0; i < n; i++) {
		errno = 0;
		if (tracefs_instance_file_append(inst, "set_ftrace_filter",
						 filters[i]) < 0) {
			*bad = i;
			return write_err();
		}
	}
	return 0;
}

int ftrace_start(struct tracefs_instance *inst, const char *tracer,
		 const char *const *filters, size_t nfilters, char *err,
		 size_t errlen)
{
	const char *what = "current_tracer";
	size_t bad = 0;
	int ret;

	if (!tracer_available(inst, tracer)) {
		ret = -ENODEV;
		goto out;
	}
	ret = set_filters(inst, filters, nfilters, &bad);
	if (ret < 0) {
		what = filters[bad];
		goto out;
	}
	errno = 0;
	if (tracefs_instance_file_write(inst, "current_tracer", tracer) < 0)
		ret = write_err();
	if (ret == -EINVAL)
		ret = -ENODEV;	/* the tracer exists but cannot be used */
out:
	if (ret < 0) {
		explain(ret, tracer, what, err, errlen);
		ftrace_stop(inst);
	}
	return ret;
}

void ftrace_stop(struct tracefs_instance *inst)
{
	tracefs_instance_file_write(inst, "current_tracer", "nop");
	if (tracefs_file_exists(inst, "set_ftrace_filter"))
		tracefs_instance_file_clear(inst, "set_ftrace_filter");
}
