/*
 * queryd_tls.h - the TLS query port, private to the query endpoint
 * (server/query/queryd.c and server/query/queryd_tls.c).
 *
 * Debian's nng 1.5 does TLS through mbedTLS and can say only that a
 * client's certificate verified, not whose it is; so remote queries come
 * over TLS that our own OpenSSL code terminates (an SSL_CTX from
 * tls_ctx_new(), as the agent port's), carrying the same query messages
 * (proto/qmsg.h) framed as on the agent port (proto/frame.h), and are
 * handed to the same pool with the certificate's CN as their identity.
 * proto/PROTOCOL.md, "Query endpoint", has the wire side.
 *
 * Threads: one accepting thread, and one thread per connection (at most
 * QTLS_MAX_THREADS; QTLS_MAX_CONNS of them hold request slots), which reads a request, hands it to the pool through
 * queryd_submit() with the connection's own struct qslot, and sleeps until
 * qtls_reply() gives it the reply to write. A connection holds at most one
 * request at a time, like an nng REQ socket.
 */
#ifndef SERVER_QUERYD_TLS_H
#define SERVER_QUERYD_TLS_H

#include <stddef.h>

#include "proto/msg.h"
#include "proto/tls.h"

/* The limits of the TLS query port (queryd_tls.c says how they work together). */
#define QTLS_MAX_CONNS		32	/* authenticated connections: request slots */
#define QTLS_MAX_HANDSHAKES	64	/* connections in the TLS handshake, in all */
#define QTLS_MAX_HANDSHAKES_SOURCE 8	/* ... from one source address */
#define QTLS_MAX_THREADS	(2 * (QTLS_MAX_CONNS + QTLS_MAX_HANDSHAKES))
#define QTLS_ACCEPT_MS		5000	/* the TLS handshake */
#define QTLS_SLOT_WAIT_MS	10000	/* authenticated, waiting for a request slot */
#define QTLS_IDLE_GRACE_MS	1000	/* idle this long, a slot may be taken from it */
#define QTLS_HANDSHAKE_MS	10000	/* each request's bytes */
#define QTLS_IDLE_MS		300000	/* a connection waiting for its next request */
#define QTLS_GONE_CHECK_MS	100	/* while a request is answered: is its client there? */

struct qauth_who;
struct queryd;
struct qslot;
struct qtls;
struct qtls_conn;
struct tls_files;

/*
 * queryd_slot_new - a request slot of @qd whose replies go to @conn
 * (qtls_reply()); queryd_slot_free - free it and its request (NULL is
 * fine). queryd.c.
 */
struct qslot *queryd_slot_new(struct queryd *qd, struct qtls_conn *conn);
void queryd_slot_free(struct qslot *s);

/*
 * queryd_submit - the request in @buf[@len] (read, not kept) came to @s
 * from @who (copied): check its size, decode it, and send it on its way
 * (the pool, the sync list, or an error reply). queryd.c.
 */
void queryd_submit(struct qslot *s, const struct qauth_who *who, const void *buf, size_t len);

/* queryd_slot_cancel - @s's asker went away: its request's store work stops. queryd.c. */
void queryd_slot_cancel(struct qslot *s);

/*
 * qtls_start - listen on @addr (HOST:PORT; port 0 picks one) for TLS
 * query clients with certificates from @files (the CA signs the
 * clients'). @bound receives HOST:PORT as bound.
 * Return: 0 and *@out; TC_ERR_CONFIG or TC_ERR_TLS (logged).
 */
int qtls_start(struct queryd *qd, const char *addr, const struct tls_files *files,
	       struct qtls **out, char *bound, size_t blen);

/* qtls_reply - the reply of @conn's request: copied, written by its thread. */
void qtls_reply(struct qtls_conn *conn, const struct proto_buf *out);

/*
 * qtls_reload - new connections use certificates, CA and CRL from @files
 * (SIGHUP); connections already made keep theirs. On failure the old
 * context stays. Return: 0; TC_ERR_TLS with @err filled.
 */
int qtls_reload(struct qtls *t, const struct tls_files *files, char *err, size_t errlen);

/* qtls_expiry - tls_ctx_expiry() on the context new connections use. */
int qtls_expiry(struct qtls *t, int days, tls_expiry_fn fn, void *arg);

/*
 * qtls_stop - close the port and every connection, and join their
 * threads; what they own stays until qtls_free(), since the pool may
 * still answer a request of theirs. qtls_free - free it all. NULL is fine.
 */
void qtls_stop(struct qtls *t);
void qtls_free(struct qtls *t);

#endif
