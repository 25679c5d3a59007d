/*
 * ship.c - the agent's TLS connection to the collector (see ship.h).
 *
 * Writes are blocking (SO_SNDTIMEO bounds a stalled collector); reads are
 * rare (WELCOME, DONE, a collector's ERROR) and run with the socket
 * switched to non-blocking and poll() enforcing a deadline, so TLS 1.3
 * session tickets or a half-sent record never hang the agent.
 *
 * Kernel TLS: the client context asks OpenSSL for it (SSL_OP_ENABLE_KTLS);
 * when the kernel took over encryption after the handshake, page payloads
 * may be spliced straight from a pipe into the socket (ship_page_splice()).
 * A connection made with ship_connect() without TLS files
 * (--insecure-plain, loopback only) has no TLS at all and splices likewise.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#define LOG_PREFIX "ship"
#include "common/cli.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"
#include "agent/ship.h"

#define SHIP_CONNECT_MS		10000
#define SHIP_IO_TIMEOUT_S	30
#define SHIP_CHECK_MS		5000	/* finishing a frame that began */
#define SHIP_CHECK_MAX_MSGS	1024	/* messages one ship_check() reads at most */
#define SHIP_WBUF		(256 * 1024)	/* TLS records gathered per write(2) */
#define SHIP_ECHO_MAX		8	/* probes read and not yet answered (the
					 * collector has one out at a time) */
#define SHIP_MAX_PROBES		64	/* WELCOME's clock_probes taken at most */
#define SHIP_ECHO_BYTES		256	/* an echo's frame and TLS record, at most */

struct ship {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	struct proto_buf out;		/* encoded control message */
	ship_ack_fn ack_fn;
	void *ack_arg;
	ship_filter_fn filter_fn;	/* MSG_FILTER (push-down); NULL: unexpected */
	bool hold;			/* ship_check() reads nothing */
	void *filter_arg;
	ship_clock_fn clock_fn;		/* MSG_CLOCK_PROBE; NULL: unexpected */
	void *clock_arg;
	ship_freeze_fn freeze_fn;	/* MSG_FREEZE; NULL: unexpected */
	void *freeze_arg;
	struct proto_clock_echo echo[SHIP_ECHO_MAX];	/* probes read, not answered */
	unsigned nechoes;
	uint64_t probes;		/* probes read on this connection */
	bool plain;			/* --insecure-plain: no TLS */
	bool ktls;			/* the kernel encrypts what we send */
	char err[512];
};


/* Copy [@s, @s+@n) into @dst of @cap bytes as a string. */
static int copy_part(char *dst, size_t cap, const char *s, size_t n)
{
	if (n == 0)
		return TC_ERR_SYNTAX;
	if (n >= cap)
		return TC_ERR_TOO_LONG;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

int ship_parse_hostport(const char *s, char host[SHIP_HOST_MAX],
			char port[SHIP_PORT_MAX])
{
	char h[SHIP_HOST_MAX], p[SHIP_PORT_MAX];
	const char *colon, *hs = s, *he;
	long port_num;
	int ret;

	if (*s == '[') {
		he = strchr(s, ']');
		if (!he || he[1] != ':')
			return TC_ERR_SYNTAX;
		hs = s + 1;
		colon = he + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return TC_ERR_SYNTAX;	/* none, or bare IPv6 */
		he = colon;
	}
	ret = copy_part(h, sizeof(h), hs, (size_t)(he - hs));
	if (ret == 0)
		ret = copy_part(p, sizeof(p), colon + 1, strlen(colon + 1));
	if (ret < 0)
		return ret;
	if (!cli_parse_num(p, 1, 65535, &port_num))
		return TC_ERR_SYNTAX;
	strcpy(host, h);
	strcpy(port, p);
	return 0;
}

static int set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

/* Wait for @events on @fd until @deadline (ms); Return: 0, TC_ERR_TIMEOUT
 * or -errno (-EINTR when a signal came). */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left = deadline - util_now_ms();
	int ret;

	if (left < 0)
		left = 0;
	ret = poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left));
	if (ret < 0)
		return -errno;
	return ret == 0 ? TC_ERR_TIMEOUT : 0;
}

/* Non-blocking connect to one address, at most SHIP_CONNECT_MS. */
static int connect_one(const struct addrinfo *ai, int *out)
{
	socklen_t sl = sizeof(int);
	int fd, soerr = 0, ret = 0;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		ret = errno == EINPROGRESS ? 0 : -errno;
		if (ret == 0)
			ret = wait_fd(fd, POLLOUT, util_now_ms() + SHIP_CONNECT_MS);
		if (ret == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr,
					   &sl) < 0)
			ret = -errno;
		if (ret == 0 && soerr)
			ret = -soerr;
	}
	if (ret == 0)
		ret = set_nonblock(fd, false);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	*out = fd;
	return 0;
}

static void socket_opts(int fd)
{
	struct timeval tv = { .tv_sec = SHIP_IO_TIMEOUT_S };
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* Whether @ai is 127.0.0.0/8 or ::1. */
static bool ai_loopback(const struct addrinfo *ai)
{
	if (ai->ai_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr)
			>> 24) == 127;
	return ai->ai_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
}

/* Every address of @res is a loopback one. */
static bool all_loopback(const struct addrinfo *res)
{
	for (; res; res = res->ai_next)
		if (!ai_loopback(res))
			return false;
	return true;
}

static int tcp_connect(const char *host, const char *port, bool loopback_only,
		       int *out, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_family = AF_UNSPEC };
	struct addrinfo *res, *ai;
	int ret, gai;

	gai = getaddrinfo(host, port, &hints, &res);
	if (gai) {
		tc_seterr(err, errlen, "cannot resolve %s: %s", host,
		       gai_strerror(gai));
		return -EHOSTUNREACH;
	}
	if (loopback_only && !all_loopback(res)) {
		freeaddrinfo(res);
		tc_seterr(err, errlen, "--insecure-plain: %s is not a loopback "
		       "address; plain TCP is for tests on this host only", host);
		return -EINVAL;
	}
	ret = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		ret = connect_one(ai, out);
		if (ret == 0 || ret == -EINTR)
			break;
	}
	freeaddrinfo(res);
	if (ret < 0)
		tc_seterr(err, errlen, "cannot connect to %s port %s: %s", host,
		       port, tc_strerror(ret));
	else
		socket_opts(*out);
	return ret;
}

static bool is_ip_literal(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, buf) == 1 ||
	       inet_pton(AF_INET6, host, buf) == 1;
}

/* Name the server we expect: its IP address, or its DNS name plus SNI. */
static int expect_peer(SSL *ssl, const char *host)
{
	if (is_ip_literal(host))
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
						     host) == 1 ? 0 : TC_ERR_TLS;
	if (SSL_set1_host(ssl, host) != 1 ||
	    SSL_set_tlsext_host_name(ssl, host) != 1)
		return TC_ERR_TLS;
	return 0;
}

/*
 * What a TLS alert from the collector about our certificate means, from
 * the last error on the queue (left there); NULL for any other error.
 */
static const char *cert_alert(void)
{
	static const struct { int alert; const char *what; } alerts[] = {
		{ SSL_AD_BAD_CERTIFICATE, "bad certificate" },
		{ SSL_AD_UNSUPPORTED_CERTIFICATE, "unsupported certificate" },
		{ SSL_AD_CERTIFICATE_REVOKED, "certificate revoked" },
		{ SSL_AD_CERTIFICATE_EXPIRED, "certificate expired or not yet valid" },
		{ SSL_AD_CERTIFICATE_UNKNOWN, "certificate unknown" },
		{ SSL_AD_UNKNOWN_CA, "unknown CA (not signed by the CA it trusts)" },
		{ SSL_AD_ACCESS_DENIED, "access denied" },
		{ SSL_AD_CERTIFICATE_REQUIRED, "certificate required" },
	};
	unsigned long e = ERR_peek_last_error();
	int reason = ERR_GET_REASON(e);

	if (!e || ERR_GET_LIB(e) != ERR_LIB_SSL || reason < SSL_AD_REASON_OFFSET)
		return NULL;
	for (size_t i = 0; i < sizeof(alerts) / sizeof(alerts[0]); i++)
		if (reason - SSL_AD_REASON_OFFSET == alerts[i].alert)
			return alerts[i].what;
	return NULL;
}

/* "the collector refused our certificate: WHY" for a certificate alert; else @why. */
static void refusal(char *buf, size_t len, const char *what, char *why, size_t wlen)
{
	const char *alert = cert_alert();

	tls_errors(NULL, why, wlen);
	if (alert)
		snprintf(buf, len, "the collector refused our certificate: %s (%s)", alert, why);
	else
		snprintf(buf, len, "%s failed: %s", what, why);
}

/* @time as "Nov 26 20:15:00 2026 GMT" into @buf. */
static const char *asn1_date(const ASN1_TIME *t, char *buf, size_t len)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n = b && ASN1_TIME_print(b, t) == 1 ? BIO_read(b, buf, (int)len - 1) : -1;

	buf[n > 0 ? n : 0] = 0;
	BIO_free(b);
	return buf;
}

/*
 * Our own certificate (in @ctx, read from @path) before connecting: an
 * expired or not yet valid one would only be refused, and the collector
 * could not tell us why. Return: 0; TC_ERR_TLS with @err saying which.
 */
static int own_cert_check(SSL_CTX *ctx, const char *path, char *err, size_t errlen)
{
	X509 *x = SSL_CTX_get0_certificate(ctx);
	char date[64];

	if (!x)
		return 0;
	if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
		tc_seterr(err, errlen, "our certificate %s expired on %s: renew it "
			  "(tracecollect-certs agent NAME) and start again", path,
			  asn1_date(X509_get0_notAfter(x), date, sizeof(date)));
		return TC_ERR_TLS;
	}
	if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
		tc_seterr(err, errlen, "our certificate %s is not valid before %s (is this "
			  "host's clock right?)", path,
			  asn1_date(X509_get0_notBefore(x), date, sizeof(date)));
		return TC_ERR_TLS;
	}
	return 0;
}

/*
 * Whether SSL_connect() (@ret, errno @e) failed because the collector
 * closed or reset the connection without a word (no TLS alert): what a
 * collector's handshake caps do to the one they give up, not a verdict on
 * our certificate (that comes as an alert, cert_alert()).
 */
static bool handshake_cut(SSL *ssl, int ret, int e)
{
	unsigned long err = ERR_peek_error();

	if (SSL_get_error(ssl, ret) == SSL_ERROR_SYSCALL)
		return !err && (e == 0 || e == ECONNRESET || e == EPIPE);
	return ERR_GET_LIB(err) == ERR_LIB_SSL &&
	       ERR_GET_REASON(err) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

static int tls_handshake(struct ship *s, const char *host, const char *port,
			 char *err, size_t errlen)
{
	char why[384];
	int ret, e;

	s->ssl = SSL_new(s->ctx);
	if (!s->ssl || SSL_set_fd(s->ssl, s->fd) != 1 ||
	    expect_peer(s->ssl, host) < 0) {
		tc_seterr(err, errlen, "TLS setup failed: %s",
		       tls_errors(s->ssl, why, sizeof(why)));
		return TC_ERR_TLS;
	}
	ERR_clear_error();
	errno = 0;
	ret = SSL_connect(s->ssl);
	if (ret == 1)
		return 0;
	e = errno;
	if (cert_alert()) {	/* TLS 1.2: the collector's verdict comes in the handshake */
		refusal(err, errlen, "TLS handshake", why, sizeof(why));
		return TC_ERR_TLS;
	}
	if (handshake_cut(s->ssl, ret, e)) {
		tc_seterr(err, errlen, "the collector at %s port %s closed the connection "
			  "during the TLS handshake (%s): it is busy, or its handshake caps "
			  "are full", host, port, e ? strerror(e) : "end of file");
		ERR_clear_error();
		return -ECONNRESET;
	}
	tls_errors(s->ssl, why, sizeof(why));
	if (!why[0])
		snprintf(why, sizeof(why), "%s", e ? strerror(e) :
			 "connection closed by the collector");
	tc_seterr(err, errlen, "TLS handshake with %s port %s failed: %s%s", host,
	       port, why, strstr(why, "wrong version number") ? " (a collector "
	       "started with --insecure-plain? both ends must give it)" : "");
	return TC_ERR_TLS;
}

/*
 * Without kTLS, gather the TLS records of many frames in a buffering BIO
 * in front of the socket and write them with one write(2) (ship_flush()):
 * two records per page (header, page) would otherwise cost two syscalls.
 * Return: 0 or -ENOMEM.
 */
static int wbuf_insert(struct ship *s)
{
	BIO *sock = SSL_get_wbio(s->ssl), *buf = BIO_new(BIO_f_buffer());

	if (!buf || BIO_set_write_buffer_size(buf, SHIP_WBUF) != 1 ||
	    BIO_up_ref(sock) != 1) {
		BIO_free(buf);
		return -ENOMEM;
	}
	BIO_push(buf, sock);
	SSL_set0_wbio(s->ssl, buf);	/* drops SSL's own reference to sock */
	return 0;
}

/* After the handshake: did the kernel take over encryption? Without it,
 * say so once per process (reconnects would only repeat it). */
static int ktls_check(struct ship *s)
{
	static bool told;

	s->ktls = BIO_get_ktls_send(SSL_get_wbio(s->ssl)) == 1;
	if (s->ktls)
		log_info("kernel TLS is on: pages are spliced into the socket");
	else if (!told)
		log_info("kernel TLS is not available (no CONFIG_TLS / tls "
			 "module): OpenSSL encrypts in user space");
	told = true;
	return s->ktls ? 0 : wbuf_insert(s);
}

/* The TCP connection of @s and, unless @files is NULL (plain), TLS over it. */
static int link_open(struct ship *s, const char *host, const char *port,
		     const struct tls_files *files, char *err, size_t errlen)
{
	int ret;

	if (files) {
		ret = tls_ctx_new(TLS_ROLE_CLIENT, files, &s->ctx, err, errlen);
		if (ret == 0)
			ret = own_cert_check(s->ctx, files->cert, err, errlen);
		if (ret < 0)
			return ret;
		SSL_CTX_set_options(s->ctx, SSL_OP_ENABLE_KTLS);
	}
	ret = tcp_connect(host, port, !files, &s->fd, err, errlen);
	if (ret < 0 || !files)
		return ret;
	ret = tls_handshake(s, host, port, err, errlen);
	return ret < 0 ? ret : ktls_check(s);
}

int ship_connect(const char *host, const char *port,
		 const struct tls_files *files, struct ship **out,
		 char *err, size_t errlen)
{
	struct ship *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->plain = !files;
	proto_buf_init(&s->out);
	ret = link_open(s, host, port, files, err, errlen);
	if (ret < 0) {
		ship_close(s);
		return ret;
	}
	*out = s;
	return 0;
}

bool ship_can_splice(const struct ship *s)
{
	return s->plain || s->ktls;
}

void ship_close(struct ship *s)
{
	if (!s)
		return;
	if (s->ssl) {
		if (SSL_is_init_finished(s->ssl))
			SSL_shutdown(s->ssl);
		SSL_free(s->ssl);
	}
	if (s->fd >= 0)
		close(s->fd);
	SSL_CTX_free(s->ctx);
	proto_buf_free(&s->out);
	free(s);
}

void ship_set_io_timeout(struct ship *s, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };

	setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

const char *ship_last_error(struct ship *s)
{
	return s->err;
}

/* Classify a failed SSL_read/SSL_write (@n its return); fills s->err. */
static int io_error(struct ship *s, int n, const char *what)
{
	int e = errno, code = SSL_get_error(s->ssl, n);
	char why[384];

	if (code == SSL_ERROR_ZERO_RETURN ||
	    (code == SSL_ERROR_SYSCALL && (e == 0 || e == EPIPE ||
					   e == ECONNRESET))) {
		tc_seterr(s->err, sizeof(s->err), "collector closed the connection");
		return TC_ERR_PEER_CLOSED;
	}
	if (cert_alert()) {	/* TLS 1.3: the verdict comes with the first read */
		refusal(s->err, sizeof(s->err), what, why, sizeof(why));
		return TC_ERR_TLS;
	}
	tls_errors(s->ssl, why, sizeof(why));
	if (!why[0])
		snprintf(why, sizeof(why), "%s", e ? strerror(e) : "TLS error");
	tc_seterr(s->err, sizeof(s->err), "%s failed: %s", what, why);
	return TC_ERR_TLS;
}

/* A failed plain send()/recv()/splice() (@e its errno; 0: EOF). */
static int plain_error(struct ship *s, int e, const char *what)
{
	if (e == 0 || e == EPIPE || e == ECONNRESET) {
		tc_seterr(s->err, sizeof(s->err), "collector closed the connection");
		return TC_ERR_PEER_CLOSED;
	}
	tc_seterr(s->err, sizeof(s->err), "%s failed: %s", what, strerror(e));
	return TC_ERR_TLS;	/* as after a TLS failure: reconnect */
}

static int plain_write(struct ship *s, const uint8_t *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = send(s->fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return plain_error(s, n < 0 ? errno : EPIPE,
					   "sending to the collector");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int ship_write(struct ship *s, const uint8_t *p, size_t len)
{
	int n;

	if (s->plain)
		return plain_write(s, p, len);
	while (len) {
		ERR_clear_error();
		errno = 0;
		n = SSL_write(s->ssl, p, len > INT_MAX ? INT_MAX : (int)len);
		if (n <= 0)
			return io_error(s, n, "sending to the collector");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One non-blocking recv() as SSL_read() would answer: >0 bytes, else -1
 * with *@code SSL_ERROR_WANT_READ, or 0/-1 with s->err filled. */
static int plain_read(struct ship *s, uint8_t *p, size_t len, int *code)
{
	ssize_t n = recv(s->fd, p, len, 0);

	if (n > 0)
		return (int)(n > INT_MAX ? INT_MAX : n);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		*code = SSL_ERROR_WANT_READ;
		return -1;
	}
	*code = SSL_ERROR_SYSCALL;
	return plain_error(s, n < 0 ? errno : 0, "reading from the collector");
}

/*
 * Whether the socket's send buffer takes @len more bytes now. POLLOUT only
 * says a third of it is free, and a flush of the write buffer is up to
 * SHIP_WBUF bytes: a write that does not fit waits for the collector,
 * and meanwhile nobody reads the ring buffers. So count: the bytes queued
 * (SIOCOUTQ) plus @len must fit in half of SO_SNDBUF (the kernel doubles
 * the value for its bookkeeping). Without the numbers, POLLOUT decides.
 */
static bool sock_room(struct ship *s, size_t len)
{
	struct pollfd p = { .fd = s->fd, .events = POLLOUT };
	int queued, sndbuf;
	socklen_t sl = sizeof(sndbuf);

	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
		return false;
	if (ioctl(s->fd, SIOCOUTQ, &queued) < 0 ||
	    getsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl) < 0)
		return true;
	/* an empty queue takes any write: the wait is the shortest there is */
	return queued == 0 || (size_t)queued + len <= (size_t)sndbuf / 2;
}

bool ship_would_block(struct ship *s, size_t len)
{
	size_t pending = 0;

	if (!s->plain && !s->ktls) {
		pending = BIO_wpending(SSL_get_wbio(s->ssl));
		if (pending + len + 256 <= SHIP_WBUF)
			return false;	/* goes into the write buffer */
		/* the buffer is flushed first; TLS adds ~1/600 */
		len += pending + (pending + len) / 512 + 1024;
	}
	return !sock_room(s, len);
}

int ship_flush(struct ship *s)
{
	BIO *w;

	if (s->plain || s->ktls || !s->ssl)
		return 0;
	w = SSL_get_wbio(s->ssl);
	ERR_clear_error();
	errno = 0;
	if (BIO_wpending(w) == 0 || BIO_flush(w) == 1)
		return 0;
	return plain_error(s, errno ? errno : EIO, "sending to the collector");
}

/*
 * ship_flush() when the socket takes the whole write buffer now, else
 * nothing: the records wait for the next call. While the collector is
 * slower than the kernel, a blocking flush would stop the agent from
 * reading the ring buffers until the collector drains its socket, and the
 * kernel would overwrite meanwhile (pages belong in the spool instead).
 */
static int flush_soft(struct ship *s)
{
	size_t pending;

	if (s->plain || s->ktls || !s->ssl)
		return 0;
	pending = BIO_wpending(SSL_get_wbio(s->ssl));
	if (!pending || !sock_room(s, pending))
		return 0;
	return ship_flush(s);
}

/* Read exactly @len bytes before @deadline; the socket is non-blocking. */
static int read_exact(struct ship *s, uint8_t *p, size_t len,
		      int64_t deadline)
{
	int n, code, ret;

	while (len) {
		if (s->plain) {
			n = plain_read(s, p, len, &code);
			if (n > 0)
				goto got;
			if (code != SSL_ERROR_WANT_READ)
				return n;
			goto wait;
		}
		ERR_clear_error();
		errno = 0;
		n = SSL_read(s->ssl, p, len > INT_MAX ? INT_MAX : (int)len);
		if (n > 0) {
got:
			p += n;
			len -= (size_t)n;
			continue;
		}
		code = SSL_get_error(s->ssl, n);
		if (code != SSL_ERROR_WANT_READ && code != SSL_ERROR_WANT_WRITE)
			return io_error(s, n, "reading from the collector");
wait:
		ret = wait_fd(s->fd, code == SSL_ERROR_WANT_READ ? POLLIN :
			      POLLOUT, deadline);
		if (ret < 0) {
			tc_seterr(s->err, sizeof(s->err), "waiting for the "
			       "collector: %s", tc_strerror(ret));
			return ret;
		}
	}
	return 0;
}

/* Read one FRAME_MSG frame and decode it into *@m. */
static int read_msg_nb(struct ship *s, int64_t deadline, struct proto_msg *m)
{
	uint8_t hdr[FRAME_HDR_SIZE], *payload = NULL;
	struct frame_hdr h;
	int ret;

	ret = read_exact(s, hdr, sizeof(hdr), deadline);
	if (ret < 0)
		return ret;
	ret = frame_hdr_parse(hdr, sizeof(hdr), &h);
	if (ret == 0 && h.type != FRAME_MSG)
		ret = TC_ERR_PROTO_STATE;
	if (ret == 0) {
		payload = malloc(h.len ? h.len : 1);
		ret = payload ? read_exact(s, payload, h.len, deadline) :
				-ENOMEM;
	}
	if (ret == 0)
		ret = proto_msg_decode(payload, h.len, m);
	if (ret < 0 && s->plain && (hdr[0] == 0x15 || hdr[0] == 0x16)) {
		tc_seterr(s->err, sizeof(s->err), "the collector speaks TLS: "
		       "--insecure-plain needs it on both ends");
		free(payload);
		return TC_ERR_PROTO_STATE;
	}
	if (ret < 0 && ret != TC_ERR_TIMEOUT && ret != TC_ERR_PEER_CLOSED &&
	    ret != TC_ERR_TLS)
		tc_seterr(s->err, sizeof(s->err), "bad frame from the collector: %s",
		       tc_strerror(ret));
	free(payload);
	return ret;
}

static int read_msg(struct ship *s, int64_t deadline, struct proto_msg *m)
{
	int ret;

	ret = set_nonblock(s->fd, true);
	if (ret < 0)
		return ret;
	ret = read_msg_nb(s, deadline, m);
	set_nonblock(s->fd, false);
	return ret;
}

/* Turn an unexpected message (ERROR or other) into an error and text. */
static int unexpected(struct ship *s, const struct proto_msg *m)
{
	char text[LOG_ESC_LEN * 2];

	if (m->type == MSG_ERROR)	/* the collector's words: escaped */
		tc_seterr(s->err, sizeof(s->err), "collector error: %s (%s)",
		       log_escape(m->error.text, text, sizeof(text)),
		       tc_strerror(m->error.code));
	else
		tc_seterr(s->err, sizeof(s->err),
		       "collector sent an unexpected %s message",
		       proto_msg_name(m->type));
	return TC_ERR_PROTO_STATE;
}

void ship_set_ack_fn(struct ship *s, ship_ack_fn fn, void *arg)
{
	s->ack_fn = fn;
	s->ack_arg = arg;
}

int ship_wake_fd(const struct ship *s)
{
	return s->hold ? -1 : s->fd;
}

void ship_hold_reading(struct ship *s, bool hold)
{
	s->hold = hold;
}

void ship_set_filter_fn(struct ship *s, ship_filter_fn fn, void *arg)
{
	s->filter_fn = fn;
	s->filter_arg = arg;
}

void ship_set_freeze_fn(struct ship *s, ship_freeze_fn fn, void *arg)
{
	s->freeze_fn = fn;
	s->freeze_arg = arg;
}

void ship_set_clock_fn(struct ship *s, ship_clock_fn fn, void *arg)
{
	s->clock_fn = fn;
	s->clock_arg = arg;
}

/*
 * A MSG_CLOCK_PROBE: note our trace clock now (t2); ship_echo() answers.
 * Past SHIP_ECHO_MAX unanswered probes the oldest is dropped (the
 * collector, which has one out at a time, then gives up on it).
 */
static void take_probe(struct ship *s, const struct proto_clock_probe *p)
{
	uint64_t now = s->clock_fn(s->clock_arg);

	if (s->nechoes == SHIP_ECHO_MAX) {
		memmove(s->echo, s->echo + 1, (SHIP_ECHO_MAX - 1) * sizeof(s->echo[0]));
		s->nechoes--;
	}
	s->echo[s->nechoes++] = (struct proto_clock_echo){ .id = p->id, .recv_ns = now };
	s->probes++;
}

/* Whether the socket takes an echo now, with what the write buffer holds before it. */
static bool echo_room(struct ship *s)
{
	size_t pending = s->plain || s->ktls || !s->ssl ? 0 : BIO_wpending(SSL_get_wbio(s->ssl));

	return sock_room(s, pending + SHIP_ECHO_BYTES);
}

/*
 * Answer the probes read: each echo's t3 is read just before it is
 * written and flushed, so that its time on the wire is the collector's to
 * measure. With @block false (the pump's loop, where a full socket must
 * not stop the reading of the ring buffers) only while the socket takes
 * the write buffer and the echo at once: the others wait for the next
 * call, their t2 kept, so the wait counts as our hold (t3 - t2), which
 * the collector takes off the round trip. A flush that finds the room
 * gone waits in the buffer for the next one: t3 is then early, which
 * only widens the uncertainty.
 */
static int ship_echo(struct ship *s, bool block)
{
	struct proto_msg m = { .type = MSG_CLOCK_ECHO };
	unsigned i;
	int ret = 0;

	for (i = 0; ret == 0 && i < s->nechoes && (block || echo_room(s)); i++) {
		m.clock_echo = s->echo[i];
		m.clock_echo.send_ns = s->clock_fn(s->clock_arg);
		if (m.clock_echo.send_ns < m.clock_echo.recv_ns)	/* never on one clock */
			m.clock_echo.send_ns = m.clock_echo.recv_ns;
		ret = ship_msg(s, &m);	/* flush_soft(): the room is there */
		if (ret == 0 && block)
			ret = ship_flush(s);
	}
	memmove(s->echo, s->echo + i, (s->nechoes - i) * sizeof(s->echo[0]));
	s->nechoes -= i;
	return ret;
}

/* Pass an ACK (or a FILTER, a probe) on; Return: true if @m was one and has been consumed. */
static bool take_ack(struct ship *s, struct proto_msg *m)
{
	if (m->type == MSG_CLOCK_PROBE && s->clock_fn) {
		take_probe(s, &m->clock_probe);
		proto_msg_free(m);
		return true;
	}
	if (m->type == MSG_FILTER && s->filter_fn) {
		if (s->filter_fn(s->filter_arg, &m->filter))
			s->hold = true;
		proto_msg_free(m);
		return true;
	}
	if (m->type == MSG_FREEZE && s->freeze_fn) {
		s->freeze_fn(s->freeze_arg, &m->freeze);
		proto_msg_free(m);
		return true;
	}
	if (m->type != MSG_ACK || !s->ack_fn)
		return false;
	s->ack_fn(s->ack_arg, m->ack.stream, m->ack.seq);
	proto_msg_free(m);
	return true;
}

/* Wait for a message of @type until @timeout_ms; *@m owns it on success. */
static int expect(struct ship *s, enum proto_msg_type type, int timeout_ms,
		  struct proto_msg *m, char *err, size_t errlen)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	int ret;

	/* ACKs, FILTERs and probes on the way are taken (probes answered) */
	while ((ret = read_msg(s, deadline, m)) == 0 && take_ack(s, m) &&
	       (ret = ship_echo(s, true)) == 0)
		;
	if (ret == 0 && m->type != type) {
		ret = unexpected(s, m);
		proto_msg_free(m);
	}
	if (ret == TC_ERR_TIMEOUT)
		tc_seterr(s->err, sizeof(s->err), "no %s from the collector "
		       "within %d s", proto_msg_name(type), timeout_ms / 1000);
	if (ret < 0)
		tc_seterr(err, errlen, "%s", s->err);
	return ret;
}

int ship_msg(struct ship *s, const struct proto_msg *m)
{
	int ret;

	s->out.len = 0;
	ret = proto_msg_encode(m, &s->out);
	if (ret < 0) {
		tc_seterr(s->err, sizeof(s->err), "cannot encode %s: %s",
		       proto_msg_name(m->type), tc_strerror(ret));
		return ret;
	}
	ret = ship_write(s, s->out.data, s->out.len);
	return ret < 0 ? ret : flush_soft(s);
}

int ship_page(struct ship *s, uint16_t cpu, uint64_t seq, uint8_t flags,
	      const void *head, size_t head_len, const void *page, size_t len)
{
	struct frame_hdr h = { .type = FRAME_PAGE, .flags = flags,
			       .stream = cpu, .seq = seq };
	uint8_t pre[FRAME_HDR_SIZE + 64];
	int ret;

	if (head_len > 64 || len > FRAME_MAX_PAYLOAD - head_len)
		return -EINVAL;
	h.len = (uint32_t)(head_len + len);
	frame_hdr_pack(&h, pre);
	if (head_len)
		memcpy(pre + FRAME_HDR_SIZE, head, head_len);
	ret = ship_write(s, pre, FRAME_HDR_SIZE + head_len);
	return ret < 0 || !len ? ret : ship_write(s, page, len);
}

int ship_frames(struct ship *s, const void *frames, size_t len)
{
	return ship_write(s, frames, len);
}

/* Splice @len bytes from the pipe @pipe_fd into the socket. */
static int splice_out(struct ship *s, int pipe_fd, size_t len)
{
	ssize_t n;

	while (len) {
		n = splice(pipe_fd, NULL, s->fd, NULL, len,
			   SPLICE_F_MOVE | SPLICE_F_MORE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return plain_error(s, n < 0 ? errno : EPIPE,
					   "splicing a page to the collector");
		len -= (size_t)n;
	}
	return 0;
}

int ship_page_splice(struct ship *s, uint16_t cpu, uint64_t seq,
		     uint8_t flags, int pipe_fd, size_t len)
{
	struct frame_hdr h = { .type = FRAME_PAGE, .flags = flags,
			       .stream = cpu, .seq = seq, .len = (uint32_t)len };
	uint8_t pre[FRAME_HDR_SIZE];
	int ret;

	if (!ship_can_splice(s) || len > FRAME_MAX_PAYLOAD)
		return -EINVAL;
	frame_hdr_pack(&h, pre);
	ret = ship_write(s, pre, sizeof(pre));
	return ret < 0 ? ret : splice_out(s, pipe_fd, len);
}

/*
 * The @n probes that follow WELCOME (its clock_probes), answered one by
 * one before anything else is sent, so that the collector has measured
 * our clock before the first page. ACKs and FILTERs among them are taken.
 */
static int take_probes(struct ship *s, uint32_t n, int timeout_ms, char *err, size_t errlen)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	uint64_t want = s->probes + (n < SHIP_MAX_PROBES ? n : SHIP_MAX_PROBES);
	struct proto_msg m;
	int ret = 0;

	while (ret == 0 && s->probes < want) {
		ret = read_msg(s, deadline, &m);
		if (ret == 0 && !take_ack(s, &m)) {
			ret = unexpected(s, &m);
			proto_msg_free(&m);
		}
		if (ret == 0)
			ret = ship_echo(s, true);
	}
	if (ret < 0)
		tc_seterr(err, errlen, "%s", s->err);
	return ret;
}

int ship_hello(struct ship *s, const struct proto_hello *hello,
	       int timeout_ms, struct proto_welcome *welcome,
	       char *err, size_t errlen)
{
	struct proto_msg m = { .type = MSG_HELLO, .hello = *hello };
	int ret;

	ret = ship_msg(s, &m);
	if (ret == 0)
		ret = ship_flush(s);
	if (ret < 0)
		tc_seterr(err, errlen, "%s", s->err);
	else
		ret = expect(s, MSG_WELCOME, timeout_ms, &m, err, errlen);
	if (ret == TC_ERR_PEER_CLOSED && s->plain)
		tc_seterr(err, errlen, "the collector closed the connection at "
		       "HELLO: does it speak TLS? --insecure-plain needs it on "
		       "both ends");
	else if (ret == TC_ERR_PEER_CLOSED)	/* TLS 1.3: its alert may be lost with the close */
		tc_seterr(err, errlen, "the collector closed the connection right after the "
			  "TLS handshake, without a word: it most likely refused our certificate "
			  "(revoked, from another CA, expired; its log says which)");
	if (ret < 0)
		return ret;	/* m holds nothing: expect() frees what it read on failure */
	if (m.welcome.version != PROTO_VERSION) {
		tc_seterr(err, errlen, "collector speaks protocol version %u, "
		       "this agent %u", m.welcome.version, PROTO_VERSION);
		ret = TC_ERR_PROTO_VERSION;
	} else {
		*welcome = m.welcome;
	}
	proto_msg_free(&m);
	return ret;
}

int ship_welcome_probes(struct ship *s, const struct proto_hello *hello,
			const struct proto_welcome *welcome, int timeout_ms, char *err,
			size_t errlen)
{
	if (!hello->clock_probe || !s->clock_fn)
		return 0;
	return take_probes(s, welcome->clock_probes, timeout_ms, err, errlen);
}

/* Whether a record waits to be read; Return: 1 yes, 0 no, or an error. */
static int peek_nb(struct ship *s)
{
	uint8_t b;
	int n;

	if (s->plain) {
		n = (int)recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n > 0)
			return 1;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return plain_error(s, n < 0 ? errno : 0,
				   "reading from the collector");
	}
	ERR_clear_error();
	errno = 0;
	n = SSL_peek(s->ssl, &b, 1);
	if (n > 0)
		return 1;
	if (SSL_get_error(s->ssl, n) == SSL_ERROR_WANT_READ)
		return 0;
	return io_error(s, n, "reading from the collector");
}

int ship_check(struct ship *s, char *err, size_t errlen)
{
	struct proto_msg m;
	unsigned n;
	int ret;

	ret = flush_soft(s);
	if (ret == 0)
		ret = set_nonblock(s->fd, true);
	if (ret < 0) {
		tc_seterr(err, errlen, "%s", s->err);
		return ret;
	}
	/* a bounded number of messages per call: pages wait meanwhile */
	for (n = 0; n < SHIP_CHECK_MAX_MSGS && !s->hold && (ret = peek_nb(s)) == 1; n++) {
		ret = read_msg_nb(s, util_now_ms() + SHIP_CHECK_MS, &m);
		if (ret < 0)
			break;
		if (take_ack(s, &m))
			continue;
		ret = unexpected(s, &m);
		proto_msg_free(&m);
		break;
	}
	set_nonblock(s->fd, false);
	if (ret >= 0 && s->nechoes)
		ret = ship_echo(s, false);
	if (ret < 0)
		tc_seterr(err, errlen, "%s", s->err);
	return ret < 0 ? ret : 0;
}

int ship_bye(struct ship *s, const struct proto_bye *bye, int timeout_ms,
	     struct proto_done *done, char *err, size_t errlen)
{
	struct proto_msg m = { .type = MSG_BYE, .bye = *bye };
	int ret;

	ret = ship_msg(s, &m);
	if (ret == 0)
		ret = ship_flush(s);
	if (ret < 0) {
		tc_seterr(err, errlen, "%s", s->err);
		return ret;
	}
	ret = expect(s, MSG_DONE, timeout_ms, &m, err, errlen);
	if (ret < 0)
		return ret;
	*done = m.done;
	proto_msg_free(&m);
	return 0;
}
