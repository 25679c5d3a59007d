/*
 * tls.h - TLS context setup shared by the agent and the collector.
 *
 * Both ends authenticate each other: every context loads its own
 * certificate and key, trusts only the CA file it is given, and requires
 * the peer to present a certificate signed by that CA (TLS 1.2 at least).
 */
#ifndef PROTO_TLS_H
#define PROTO_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <openssl/ssl.h>

enum tls_role {
	TLS_ROLE_SERVER,
	TLS_ROLE_CLIENT,
};

struct tls_files {
	const char *cert;	/* PEM certificate (chain) */
	const char *key;	/* PEM private key */
	const char *ca;		/* PEM CA certificate(s) that sign peers */
	const char *crl;	/* optional: PEM CRL(s) of those CAs; NULL or "": none */
};

/*
 * tls_ctx_new - make an SSL_CTX for @role from @files.
 * @err: receives a one-line reason on failure (file, and OpenSSL's words).
 *
 * The context verifies the peer (SSL_VERIFY_PEER, and on the server
 * SSL_VERIFY_FAIL_IF_NO_PEER_CERT), checks that the key matches the
 * certificate, and ignores SIGPIPE-prone defaults (the caller still sets
 * MSG_NOSIGNAL/SIGPIPE handling for its sockets). Also: TLS 1.2 minimum,
 * SSL_OP_NO_RENEGOTIATION, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; the server
 * sends the CA file's names as its acceptable client CAs and has a session
 * id context. Keys must be unencrypted (a daemon has no one to ask for a
 * passphrase). The peer's host name is not checked: a client that wants
 * that calls SSL_set1_host() on its SSL. kTLS is left to the caller
 * (SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS)). The caller frees *@out
 * with SSL_CTX_free().
 *
 * With @files->crl, peers are also checked against the certificate
 * revocation lists in that file (X509_V_FLAG_CRL_CHECK: the peer's own
 * certificate; the file must then hold a current CRL of the CA that signed
 * it, else the peer is refused with "unable to get certificate CRL"; a CRL
 * past its next update refuses everyone with "CRL has expired"). A revoked
 * peer is refused in the handshake: "certificate verify failed:
 * certificate revoked".
 *
 * @err examples: "certificate /etc/tc/a.crt: No such file or directory",
 * "private key /etc/tc/a.key does not match certificate /etc/tc/a.crt",
 * "CA file /etc/tc/ca.crt: no usable PEM CA certificate (no certificate
 * or crl found)".
 *
 * Return: 0 and *@out; TC_ERR_TLS with @err filled. *@out only on success.
 */
int tls_ctx_new(enum tls_role role, const struct tls_files *files,
		SSL_CTX **out, char *err, size_t errlen);

/*
 * tls_errors - drain OpenSSL's error queue of this thread into @buf as one
 * line ("; "-separated), adding the peer-verification result of @ssl when
 * @ssl is not NULL and verification failed. Returns @buf; "" when nothing
 * was queued.
 *
 * Call it right after the failing SSL call, before any other OpenSSL call
 * in the thread. A refused peer certificate reads e.g. "certificate verify
 * failed: unable to get local issuer certificate"; a client without one
 * "peer did not return a certificate".
 */
const char *tls_errors(SSL *ssl, char *buf, size_t len);

/*
 * tls_peer_has_name - whether @name is, byte for byte, the subject CN or
 * one of the DNS names (subjectAltName) of @ssl's verified peer
 * certificate. False without a verified peer certificate.
 */
bool tls_peer_has_name(SSL *ssl, const char *name);

/*
 * tls_cert_file_cn - the subject CN of the first certificate in PEM file
 * @path into @buf (@len bytes). Return: 0; TC_ERR_TLS when the file holds
 * no certificate or it has no CN; TC_ERR_TOO_LONG when it does not fit.
 */
int tls_cert_file_cn(const char *path, char *buf, size_t len);

/*
 * Called by tls_ctx_expiry() for each certificate or CRL of the context
 * that is no longer valid in @days_left days: @what is "certificate",
 * "CA certificate" or "CRL", @name its subject (issuer for a CRL) CN,
 * @days_left days until it expires (its next update for a CRL); <= 0:
 * expired already.
 */
typedef void (*tls_expiry_fn)(void *arg, const char *what, const char *name,
			      long days_left);

/*
 * tls_ctx_expiry - call @fn for the context's own certificate, every CA
 * certificate and CRL it trusts, that expires within @days days.
 * Return: how many it reported.
 */
int tls_ctx_expiry(SSL_CTX *ctx, int days, tls_expiry_fn fn, void *arg);

/*
 * tls_peer_subject - the subject CN of @ssl's verified peer certificate
 * into @buf ("?" when there is none). Returns @buf.
 */
const char *tls_peer_subject(SSL *ssl, char *buf, size_t len);

/*
 * The role a certificate was made for, from its subject's
 * organizationalUnitName: tracecollect-certs writes OU=agent into agents'
 * certificates and OU=query into query clients', so that one CA can sign
 * both and neither can pass for the other: the agent port refuses a
 * query client's certificate, the query port an agent's (and each one
 * that says both). A certificate
 * with neither (another PKI) has no role and is taken on either port;
 * such a PKI keeps the two apart with two CAs (--ca and --query-ca).
 */
enum tls_cert_role {
	TLS_CERT_ANY = 0,
	TLS_CERT_AGENT = 1,
	TLS_CERT_QUERY = 2,
	TLS_CERT_BOTH = 3,	/* says both: refused on either port */
};

/* tls_peer_role - the role of @ssl's verified peer certificate (see above). */
enum tls_cert_role tls_peer_role(SSL *ssl);

#endif
