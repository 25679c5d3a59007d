/*
 * metrics_text.h - the text of /metrics (private to server/query/: the
 * port, metrics.c, serves it): Prometheus's text exposition format 0.0.4,
 * one reading of the store and of the collector's sources.
 */
#ifndef SERVER_METRICS_TEXT_H
#define SERVER_METRICS_TEXT_H

#include <stddef.h>

#include "server/query/metrics.h"

struct store_reader;

/*
 * metrics_render - the whole text, read now from @st and @src, into a
 * malloc()ed *@text of *@len bytes (the caller frees it). Per host, by
 * name: two hosts of one name (a reinstalled machine) are summed, their
 * gauges the newest one's. A host's name is a label value as traceq
 * prints it (log_escape()), then escaped for the format (\\, \").
 * Return: 0; TC_ERR_DB (the store could not be read); -ENOMEM.
 */
int metrics_render(struct store_reader *st, const struct metrics_sources *src, char **text,
		   size_t *len);

/*
 * metrics_label - @s as a label value between double quotes, into @buf:
 * log_escape()d (printable UTF-8; control bytes and bytes that are not
 * UTF-8 as \xNN), then backslash and double quote escaped as the format
 * wants. Returns @buf.
 */
const char *metrics_label(const char *s, char *buf, size_t len);

#endif
