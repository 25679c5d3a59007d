/*
 * hist_print.h - traceq --hist's output: a histogram as the kernel prints
 * an event's `hist` file (kernel/trace/trace_events_hist.c:
 * hist_trigger_show(), hist_trigger_entry_print(), hist_trigger_print_key()),
 * from the collector's QOP_HIST replies (server/query/queryd_hist.h says their
 * columns).
 */
#ifndef TRACEQ_HIST_PRINT_H
#define TRACEQ_HIST_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "common/hist.h"
#include "proto/qmsg.h"

/*
 * hist_print_header - "# event histogram", "# trigger info: hist:... [if
 * FILTER] [active]" and the blank lines after it. @filter: the query's
 * filter text (NULL: none).
 */
void hist_print_header(FILE *f, const struct hist_spec *sp, const char *filter);

/*
 * hist_print_names - take the field names of @rep's columns into @sp (the
 * collector names the CPU common_cpu, as the kernel does, whether asked
 * for as cpu or CPU). A reply whose columns are not @sp's changes nothing.
 */
void hist_print_names(struct hist_spec *sp, const struct qmsg_reply *rep);

/*
 * hist_print_page - one "{ key: value, ... } hitcount: N  val: N" line per
 * row of @rep, in its order. Return: 0; -1 when @rep's columns are not
 * those of @sp (nothing printed).
 */
int hist_print_page(FILE *f, const struct hist_spec *sp, const struct qmsg_reply *rep);

/* hist_print_totals - the "Totals:" lines: Hits, Entries, Dropped. */
void hist_print_totals(FILE *f, uint64_t hits, uint64_t entries, uint64_t dropped);

#endif
