/*
 * serve.h - traceq --serve [ADDR:]PORT: the page in the user's browser
 * (issue 37). traceq holds the user's connection to the collector (ipc
 * uid or TLS client certificate, and so its scope); the page asks traceq
 * over HTTP and traceq asks the collector, so the collector needs no new
 * way in. libevent's evhttp parses the requests; serve_api.h answers the
 * /api/ ones; the page's files (traceq/page/) are compiled in.
 *
 * Every request must carry the token (?token=HEX) printed in the URL, or
 * it gets 403: any local user can reach a loopback port. Prefix serve_.
 */
#ifndef TRACEQ_SERVE_H
#define TRACEQ_SERVE_H

#include <stddef.h>

struct client;
struct traceq_opts;
struct serve;

#define SERVE_DEFAULT_ADDR	"127.0.0.1"
#define SERVE_TOKEN_BYTES	16	/* random bytes, printed as hex */

/*
 * serve_open - listen on @addrport ([ADDR:]PORT; ADDR a numeric IPv4 or
 * [IPv6] address, default SERVE_DEFAULT_ADDR; PORT 0: any free port)
 * with a new random token, answering over @c with @o (both the caller's,
 * outliving the server). The page's URL goes into @url.
 * Return: 0 and *@out; -1 (said on stderr).
 */
int serve_open(const char *addrport, struct client *c, const struct traceq_opts *o,
	       struct serve **out, char *url, size_t len);

/* serve_run - answer requests until SIGINT or SIGTERM. Return: 0; -1 (said). */
int serve_run(struct serve *s);

/* serve_free - close and free @s; NULL is fine. */
void serve_free(struct serve *s);

#endif
