/*
 * queryd_tls.c - the TLS query port (see queryd_tls.h for why and how,
 * proto/PROTOCOL.md "Query endpoint" for the wire).
 *
 * Blocking OpenSSL on plain sockets, a thread per connection: a query
 * connection carries one request at a time and waits for the pool most of
 * its life, so an event loop would buy nothing here. A hostile client is
 * bounded, and cannot keep others out:
 *  - Handshakes are a pool of their own (QTLS_MAX_HANDSHAKES, at most
 *    QTLS_MAX_HANDSHAKES_SOURCE per source address, QTLS_ACCEPT_MS each)
 *    and take no request slot. A new connection is always taken: with the
 *    pool full, the oldest handshake of its own source (at the per-source
 *    cap) or of the source holding the most is given up (fair eviction,
 *    the agent port's rule, server/conn/conn.c).
 *  - Only an authenticated connection takes one of the QTLS_MAX_CONNS
 *    request slots. With all taken, the one idle longest (at least
 *    QTLS_IDLE_GRACE_MS) is closed for it; with none idle it waits up to
 *    QTLS_SLOT_WAIT_MS, still in the handshake pool, and is then told
 *    the port is busy.
 *  - Socket timeouts for every request's bytes (QTLS_HANDSHAKE_MS) and
 *    between requests (QTLS_IDLE_MS), a request's size capped before it is
 *    read (QMSG_MAX_WIRE), and no client certificate from the CA, no
 *    connection. Threads given up and still ending count against
 *    QTLS_MAX_THREADS; past it a new connection is closed at accept.
 * Every state change of a connection is under qtls.lock (struct qtls_conn
 * .state); a connection given up is shut down (shutdown(2) wakes its
 * thread's read) and ends itself.
 */
#include "config.h"

#define LOG_PREFIX "query-tls"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"
#include "proto/qmsg.h"
#include "proto/tls.h"
#include "server/query/qauth.h"
#include "server/query/queryd.h"
#include "server/query/queryd_tls.h"

/* Where a connection is; each but QC_GONE is counted in struct qtls. */
enum qc_state {
	QC_HANDSHAKE,		/* TLS, then waiting for a request slot */
	QC_IDLE,		/* a slot: waiting for the next request */
	QC_BUSY,		/* a slot: a request read and answered */
	QC_GONE,		/* given up or ending: counts only as a thread */
};

struct qtls_conn {
	struct qtls *t;
	int fd;
	SSL *ssl;
	char peer[INET6_ADDRSTRLEN + 8];
	char addr[INET6_ADDRSTRLEN];	/* the source address alone */
	uint64_t seq;			/* accept order: lower is older */
	enum qc_state state;		/* under t->lock */
	int64_t idle_since;		/* QC_IDLE: util_now_ms() it became idle */
	struct qslot *slot;
	pthread_t thread;
	bool replied;			/* under t->lock */
	bool done;			/* the thread has finished (under t->lock) */
	struct proto_buf reply;		/* under t->lock until replied */
	struct qtls_conn *next;
};

struct qtls {
	struct queryd *qd;
	SSL_CTX *ctx;
	int fd;				/* listening */
	int wake[2];			/* a pipe: stop the accepting thread */
	pthread_t thread;
	bool started;
	atomic_bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a reply came, or stop */
	struct qtls_conn *conns;
	char bound[128];		/* HOST:PORT as bound */
	unsigned nthreads;		/* live connection threads */
	unsigned nstate[QC_GONE];	/* connections by state (QC_GONE not counted) */
	uint64_t next_seq;
	uint64_t evicted;		/* connections given up for others */
	int64_t evicted_logged;		/* util_now_ms() of the last line about them */
};

static void set_timeout(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Exactly @len bytes from @c. Return: 0; -1 on close, timeout or error. */
static int read_full(struct qtls_conn *c, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		size_t n = 0;

		if (SSL_read_ex(c->ssl, (char *)buf + got, len - got, &n) != 1)
			return -1;
		got += n;
	}
	return 0;
}

/* @n bytes from @c appended to @b, 16 KiB at a time. Return: 0; -1. */
static int read_append(struct qtls_conn *c, struct proto_buf *b, size_t n)
{
	uint8_t chunk[16384];

	while (n) {
		size_t k = n < sizeof(chunk) ? n : sizeof(chunk);

		if (read_full(c, chunk, k) < 0 || proto_buf_append(b, chunk, k) < 0)
			return -1;
		n -= k;
	}
	return 0;
}

/*
 * One message: FRAME_MSG frames of FRAME_MAX_PAYLOAD bytes, ended by a
 * shorter one (maybe empty), at most QMSG_MAX_WIRE bytes in all. @first:
 * the idle wait before it. Return: 0 and @msg; -1 (close the connection).
 */
static int read_msg(struct qtls_conn *c, struct proto_buf *msg, bool first)
{
	uint8_t hb[FRAME_HDR_SIZE];
	struct frame_hdr h;

	msg->len = 0;
	do {
		if (read_full(c, hb, sizeof(hb)) < 0)
			return -1;
		if (first)
			set_timeout(c->fd, QTLS_HANDSHAKE_MS);
		first = false;
		if (frame_hdr_parse(hb, sizeof(hb), &h) < 0 || h.type != FRAME_MSG ||
		    msg->len + h.len > QMSG_MAX_WIRE) {
			log_info("query client %s: not a query message (or over %u bytes): closed",
				 c->peer, QMSG_MAX_WIRE);
			return -1;
		}
		if (read_append(c, msg, h.len) < 0)
			return -1;
	} while (h.len == FRAME_MAX_PAYLOAD);
	return 0;
}

/* @msg as FRAME_MSG frames (see read_msg). Return: 0; -1. */
static int write_msg(struct qtls_conn *c, const struct proto_buf *msg)
{
	size_t off = 0, n;
	uint8_t hb[FRAME_HDR_SIZE];
	size_t w;

	do {
		n = msg->len - off < FRAME_MAX_PAYLOAD ? msg->len - off : FRAME_MAX_PAYLOAD;
		frame_hdr_pack(&(struct frame_hdr){ .type = FRAME_MSG, .len = (uint32_t)n }, hb);
		if (SSL_write_ex(c->ssl, hb, sizeof(hb), &w) != 1 ||
		    (n && SSL_write_ex(c->ssl, msg->data + off, n, &w) != 1))
			return -1;
		off += n;
	} while (n == FRAME_MAX_PAYLOAD);
	return 0;
}

/* @arg's (a connection's) reply, from its slot (queryd_reply_fn): copied, written by its thread. */
static void conn_reply(void *arg, const struct proto_buf *out)
{
	struct qtls_conn *c = arg;

	pthread_mutex_lock(&c->t->lock);
	c->reply.len = 0;
	if (proto_buf_append(&c->reply, out->data, out->len) < 0)
		c->reply.len = 0;	/* the client gets nothing and gives up */
	c->replied = true;
	pthread_cond_broadcast(&c->t->cond);
	pthread_mutex_unlock(&c->t->lock);
}

/*
 * Whether @c's client went away while its request is answered: it shut
 * its side (FIN; POLLRDHUP even with bytes unread, such as TLS's
 * close_notify) or the connection broke.
 */
static bool client_gone(const struct qtls_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * Hand @req to the pool as @who's and wait for its reply; a client that
 * goes away meanwhile cancels it. Return: 0; -1 (stop).
 */
static int ask_pool(struct qtls_conn *c, const struct qauth_who *who,
		    const struct proto_buf *req, struct proto_buf *reply)
{
	struct qtls *t = c->t;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	c->replied = false;
	pthread_mutex_unlock(&t->lock);
	queryd_submit(c->slot, who, req->data, req->len);
	pthread_mutex_lock(&t->lock);
	while (!c->replied && !atomic_load(&t->stop)) {
		struct timespec until = util_deadline(QTLS_GONE_CHECK_MS);

		if (pthread_cond_timedwait(&t->cond, &t->lock, &until) == ETIMEDOUT &&
		    !c->replied && client_gone(c))
			queryd_slot_cancel(c->slot);	/* its answer would go nowhere */
	}
	if (c->replied) {
		reply->len = 0;
		if (proto_buf_append(reply, c->reply.data, c->reply.len) < 0)
			ret = -1;
	} else {
		ret = -1;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* Move @c to @st, keeping the counts. Under t->lock. */
static void set_state(struct qtls_conn *c, enum qc_state st)
{
	struct qtls *t = c->t;

	if (c->state != QC_GONE)
		t->nstate[c->state]--;
	c->state = st;
	if (st != QC_GONE)
		t->nstate[st]++;
	if (st == QC_IDLE)
		c->idle_since = util_now_ms();
	pthread_cond_broadcast(&t->cond);	/* a slot may be free: waiters look */
}

/*
 * Give @c up for another connection (@why: which cap): it is shut down,
 * which wakes its thread, and no longer counted but as a thread. A line
 * at most every 10 s says how many. Under t->lock.
 */
static void conn_evict(struct qtls_conn *c, const char *why)
{
	struct qtls *t = c->t;
	int64_t now = util_now_ms();

	set_state(c, QC_GONE);
	shutdown(c->fd, SHUT_RDWR);
	t->evicted++;
	if (now - t->evicted_logged >= 10000) {
		t->evicted_logged = now;
		log_info("query client %s given up for another: %s (%llu so far; logged "
			 "every 10 s)", c->peer, why, (unsigned long long)t->evicted);
	}
}

/*
 * The handshake to give up for a new connection from @addr (fair
 * eviction): the oldest of @addr's own at QTLS_MAX_HANDSHAKES_SOURCE;
 * else, with QTLS_MAX_HANDSHAKES in the pool, the oldest of the source
 * holding the most. NULL: room. Under t->lock; O(n^2) in the (few)
 * handshakes, and only when the pool is full.
 */
static struct qtls_conn *handshake_victim(struct qtls *t, const char *addr)
{
	struct qtls_conn *c, *d, *mine = NULL, *best = NULL;
	unsigned n_mine = 0, n_best = 0;

	for (c = t->conns; c; c = c->next)
		if (c->state == QC_HANDSHAKE && !strcmp(c->addr, addr)) {
			n_mine++;
			if (!mine || c->seq < mine->seq)
				mine = c;
		}
	if (n_mine >= QTLS_MAX_HANDSHAKES_SOURCE)
		return mine;
	if (t->nstate[QC_HANDSHAKE] < QTLS_MAX_HANDSHAKES)
		return NULL;
	for (c = t->conns; c; c = c->next) {
		struct qtls_conn *oldest = c;
		unsigned n = 0;

		if (c->state != QC_HANDSHAKE)
			continue;
		for (d = t->conns; d; d = d->next)
			if (d->state == QC_HANDSHAKE && !strcmp(d->addr, c->addr)) {
				n++;
				if (d->seq < oldest->seq)
					oldest = d;
			}
		if (oldest == c && (n > n_best || (n == n_best && c->seq < best->seq))) {
			n_best = n;
			best = c;
		}
	}
	return best;
}

/* The connection idle longest, at least QTLS_IDLE_GRACE_MS; NULL: none. Under t->lock. */
static struct qtls_conn *idle_victim(struct qtls *t)
{
	int64_t now = util_now_ms();
	struct qtls_conn *c, *best = NULL;

	for (c = t->conns; c; c = c->next)
		if (c->state == QC_IDLE && now - c->idle_since >= QTLS_IDLE_GRACE_MS &&
		    (!best || c->idle_since < best->idle_since))
			best = c;
	return best;
}

/*
 * A request slot for @c, authenticated: a free one, or the one of the
 * connection idle longest, or, with every slot busy, the first to come
 * within QTLS_SLOT_WAIT_MS (meanwhile @c stays in the handshake pool).
 * Return: 0 (@c is QC_IDLE); -1: none came in time; -2: @c was given up
 * meanwhile, or the port stops.
 */
static int slot_take(struct qtls_conn *c)
{
	struct qtls *t = c->t;
	int64_t deadline = util_now_ms() + QTLS_SLOT_WAIT_MS;
	struct qtls_conn *v;
	int ret = -2;

	pthread_mutex_lock(&t->lock);
	while (c->state == QC_HANDSHAKE && !atomic_load(&t->stop)) {
		struct timespec until;

		if (t->nstate[QC_IDLE] + t->nstate[QC_BUSY] < QTLS_MAX_CONNS ||
		    (v = idle_victim(t))) {
			if (t->nstate[QC_IDLE] + t->nstate[QC_BUSY] >= QTLS_MAX_CONNS)
				conn_evict(v, "the longest idle query connection, with "
					   "every request slot taken");
			set_state(c, QC_IDLE);
			ret = 0;
			break;
		}
		if (util_now_ms() >= deadline) {
			ret = -1;
			break;
		}
		until = util_deadline(QTLS_GONE_CHECK_MS);
		pthread_cond_timedwait(&t->cond, &t->lock, &until);
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* Whether @c may answer the request it read: it was not given up meanwhile (then: busy). */
static bool conn_begin(struct qtls_conn *c)
{
	bool ok;

	pthread_mutex_lock(&c->t->lock);
	ok = c->state == QC_IDLE;
	if (ok)
		set_state(c, QC_BUSY);
	pthread_mutex_unlock(&c->t->lock);
	return ok;
}

/* @c waits for its next request; false: it was given up meanwhile. */
static bool conn_idle(struct qtls_conn *c)
{
	bool ok;

	pthread_mutex_lock(&c->t->lock);
	ok = c->state == QC_BUSY || c->state == QC_IDLE;
	if (ok)
		set_state(c, QC_IDLE);
	pthread_mutex_unlock(&c->t->lock);
	return ok;
}

/* No slot for @c: its first request is answered with why (-EBUSY). */
static void conn_busy(struct qtls_conn *c, struct proto_buf *req, struct proto_buf *reply)
{
	char msg[200];

	log_info("query client %s refused: all %d query connections are answering "
		 "requests (waited %d ms)", c->peer, QTLS_MAX_CONNS, QTLS_SLOT_WAIT_MS);
	snprintf(msg, sizeof(msg), "the collector's TLS query port has all its %d "
		 "connections answering requests; try again later", QTLS_MAX_CONNS);
	set_timeout(c->fd, QTLS_HANDSHAKE_MS);
	if (read_msg(c, req, true) == 0 && qmsg_reply_error(-EBUSY, msg, -1, -1, reply) == 0)
		write_msg(c, reply);
}

/*
 * The TLS handshake, and the client's identity: its certificate's CN.
 * Return: 0; 1 when the certificate is an agent's (its first request is
 * answered with the reason); -1 when the handshake failed.
 */
static int conn_handshake(struct qtls_conn *c, struct qauth_who *who)
{
	char err[512];

	memset(who, 0, sizeof(*who));
	who->kind = QAUTH_CERT;
	pthread_mutex_lock(&c->t->lock);	/* qtls_reload() swaps it */
	c->ssl = SSL_new(c->t->ctx);
	pthread_mutex_unlock(&c->t->lock);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 || SSL_accept(c->ssl) != 1) {
		log_info("query client %s refused: TLS handshake failed: %s", c->peer,
			 tls_errors(c->ssl, err, sizeof(err)));
		return -1;
	}
	tls_peer_subject(c->ssl, who->cert, sizeof(who->cert));
	if (tls_peer_role(c->ssl) & TLS_CERT_AGENT) {
		log_warn("query client %s refused: certificate %s was made for an agent "
			 "(OU=agent): it may send data, not read", c->peer,
			 log_escape(who->cert, err, sizeof(err)));
		return 1;
	}
	log_info("query client %s: certificate %s", c->peer,
		 log_escape(who->cert, err, sizeof(err)));
	return 0;
}

/* Requests of @c, one at a time, until it closes, times out or is given up. */
static void serve(struct qtls_conn *c, const struct qauth_who *who, struct proto_buf *req,
		  struct proto_buf *reply)
{
	for (;;) {
		set_timeout(c->fd, QTLS_IDLE_MS);
		if (atomic_load(&c->t->stop) || read_msg(c, req, true) < 0 || !conn_begin(c) ||
		    ask_pool(c, who, req, reply) < 0 || write_msg(c, reply) < 0 || !conn_idle(c))
			break;
	}
}

static void *conn_main(void *arg)
{
	struct qtls_conn *c = arg;
	struct proto_buf req, reply;
	struct qauth_who who;
	int ret;

	proto_buf_init(&req);
	proto_buf_init(&reply);
	set_timeout(c->fd, QTLS_ACCEPT_MS);
	ret = conn_handshake(c, &who);
	if (ret == 1 && read_msg(c, &req, true) == 0 &&
	    qmsg_reply_error(TC_ERR_IDENTITY, "this certificate was made for an agent "
			     "(OU=agent): it may send data, not query", -1, -1, &reply) == 0)
		write_msg(c, &reply);
	if (ret == 0) {
		ret = slot_take(c);
		if (ret == 0)
			serve(c, &who, &req, &reply);
		else if (ret == -1)
			conn_busy(c, &req, &reply);
	}
	if (c->ssl)
		SSL_shutdown(c->ssl);
	proto_buf_free(&req);
	proto_buf_free(&reply);
	pthread_mutex_lock(&c->t->lock);
	set_state(c, QC_GONE);
	c->done = true;
	c->t->nthreads--;
	pthread_mutex_unlock(&c->t->lock);
	return NULL;
}

/* Join and free the connections whose threads have finished (@all: every one). */
static void reap(struct qtls *t, bool all)
{
	struct qtls_conn **pp = &t->conns, *c;

	pthread_mutex_lock(&t->lock);
	while ((c = *pp)) {
		if (!c->done && !all) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		pthread_mutex_unlock(&t->lock);
		pthread_join(c->thread, NULL);
		SSL_free(c->ssl);
		close(c->fd);
		queryd_slot_free(c->slot);
		proto_buf_free(&c->reply);
		free(c);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
}

static void peer_name(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(((const struct sockaddr_in6 *)ss)->sin6_port));
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(((const struct sockaddr_in *)ss)->sin_port));
	}
}

/* @ss's address alone into @buf. */
static void source_name(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, buf, len);
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf, len);
}

/*
 * A new connection on @fd: a thread of its own, in the handshake pool (an
 * older handshake given up for it when the pool is full), unless
 * QTLS_MAX_THREADS threads are still live.
 */
static void conn_new(struct qtls *t, int fd, const struct sockaddr_storage *ss)
{
	struct qtls_conn *c = calloc(1, sizeof(*c)), *v;

	if (c)
		c->slot = queryd_slot_new(t->qd, conn_reply, c);
	if (!c || !c->slot)
		goto fail;
	c->t = t;
	c->fd = fd;
	c->state = QC_GONE;
	peer_name(ss, c->peer, sizeof(c->peer));
	source_name(ss, c->addr, sizeof(c->addr));
	proto_buf_init(&c->reply);
	pthread_mutex_lock(&t->lock);
	if (t->nthreads >= QTLS_MAX_THREADS) {
		pthread_mutex_unlock(&t->lock);
		log_debug("%u query connection threads still live: one more closed", t->nthreads);
		goto fail;
	}
	if ((v = handshake_victim(t, c->addr)))
		conn_evict(v, "the oldest TLS handshake of the source holding the most");
	c->seq = ++t->next_seq;
	set_state(c, QC_HANDSHAKE);
	if (pthread_create(&c->thread, NULL, conn_main, c) != 0) {
		set_state(c, QC_GONE);
		pthread_mutex_unlock(&t->lock);
		goto fail;
	}
	t->nthreads++;
	c->next = t->conns;
	t->conns = c;
	pthread_mutex_unlock(&t->lock);
	return;
fail:
	if (c)
		queryd_slot_free(c->slot);
	free(c);
	close(fd);
}

static void *accept_main(void *arg)
{
	struct qtls *t = arg;
	struct pollfd p[2] = { { .fd = t->fd, .events = POLLIN },
			       { .fd = t->wake[0], .events = POLLIN } };

	while (!atomic_load(&t->stop)) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd;

		if (poll(p, 2, -1) < 0 || p[1].revents)
			continue;
		fd = accept4(t->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		reap(t, false);
		if (fd >= 0)
			conn_new(t, fd, &ss);
	}
	return NULL;
}

/* Bind and listen on HOST:PORT @addr. Return: the fd; -1 (logged). */
static int listen_on(const char *addr, char *bound, size_t blen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const char *colon = strrchr(addr, ':');
	char host[256];
	int fd = -1, one = 1;
	size_t hl = colon ? (size_t)(colon - addr) : 0;

	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']')
		memcpy(host, addr + 1, hl - 2), host[hl - 2] = 0;
	else if (colon && hl < sizeof(host))
		memcpy(host, addr, hl), host[hl] = 0;
	if (!colon || hl >= sizeof(host) || getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
		log_err("--query-tls %s: expected HOST:PORT", addr);
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		log_err("cannot listen for TLS queries on %s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	} else {
		peer_name(&ss, bound, blen);
	}
	freeaddrinfo(ai);
	return fd;
}

int qtls_start(struct queryd *qd, const char *addr, const struct tls_files *files,
	       struct qtls **out)
{
	struct qtls *t = calloc(1, sizeof(*t));
	char err[512];
	int ret = TC_ERR_CONFIG;

	if (!t)
		return -ENOMEM;
	t->qd = qd;
	t->fd = t->wake[0] = t->wake[1] = -1;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	if (tls_ctx_new(TLS_ROLE_SERVER, files, &t->ctx, err, sizeof(err)) < 0) {
		log_err("--query-tls: %s", err);
		ret = TC_ERR_TLS;
	} else if ((t->fd = listen_on(addr, t->bound, sizeof(t->bound))) >= 0 &&
		   pipe2(t->wake, O_CLOEXEC) == 0 &&
		   pthread_create(&t->thread, NULL, accept_main, t) == 0) {
		t->started = true;
		ret = 0;
	}
	if (ret < 0) {
		qtls_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

const char *qtls_bound(const struct qtls *t)
{
	return t ? t->bound : NULL;
}

int qtls_reload(struct qtls *t, const struct tls_files *files, char *err, size_t errlen)
{
	SSL_CTX *ctx, *old;
	int ret;

	if (!t)
		return 0;
	ret = tls_ctx_new(TLS_ROLE_SERVER, files, &ctx, err, errlen);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&t->lock);
	old = t->ctx;
	t->ctx = ctx;
	pthread_mutex_unlock(&t->lock);
	SSL_CTX_free(old);	/* SSLs made from it hold their own reference */
	return 0;
}

int qtls_expiry(struct qtls *t, int days, tls_expiry_fn fn, void *arg)
{
	SSL_CTX *ctx;
	int n;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	ctx = t->ctx;
	SSL_CTX_up_ref(ctx);	/* a qtls_reload() meanwhile frees only its own */
	pthread_mutex_unlock(&t->lock);
	n = tls_ctx_expiry(ctx, days, fn, arg);
	SSL_CTX_free(ctx);
	return n;
}

void qtls_stop(struct qtls *t)
{
	if (!t || atomic_exchange(&t->stop, true))
		return;
	if (t->started) {
		(void)!write(t->wake[1], "x", 1);
		pthread_join(t->thread, NULL);
		t->started = false;
	}
	pthread_mutex_lock(&t->lock);
	for (struct qtls_conn *c = t->conns; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);	/* wakes a read or a write */
	pthread_cond_broadcast(&t->cond);	/* and a wait for the pool */
	pthread_mutex_unlock(&t->lock);
	for (struct qtls_conn *c = t->conns; c; c = c->next)
		pthread_join(c->thread, NULL);
}

void qtls_free(struct qtls *t)
{
	struct qtls_conn *c;

	if (!t)
		return;
	qtls_stop(t);
	while ((c = t->conns)) {
		t->conns = c->next;
		SSL_free(c->ssl);
		close(c->fd);
		queryd_slot_free(c->slot);
		proto_buf_free(&c->reply);
		free(c);
	}
	if (t->fd >= 0)
		close(t->fd);
	for (int i = 0; i < 2; i++)
		if (t->wake[i] >= 0)
			close(t->wake[i]);
	SSL_CTX_free(t->ctx);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
	free(t);
}
