/*
 * queryd_tls.h - the TLS query port: a front of the query endpoint.
 *
 * Debian's nng 1.5 does TLS through mbedTLS and can say only that a
 * client's certificate verified, not whose it is; so remote queries come
 * over TLS that our own OpenSSL code terminates (an SSL_CTX from
 * tls_ctx_new(), as the agent port's), carrying the same query messages
 * (proto/qmsg.h) framed as on the agent port (proto/frame.h), and are
 * handed to the same pool with the certificate's CN as their identity.
 * proto/PROTOCOL.md, "Query endpoint", has the wire side.
 *
 * The port reaches the pool only through the endpoint's public interface
 * (queryd.h: a slot per connection, queryd_submit(), replies through the
 * slot's queryd_reply_fn); queryd.c knows nothing of it. Whoever starts
 * it on an endpoint (tracecollectd.c) owns it: reloads it on SIGHUP,
 * checks its certificates' expiry, and stops it before the endpoint.
 *
 * Threads: one accepting thread, and one thread per connection (at most
 * QTLS_MAX_THREADS; QTLS_MAX_CONNS of them hold request slots), which
 * reads a request, hands it to the pool through queryd_submit() with the
 * connection's own slot, and sleeps until the slot's reply callback gives
 * it the reply to write. A connection holds at most one request at a
 * time, like an nng REQ socket.
 */
#ifndef SERVER_QUERYD_TLS_H
#define SERVER_QUERYD_TLS_H

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

struct queryd;
struct qtls;
struct tls_files;

/*
 * qtls_start - listen on @addr (HOST:PORT; port 0 picks one) for TLS
 * query clients with certificates from @files (the CA signs the
 * clients'), and hand their requests to @qd, which must outlive the port
 * (qtls_stop()).
 * Return: 0 and *@out; TC_ERR_CONFIG or TC_ERR_TLS (logged).
 */
int qtls_start(struct queryd *qd, const char *addr, const struct tls_files *files,
	       struct qtls **out);

/* qtls_bound - HOST:PORT the port listens on; NULL for a NULL @t (no port). */
const char *qtls_bound(const struct qtls *t);

/*
 * qtls_reload - new connections use certificates, CA and CRL from @files
 * (SIGHUP); connections already made keep theirs. On failure the old
 * context stays. Return: 0 (also for a NULL @t); TC_ERR_TLS with @err
 * filled.
 */
int qtls_reload(struct qtls *t, const struct tls_files *files, char *err, size_t errlen);

/*
 * qtls_expiry - tls_ctx_expiry() (proto/tls.h) on the context new
 * connections use: its certificates, CA and CRLs. Return: how many @fn
 * got; 0 for a NULL @t.
 */
int qtls_expiry(struct qtls *t, int days, tls_expiry_fn fn, void *arg);

/*
 * qtls_stop - close the port and every connection, and join their
 * threads: before queryd_stop() of its endpoint. What they own stays
 * until qtls_free(), after queryd_stop(), since the pool may still answer
 * a request of theirs. qtls_free - free it all. NULL is fine.
 */
void qtls_stop(struct qtls *t);
void qtls_free(struct qtls *t);

#endif
