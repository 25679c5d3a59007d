/*
 * filter_table.h - the collector's server-side filter table: which filter (in
 * the kernel's event-filter language, common/filter.h) applies to which
 * event of which host.
 *
 * A table is an ordered list of rules, one per `filter =` line of the
 * configuration (then one per --filter option):
 *
 *   RULE   := [ "[host=" GLOB "]" ] TARGET FILTER
 *   TARGET := SYSTEM ":" EVENT        one event
 *           | SYSTEM                  every event of the subsystem
 *   FILTER := kernel filter text; "0" clears the filter (as writing 0 to a
 *             kernel filter file does)
 *
 * GLOB matches the host name the agent announced, with fnmatch(3) syntax.
 *
 * Resolving (filter_table_resolve) walks the rules in order, like successive
 * writes to the kernel's filter files: a rule that matches the host and the
 * event replaces the event's filter when it binds to the event's format;
 * when it does not (a subsystem filter naming a field the event lacks, or
 * any other type error), the event keeps the filter it had and the report
 * callback says so - the subsystem semantics of the kernel's
 * Documentation/trace/events.rst, "Subsystem filters".
 *
 * A table is immutable once built and reference-counted, so the event loop
 * can swap in a new one (SIGHUP) while the ingest worker still resolves
 * against the old one.
 */
#ifndef SERVER_FILTER_TABLE_H
#define SERVER_FILTER_TABLE_H

#include <stddef.h>

#include "common/filter.h"

struct filter_table;

/*
 * filter_table_new - an empty table (no rule: every event is kept).
 * Return: 0 and *@out (reference count 1); -ENOMEM.
 */
int filter_table_new(struct filter_table **out);

/*
 * filter_table_add - parse @rule (see the header) and append it.
 * @err: on failure, receives the message followed by the rule text and a
 *       caret line under the offending token (filter_error_format()).
 *
 * Return: 0; TC_ERR_SYNTAX (missing target or filter, bad "[host=...]"),
 * the filter parser's codes (filter_parse()); -ENOMEM.
 */
int filter_table_add(struct filter_table *fs, const char *rule, char *err, size_t errlen);

/* filter_table_count - the number of rules in @fs. */
size_t filter_table_count(const struct filter_table *fs);

/* filter_table_ref / filter_table_unref - reference counting (thread-safe); NULL ok. */
struct filter_table *filter_table_ref(struct filter_table *fs);
void filter_table_unref(struct filter_table *fs);

/*
 * filter_table_report_fn - told about a rule that matched an event but did not
 * apply to it: @rule is the rule's text, @why the bind error rendered with
 * a caret (several lines, no trailing newline).
 */
typedef void (*filter_table_report_fn)(void *ctx, const char *system, const char *name,
				       const char *rule, const char *why);

/*
 * filter_table_resolve - the effective filter of event @system:@name on @host.
 * @schema: the event's fields, for binding.
 * @out:    receives a bound filter the caller frees with filter_free(), or
 *          NULL when no filter applies (keep every event). Written only on
 *          success.
 * @report, @ctx: called for each matching rule that did not apply (may be
 *          NULL).
 *
 * Context: any thread; @fs is only read.
 * Return: 0; -ENOMEM.
 */
int filter_table_resolve(const struct filter_table *fs, const char *host,
			 const char *system, const char *name,
			 const struct filter_schema *schema, struct filter **out,
			 filter_table_report_fn report, void *ctx);

#endif
