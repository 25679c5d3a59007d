/*
 * ftrace.h - the kernel's function tracers (function, function_graph) in
 * the agent's own tracefs instance: function filters, current_tracer, and
 * telling a kernel that refuses them (lockdown, or built without them)
 * apart from real failures, so the agent can say so in one line and keep
 * tracing its events. Prefix ftrace_.
 */
#ifndef AGENT_FTRACE_H
#define AGENT_FTRACE_H

#include <stdbool.h>
#include <stddef.h>

struct tracefs_instance;

/*
 * ftrace_tracer_ok - whether @name is a tracer the agent drives:
 * "function" or "function_graph".
 */
bool ftrace_tracer_ok(const char *name);

/*
 * ftrace_start - write each glob of @filters (@nfilters of them) to the
 * instance's set_ftrace_filter, then @tracer to its current_tracer.
 *
 * On failure the instance's tracer is left at "nop", its filter empty, and
 * @err holds one line saying why. A kernel that refuses the function
 * tracers (locked down: EPERM or EACCES, even for root) or lacks @tracer
 * (not in available_tracers) is told apart from other failures, since the
 * agent carries on without function events then.
 *
 * Return: 0; -EPERM or -EACCES when the kernel refuses; -ENODEV when it
 * has no such tracer; -EINVAL when a filter matches no kernel function;
 * another -errno or TC_ERR_TRACEFS when tracefs fails otherwise.
 */
int ftrace_start(struct tracefs_instance *inst, const char *tracer,
		 const char *const *filters, size_t nfilters, char *err,
		 size_t errlen);

/* ftrace_refused - whether @ret from ftrace_start() means "this kernel
 * will not do it" (tracing goes on without function events). */
bool ftrace_refused(int ret);

/*
 * ftrace_stop - set the instance's current_tracer back to "nop" and clear
 * its function filter (errors are ignored: the instance is about to go).
 */
void ftrace_stop(struct tracefs_instance *inst);

/*
 * ftrace_event - the @i-th ftrace-system event @tracer writes into the
 * ring buffer (function: "function"; function_graph: "funcgraph_entry",
 * "funcgraph_exit"), whose formats the collector needs to decode them.
 *
 * Return: the event name, or NULL past the last one.
 */
const char *ftrace_event(const char *tracer, size_t i);

#endif
