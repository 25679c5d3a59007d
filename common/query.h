/*
 * query.h - traceq's query text: which events, and optionally which of them.
 *
 *   query    := SELECTOR { "," SELECTOR } [ "where" FILTER ]
 *   SELECTOR := word | word ":" word
 *   word     := a name or a glob: runs of [A-Za-z0-9_.-] and the glob
 *               characters * ? [ ] ! ^ (fnmatch(3), as the kernel's
 *               set_event takes "sched:*" and "*:*")
 *
 * Examples: sched_switch, sched, sched:sched_switch, sched:sched_*,
 * sched:*, *, sched_switch,sched_wakeup, irq:*,sched:sched_switch.
 * Blanks may follow a comma. Names have dashes ("xhci-hcd").
 * "where" is case-insensitive; FILTER is filter.h's language and runs to
 * the end of the text.
 *
 * Ambiguity, decided: a bare word ("sched", "sched_switch", "sched_*")
 * may name events or a subsystem. The parser cannot know which exist, so
 * it keeps the word as @event with @system NULL; the collector, which
 * knows the stored event types, resolves it: the events whose name
 * matches, and when there are none, every event of the subsystems whose
 * name matches. "system:*" is the explicit way to ask for a subsystem.
 */
#ifndef TC_QUERY_H
#define TC_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/filter.h"

#define QUERY_MAX_LEN	(FILTER_MAX_LEN + 256)	/* bytes of query text */

#define QUERY_MAX_SELECTORS	64	/* selectors in one query */

/*
 * struct query_sel - one selector: fnmatch(3) globs.
 * @system: the subsystem glob, or NULL for a bare word (see above).
 * @event:  the event glob (or the bare word); never NULL ("*" for "sys:*").
 * @pos, @len: where the selector is in the query text, for errors.
 */
struct query_sel {
	char *system;
	char *event;
	size_t pos, len;
};

/*
 * struct query - a parsed query; every member is owned by the struct and
 * freed by query_free().
 * @sel, @nsel:    the selectors, in the order written (1..QUERY_MAX_SELECTORS).
 * @filter:        the parsed, unbound filter; NULL without "where".
 * @filter_offset: byte offset of the filter text in the query text (add it
 *                 to positions from a later filter_bind() error to point
 *                 into the whole query).
 */
struct query {
	struct query_sel *sel;
	size_t nsel;
	struct filter *filter;
	size_t filter_offset;
};

/*
 * query_parse - parse traceq's query text.
 * @text: NUL-terminated query; at most QUERY_MAX_LEN bytes.
 * @out:  filled on success (free with query_free()); untouched on failure.
 * @err:  on failure, the offending token with its position in the WHOLE
 *        query text, ready for filter_error_format(text, err, ...).  May be
 *        NULL.
 *
 * Return: 0; TC_ERR_UNEXPECTED_END (no event name, nothing after ':', ','
 * or 'where'), TC_ERR_SYNTAX (bad name, junk after the event name), TC_ERR_TOO_LONG
 * (over QUERY_MAX_SELECTORS selectors), any
 * error of filter_parse() with its position shifted, TC_ERR_TOO_LONG,
 * -ENOMEM.
 */
int query_parse(const char *text, struct query *out, struct filter_error *err);

/* query_free - free what query_parse() put in @q and zero it; NULL ok. */
void query_free(struct query *q);

/*
 * query_sel_matches - whether event @system:@name is one selector @sel
 * names as written (a bare word here matches event names only; the
 * subsystem fallback is the resolver's, which knows what exists).
 */
bool query_sel_matches(const struct query_sel *sel, const char *system, const char *name);

#endif
