/*
 * clickhouse_http.c - ClickHouse's HTTP interface over libcurl
 * (clickhouse_http.h).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <zlib.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_http.h"

#define CH_ERRMSG_MAX		512
#define CH_ERRBODY_MAX		4096	/* of an error reply, kept to quote it */
#define CH_GZIP_FROM		4096	/* bodies at least this long go compressed */

struct ch_http {
	CURL *curl;
	char *base, *user, *password, *database;
	char *cert, *key, *ca;
	char *params;		/* settings of every request (struct ch_http_conf) */
	char where[256];
	long connect_ms, timeout_ms;
	size_t max_reply;
	/* the reply being received */
	char *body;
	size_t len, cap, limit;
	bool over;
	/* the last failure */
	char errmsg[CH_ERRMSG_MAX];
	int code;
	bool down;
};

static pthread_once_t ch_curl_once = PTHREAD_ONCE_INIT;
static CURLcode ch_curl_init_ret;

static void ch_curl_init(void)
{
	ch_curl_init_ret = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int ch_http_global_init(void)
{
	pthread_once(&ch_curl_once, ch_curl_init);
	return ch_curl_init_ret == CURLE_OK ? 0 : TC_ERR_DB;
}

static int dup_opt(char **slot, const char *s)
{
	*slot = NULL;
	if (!s)
		return 0;
	*slot = strdup(s);
	return *slot ? 0 : -ENOMEM;
}

/* "HOST:PORT" of a base URL, for log lines. */
static void ch_where(struct ch_http *h)
{
	const char *p = strstr(h->base, "://");
	size_t n;

	p = p ? p + 3 : h->base;
	n = strcspn(p, "/");
	log_escape_mem(p, n, h->where, sizeof(h->where));
}

int ch_http_new(const struct ch_http_conf *c, struct ch_http **out)
{
	struct ch_http *h;
	int ret = ch_http_global_init();

	if (ret < 0)
		return ret;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	ret = dup_opt(&h->base, c->base) ?: dup_opt(&h->user, c->user) ?:
	      dup_opt(&h->password, c->password) ?: dup_opt(&h->database, c->database) ?:
	      dup_opt(&h->params, c->params) ?:
	      dup_opt(&h->cert, c->cert) ?: dup_opt(&h->key, c->key) ?: dup_opt(&h->ca, c->ca);
	if (ret == 0 && !h->base)
		ret = -EINVAL;
	if (ret == 0 && !(h->curl = curl_easy_init()))
		ret = TC_ERR_DB;
	if (ret < 0) {
		ch_http_free(h);
		return ret;
	}
	h->connect_ms = c->connect_ms ? c->connect_ms : 5000;
	h->timeout_ms = c->timeout_ms ? c->timeout_ms : CH_HTTP_TIMEOUT_MS;
	h->max_reply = c->max_reply ? c->max_reply : CH_REPLY_MAX_BYTES;
	ch_where(h);
	*out = h;
	return 0;
}

int ch_http_dup(const struct ch_http *h, struct ch_http **out)
{
	struct ch_http_conf c = {
		.base = h->base, .user = h->user, .password = h->password,
		.database = h->database, .cert = h->cert, .key = h->key, .ca = h->ca,
		.connect_ms = h->connect_ms, .timeout_ms = h->timeout_ms,
		.max_reply = h->max_reply, .params = h->params,
	};

	return ch_http_new(&c, out);
}

/* Free @s after overwriting it (a password). */
static void free_secret(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

void ch_http_free(struct ch_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	free(h->base); free(h->user); free_secret(h->password); free(h->database);
	free(h->params);
	free(h->cert); free(h->key); free(h->ca);
	free(h->body);
	free(h);
}

int ch_http_set_database(struct ch_http *h, const char *db)
{
	char *d = NULL;

	if (db && !(d = strdup(db)))
		return -ENOMEM;
	free(h->database);
	h->database = d;
	return 0;
}

const char *ch_http_errmsg(const struct ch_http *h)
{
	return h->errmsg[0] ? h->errmsg : "ClickHouse error";
}

int ch_http_code(const struct ch_http *h)
{
	return h->code;
}

bool ch_http_down(const struct ch_http *h)
{
	return h->down;
}

const char *ch_http_where(const struct ch_http *h)
{
	return h->where;
}

/* libcurl's write callback: the reply into h->body, up to its limit. */
static size_t ch_write_cb(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct ch_http *h = ctx;
	size_t n = size * nmemb, want;
	char *b;

	if (n > h->limit - h->len) {
		h->over = true;
		return 0;	/* libcurl stops: CURLE_WRITE_ERROR */
	}
	if (h->len + n + 1 > h->cap) {
		want = h->cap ? h->cap : 16384;
		while (want < h->len + n + 1)
			want *= 2;
		b = realloc(h->body, want);
		if (!b)
			return 0;
		h->body = b;
		h->cap = want;
	}
	memcpy(h->body + h->len, p, n);
	h->len += n;
	h->body[h->len] = '\0';
	return n;
}

/* The server's exception text, escaped, its first line, and its "Code: N". */
static void ch_server_error(struct ch_http *h, long status)
{
	char line[360];
	size_t n = h->body ? strcspn(h->body, "\n") : 0;

	if (h->body && !strncmp(h->body, "Code: ", 6))
		h->code = atoi(h->body + 6);
	log_escape_mem(h->body ? h->body : "", n, line, sizeof(line));
	snprintf(h->errmsg, sizeof(h->errmsg), "ClickHouse at %.100s: HTTP %ld: %s", h->where,
		 status, n ? line : "(no message)");
}

/* Whether @rc is a failure to reach the server (not its answer). */
static bool ch_curl_down(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT: case CURLE_SEND_ERROR: case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING: case CURLE_PARTIAL_FILE:
		return true;
	default:
		return false;
	}
}

/* The URL of a request: base, database, extra parameters (@query percent-encoded). */
static char *ch_url(struct ch_http *h, const char *query, const char *params)
{
	char *db = NULL, *q = NULL, *url = NULL;

	if (h->database && !(db = curl_easy_escape(h->curl, h->database, 0)))
		goto out;
	if (query && !(q = curl_easy_escape(h->curl, query, 0)))
		goto out;
	/* every parameter after the first follows an '&': "?&x" is an empty setting to 18.16 */
	if (asprintf(&url, "%s?%s%s%s%s%s%s", h->base, db ? "database=" : "", db ? db : "",
		     q ? (db ? "&query=" : "query=") : "", q ? q : "",
		     params ? (db || q ? "&" : "") : "", params ? params : "") < 0)
		url = NULL;
out:
	curl_free(db);
	curl_free(q);
	return url;
}

static void ch_setopts(struct ch_http *h, const char *url, struct curl_slist *hdrs,
		       const void *body, size_t len)
{
	CURL *c = h->curl;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ch_write_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (h->user || h->password) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, h->user ? h->user : "default");
		curl_easy_setopt(c, CURLOPT_PASSWORD, h->password ? h->password : "");
	}
	if (h->cert)
		curl_easy_setopt(c, CURLOPT_SSLCERT, h->cert);
	if (h->key)
		curl_easy_setopt(c, CURLOPT_SSLKEY, h->key);
	if (h->ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->ca);
}

/*
 * One request: POST @body (@len bytes) to the URL with @query and @params,
 * the reply into h->body (at most @limit bytes). Return: 0; TC_ERR_DB.
 */
static int ch_request(struct ch_http *h, const char *query, const char *params,
		      struct curl_slist *hdrs, const void *body, size_t len, size_t limit)
{
	char *url = ch_url(h, query, params ? params : h->params);
	long status = 0;
	CURLcode rc;

	h->errmsg[0] = '\0';
	h->code = 0;
	h->down = false;
	h->len = 0;
	h->over = false;
	h->limit = limit;
	if (!url)
		return -ENOMEM;
	ch_setopts(h, url, hdrs, body, len);
	rc = curl_easy_perform(h->curl);
	free(url);
	if (rc == CURLE_WRITE_ERROR && h->over)
		rc = CURLE_OK;	/* a reply past its cap: said below, with the status */
	if (rc != CURLE_OK) {
		h->down = ch_curl_down(rc);
		snprintf(h->errmsg, sizeof(h->errmsg), "ClickHouse at %.100s: %s%s", h->where,
			 curl_easy_strerror(rc), h->down ? " (unreachable)" : "");
		return TC_ERR_DB;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		ch_server_error(h, status);
		return TC_ERR_DB;
	}
	if (h->over) {
		snprintf(h->errmsg, sizeof(h->errmsg), "ClickHouse at %.100s: reply larger than %zu "
			 "bytes", h->where, limit);
		return TC_ERR_TOO_LONG;
	}
	return 0;
}

int ch_http_exec(struct ch_http *h, const char *sql)
{
	return ch_request(h, NULL, NULL, NULL, sql, strlen(sql), CH_ERRBODY_MAX);
}

int ch_http_query(struct ch_http *h, const char *sql, size_t max_cells, struct ch_reply *out)
{
	char *text, err[256];
	int ret;

	if (asprintf(&text, "%s FORMAT TabSeparated", sql) < 0)
		return -ENOMEM;
	ret = ch_request(h, NULL, NULL, NULL, text, strlen(text), h->max_reply);
	free(text);
	if (ret < 0)
		return ret;
	ret = ch_reply_parse(h->body ? h->body : "", h->len,
			     max_cells ? max_cells : CH_REPLY_MAX_CELLS, out, err, sizeof(err));
	if (ret < 0 && ret != -ENOMEM)
		snprintf(h->errmsg, sizeof(h->errmsg), "ClickHouse at %.100s: %s", h->where, err);
	return ret;
}

/* @len bytes at @p gzip-compressed into a malloc'd *@out. Return: 0; -ENOMEM; TC_ERR_DB. */
static int ch_gzip(const void *p, size_t len, void **out, size_t *outlen)
{
	z_stream z = { 0 };
	size_t cap;
	void *buf;
	int zr;

	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)len);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)p;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	zr = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(buf);
		return TC_ERR_DB;
	}
	*out = buf;
	return 0;
}

int ch_http_insert(struct ch_http *h, const char *insert, const void *body, size_t len)
{
	struct curl_slist *hdrs = NULL, *more;
	void *gz = NULL;
	size_t gzlen = 0;
	int ret;

	if (len >= CH_GZIP_FROM && len < UINT32_MAX) {
		ret = ch_gzip(body, len, &gz, &gzlen);
		if (ret < 0)
			return ret;
		hdrs = curl_slist_append(NULL, "Content-Encoding: gzip");
		if (!hdrs) {
			free(gz);
			return -ENOMEM;
		}
	}
	more = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
	if (!more) {
		curl_slist_free_all(hdrs);
		free(gz);
		return -ENOMEM;
	}
	ret = ch_request(h, insert, NULL, more, gz ? gz : body, gz ? gzlen : len,
			 CH_ERRBODY_MAX);
	curl_slist_free_all(more);
	free(gz);
	return ret;
}
