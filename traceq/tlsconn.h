/*
 * tlsconn.h - traceq's side of the collector's TLS query port: a mutual
 * TLS connection (proto/tls.h) that carries query messages framed as on
 * the agent port (proto/PROTOCOL.md, "Query endpoint"), one request and
 * one reply at a time (the reply may be received after other work).
 */
#ifndef TRACEQ_TLSCONN_H
#define TRACEQ_TLSCONN_H

#include <stddef.h>

#include "proto/msg.h"
#include "proto/tls.h"

struct tlsconn;

/*
 * tlsconn_open - connect to @hostport ("HOST:PORT", "[V6]:PORT") with
 * the client certificate, key and CA of @files, checking that the
 * collector's certificate names HOST (an IP address or a DNS name); every
 * read and write gives up after @timeout_ms.
 * Return: 0 and *@out; -1 with a sentence in @err.
 */
int tlsconn_open(const char *hostport, const struct tls_files *files, int timeout_ms,
		 struct tlsconn **out, char *err, size_t errlen);

/*
 * tlsconn_call - send @req[@len], receive the reply into @reply (replaced;
 * at most 4 MiB, QMSG_MAX_WIRE). Return: 0; -1 with a sentence in @err.
 */
int tlsconn_call(struct tlsconn *c, const void *req, size_t len, struct proto_buf *reply,
		 char *err, size_t errlen);

/*
 * tlsconn_send, tlsconn_recv - tlsconn_call() in two halves, so that the
 * caller can work while the collector answers: one request sent, then its
 * reply received, before the next request. Return: 0; -1 with a sentence
 * in @err.
 */
int tlsconn_send(struct tlsconn *c, const void *req, size_t len, char *err, size_t errlen);
int tlsconn_recv(struct tlsconn *c, struct proto_buf *reply, char *err, size_t errlen);

/* tlsconn_close - close and free @c; NULL is fine. */
void tlsconn_close(struct tlsconn *c);

#endif
