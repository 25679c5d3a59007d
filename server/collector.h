/*
 * collector.h - tracecollectd's shared state and the agent connections
 * (conn.c). Module-private to server/.
 *
 * Threads: the event loop runs connections and TLS (conn.c); one ingest
 * worker (ingest.h) owns the store and does all decoding, filtering and
 * writing. Connections push jobs to it; it answers through the hooks
 * conn_ingest_hooks() fills, which run on the event loop.
 */
#ifndef SERVER_COLLECTOR_H
#define SERVER_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "server/store/store.h"

struct conn;
struct ingest;
struct ingest_hooks;

struct collector {
	struct event_base *base;
	SSL_CTX *tls;
	struct evconnlistener *listener;
	struct store *store;		/* the one writer: used by the ingest worker only */
	struct ingest *ing;		/* the ingest worker and its queue */
	struct conn *conns;		/* live agent connections */
	unsigned nconns;
	uint64_t refused;		/* agents refused at the TLS handshake */
	uint64_t next_conn_id;
};

/*
 * conn_accept - take a new TCP connection @fd from @peer and start the TLS
 * handshake; the connection frees itself when it ends. Event loop.
 */
void conn_accept(struct collector *col, int fd, const struct sockaddr *peer, int socklen);

/*
 * conn_ingest_hooks - fill @out with the connections' side of ingest
 * (ingest.h: WELCOME, DONE, ERROR and push-down replies, ACKs after each
 * commit, resuming paused reads), for ingest_start(); @col is their arg.
 */
void conn_ingest_hooks(struct collector *col, struct ingest_hooks *out);

/* conn_close_all - end every agent connection (at shutdown). */
void conn_close_all(struct collector *col);

#endif
