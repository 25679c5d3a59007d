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
#include <openssl/x509v3.h>

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

enum tls_cert_role tls_peer_role(SSL *ssl)
{
	X509 *peer = ssl ? SSL_get0_peer_certificate(ssl) : NULL;
	X509_NAME *subj = peer ? X509_get_subject_name(peer) : NULL;
	unsigned role = TLS_CERT_ANY;
	int idx = -1;

	if (!subj || SSL_get_verify_result(ssl) != X509_V_OK)
		return TLS_CERT_ANY;
	/* every OU counts: one that says "agent" and another "query" is both */
	while ((idx = X509_NAME_get_index_by_NID(subj, NID_organizationalUnitName, idx)) >= 0) {
		const ASN1_STRING *v = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, idx));
		int len = ASN1_STRING_length(v);
		const unsigned char *p = ASN1_STRING_get0_data(v);

		if (len == 5 && !memcmp(p, "agent", 5))
			role |= TLS_CERT_AGENT;
		else if (len == 5 && !memcmp(p, "query", 5))
			role |= TLS_CERT_QUERY;
	}
	return (enum tls_cert_role)role;
}

/* The subject CN of @x as UTF-8 (OPENSSL_free it), its length in *@n; NULL if none. */
static unsigned char *cert_cn(X509 *x, int *n)
{
	X509_NAME *subj = x ? X509_get_subject_name(x) : NULL;
	X509_NAME_ENTRY *ent;
	unsigned char *utf8 = NULL;

	*n = -1;
	ent = subj ? X509_NAME_get_entry(subj, X509_NAME_get_index_by_NID(subj,
					 NID_commonName, -1)) : NULL;
	if (ent)
		*n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(ent));
	if (*n < 0) {
		OPENSSL_free(utf8);
		return NULL;
	}
	return utf8;
}

/* Whether @name is one of @x's DNS names (subjectAltName), byte for byte. */
static bool cert_has_dns(X509 *x, const char *name)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	size_t len = strlen(name);
	bool found = false;

	for (int i = 0; gens && !found && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);

		if (g->type != GEN_DNS)
			continue;
		found = (size_t)ASN1_STRING_length(g->d.dNSName) == len &&
			!memcmp(ASN1_STRING_get0_data(g->d.dNSName), name, len);
	}
	GENERAL_NAMES_free(gens);
	return found;
}

bool tls_peer_has_name(SSL *ssl, const char *name)
{
	X509 *peer = ssl ? SSL_get0_peer_certificate(ssl) : NULL;
	unsigned char *cn;
	bool found;
	int n;

	if (!peer || SSL_get_verify_result(ssl) != X509_V_OK)
		return false;
	cn = cert_cn(peer, &n);
	found = cn && (size_t)n == strlen(name) && !memcmp(cn, name, (size_t)n);
	OPENSSL_free(cn);
	return found || cert_has_dns(peer, name);
}

int tls_cert_file_cn(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
	unsigned char *cn;
	int n, ret = TC_ERR_TLS;

	if (f)
		fclose(f);
	cn = cert_cn(x, &n);
	if (cn && n > 0 && !memchr(cn, '\0', (size_t)n))
		ret = (size_t)n < len ? 0 : TC_ERR_TOO_LONG;
	if (ret == 0)
		snprintf(buf, len, "%.*s", n, (const char *)cn);
	OPENSSL_free(cn);
	X509_free(x);
	ERR_clear_error();
	return ret;
}

/* Days from now until @t (negative: past); 0 when it cannot be told. */
static long days_until(const ASN1_TIME *t)
{
	int days = 0, secs = 0;

	if (!t || !ASN1_TIME_diff(&days, &secs, NULL, t))
		return 0;
	return days;
}

static void expiry_name(X509_NAME *nm, char *buf, size_t len)
{
	int idx = nm ? X509_NAME_get_index_by_NID(nm, NID_commonName, -1) : -1;
	X509_NAME_ENTRY *ent = idx >= 0 ? X509_NAME_get_entry(nm, idx) : NULL;
	unsigned char *utf8 = NULL;
	int n = ent ? ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(ent)) : -1;

	snprintf(buf, len, "%.*s", n > 0 ? n : 1, n > 0 ? (const char *)utf8 : "?");
	OPENSSL_free(utf8);
}

int tls_ctx_expiry(SSL_CTX *ctx, int days, tls_expiry_fn fn, void *arg)
{
	X509 *own = SSL_CTX_get0_certificate(ctx);
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
	char name[256];
	long left;
	int n = 0;

	if (own && (left = days_until(X509_get0_notAfter(own))) < days) {
		expiry_name(X509_get_subject_name(own), name, sizeof(name));
		fn(arg, "certificate", name, left);
		n++;
	}
	for (int i = 0; objs && i < sk_X509_OBJECT_num(objs); i++) {
		X509_OBJECT *o = sk_X509_OBJECT_value(objs, i);
		X509 *x = X509_OBJECT_get0_X509(o);
		X509_CRL *crl = X509_OBJECT_get0_X509_CRL(o);

		if (x && (left = days_until(X509_get0_notAfter(x))) < days) {
			expiry_name(X509_get_subject_name(x), name, sizeof(name));
			fn(arg, "CA certificate", name, left);
			n++;
		} else if (crl && X509_CRL_get0_nextUpdate(crl) &&
			   (left = days_until(X509_CRL_get0_nextUpdate(crl))) < days) {
			expiry_name(X509_CRL_get_issuer(crl), name, sizeof(name));
			fn(arg, "CRL", name, left);
			n++;
		}
	}
	return n;
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

/*
 * tls_load_crl - the CRLs in @path join the context's trust store, and
 * peers are checked against them (the leaf: X509_V_FLAG_CRL_CHECK).
 */
static int tls_load_crl(SSL_CTX *ctx, const char *path, char *err, size_t errlen)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	X509_LOOKUP *lu;
	int rc;

	if (!path || !*path)
		return 0;
	rc = tls_open_check("CRL file", path, err, errlen);
	if (rc < 0)
		return rc;
	lu = X509_STORE_add_lookup(st, X509_LOOKUP_file());
	if (!lu || X509_load_crl_file(lu, path, X509_FILETYPE_PEM) < 1)
		return tls_fail(err, errlen, "CRL file", path, "no usable PEM CRL");
	X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
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
	if (rc == 0)
		rc = tls_load_crl(ctx, files->crl, err, errlen);
	if (rc == 0) {
		*out = ctx;
		ctx = NULL;
	}
out:
	SSL_CTX_free(ctx);
	return rc;
}
