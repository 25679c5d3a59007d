/*
 * fastprint.h - an event's print fmt applied to its records without
 * libtraceevent's printf machinery, for the simple formats most events
 * have: a format string whose conversions are integers (%d %u %x ... with
 * flags, width, length) and strings (%s), each taking a plain field
 * (REC->field, REC->array[N], __get_str(field)). Prefix fastprint_.
 *
 * The program is compiled once per format from libtraceevent's parse of
 * it (struct tep_print_fmt), so both read the same text the same way; an
 * event with anything else in its print fmt (helpers, pointers, casts,
 * arithmetic, a plugin's handler, a format libtraceevent did not parse)
 * gets no program, and the caller prints it with libtraceevent.
 * tests/test_fastprint.c holds the two to the same bytes over every
 * format of the running kernel.
 */
#ifndef TRACEQ_FASTPRINT_H
#define TRACEQ_FASTPRINT_H

#include <stddef.h>

#include <event-parse.h>

struct fastprint;

/*
 * fastprint_new - the program for @event's print fmt (parsed by its
 * handle, whose long size is the traced host's). Return: 0 and *@out,
 * NULL in *@out when the format is not one it prints; -ENOMEM.
 */
int fastprint_new(struct tep_event *event, struct fastprint **out);
void fastprint_free(struct fastprint *f);

/*
 * fastprint_run - the event text of the record @data[@size] appended at
 * @buf[*@len], cut at @cap bytes; *@len grows by what was written. The
 * record's strings are read up to their NUL within @data[@avail] (@avail
 * >= @size: the bytes readable there, as libtraceevent reads them).
 * Return: 0; -1 when a string has no NUL there (print the record with
 * libtraceevent, which reads on), @buf then undefined past *@len.
 */
int fastprint_run(const struct fastprint *f, const void *data, size_t size, size_t avail,
		  char *buf, size_t *len, size_t cap);

#endif
