/*
 * stacks.h - kernel stack traces for the agent's events (--stacktrace,
 * issue 38): the kernel writes an ftrace:kernel_stack record after each
 * event it stacks, on the same CPU; the agent only asks for them and ships
 * that record's format. Prefix stacks_.
 *
 *   --stacktrace                 every event: the instance's
 *                                options/stacktrace
 *   --stacktrace=EVENT[,EVENT]   the named events only: a `stacktrace`
 *                                trigger on each (events/S/E/trigger)
 *   --stacktrace 'EVENT where FILTER'
 *                                the events that match FILTER (the
 *                                kernel's filter language, as traceq's
 *                                queries): `stacktrace if FILTER`
 *
 * EVENT is a query selector (common/query.h): a name, SYSTEM:NAME or a
 * glob, matched against the events the agent enabled (-e).
 */
#ifndef AGENT_STACKS_H
#define AGENT_STACKS_H

#include <stdbool.h>
#include <stddef.h>

struct tracing;
struct stacks;

/*
 * stacks_check - whether @spec (an --stacktrace argument) parses; on
 * failure @err holds one line saying where and why.
 * Return: 0; a query_parse() error.
 */
int stacks_check(const char *spec, char *err, size_t errlen);

/*
 * stacks_start - ask the kernel of instance @t for stacks: every event
 * when @all, else the events the @nspecs specs name (each matching at
 * least one enabled event). A kernel without options/stacktrace, or
 * without event triggers, is said in one warning and tracing goes on
 * without stacks; a spec that matches no enabled event, or a filter the
 * kernel refuses, fails with @err saying which. The triggers set are kept
 * in *@out for stacks_stop() (also on failure: the ones set so far).
 *
 * Return: 0; TC_ERR_UNKNOWN_EVENT; -errno or TC_ERR_TRACEFS; -ENOMEM.
 */
int stacks_start(struct tracing *t, bool all, const char *const *specs, size_t nspecs,
		 struct stacks **out, char *err, size_t errlen);

/*
 * stacks_user - --user-stacktrace: the instance's options/userstacktrace
 * (an ftrace:user_stack record of user-space return addresses after every
 * event), its format shipped. A kernel without it is said in one warning.
 * Return: 0; -ENOMEM.
 */
int stacks_user(struct tracing *t);

/*
 * stacks_stop - remove the triggers stacks_start() set (the instance's
 * options/stacktrace goes with the instance) and free @s; NULL is fine.
 */
void stacks_stop(struct tracing *t, struct stacks *s);

#endif
