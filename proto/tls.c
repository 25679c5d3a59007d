/*
 * tls.c - mutual-TLS context setup and error reporting (see tls.h).
 *
 * Both daemons build their SSL_CTX here so they enforce the same policy:
 * TLS 1.2 or later, no renegotiation, our own certificate and key (checked
 * against each other), peers verified against one CA file. Errors name the
 * file and say what is wrong with it, because they end up in a log line
 * that an operator reads while fixing a deployment.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/tc_error.h"
#include "proto/tls.h"

static const unsigned char tls_sid_ctx[] = "tracecollect";

/* Append printf-style text at *@pos of @buf, truncating quietly. */
__attribute__((format(printf, 4, 5)))
static void tls_appendf(char *buf, size_t len, size_t *pos,
			const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos + 1 >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos += (size_t)n < len - *pos ? (size_t)n : len - *pos - 1;
}

/* One queued OpenSSL error as "reason (detail)". */
static void tls_append_err(char *buf, size_t len, size_t *pos,
			   unsigned long e, const char *data, int flags)
{
	const char *reason = ERR_reason_error_string(e);
	char code[128];

	if (!reason) {
		ERR_error_string_n(e, code, sizeof(code));
		reason = code;
	}
	tls_appendf(buf, len, pos, "%s%s", *pos ? "; " : "", reason);
	if ((flags & ERR_TXT_STRING) && data && *data)
		tls_appendf(buf, len, pos, " (%s)", data);
}

static bool tls_is_verify_err(unsigned long e)
{
	return ERR_GET_LIB(e) == ERR_LIB_SSL &&
	       ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED;
}

const char *tls_errors(SSL *ssl, char *buf, size_t len)
{
	long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	const char *vstr = X509_verify_cert_error_string(vr);
	bool said_verify = false;
	const char *data;
	unsigned long e;
	size_t pos = 0;
	int flags;

	if (!len)
		return buf;
	buf[0] = '\0';
	/* reason strings, even if no SSL_CTX was made yet */
	OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS |
			 OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL);
	while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags))) {
		tls_append_err(buf, len, &pos, e, data, flags);
		if (vr != X509_V_OK && tls_is_verify_err(e) && !said_verify) {
			tls_appendf(buf, len, &pos, ": %s", vstr);
			said_verify = true;
		}
	}
	if (vr != X509_V_OK && !said_verify)
		tls_appendf(buf, len, &pos, "%scertificate verify failed: %s",
			    pos ? "; " : "", vstr);
	return buf;
}

const char *tls_peer_subject(SSL *ssl, char *buf, size_t len)
{
	X509 *peer = ssl ? SSL_get0_peer_certificate(ssl) : NULL;
	unsigned char *utf8 = NULL;
	X509_NAME_ENTRY *ent;
	int idx, n = -1, i;

	if (!len)
		return buf;
	snprintf(buf, len, "?");
	if (!peer || SSL_get_verify_result(ssl) != X509_V_OK)
		return buf;
	idx = X509_NAME_get_index_by_NID(X509_get_subject_name(peer),
					 NID_commonName, -1);
	ent = X509_NAME_get_entry(X509_get_subject_name(peer), idx);
	if (ent)
		n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(ent));
	if (n > 0) {
		/* the CN goes into log lines: no control characters */
		for (i = 0; i < n; i++)
			if (utf8[i] < 0x20 || utf8[i] == 0x7f)
				utf8[i] = '?';
		snprintf(buf, len, "%.*s", n, (const char *)utf8);
	}
	OPENSSL_free(utf8);
	return buf;
}

/* Never prompt for a passphrase on the terminal: daemons have none. */
static int tls_no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

/*
 * tls_open_check - fail early, with the system's words, when @path cannot
 * be opened: OpenSSL would report the same as several queued errors.
 */
static int tls_open_check(const char *what, const char *path, char *err,
			  size_t errlen)
{
	struct stat st;
	FILE *f;
	int e;

	if (!path || !*path) {
		snprintf(err, errlen, "no %s configured", what);
		return TC_ERR_TLS;
	}
	f = fopen(path, "r");
	e = f ? 0 : errno;
	if (f && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode))
		e = EISDIR;
	if (f)
		fclose(f);
	if (e) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
		return TC_ERR_TLS;
	}
	return 0;
}

/* Report a load failure of @path with OpenSSL's queued reasons. */
static int tls_fail(char *err, size_t errlen, const char *what,
		    const char *path, const char *problem)
{
	char ossl[512];

	tls_errors(NULL, ossl, sizeof(ossl));
	snprintf(err, errlen, "%s %s: %s%s%s%s", what, path, problem,
		 *ossl ? " (" : "", ossl, *ossl ? ")" : "");
	return TC_ERR_TLS;
}

static int tls_load_cert(SSL_CTX *ctx, const char *path, char *err,
			 size_t errlen)
{
	int rc = tls_open_check("certificate", path, err, errlen);

	if (rc < 0)
		return rc;
	if (SSL_CTX_use_certificate_chain_file(ctx, path) != 1)
		return tls_fail(err, errlen, "certificate", path,
				"no usable PEM certificate");
	return 0;
}

/*
 * tls_load_key - read the key ourselves rather than through
 * SSL_CTX_use_PrivateKey_file(), so "not a key" and "not the key of this
 * certificate" get different messages.
 */
static int tls_load_key(SSL_CTX *ctx, const char *path, const char *cert,
			char *err, size_t errlen)
{
	EVP_PKEY *key = NULL;
	int rc = tls_open_check("private key", path, err, errlen);
	FILE *f;

	if (rc < 0)
		return rc;
	rc = TC_ERR_TLS;
	f = fopen(path, "r");
	if (f)
		key = PEM_read_PrivateKey(f, NULL, tls_no_passphrase, NULL);
	if (f)
		fclose(f);
	if (!key) {
		tls_fail(err, errlen, "private key", path,
			 "no usable unencrypted PEM private key");
		goto out;
	}
	if (!X509_check_private_key(SSL_CTX_get0_certificate(ctx), key)) {
		ERR_clear_error();
		snprintf(err, errlen,
			 "private key %s does not match certificate %s",
			 path, cert);
		goto out;
	}
	if (SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		tls_fail(err, errlen, "private key", path, "rejected");
		goto out;
	}
	rc = 0;
out:
	EVP_PKEY_free(key);
	return rc;
}

static int tls_load_ca(SSL_CTX *ctx, enum tls_role role, const char *path,
		       char *err, size_t errlen)
{
	STACK_OF(X509_NAME) *names;
	int rc = tls_open_check("CA file", path, err, errlen);

	if (rc < 0)
		return rc;
	if (SSL_CTX_load_verify_locations(ctx, path, NULL) != 1)
		return tls_fail(err, errlen, "CA file", path,
				"no usable PEM CA certificate");
	if (role != TLS_ROLE_SERVER)
		return 0;
	/* tell clients which CA we accept, so they pick the right cert */
	names = SSL_load_client_CA_file(path);
	if (!names)
		return tls_fail(err, errlen, "CA file", path,
				"no CA names could be read");
	SSL_CTX_set_client_CA_list(ctx, names);
	return 0;
}

static int tls_ctx_policy(SSL_CTX *ctx, enum tls_role role)
{
	int mode = SSL_VERIFY_PEER;

	if (role == TLS_ROLE_SERVER) {
		mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
		/* needed for session resumption with client certificates */
		if (SSL_CTX_set_session_id_context(ctx, tls_sid_ctx,
						   sizeof(tls_sid_ctx) - 1) != 1)
			return -1;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		return -1;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_verify(ctx, mode, NULL);
	SSL_CTX_set_default_passwd_cb(ctx, tls_no_passphrase);
	return 0;
}

int tls_ctx_new(enum tls_role role, const struct tls_files *files,
		SSL_CTX **out, char *err, size_t errlen)
{
	SSL_CTX *ctx;
	char ossl[512];
	int rc = TC_ERR_TLS;

	ERR_clear_error();
	ctx = SSL_CTX_new(role == TLS_ROLE_SERVER ? TLS_server_method()
						  : TLS_client_method());
	if (!ctx || tls_ctx_policy(ctx, role) < 0) {
		snprintf(err, errlen, "cannot set up a TLS context: %s",
			 tls_errors(NULL, ossl, sizeof(ossl)));
		goto out;
	}
	rc = tls_load_cert(ctx, files->cert, err, errlen);
	if (rc == 0)
		rc = tls_load_key(ctx, files->key, files->cert, err, errlen);
	if (rc == 0)
		rc = tls_load_ca(ctx, role, files->ca, err, errlen);
	if (rc == 0) {
		*out = ctx;
		ctx = NULL;
	}
out:
	SSL_CTX_free(ctx);
	return rc;
}
