/*
 * serve_api.h - the answers of traceq --serve's /api/ (serve.h), each a
 * JSON object built from what traceq's modes print, so the page shows
 * the same numbers and rows as the command line:
 *
 *   /api/stats   {"stats":[...],"hosts":[...]}: traceq --stats -f json's
 *                rows (per host and CPU, and each host's cpu "all"
 *                total) and traceq --hosts -f json's
 *   /api/query   q=QUERY [mode=rows|count|hist|losses|events] [hist=SPEC]
 *                [format=text|kernel|fields|json|csv] [limit=N]
 *                [after_ts=N after_id=N after_type=N] [since=T until=T]
 *                [host=GLOB] [cpu=LIST]: {"ok":...,"text":...,
 *                "error":..., "more":..., "after":{...}, "count":...};
 *                after's ts, id and type are strings (past 2^53 a
 *                browser's numbers lose digits), sent back as after_*;
 *                hist with format=json answers "table": [[cols...],
 *                [row...], ...] instead of the kernel's text (the
 *                timeline's summaries: keys=common_cpu,
 *                common_timestamp.buckets=N,next_pid); losses (no q) the
 *                loss positions of the window, --events -f json's rows
 *                (q optional), reverse=1 newest first
 *
 * The request's arguments are untrusted: each is capped
 * (SERVE_ARG_MAX, the query's own caps) and numbers are read strictly.
 * Prefix serve_api_.
 */
#ifndef TRACEQ_SERVE_API_H
#define TRACEQ_SERVE_API_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

struct client;
struct traceq_opts;

#define SERVE_ARG_MAX		8192	/* bytes of one argument */
#define SERVE_PAGE_ROWS_MAX	5000	/* rows of one /api/query page */
#define SERVE_OUT_MAX		(16u << 20)	/* bytes of one answer's text */
#define SERVE_LOSSES_MAX	10000	/* loss positions of one mode=losses answer */

/*
 * serve_api_arg - argument @name of @args (NULL: not given); NULL, *@bad
 * set and said on stderr (the request's error) when it is longer than
 * SERVE_ARG_MAX bytes (*@bad is never cleared: one check after several
 * calls).
 */
const char *serve_api_arg(const struct evkeyvalq *args, const char *name, bool *bad);

/*
 * serve_api_stats, serve_api_query - the answer to /api/stats and
 * /api/query with the arguments @args, appended to @out, asked over @c
 * with @o's connection options (both the caller's).
 * Return: the HTTP status (200; 400 the request or query is wrong, with
 * the error in the JSON; 502 the collector failed; 500 out of memory).
 */
int serve_api_stats(struct client *c, const struct traceq_opts *o,
		    const struct evkeyvalq *args, struct evbuffer *out);
int serve_api_query(struct client *c, const struct traceq_opts *o,
		    const struct evkeyvalq *args, struct evbuffer *out);

/*
 * serve_capture_begin, serve_capture_end - what the modes print on
 * stdout and stderr taken while a request runs: both pointed at memory
 * files, then put back, what they got into *@out and *@err (NUL-ended, up
 * to SERVE_OUT_MAX bytes each; the caller frees). begin returns 0, or -1
 * with nothing changed.
 */
struct serve_capture {
	int saved[2];		/* stdout's and stderr's descriptors meanwhile */
	int mem[2];		/* the memory files in their place */
};
int serve_capture_begin(struct serve_capture *cap);
void serve_capture_end(struct serve_capture *cap, char **out, size_t *olen, char **err,
		       size_t *elen);

/* serve_api_select - since, until, host (a glob), cpu (a list) into @sel. Return: 0; -1 (said). */
struct tq_select;
int serve_api_select(const struct evkeyvalq *args, struct tq_select *sel);

#endif
