/*
 * serve.c - traceq --serve's HTTP side (serve.h): libevent's evhttp on
 * traceq's one thread, the token, the compiled-in page (page_assets.h,
 * made from traceq/page/ by traceq/page/embed.sh) and the routes to
 * serve_api.h and serve_live.h. One request is answered at a time, in
 * the loop: traceq has one connection to the collector and asks one
 * thing at a time; the live streams' follower asks between requests.
 *
 * evhttp parses the requests and caps their headers and bodies
 * (SERVE_MAX_HEADERS, SERVE_MAX_BODY) and the time a read or write may
 * take; only GET is taken. The token is compared in constant time.
 * index.html names its script with the token (@TOKEN@ replaced here), so
 * the page's own files need it too.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>

#include "traceq/page_assets.h"
#include "traceq/serve.h"
#include "traceq/serve_api.h"
#include "traceq/serve_export.h"
#include "traceq/serve_flame.h"
#include "traceq/serve_live.h"

#define SERVE_MAX_HEADERS	16384	/* bytes of a request's line and headers */
#define SERVE_MAX_BODY		1024	/* GET has none */
#define SERVE_TIMEOUT_S		30
#define SERVE_FLUSH_MS		200	/* at a stop: the live streams' last chunks */
#define SERVE_QUERY_MAX		(4 * SERVE_ARG_MAX)	/* bytes of a URL's query string */

struct serve {
	struct client *c;
	const struct traceq_opts *o;
	struct event_base *base;
	struct evhttp *http;
	struct event *sigint, *sigterm;
	struct serve_live *live;	/* /api/live's streams */
	char token[2 * SERVE_TOKEN_BYTES + 1];
};

/* ---- where to listen ---- */

/* @addrport split into @addr (brackets dropped) and @port. Return: 0; -1 (said). */
static int parse_addrport(const char *addrport, char *addr, size_t len, uint16_t *port)
{
	const char *colon = strrchr(addrport, ':'), *p = colon ? colon + 1 : addrport;
	const char *a = addrport;
	size_t alen = colon ? (size_t)(colon - addrport) : 0;
	char *end;
	unsigned long v;

	if (alen >= 2 && a[0] == '[' && a[alen - 1] == ']')
		a++, alen -= 2;
	else if (alen && memchr(a, ':', alen))
		alen = len;	/* an IPv6 address wants its brackets */
	errno = 0;
	v = strtoul(p, &end, 10);
	if (alen >= len || errno || end == p || *end || v > 65535 || *p == '-' || *p == '+') {
		fprintf(stderr, "traceq: --serve %s: expected [ADDR:]PORT (127.0.0.1:8080, "
			"[::1]:8080, 8080; port 0: any free one)\n", addrport);
		return -1;
	}
	if (alen)
		memcpy(addr, a, alen), addr[alen] = '\0';
	else
		snprintf(addr, len, "%s", SERVE_DEFAULT_ADDR);
	*port = (uint16_t)v;
	return 0;
}

static bool is_loopback(const char *addr)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, addr, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, addr, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

static int make_token(char *hex)
{
	unsigned char b[SERVE_TOKEN_BYTES];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno != EINTR)
			return -1;
		got += n > 0 ? (size_t)n : 0;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		sprintf(hex + 2 * i, "%02x", b[i]);
	return 0;
}

/* ---- answering ---- */

static void set_headers(struct evhttp_request *req, const char *type)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "Referrer-Policy", "no-referrer");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Content-Security-Policy",
			  "default-src 'self'; style-src 'self'; script-src 'self'; "
			  "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'");
}

static void send_text(struct evhttp_request *req, int code, const char *reason,
		      const char *type, const void *p, size_t n)
{
	struct evbuffer *out = evbuffer_new();

	set_headers(req, type);
	if (!out) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	if (n)
		evbuffer_add(out, p, n);
	evhttp_send_reply(req, code, reason, out);
	evbuffer_free(out);
}

/* @b as the body (moved out of @b: a file stays a file), with send_text()'s headers. */
static void send_buffer(struct evhttp_request *req, int code, const char *type,
			struct evbuffer *b)
{
	set_headers(req, type);
	evhttp_send_reply(req, code, code == 200 ? "OK" : code == 400 ? "Bad Request" :
			  code == 503 ? "Service Unavailable" : "Error", b);
}

static void send_plain(struct evhttp_request *req, int code, const char *reason)
{
	send_text(req, code, reason, "text/plain; charset=utf-8", reason, strlen(reason));
}

/* Whether @args hold the token. */
static bool token_ok(const struct serve *s, const struct evkeyvalq *args)
{
	const char *t = evhttp_find_header(args, "token");

	return t && strlen(t) == strlen(s->token) &&
	       CRYPTO_memcmp(t, s->token, strlen(s->token)) == 0;
}

/* index.html with @TOKEN@ replaced by the token. */
static void send_index(struct serve *s, struct evhttp_request *req, const struct page_asset *a)
{
	static const char mark[] = "@TOKEN@";
	struct evbuffer *b = evbuffer_new();
	const char *p = (const char *)a->data, *end = p + a->len, *m;

	if (!b) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	while ((m = memmem(p, (size_t)(end - p), mark, sizeof(mark) - 1))) {
		evbuffer_add(b, p, (size_t)(m - p));
		evbuffer_add(b, s->token, strlen(s->token));
		p = m + sizeof(mark) - 1;
	}
	evbuffer_add(b, p, (size_t)(end - p));
	send_text(req, 200, "OK", a->type, evbuffer_pullup(b, -1), evbuffer_get_length(b));
	evbuffer_free(b);
}

static void send_api(struct serve *s, struct evhttp_request *req, const char *path,
		     const struct evkeyvalq *args)
{
	struct evbuffer *b = evbuffer_new();
	int code;

	if (!b) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	code = !strcmp(path, "/api/stats") ? serve_api_stats(s->c, s->o, args, b) :
	       !strcmp(path, "/api/flame") ? serve_api_flame(s->c, s->o, args, b) :
	       serve_api_query(s->c, s->o, args, b);
	send_buffer(req, code, "application/json", b);
	evbuffer_free(b);
}

/* /api/live: the stream (serve_live.h), or the error as JSON. */
static void send_live(struct serve *s, struct evhttp_request *req, const struct evkeyvalq *args)
{
	struct evbuffer *b = evbuffer_new();
	int code;

	if (!b) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	code = serve_live_open(s->live, req, args, set_headers, b);
	if (code)
		send_buffer(req, code, "application/json", b);
	evbuffer_free(b);
}

/* /api/export: the file, or the error as JSON. */
static void send_export(struct serve *s, struct evhttp_request *req,
			const struct evkeyvalq *args)
{
	struct evbuffer *b = evbuffer_new();
	struct serve_file f = { 0 };
	char disp[128];
	int code;

	if (!b) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	code = serve_export(s->o, args, b, &f);
	if (code == 200) {
		snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", f.name);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Disposition",
				  disp);
	}
	send_buffer(req, code, code == 200 ? f.type : "application/json", b);
	evbuffer_free(b);
}

static void route(struct serve *s, struct evhttp_request *req, const char *path,
		  const struct evkeyvalq *args)
{
	if (!strcmp(path, "/api/export")) {
		send_export(s, req, args);
		return;
	}
	if (!strcmp(path, "/api/live")) {
		send_live(s, req, args);
		return;
	}
	if (!strcmp(path, "/api/stats") || !strcmp(path, "/api/query") ||
	    !strcmp(path, "/api/flame")) {
		send_api(s, req, path, args);
		return;
	}
	if (!strcmp(path, "/"))
		path = "/index.html";
	for (size_t i = 0; i < sizeof(page_assets) / sizeof(page_assets[0]); i++) {
		const struct page_asset *a = &page_assets[i];

		if (strcmp(path, a->path))
			continue;
		if (!strcmp(path, "/index.html"))
			send_index(s, req, a);
		else
			send_text(req, 200, "OK", a->type, a->data, a->len);
		return;
	}
	send_plain(req, 404, "Not Found");
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct serve *s = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
	struct evkeyvalq args = { 0 };	/* evhttp_parse_query_str() sets it up */

	if (!path || (query && strlen(query) > SERVE_QUERY_MAX) ||
	    evhttp_parse_query_str(query ? query : "", &args) < 0) {
		send_plain(req, 400, "Bad Request");
		return;
	}
	if (!token_ok(s, &args))
		send_plain(req, 403, "Forbidden: this page's URL carries a token; "
			   "traceq --serve printed it");
	else
		route(s, req, path, &args);
	evhttp_clear_headers(&args);
}

/* SIGINT, SIGTERM: the live streams ended, their last chunks given a moment to go out. */
static void on_signal(evutil_socket_t fd, short what, void *arg)
{
	struct serve *s = arg;
	const struct timeval flush = { .tv_sec = 0, .tv_usec = SERVE_FLUSH_MS * 1000 };

	(void)fd, (void)what;
	serve_live_end(s->live);
	event_base_loopexit(s->base, &flush);
}

/* ---- the server ---- */

/* The port @h is bound to; 0: unknown. */
static uint16_t bound_port(struct evhttp_bound_socket *h)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(evhttp_bound_socket_get_fd(h), (struct sockaddr *)&ss, &len) < 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
		     ((struct sockaddr_in *)&ss)->sin_port);
}

static int setup_http(struct serve *s, const char *addr, uint16_t port, uint16_t *bound)
{
	struct evhttp_bound_socket *h;

	s->http = evhttp_new(s->base);
	if (!s->http)
		return -1;
	evhttp_set_max_headers_size(s->http, SERVE_MAX_HEADERS);
	evhttp_set_max_body_size(s->http, SERVE_MAX_BODY);
	evhttp_set_timeout(s->http, SERVE_TIMEOUT_S);
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET);
	evhttp_set_gencb(s->http, on_request, s);
	h = evhttp_bind_socket_with_handle(s->http, addr, port);
	if (!h) {
		fprintf(stderr, "traceq: --serve: cannot listen on %s port %u: %s\n", addr,
			(unsigned)port, strerror(errno));
		return -1;
	}
	*bound = bound_port(h);
	return 0;
}

int serve_open(const char *addrport, struct client *c, const struct traceq_opts *o,
	       struct serve **out, char *url, size_t len)
{
	struct serve *s = calloc(1, sizeof(*s));
	char addr[128];
	uint16_t port, bound = 0;

	if (!s || parse_addrport(addrport, addr, sizeof(addr), &port) < 0)
		goto err;
	s->c = c, s->o = o;
	if (make_token(s->token) < 0) {
		fprintf(stderr, "traceq: --serve: no random bytes for the token: %s\n",
			strerror(errno));
		goto err;
	}
	s->base = event_base_new();
	if (!s->base || serve_live_new(s->base, c, o, &s->live) < 0 ||
	    setup_http(s, addr, port, &bound) < 0)
		goto err;
	s->sigint = evsignal_new(s->base, SIGINT, on_signal, s);
	s->sigterm = evsignal_new(s->base, SIGTERM, on_signal, s);
	if (!s->sigint || !s->sigterm || evsignal_add(s->sigint, NULL) < 0 ||
	    evsignal_add(s->sigterm, NULL) < 0)
		goto err;
	if (!is_loopback(addr))
		fprintf(stderr, "traceq: --serve %s: not a loopback address; the page and its "
			"token go over plain HTTP\n", addrport);
	snprintf(url, len, strchr(addr, ':') ? "http://[%s]:%u/?token=%s" :
		 "http://%s:%u/?token=%s", addr, (unsigned)bound, s->token);
	*out = s;
	return 0;
err:
	serve_free(s);
	return -1;
}

int serve_run(struct serve *s)
{
	return event_base_dispatch(s->base) < 0 ? -1 : 0;
}

void serve_free(struct serve *s)
{
	if (!s)
		return;
	if (s->sigint)
		event_free(s->sigint);
	if (s->sigterm)
		event_free(s->sigterm);
	serve_live_free(s->live);	/* before evhttp: it ends the streams' replies */
	if (s->http)
		evhttp_free(s->http);
	if (s->base)
		event_base_free(s->base);
	OPENSSL_cleanse(s->token, sizeof(s->token));
	free(s);
}
