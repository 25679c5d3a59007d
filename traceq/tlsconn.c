/*
 * tlsconn.c - traceq's TLS query connection (see tlsconn.h): blocking
 * OpenSSL on one socket with send and receive timeouts.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "proto/frame.h"
#include "proto/qmsg.h"
#include "traceq/tlsconn.h"

struct tlsconn {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
};

/* "HOST:PORT" or "[V6]:PORT" into @host and @port. Return: 0; -1. */
static int split(const char *hp, char *host, size_t hlen, const char **port)
{
	const char *colon = strrchr(hp, ':');
	size_t n = colon ? (size_t)(colon - hp) : 0;

	if (n >= 2 && hp[0] == '[' && hp[n - 1] == ']')
		hp++, n -= 2;
	if (!colon || !n || n >= hlen || !colon[1])
		return -1;
	memcpy(host, hp, n);
	host[n] = 0;
	*port = colon + 1;
	return 0;
}

static int dial(const char *host, const char *port, int timeout_ms, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	struct addrinfo *ai, *a;
	int fd = -1, rc = getaddrinfo(host, port, &hints, &ai);

	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			snprintf(err, errlen, "%s", strerror(errno));
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

/* The collector's certificate must name @host: its IP address or DNS name. */
static int expect_peer(SSL *ssl, const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	if (inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1)
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
	return SSL_set1_host(ssl, host) == 1 && SSL_set_tlsext_host_name(ssl, host) == 1 ? 0 : -1;
}

/*
 * " the collector refused this client's certificate (--cert):" when the
 * oldest queued error is an alert the collector sent about it (revoked,
 * expired, from a CA it does not take); "" otherwise. With TLS 1.3 the
 * alert comes after our side of the handshake, at the first read.
 */
static const char *cert_refused(void)
{
	unsigned long e = ERR_peek_error();

	if (ERR_GET_LIB(e) != ERR_LIB_SSL)
		return "";
	switch (ERR_GET_REASON(e)) {
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
	case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
		return " the collector refused this client's certificate (--cert):";
	}
	return "";
}

int tlsconn_open(const char *hostport, const struct tls_files *files, int timeout_ms,
		 struct tlsconn **out, char *err, size_t errlen)
{
	struct tlsconn *c = calloc(1, sizeof(*c));
	char host[256], why[512];
	const char *port;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->fd = -1;
	if (split(hostport, host, sizeof(host), &port) < 0) {
		snprintf(err, errlen, "expected HOST:PORT");
		goto fail;
	}
	if (tls_ctx_new(TLS_ROLE_CLIENT, files, &c->ctx, err, errlen) < 0)
		goto fail;
	c->fd = dial(host, port, timeout_ms, err, errlen);
	if (c->fd < 0)
		goto fail;
	c->ssl = SSL_new(c->ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 || expect_peer(c->ssl, host) < 0 ||
	    SSL_connect(c->ssl) != 1) {
		const char *refused = cert_refused();

		snprintf(err, errlen, "TLS handshake failed:%s %s", refused,
			 tls_errors(c->ssl, why, sizeof(why)));
		goto fail;
	}
	*out = c;
	return 0;
fail:
	tlsconn_close(c);
	return -1;
}

static int read_full(struct tlsconn *c, void *buf, size_t len)
{
	size_t got = 0, n;

	while (got < len) {
		if (SSL_read_ex(c->ssl, (char *)buf + got, len - got, &n) != 1)
			return -1;
		got += n;
	}
	return 0;
}

static int write_frames(struct tlsconn *c, const uint8_t *p, size_t len)
{
	uint8_t hb[FRAME_HDR_SIZE];
	size_t off = 0, n, w;

	do {
		n = len - off < FRAME_MAX_PAYLOAD ? len - off : FRAME_MAX_PAYLOAD;
		frame_hdr_pack(&(struct frame_hdr){ .type = FRAME_MSG, .len = (uint32_t)n }, hb);
		if (SSL_write_ex(c->ssl, hb, sizeof(hb), &w) != 1 ||
		    (n && SSL_write_ex(c->ssl, p + off, n, &w) != 1))
			return -1;
		off += n;
	} while (n == FRAME_MAX_PAYLOAD);
	return 0;
}

static int read_frames(struct tlsconn *c, struct proto_buf *b, char *err, size_t errlen)
{
	uint8_t hb[FRAME_HDR_SIZE], chunk[16384];
	struct frame_hdr h;

	b->len = 0;
	do {
		if (read_full(c, hb, sizeof(hb)) < 0) {
			const char *refused = cert_refused();
			char why[512];

			if (*refused)
				snprintf(err, errlen, "%s %s", refused + 1,
					 tls_errors(c->ssl, why, sizeof(why)));
			else
				snprintf(err, errlen, "the collector closed the connection or did "
					 "not answer%s%s", *tls_errors(c->ssl, why, sizeof(why)) ?
					 ": " : "", why);
			return -1;
		}
		if (frame_hdr_parse(hb, sizeof(hb), &h) < 0 || h.type != FRAME_MSG ||
		    b->len + h.len > QMSG_MAX_WIRE) {
			snprintf(err, errlen, "not a query reply (or over %u bytes)", QMSG_MAX_WIRE);
			return -1;
		}
		for (size_t left = h.len, k; left; left -= k) {
			k = left < sizeof(chunk) ? left : sizeof(chunk);
			if (read_full(c, chunk, k) < 0 || proto_buf_append(b, chunk, k) < 0) {
				snprintf(err, errlen, "reply cut short");
				return -1;
			}
		}
	} while (h.len == FRAME_MAX_PAYLOAD);
	return 0;
}

int tlsconn_send(struct tlsconn *c, const void *req, size_t len, char *err, size_t errlen)
{
	char why[512];

	if (write_frames(c, req, len) < 0) {
		snprintf(err, errlen, "send: %s", tls_errors(c->ssl, why, sizeof(why)));
		return -1;
	}
	return 0;
}

int tlsconn_recv(struct tlsconn *c, struct proto_buf *reply, char *err, size_t errlen)
{
	return read_frames(c, reply, err, errlen);
}

int tlsconn_call(struct tlsconn *c, const void *req, size_t len, struct proto_buf *reply,
		 char *err, size_t errlen)
{
	if (tlsconn_send(c, req, len, err, errlen) < 0)
		return -1;
	return tlsconn_recv(c, reply, err, errlen);
}

void tlsconn_close(struct tlsconn *c)
{
	if (!c)
		return;
	if (c->ssl) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	if (c->fd >= 0)
		close(c->fd);
	SSL_CTX_free(c->ctx);
	free(c);
}
