/*
 * serve_flame.h - traceq --serve's /api/flame: the flame chart's frames
 * of a function_graph trace.
 *
 *   /api/flame   [q=funcgraph [where FILTER]] [since=T until=T]
 *                [host=GLOB] [cpu=LIST]: {"ok":...,"count":N,
 *                "more":...,"frames":[[seq,pid,cpu,depth,"start",ns,
 *                name,comm],...],"error":...}
 *
 * The frames are the calls graph.h's walk nests (graph_walk(), the walk
 * traceq --graph prints), each at its exit: start (wall-clock ns, a
 * string: past 2^53 a browser's numbers lose digits) and ns as --graph's
 * durations; seq orders a thread's calls as they were entered. At most
 * SERVE_FLAME_MAX frames ("more" says the rest were left out); the rows
 * behind them are capped by graph_max_rows. Names and comms are the
 * peers' own, JSON-escaped: the page shows them as text only.
 */
#ifndef TRACEQ_SERVE_FLAME_H
#define TRACEQ_SERVE_FLAME_H

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

struct client;
struct traceq_opts;

#define SERVE_FLAME_MAX		200000	/* frames of one answer */

/*
 * serve_api_flame - the answer to /api/flame with @args, appended to
 * @out, asked over @c with @o's options (both the caller's).
 * Return: the HTTP status (200; 400 the request or query is wrong, the
 * error in the JSON; 502 the collector failed; 500 out of memory).
 */
int serve_api_flame(struct client *c, const struct traceq_opts *o,
		    const struct evkeyvalq *args, struct evbuffer *out);

#endif
