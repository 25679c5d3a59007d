/*
 * metrics.h - tracecollectd's /metrics: the collector's counters for
 * Prometheus (its text exposition format, version 0.0.4) and /healthz,
 * over HTTP (libevent's evhttp).
 *
 * Who may scrape (the query endpoint's rule for unauthenticated access,
 * qauth.h): plain HTTP only on a numeric loopback address; anywhere else
 * only HTTPS, with a client certificate of the query CA (made for a query
 * client, not an agent: OU=agent is refused) that a `metrics = cert:CN`
 * line names. HTTPS on loopback asks the same.
 *
 * What it says comes from where `traceq --stats`, `--drops` and `--hosts`
 * get theirs (the store's counters, store_stats(), store_drops(),
 * store_hosts()), read through a store reader of its own, so the two say
 * the same; plus what only the running collector knows (the receive
 * journal's backlog, hosts connected, queries in flight, commit and query
 * latencies), through struct metrics_sources. Series are per host, never
 * per host and CPU: man/tracecollectd.8.scd lists them and says what a
 * host costs.
 *
 * Threads: one of its own, with its own event base: it accepts, reads
 * requests, reads the store and writes replies there, so neither the
 * event loop of the agents nor the query workers ever wait for a scrape.
 * Scrapes that arrive while one is being answered share the next reading
 * (each answer is read after its request came), so a thousand scrapers
 * cost the store about what one does.
 */
#ifndef SERVER_METRICS_H
#define SERVER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/query/qauth.h"

struct lathist;
struct metrics;
struct queryd;
struct tls_files;

/* The limits of the metrics port. */
#define METRICS_MAX_CONNS	256	/* connections at once; more wait in the backlog */
#define METRICS_TIMEOUT_S	10	/* a request's bytes, a reply's, an idle connection */
#define METRICS_MAX_HEADERS	8192	/* a request's line and headers, bytes */
#define METRICS_MAX_BODY	1024	/* a request's body (GET has none) */

/* What the collector hands over besides the store; called on the metrics thread. */
struct metrics_sources {
	struct queryd *qd;		/* queries in flight; NULL: none */
	const struct lathist *commit;	/* each commit's time; NULL: not kept */
	const struct lathist *query;	/* each query's time, arrival to reply */
	/* batches received but not yet stored; bytes of the receive journal */
	void (*backlog)(void *arg, uint64_t *unstored, uint64_t *journal_bytes);
	/* whether an agent of @host_id is connected now */
	bool (*connected)(void *arg, uint64_t host_id);
	/*
	 * trigger freezes refused or narrowed so far: reason @i's name (a
	 * label value; NULL: past the last reason) and count; NULL: none kept
	 */
	const char *(*freezes_refused)(void *arg, unsigned i, uint64_t *count);
	void *arg;
};

struct metrics_opts {
	const char *addr;		/* [http://]HOST:PORT, https://HOST:PORT (port 0: any) */
	const char *db;			/* the store, as --db names it */
	const struct tls_files *tls;	/* https: the collector's certificate, the query CA, CRL */
	const struct qauth_scopes *rights;	/* `metrics = cert:CN` lines; until metrics_stop() */
	struct metrics_sources src;
};

/*
 * metrics_addr_check - whether @addr is one the metrics port takes:
 * HOST:PORT or http://HOST:PORT on a numeric loopback address, or
 * https://HOST:PORT anywhere; *@tls says which (may be NULL).
 * Return: 0; TC_ERR_CONFIG with a sentence in @why.
 */
int metrics_addr_check(const char *addr, bool *tls, char *why, size_t len);

/*
 * metrics_right_parse - add `metrics = cert:CN` (@spec) to @rights. The
 * key takes addresses too: an @spec that names no identity is one.
 * Return: 0; 1 (@spec is no right: an address); TC_ERR_CONFIG with a
 * sentence in @why (uid:, user:, group:, a bad CN); -ENOMEM.
 */
int metrics_right_parse(struct qauth_scopes *rights, const char *spec, char *why, size_t len);

/*
 * metrics_start - listen on @o->addr (checked as metrics_addr_check()
 * does) and serve /metrics and /healthz from a thread of its own until
 * metrics_stop(). @o's sources are called until then.
 * Return: 0 and *@out; TC_ERR_CONFIG, TC_ERR_TLS or -errno (logged).
 */
int metrics_start(const struct metrics_opts *o, struct metrics **out);

/* metrics_bound - "http://HOST:PORT" or "https://HOST:PORT" as bound; NULL for NULL. */
const char *metrics_bound(const struct metrics *m);

/*
 * metrics_reload - new HTTPS connections use @files (SIGHUP); on failure
 * the old ones stay. Return: 0 (also for NULL or plain HTTP); TC_ERR_TLS
 * with @err filled.
 */
int metrics_reload(struct metrics *m, const struct tls_files *files, char *err, size_t errlen);

/* metrics_stop - stop the thread, close every connection, free @m; NULL is fine. */
void metrics_stop(struct metrics *m);

#endif
