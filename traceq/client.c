/*
 * client.c - traceq's connection to the collector (client.h): an nng REQ
 * socket (ipc://, tcp://) or a TLS connection to the query port
 * (tlsconn.c), the query protocol's messages (proto/qmsg.h) over either,
 * and the collector's error replies said on stderr.
 *
 * A request may be sent before the reply to the last one is wanted
 * (client_send(), client_next()): a select asks for its next page before
 * printing the current one. Both transports carry one request at a time,
 * so a call made meanwhile (the renderer asking for symbols) first takes
 * that reply off the wire and keeps it (client_settle()).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/filter.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "proto/tls.h"
#include "traceq/client.h"
#include "traceq/tlsconn.h"

struct client {
	nng_socket sock;
	bool tls_port;		/* the TLS query port, not nng */
	struct tlsconn *tls;	/* its connection; NULL: lost, not made again yet */
	const struct traceq_opts *o;
	uint32_t sync_ms;	/* --sync: sent with the first request */
	bool lost;		/* the last call got no answer (not an error reply) */
	bool wait_unknown;	/* --follow: an unknown event is not an error (3) */
	bool optional;		/* client_call_opt(): a malformed-request answer is 4, unsaid */
	bool inflight;		/* a request sent, its reply not received yet */
	struct qmsg_request sent;	/* that request (shallow) */
	bool has_kept;		/* its reply, received before another call: */
	struct qmsg_reply kept;
	int kept_ret;
	bool kept_lost;
};

void client_caret(const char *text, const char *msg, int pos, int len)
{
	struct filter_error e = { .code = 0, .pos = (size_t)pos, .len = (size_t)len };
	char buf[4096];

	snprintf(e.msg, sizeof(e.msg), "%s", msg);
	if (pos >= 0 && (size_t)pos <= strlen(text) &&
	    filter_error_format(text, &e, buf, sizeof(buf)) >= 0)
		fprintf(stderr, "traceq: %s", buf);
	else
		fprintf(stderr, "traceq: error: %s\n", msg);
}

/* The TLS query port's HOST:PORT in @server (tls://HOST:PORT, HOST:PORT), or NULL: nng. */
static const char *tls_server(const char *server)
{
	if (!strncmp(server, "tls://", 6))
		return server + 6;
	return strstr(server, "://") ? NULL : server;
}

static int open_tls(struct client *c)
{
	const struct traceq_opts *o = c->o;
	struct tls_files f = { .cert = o->cert, .key = o->key, .ca = o->ca };
	char err[1024];

	if (!o->cert || !o->key || !o->ca) {
		fprintf(stderr, "traceq: %s is a TLS query port: give --cert, --key and --ca "
			"(or TRACEQ_CERT, TRACEQ_KEY, TRACEQ_CA)\n", o->server);
		return -2;
	}
	if (tlsconn_open(tls_server(o->server), &f, o->timeout_ms, &c->tls, err,
			 sizeof(err)) < 0) {
		fprintf(stderr, "traceq: cannot reach the collector at %s: %s\n", o->server, err);
		return -1;
	}
	return 0;
}

static int open_nng(struct client *c)
{
	const struct traceq_opts *o = c->o;
	int rv;

	rv = nng_req0_open(&c->sock);
	if (rv == 0)
		rv = nng_socket_set_ms(c->sock, NNG_OPT_RECVTIMEO, o->timeout_ms);
	if (rv == 0)
		rv = nng_socket_set_ms(c->sock, NNG_OPT_SENDTIMEO, o->timeout_ms);
	if (rv == 0)
		rv = nng_dial(c->sock, o->server, NULL, 0);
	if (rv != 0) {
		fprintf(stderr, "traceq: cannot reach the collector at %s: %s\n",
			o->server, nng_strerror(rv));
		nng_close(c->sock);
		return -1;
	}
	return 0;
}

int client_open(const struct traceq_opts *o, struct client **out)
{
	struct client *c = calloc(1, sizeof(*c));
	int ret;

	if (!c) {
		fprintf(stderr, "traceq: out of memory\n");
		return -1;
	}
	c->o = o;
	/* the server gives up waiting a little before we give up on it */
	if (o->sync)
		c->sync_ms = (uint32_t)(o->timeout_ms - (o->timeout_ms / 10 < 1000 ?
							 o->timeout_ms / 10 : 1000));
	c->tls_port = tls_server(o->server) != NULL;
	ret = c->tls_port ? open_tls(c) : open_nng(c);
	if (ret < 0) {
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

void client_close(struct client *c)
{
	if (c->has_kept && c->kept_ret == 0)
		qmsg_reply_free(&c->kept);
	if (c->tls_port) {
		tlsconn_close(c->tls);
	} else {
		nng_close(c->sock);
		/* nng frees a closed socket's last request in its own threads,
		 * later: wait for them, or exit may come first (LeakSanitizer
		 * saw that once, a --follow stopped by SIGTERM) */
		nng_fini();
	}
	free(c);
}

int client_reconnect(struct client *c)
{
	if (!c->tls_port)
		return 0;
	tlsconn_close(c->tls);
	c->tls = NULL;
	return open_tls(c) == 0 ? 0 : -1;
}

void client_wait_unknown(struct client *c, bool on)
{
	c->wait_unknown = on;
}

bool client_lost(const struct client *c)
{
	return c->lost;
}

bool client_say_stall(const struct qmsg_reply *rep)
{
	char when[64] = "?", why[LOG_ESC_LEN];
	time_t t = (time_t)(rep->stalled_since / 1000000000);
	time_t now = time(NULL);
	struct tm tm;

	if (!rep->stalled_since)
		return false;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	log_escape(rep->stalled_why ? rep->stalled_why : "", why, sizeof(why));
	fprintf(stderr, "traceq: the collector's storing is held up since %s (%lld s): %s; "
		"%llu batches received and not yet stored, receive journal %.1f MB (agents are "
		"held back when it is full)\n", when, (long long)(now > t ? now - t : 0), why,
		(unsigned long long)rep->unstored, (double)rep->journal_bytes / (1 << 20));
	return true;
}

/* The decoded reply @rep (@ret: the decoding's result) to @req: 0, 1 or 2 as client_call(). */
static int client_reply(struct qmsg_reply *rep, const struct qmsg_request *req, int ret)
{
	if (ret < 0) {
		fprintf(stderr, "traceq: bad reply from the collector: %s\n", tc_strerror(ret));
		return 1;
	}
	if (rep->ok)
		return 0;
	if (rep->code == -EACCES) {	/* refused: --sql beyond reading its views */
		fprintf(stderr, "traceq: error: %s\n", rep->error);
		qmsg_reply_free(rep);
		return 2;
	}
	if (rep->code == TC_ERR_DB || rep->code > TC_ERR_END || rep->code <= TC_ERR_START) {
		fprintf(stderr, "traceq: collector: %s\n", rep->error);
		client_say_stall(rep);	/* why the store does not answer, and what waits */
	}
	else if (req->query)
		client_caret(req->query, rep->error, rep->pos, rep->len);
	else
		fprintf(stderr, "traceq: error: %s\n", rep->error);
	ret = (rep->code == TC_ERR_DB || rep->code > TC_ERR_END ||
	       rep->code <= TC_ERR_START) ? 1 : 2;
	qmsg_reply_free(rep);
	return ret;
}

int client_send(struct client *c, const struct qmsg_request *req)
{
	struct qmsg_request r = *req;
	struct proto_buf b;
	char err[1024];
	int rv, ret;

	r.sync_ms = c->sync_ms;
	c->sync_ms = 0;
	proto_buf_init(&b);
	ret = qmsg_request_encode(&r, &b);
	if (ret < 0) {
		fprintf(stderr, "traceq: %s\n", tc_strerror(ret));
		proto_buf_free(&b);
		return 1;
	}
	/* the collector would drop it without a reply; a smaller one it answers */
	if (b.len > QMSG_MAX_WIRE) {
		fprintf(stderr, "traceq: error: request of %zu bytes: over the limit of %u bytes\n",
			b.len, QMSG_MAX_WIRE);
		proto_buf_free(&b);
		return 2;
	}
	if (c->tls_port)
		rv = tlsconn_send(c->tls, b.data, b.len, err, sizeof(err));
	else if ((rv = nng_send(c->sock, b.data, b.len, 0)) != 0)
		snprintf(err, sizeof(err), "%s", nng_strerror(rv));
	proto_buf_free(&b);
	c->lost = rv != 0;
	if (rv != 0) {
		fprintf(stderr, "traceq: no answer from the collector at %s: %s\n",
			c->o->server, err);
		return 1;
	}
	c->sent = r;
	c->inflight = true;
	return 0;
}

/* The reply to the request in flight, received now. Return as client_call(). */
static int client_recv(struct client *c, struct qmsg_reply *rep)
{
	struct proto_buf in;
	void *msg = NULL;
	size_t len = 0;
	char err[1024];
	int rv, ret;

	c->inflight = false;
	proto_buf_init(&in);
	if (c->tls_port) {
		rv = tlsconn_recv(c->tls, &in, err, sizeof(err));
		msg = in.data;
		len = in.len;
	} else if ((rv = nng_recv(c->sock, &msg, &len, NNG_FLAG_ALLOC)) != 0) {
		snprintf(err, sizeof(err), "%s", nng_strerror(rv));
	}
	c->lost = rv != 0;
	if (rv != 0) {
		fprintf(stderr, "traceq: no answer from the collector at %s: %s\n",
			c->o->server, err);
		proto_buf_free(&in);
		return 1;
	}
	ret = qmsg_reply_decode(msg, len, rep);
	if (c->tls_port)
		proto_buf_free(&in);
	else
		nng_free(msg, len);
	if (ret == 0 && !rep->ok && rep->code == TC_ERR_UNKNOWN_EVENT && c->wait_unknown) {
		qmsg_reply_free(rep);
		return 3;
	}
	if (ret == 0 && !rep->ok && rep->code == TC_ERR_MSG_MALFORMED && c->optional) {
		qmsg_reply_free(rep);
		return 4;
	}
	return client_reply(rep, &c->sent, ret);
}

/*
 * Take the reply in flight off the wire before another exchange, kept
 * for client_next(): one request at a time on the connection.
 */
static void client_settle(struct client *c)
{
	if (!c->inflight)
		return;
	c->kept_ret = client_recv(c, &c->kept);
	c->kept_lost = c->lost;
	c->has_kept = true;
}

int client_next(struct client *c, struct qmsg_reply *rep)
{
	if (!c->has_kept)
		return client_recv(c, rep);
	c->has_kept = false;
	c->lost = c->kept_lost;
	if (c->kept_ret == 0)
		*rep = c->kept;
	return c->kept_ret;
}

int client_call(struct client *c, const struct qmsg_request *req, struct qmsg_reply *rep)
{
	int ret;

	client_settle(c);
	ret = client_send(c, req);
	return ret ? ret : client_recv(c, rep);
}

int client_call_opt(struct client *c, const struct qmsg_request *req, struct qmsg_reply *rep)
{
	int ret;

	client_settle(c);
	ret = client_send(c, req);
	c->optional = true;
	if (ret == 0)
		ret = client_recv(c, rep);
	c->optional = false;
	return ret;
}

int client_ask(struct client *c, enum qmsg_op op, const char *query, const struct tq_select *sel,
	       struct qmsg_reply *rep)
{
	struct qmsg_request req = { .op = op, .query = (char *)query };

	tq_select_apply(sel, &req);
	return client_call(c, &req, rep);
}

int client_exchange(void *ctx, const struct proto_buf *req, struct qmsg_reply *rep)
{
	struct client *c = ctx;
	struct proto_buf in;
	char err[1024];
	void *msg = NULL;
	size_t len = 0;
	int ret, rv;

	if (c->tls_port) {
		proto_buf_init(&in);
		ret = tlsconn_call(c->tls, req->data, req->len, &in, err, sizeof(err));
		if (ret == 0)
			ret = qmsg_reply_decode(in.data, in.len, rep);
		else
			fprintf(stderr, "traceq: no answer from the collector at %s: %s\n",
				c->o->server, err);
		proto_buf_free(&in);
		return ret < 0 ? 1 : 0;
	}
	rv = nng_send(c->sock, req->data, req->len, 0);
	if (rv == 0)
		rv = nng_recv(c->sock, &msg, &len, NNG_FLAG_ALLOC);
	if (rv != 0) {
		fprintf(stderr, "traceq: no answer from the collector at %s: %s\n",
			c->o->server, nng_strerror(rv));
		return 1;
	}
	ret = qmsg_reply_decode(msg, len, rep);
	nng_free(msg, len);
	if (ret < 0)
		fprintf(stderr, "traceq: bad reply from the collector: %s\n", tc_strerror(ret));
	return ret < 0 ? 1 : 0;
}
