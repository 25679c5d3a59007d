/*
 * query.h - traceq's query text: which events, and optionally which of them.
 *
 *   query := EVENT [ "where" FILTER ]
 *   EVENT := name | system ":" name | system ":" "*"
 *
 * Names are runs of [A-Za-z0-9_.-] (subsystems like "xhci-hcd" have dashes).
 * "where" is case-insensitive; FILTER is filter.h's language and runs to the
 * end of the text.
 *
 * Ambiguity, decided: a bare name ("sched" or "sched_switch") may be an event
 * or a subsystem.  The parser cannot know which exist, so it keeps the word
 * as @event with @system NULL; the server, which knows the formats it has,
 * resolves it (an event of that name first, else a subsystem of that name).
 * "system:*" is the explicit way to ask for a whole subsystem.
 */
#ifndef TC_QUERY_H
#define TC_QUERY_H

#include <stddef.h>

#include "common/filter.h"

#define QUERY_MAX_LEN	(FILTER_MAX_LEN + 256)	/* bytes of query text */

/*
 * struct query - a parsed query; every member is owned by the struct and
 * freed by query_free().
 * @system:        the subsystem, or NULL if the text named none.
 * @event:         the event (or an unresolved bare name, see above); NULL
 *                 for "system:*".
 * @filter:        the parsed, unbound filter; NULL without "where".
 * @filter_offset: byte offset of the filter text in the query text (add it
 *                 to positions from a later filter_bind() error to point
 *                 into the whole query).
 */
struct query {
	char *system;
	char *event;
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
 * Return: 0; TC_ERR_UNEXPECTED_END (no event name, nothing after ':' or
 * 'where'), TC_ERR_SYNTAX (bad name, junk after the event name), any
 * error of filter_parse() with its position shifted, TC_ERR_TOO_LONG,
 * -ENOMEM.
 */
int query_parse(const char *text, struct query *out, struct filter_error *err);

/* query_free - free what query_parse() put in @q and zero it; NULL ok. */
void query_free(struct query *q);

#endif
