/*
 * client.h - traceq's connection to the collector's query endpoint, one
 * interface over the three transports --server names: ipc:// and tcp://
 * (nng's REQ socket) and the TLS query port (HOST:PORT, tls://HOST:PORT:
 * traceq/tlsconn.h). One request on the connection at a time: a reply
 * not taken yet is taken off the wire before the next request goes out.
 * Errors are said on stderr here ("traceq: ..."), with a caret under the
 * query's mistake when the collector names one; callers only pass the
 * exit status on. Prefix client_.
 */
#ifndef TRACEQ_CLIENT_H
#define TRACEQ_CLIENT_H

#include <stdbool.h>

#include "proto/msg.h"
#include "proto/qmsg.h"
#include "traceq/traceq.h"

struct client;

/*
 * client_open - connect to @o->server with @o's timeout and certificate;
 * with @o->sync, the first request asks the collector to store what it
 * has received first. @o stays the caller's and must outlive the client.
 * Return: 0 and *@out; -1 (the collector could not be reached), -2 (the
 * command line lacks what TLS needs); both said on stderr.
 */
int client_open(const struct traceq_opts *o, struct client **out);

/* client_close - drop a reply not taken, close the connection, free @c. */
void client_close(struct client *c);

/*
 * client_call - one request/reply exchange: @req out, *@rep in (the
 * caller frees it with qmsg_reply_free()). Return: 0 (*@rep set), 1 (the
 * collector or the transport failed), 2 (the request or query is wrong),
 * 3 (client_wait_unknown() is set and the query names an event not
 * stored yet); on 1, 2 and 3 there is no reply to free.
 */
int client_call(struct client *c, const struct qmsg_request *req, struct qmsg_reply *rep);

/*
 * client_call_opt - client_call() of an op an older collector may not
 * know (it answers such a request as malformed): that answer is 4, said
 * nowhere, so the caller goes on without what the op gives. Return as
 * client_call(), or 4.
 */
int client_call_opt(struct client *c, const struct qmsg_request *req, struct qmsg_reply *rep);

/*
 * client_ask - client_call() of a request of @op on @query (NULL: none),
 * narrowed by @sel (tq_select_apply(): window, hosts, CPUs, order).
 */
int client_ask(struct client *c, enum qmsg_op op, const char *query, const struct tq_select *sel,
	       struct qmsg_reply *rep);

/*
 * client_send, client_next - client_call() in two halves, so that the
 * caller can work while the collector answers: @req sent (kept by
 * pointer until its reply comes: @req's strings must live that long),
 * then its reply taken with client_next(). A client_call() between them
 * keeps that reply aside for client_next(). Return as client_call().
 */
int client_send(struct client *c, const struct qmsg_request *req);
int client_next(struct client *c, struct qmsg_reply *rep);

/*
 * client_exchange - an import_call_fn (traceq/import.h) on the
 * client (@ctx): @req, encoded by the caller, out; *@rep in. Return: 0
 * (*@rep decoded, ok or not); 1 (no answer or a bad one, said).
 */
int client_exchange(void *ctx, const struct proto_buf *req, struct qmsg_reply *rep);

/*
 * client_wait_unknown - with @on, client_call() returns 3 instead of an
 * error when the collector does not know the query's event yet
 * (--follow waits for it).
 */
void client_wait_unknown(struct client *c, bool on);

/* client_lost - whether the last call got no answer at all (not an error reply). */
bool client_lost(const struct client *c);

/*
 * client_say_stall - when reply @rep says the collector's storing is held
 * up: one line on stderr, since when, why (escaped) and what waits in its
 * receive journal. Return: whether it said so.
 */
bool client_say_stall(const struct qmsg_reply *rep);

/*
 * client_reconnect - after a call that got no answer: over nng the socket
 * dials again by itself (nothing to do); a TLS connection is made anew.
 * Return: 0; -1 (not reachable yet: said on stderr).
 */
int client_reconnect(struct client *c);

/*
 * client_caret - say "traceq: @msg" on stderr with @text on a line and a
 * caret line under its bytes [@pos, @pos + @len) (filter_error_format());
 * without the caret when @pos is not inside @text.
 */
void client_caret(const char *text, const char *msg, int pos, int len);

#endif
