/*
 * metrics.c - the metrics port (see metrics.h): libevent's evhttp on an
 * event base and thread of its own, HTTPS through OpenSSL bufferevents
 * (evhttp_set_bevcb()), who may scrape, and the answers.
 *
 * evhttp parses the requests; it caps their line and headers
 * (METRICS_MAX_HEADERS), bodies (METRICS_MAX_BODY) and the time of each
 * read and write (METRICS_TIMEOUT_S). libevent 2.1's evhttp has no cap on
 * connections: at each new one the port counts the connections its base
 * is reading (event_base_foreach_event()) and, at METRICS_MAX_CONNS,
 * stops accepting (the rest wait in the listen backlog) until a timer
 * finds fewer.
 *
 * /metrics requests wait on a list; the reading (metrics_render()) runs
 * from an event made active by the first of them, after the loop has
 * taken every request that came in the meantime, and answers the whole
 * list. A request that comes during a reading waits for the next one.
 */
#include "config.h"

#define LOG_PREFIX "metrics"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/tls.h"
#include "server/query/metrics.h"
#include "server/query/metrics_text.h"
#include "server/store/store.h"

#define METRICS_BACKLOG		1024	/* connections waiting to be accepted */
#define METRICS_RECOUNT_MS	100	/* not accepting: how often to count again */
#define METRICS_RIGHT_GLOBS	64

/* A /metrics request waiting for the next reading. */
struct mwait {
	struct evhttp_request *req;
	struct mwait *next;
};

struct metrics {
	struct metrics_opts o;		/* o.addr, o.db, o.tls not kept */
	struct store_reader *store;
	struct event_base *base;
	struct evhttp *http;
	struct evconnlistener *lev;
	evutil_socket_t lfd;
	struct event *wake_ev, *render_ev, *recount_ev;
	int wake[2];			/* a pipe: metrics_stop() */
	pthread_t thread;
	bool started, paused;
	bool https;			/* else plain HTTP, on loopback */
	pthread_mutex_t lock;		/* ctx: metrics_reload() swaps it */
	SSL_CTX *ctx;			/* https: new connections' */
	struct mwait *waiting, **tail;
	int64_t refused_logged;		/* util_now_ms() of the last refusal line */
	char bound[160];
};

static bool has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

int metrics_addr_check(const char *addr, bool *tls, char *why, size_t len)
{
	bool https = has_prefix(addr, "https://");
	const char *hp = https ? addr + 8 : has_prefix(addr, "http://") ? addr + 7 : addr;

	if (tls)
		*tls = https;
	if (!strrchr(hp, ':') || strstr(hp, "://") || strchr(hp, '/')) {
		snprintf(why, len, "--metrics %.200s: expected HOST:PORT, http://HOST:PORT or "
			 "https://HOST:PORT", addr);
		return TC_ERR_CONFIG;
	}
	if (https || qauth_hostport_loopback(hp))
		return 0;
	snprintf(why, len, "--metrics %.200s: plain HTTP is unauthenticated and taken only on a "
		 "numeric loopback address (127.0.0.1:PORT, [::1]:PORT); elsewhere use "
		 "https://HOST:PORT (client certificates of the query CA with a "
		 "`metrics = cert:CN` line)", addr);
	return TC_ERR_CONFIG;
}

int metrics_right_parse(struct qauth_scopes *rights, const char *spec, char *why, size_t len)
{
	static const char *const kinds[] = { "uid:", "user:", "group:" };
	char line[1024];

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (has_prefix(spec, kinds[i])) {
			snprintf(why, len, "metrics %.200s: a scrape has no local user; a right "
				 "names a query client's certificate, cert:CN (plain HTTP on "
				 "loopback needs none)", spec);
			return TC_ERR_CONFIG;
		}
	if (!has_prefix(spec, "cert:"))
		return 1;	/* an address */
	if (!spec[5] || strpbrk(spec, " \t") || strlen(spec) > 512) {
		snprintf(why, len, "metrics %.200s: expected cert:CN", spec);
		return TC_ERR_CONFIG;
	}
	snprintf(line, sizeof(line), "%s *", spec);	/* a scope line naming every host */
	return qauth_scope_parse(rights, line, why, len);
}

/* ---- who may scrape ---- */

/* The SSL of @req's connection; NULL: plain HTTP. */
static SSL *req_ssl(struct evhttp_request *req)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(
		evhttp_request_get_connection(req));

	return bev ? bufferevent_openssl_get_ssl(bev) : NULL;
}

/* Whether the `metrics` lines name @who. */
static bool has_right(const struct metrics *m, const struct qauth_who *who)
{
	const char *globs[METRICS_RIGHT_GLOBS];
	bool all = false;
	size_t n = 0;
	int ret = m->o.rights ? qauth_scope_of(m->o.rights, who, &all, globs,
					       METRICS_RIGHT_GLOBS, &n) : 0;

	return ret == TC_ERR_TOO_LONG || (ret == 0 && n > 0);
}

static void refuse(struct metrics *m, struct evhttp_request *req, const char *peer,
		   const char *why)
{
	struct evbuffer *b = evbuffer_new();
	int64_t now = util_now_ms();

	if (now - m->refused_logged >= 1000) {	/* one line a second at most */
		log_info("scrape from %s refused: %s", peer, why);
		m->refused_logged = now;
	}
	if (b)
		evbuffer_add_printf(b, "refused: %s\n", why);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; charset=utf-8");
	evhttp_send_reply(req, 403, "Forbidden", b);
	if (b)
		evbuffer_free(b);
}

/* Whether @req may be answered; if not, it is (403, with why). */
static bool allowed(struct metrics *m, struct evhttp_request *req)
{
	SSL *ssl = req_ssl(req);
	struct qauth_who who = { .kind = QAUTH_CERT };
	char peer[INET6_ADDRSTRLEN + 8] = "?", esc[LOG_ESC_LEN], why[LOG_ESC_LEN + 160];
	char *host = NULL;
	uint16_t port = 0;

	if (!m->https)
		return true;	/* plain HTTP: on loopback only (metrics_addr_check()) */
	evhttp_connection_get_peer(evhttp_request_get_connection(req), &host, &port);
	snprintf(peer, sizeof(peer), "%s:%u", host ? host : "?", port);
	if (!ssl) {
		refuse(m, req, peer, "no TLS");
		return false;
	}
	tls_peer_subject(ssl, who.cert, sizeof(who.cert));
	log_escape(who.cert, esc, sizeof(esc));
	if (tls_peer_role(ssl) & TLS_CERT_AGENT) {
		snprintf(why, sizeof(why), "certificate %s was made for an agent (OU=agent): it "
			 "may send data, not read metrics", esc);
		refuse(m, req, peer, why);
		return false;
	}
	if (!has_right(m, &who)) {
		snprintf(why, sizeof(why), "certificate %s: no `metrics = cert:CN` line of the "
			 "collector's configuration names it", esc);
		refuse(m, req, peer, why);
		return false;
	}
	return true;
}

/* ---- answers ---- */

static void reply_text(struct evhttp_request *req, int code, const char *reason,
		       const char *type, const char *text, size_t len)
{
	struct evbuffer *b = evbuffer_new();

	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
	if (b && evbuffer_add(b, text, len) == 0)
		evhttp_send_reply(req, code, reason, b);
	else
		evhttp_send_error(req, 500, "out of memory");
	if (b)
		evbuffer_free(b);
}

/* One reading of the store and the sources, for every request waiting. */
static void render_cb(evutil_socket_t fd, short what, void *arg)
{
	struct metrics *m = arg;
	struct mwait *w = m->waiting, *next;
	char *text = NULL;
	size_t len = 0;
	int ret;

	m->waiting = NULL;
	m->tail = &m->waiting;
	ret = metrics_render(m->store, &m->o.src, &text, &len);
	if (ret < 0)
		log_warn("reading the store: %s", ret == TC_ERR_DB ? store_errmsg(m->store) :
			 tc_strerror(ret));
	for (; w; w = next) {
		next = w->next;
		if (ret == 0)
			reply_text(w->req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
				   text, len);
		else
			evhttp_send_error(w->req, 503, "the store could not be read");
		free(w);
	}
	free(text);
}

static void metrics_req(struct metrics *m, struct evhttp_request *req)
{
	struct mwait *w = calloc(1, sizeof(*w));

	if (!w) {
		evhttp_send_error(req, 503, "out of memory");
		return;
	}
	w->req = req;
	if (!m->waiting)
		event_active(m->render_ev, EV_TIMEOUT, 0);
	*m->tail = w;
	m->tail = &w->next;
}

static void request_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));

	if (!allowed(m, req))
		return;
	if (path && !strcmp(path, "/metrics"))
		metrics_req(m, req);
	else if (path && !strcmp(path, "/healthz"))
		reply_text(req, 200, "OK", "text/plain; charset=utf-8", "ok\n", 3);
	else
		evhttp_send_error(req, 404, "only /metrics and /healthz are here");
}

/* ---- connections ---- */

struct counting {
	struct metrics *m;
	unsigned n;
};

static int count_conn(const struct event_base *base, const struct event *ev, void *arg)
{
	struct counting *c = arg;
	evutil_socket_t fd = event_get_fd(ev);

	if (fd >= 0 && fd != c->m->lfd && fd != c->m->wake[0] && (event_get_events(ev) & EV_READ))
		c->n++;
	return 0;
}

/* Connections being read (each has one read event on its socket). */
static unsigned conns(struct metrics *m)
{
	struct counting c = { m, 0 };

	event_base_foreach_event(m->base, count_conn, &c);
	return c.n;
}

static void recount_cb(evutil_socket_t fd, short what, void *arg)
{
	struct metrics *m = arg;

	if (conns(m) < METRICS_MAX_CONNS) {
		evconnlistener_enable(m->lev);
		m->paused = false;
		event_del(m->recount_ev);
	}
}

/* A new connection's bufferevent (evhttp_set_bevcb()): TLS or not; at the cap, accept no more. */
static struct bufferevent *conn_bev(struct event_base *base, void *arg)
{
	struct metrics *m = arg;
	struct bufferevent *bev = NULL;
	SSL *ssl;

	if (!m->paused && conns(m) + 1 >= METRICS_MAX_CONNS) {
		evconnlistener_disable(m->lev);
		m->paused = true;
		event_add(m->recount_ev, &(struct timeval){ 0, METRICS_RECOUNT_MS * 1000 });
	}
	if (!m->https)
		return bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	pthread_mutex_lock(&m->lock);
	ssl = SSL_new(m->ctx);
	pthread_mutex_unlock(&m->lock);
	if (ssl)
		bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
						     BEV_OPT_CLOSE_ON_FREE);
	if (bev)
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	else if (ssl)
		SSL_free(ssl);
	return bev;	/* NULL: evhttp makes a plain one, whose TLS client fails */
}

/* ---- the thread ---- */

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct metrics *m = arg;

	event_base_loopbreak(m->base);
}

static void *metrics_main(void *arg)
{
	struct metrics *m = arg;

	event_base_dispatch(m->base);
	return NULL;
}

/* Bind @hp ("HOST:PORT") into m->lev, and write what was bound into m->bound. */
static int bind_port(struct metrics *m, const char *hp)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t slen = sizeof(ss);
	char host[256], ip[INET6_ADDRSTRLEN];
	const char *colon = strrchr(hp, ':');
	size_t hlen = (size_t)(colon - hp);
	int rv;

	if (hlen >= 2 && hp[0] == '[' && hp[hlen - 1] == ']')
		hp++, hlen -= 2;
	if (hlen >= sizeof(host))
		return TC_ERR_CONFIG;
	memcpy(host, hp, hlen);
	host[hlen] = 0;
	rv = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rv != 0) {
		log_err("--metrics %s: %s", hp, gai_strerror(rv));
		return TC_ERR_CONFIG;
	}
	m->lev = evconnlistener_new_bind(m->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE |
					 LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
					 METRICS_BACKLOG, ai->ai_addr, (int)ai->ai_addrlen);
	freeaddrinfo(ai);
	if (!m->lev) {
		log_err("--metrics: cannot listen on %s: %s", m->o.addr, strerror(errno));
		return -errno;
	}
	m->lfd = evconnlistener_get_fd(m->lev);
	getsockname(m->lfd, (struct sockaddr *)&ss, &slen);
	if (ss.ss_family == AF_INET6)
		snprintf(m->bound, sizeof(m->bound), "%s://[%s]:%u", m->https ? "https" : "http",
			 inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip,
				   sizeof(ip)), ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	else
		snprintf(m->bound, sizeof(m->bound), "%s://%s:%u", m->https ? "https" : "http",
			 inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip)),
			 ntohs(((struct sockaddr_in *)&ss)->sin_port));
	return 0;
}

/* The event base, its events and the evhttp server on @hp. */
static int setup(struct metrics *m, const char *hp)
{
	int ret;

	m->base = event_base_new();
	if (!m->base || pipe2(m->wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return -ENOMEM;
	m->wake_ev = event_new(m->base, m->wake[0], EV_READ, wake_cb, m);
	m->render_ev = event_new(m->base, -1, 0, render_cb, m);
	m->recount_ev = event_new(m->base, -1, EV_PERSIST, recount_cb, m);
	m->http = evhttp_new(m->base);
	if (!m->wake_ev || !m->render_ev || !m->recount_ev || !m->http ||
	    event_add(m->wake_ev, NULL) < 0)
		return -ENOMEM;
	ret = bind_port(m, hp);
	if (ret < 0)
		return ret;
	evhttp_set_max_headers_size(m->http, METRICS_MAX_HEADERS);
	evhttp_set_max_body_size(m->http, METRICS_MAX_BODY);
	evhttp_set_timeout(m->http, METRICS_TIMEOUT_S);
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_gencb(m->http, request_cb, m);
	evhttp_set_bevcb(m->http, conn_bev, m);
	if (!evhttp_bind_listener(m->http, m->lev)) {
		evconnlistener_free(m->lev);
		m->lev = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void metrics_free(struct metrics *m)
{
	struct mwait *w, *next;

	if (m->started) {
		if (write(m->wake[1], "x", 1) != 1)
			log_warn("cannot wake the metrics thread: %s", strerror(errno));
		pthread_join(m->thread, NULL);
	}
	for (w = m->waiting; w; w = next) {	/* their connections go with evhttp */
		next = w->next;
		free(w);
	}
	if (m->http)
		evhttp_free(m->http);	/* frees the listener bound to it */
	else if (m->lev)
		evconnlistener_free(m->lev);
	if (m->wake_ev)
		event_free(m->wake_ev);
	if (m->render_ev)
		event_free(m->render_ev);
	if (m->recount_ev)
		event_free(m->recount_ev);
	if (m->base)
		event_base_free(m->base);
	for (int i = 0; i < 2; i++)
		if (m->wake[i] >= 0)
			close(m->wake[i]);
	store_reader_close(m->store);
	SSL_CTX_free(m->ctx);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int metrics_start(const struct metrics_opts *o, struct metrics **out)
{
	struct metrics *m;
	char why[512];
	bool tls = false;
	int ret = metrics_addr_check(o->addr, &tls, why, sizeof(why));

	if (ret < 0) {
		log_err("%s", why);
		return ret;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->o = *o;
	m->wake[0] = m->wake[1] = -1;
	m->tail = &m->waiting;
	pthread_mutex_init(&m->lock, NULL);
	m->https = tls;
	if (tls && (ret = tls_ctx_new(TLS_ROLE_SERVER, o->tls, &m->ctx, why, sizeof(why))) < 0)
		log_err("--metrics %s: TLS setup: %s", o->addr, why);
	if (ret == 0 && (ret = store_reader_open(o->db, &m->store)) < 0)
		log_err("--metrics: database %s: %s", o->db, tc_strerror(ret));
	if (ret == 0)
		ret = setup(m, o->addr + (tls ? 8 : has_prefix(o->addr, "http://") ? 7 : 0));
	if (ret == 0 && pthread_create(&m->thread, NULL, metrics_main, m) != 0)
		ret = -EAGAIN;
	m->started = ret == 0;
	if (ret < 0) {
		metrics_free(m);
		return ret;
	}
	log_info("/metrics and /healthz on %s%s", m->bound, tls ? " (query-CA client "
		 "certificates that a `metrics = cert:CN` line names)" : "");
	m->o.addr = m->o.db = NULL;
	m->o.tls = NULL;
	*out = m;
	return 0;
}

const char *metrics_bound(const struct metrics *m)
{
	return m ? m->bound : NULL;
}

int metrics_reload(struct metrics *m, const struct tls_files *files, char *err, size_t errlen)
{
	SSL_CTX *ctx = NULL, *old;
	int ret;

	if (!m || !m->https)
		return 0;
	ret = tls_ctx_new(TLS_ROLE_SERVER, files, &ctx, err, errlen);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&m->lock);
	old = m->ctx;
	m->ctx = ctx;
	pthread_mutex_unlock(&m->lock);
	SSL_CTX_free(old);	/* connections made with it hold a reference */
	return 0;
}

void metrics_stop(struct metrics *m)
{
	if (m)
		metrics_free(m);
}
