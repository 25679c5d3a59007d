/*
 * serve_export.h - traceq --serve's downloads (/api/export): the
 * Perfetto or trace.dat export of what the timeline shows, made by
 * traceq --export itself (this program run again, with this one's
 * connection options, into a private temporary directory), so the page
 * offers exactly the files the command line writes. Prefix serve_export_.
 */
#ifndef TRACEQ_SERVE_EXPORT_H
#define TRACEQ_SERVE_EXPORT_H

#include <stddef.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

struct traceq_opts;

/* What an export answered: the body's type and file name (for Content-Disposition). */
struct serve_file {
	const char *type;
	char name[64];
};

/*
 * serve_export - /api/export with @args: format=tracedat|perfetto,
 * since=, until=, host= (as the options), q= (a QUERY; none: every
 * event), run as `traceq --export` with @o's --server, certificate and
 * timeout. The file goes into @out (the temporary files are gone when
 * this returns; @out holds the open file), *@f says what it is; on an
 * error, @out holds {"ok":false,"error":...}.
 * Return: the HTTP status (200; 400 the request is wrong; 502 the
 * export failed; 500 out of memory or no temporary directory).
 */
int serve_export(const struct traceq_opts *o, const struct evkeyvalq *args,
		 struct evbuffer *out, struct serve_file *f);

#endif
