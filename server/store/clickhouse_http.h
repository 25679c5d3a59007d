/*
 * clickhouse_http.h - one connection to ClickHouse's HTTP interface
 * (libcurl, keep-alive): run a statement, run a query and parse its
 * TabSeparated reply (clickhouse_reply.h), and POST an INSERT's RowBinary
 * body, gzip-compressed (Content-Encoding: gzip, which 18.16 reads; later
 * releases too).
 *
 * Credentials go as HTTP basic authentication, never in a URL or a log
 * line. With a client certificate or a CA the connection is https and the
 * server's certificate is verified (against the CA when given, else the
 * system's). A statement's text goes in the POST body; an INSERT's in the
 * URL (percent-encoded), its rows in the body.
 *
 * Errors: TC_ERR_DB with a sentence (ch_http_errmsg()): the server's own
 * message (its exception text, escaped, cut at a line), or why it could
 * not be reached. ch_http_down() says whether the last failure was one of
 * reaching it (refused, timed out, reset), for back-pressure: the caller
 * says "ClickHouse unreachable" once and retries.
 *
 * Threads: a handle is used by one thread at a time. ch_http_global_init()
 * runs libcurl's global set-up once (it is not thread-safe); the open
 * calls do it.
 */
#ifndef SERVER_STORE_CLICKHOUSE_HTTP_H
#define SERVER_STORE_CLICKHOUSE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "server/store/clickhouse_reply.h"

/* One request's time, all of it, unless a conf says otherwise. */
#define CH_HTTP_TIMEOUT_MS	120000

/* Where and how to reach the server. The strings are copied. */
struct ch_http_conf {
	const char *base;	/* "http://HOST:PORT/" or "https://HOST:PORT/" */
	const char *user;	/* NULL: ClickHouse's "default" */
	const char *password;	/* NULL: none */
	const char *database;	/* every statement's default database; NULL: the server's */
	const char *cert, *key;	/* TLS client certificate and key (PEM); NULL: none */
	const char *ca;		/* CA of the server's certificate; NULL: the system's */
	const char *params;	/* settings every request carries ("a=1&b=2", ours only); NULL: none */
	long connect_ms;	/* 0: 5000 */
	long timeout_ms;	/* one request, all of it; 0: CH_HTTP_TIMEOUT_MS */
	size_t max_reply;	/* bytes of one reply; 0: CH_REPLY_MAX_BYTES */
};

struct ch_http;

/* ch_http_global_init - libcurl's global set-up, once per process. Return: 0; TC_ERR_DB. */
int ch_http_global_init(void);

/* ch_http_new - a handle for @c (nothing is sent yet). Return: 0; TC_ERR_DB; -ENOMEM. */
int ch_http_new(const struct ch_http_conf *c, struct ch_http **out);

/*
 * ch_http_dup - a second connection to @h's server, with its settings and
 * database (for another thread). Return: 0 with *@out set; -ENOMEM; TC_ERR_DB.
 */
int ch_http_dup(const struct ch_http *h, struct ch_http **out);

/* ch_http_free - close and free; NULL is allowed. */
void ch_http_free(struct ch_http *h);

/*
 * ch_http_set_database - statements from now on run in @db (NULL: the
 * server's default). Return: 0; -ENOMEM.
 */
int ch_http_set_database(struct ch_http *h, const char *db);

/* ch_http_exec - run @sql, whose reply is not read. Return: 0; TC_ERR_DB. */
int ch_http_exec(struct ch_http *h, const char *sql);

/*
 * ch_http_query - run @sql (a SELECT; FORMAT TabSeparated is added) and
 * parse its reply into @out (at most @max_cells cells; 0: CH_REPLY_MAX_CELLS),
 * which ch_reply_free() frees. @out is written only on success.
 * Return: 0; TC_ERR_DB; TC_ERR_SYNTAX or TC_ERR_TOO_LONG (a reply the
 * parser refused); -ENOMEM.
 */
int ch_http_query(struct ch_http *h, const char *sql, size_t max_cells, struct ch_reply *out);

/*
 * ch_http_insert - run @insert ("INSERT INTO t (cols) FORMAT RowBinary")
 * with the @len bytes at @body as its data, gzip-compressed when @len is
 * worth it. Return: 0; TC_ERR_DB; -ENOMEM.
 */
int ch_http_insert(struct ch_http *h, const char *insert, const void *body, size_t len);

/* ch_http_errmsg - why the last call failed (escaped, one line). */
const char *ch_http_errmsg(const struct ch_http *h);

/* ch_http_code - ClickHouse's error code of the last failure ("Code: N"), 0: none. */
int ch_http_code(const struct ch_http *h);

/* ch_http_down - whether the last failure was the server not being reached. */
bool ch_http_down(const struct ch_http *h);

/* ch_http_where - "HOST:PORT" of the server, for log lines. */
const char *ch_http_where(const struct ch_http *h);

#endif
