/*
 * clickhouse_util.c - errors, statements, RowBinary and batches, stable
 * ids (clickhouse_util.h).
 */
#include "config.h"

#define LOG_PREFIX "clickhouse"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_http.h"
#include "server/store/clickhouse_util.h"

int ch_errf(struct ch_store *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->h->errmsg, sizeof(s->h->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/*
 * After a request: the failure's sentence into @s, and the outage noted
 * once (a writer's: readers fail their query and say so to the asker), at
 * debug level: the ingest worker says once that storing is held up and
 * once that it resumed, whatever the store (ingest_stalled()).
 */
int ch_after_http(struct ch_store *s, const struct ch_http *h, int ret)
{
	bool down = ret < 0 && ch_http_down(h);

	if (ret < 0)
		ch_errf(s, ret, "%s", ch_http_errmsg(h));
	if (s->reader || down == s->down || (ret < 0 && !down))
		return ret;
	s->down = down;
	if (down)
		log_debug("ClickHouse at %s is unreachable (%s); not storing until it is back: "
			"the receive journal fills, then agents are held back",
			ch_http_where(h), ch_http_errmsg(h));
	else
		log_debug("ClickHouse at %s is back; storing again", ch_http_where(h));
	return ret;
}

static int ch_after(struct ch_store *s, int ret)
{
	return ch_after_http(s, s->http, ret);
}

int ch_exec_text(struct ch_store *s, const char *sql)
{
	return ch_after(s, ch_http_exec(s->http, sql));
}

int ch_exec(struct ch_store *s, const struct ch_sql *q)
{
	if (ch_sql_err(q))
		return ch_errf(s, ch_sql_err(q), "statement too long (%s)",
			       tc_strerror(ch_sql_err(q)));
	return ch_exec_text(s, ch_sql_text(q));
}

int ch_query(struct ch_store *s, const struct ch_sql *q, struct ch_reply *out)
{
	if (ch_sql_err(q))
		return ch_errf(s, ch_sql_err(q), "query too long (%s)",
			       tc_strerror(ch_sql_err(q)));
	return ch_after(s, ch_http_query(s->http, ch_sql_text(q), 0, out));
}

int ch_query_text(struct ch_store *s, const char *sql, struct ch_reply *out)
{
	return ch_after(s, ch_http_query(s->http, sql, 0, out));
}

int ch_query_u64(struct ch_store *s, const struct ch_sql *q, uint64_t *v)
{
	struct ch_reply r;
	uint64_t n = 0;
	int ret = ch_query(s, q, &r);

	if (ret < 0)
		return ret;
	if (r.nrows && ch_reply_u64(&r, 0, 0, &n) < 0)
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered a number with \"%.40s\"",
			      ch_reply_cell(&r, 0, 0));
	ch_reply_free(&r);
	if (ret == 0)
		*v = n;
	return ret;
}

/* ---- RowBinary ---- */

void ch_b_reset(struct ch_bytes *b)
{
	b->len = 0;
	b->oom = false;
}

void ch_b_free(struct ch_bytes *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void ch_b_put(struct ch_bytes *b, const void *p, size_t n)
{
	size_t want;
	uint8_t *q;

	if (b->oom)
		return;
	if (n > b->cap - b->len) {
		want = b->cap ? b->cap : 65536;
		while (want - b->len < n && want < SIZE_MAX / 2)
			want *= 2;
		q = want - b->len >= n ? realloc(b->p, want) : NULL;
		if (!q) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = want;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Little-endian @v, @n bytes of it. */
static void ch_b_le(struct ch_bytes *b, uint64_t v, size_t n)
{
	uint8_t le[8];

	for (size_t i = 0; i < n; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	ch_b_put(b, le, n);
}

void ch_b_u8(struct ch_bytes *b, uint8_t v) { ch_b_le(b, v, 1); }
void ch_b_u32(struct ch_bytes *b, uint32_t v) { ch_b_le(b, v, 4); }
void ch_b_i32(struct ch_bytes *b, int32_t v) { ch_b_le(b, (uint32_t)v, 4); }
void ch_b_u64(struct ch_bytes *b, uint64_t v) { ch_b_le(b, v, 8); }
void ch_b_i64(struct ch_bytes *b, int64_t v) { ch_b_le(b, (uint64_t)v, 8); }

void ch_b_f64(struct ch_bytes *b, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	ch_b_le(b, u, 8);
}

void ch_b_str(struct ch_bytes *b, const void *p, size_t n)
{
	uint8_t leb[10];
	size_t k = 0;
	uint64_t v = n;

	do {
		leb[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	ch_b_put(b, leb, k);
	ch_b_put(b, p, n);
}

/* ---- engines, inserts ---- */

int ch_sql_engine(struct ch_store *s, struct ch_sql *q, const char *table, const char *engine)
{
	const char *args = strchr(engine, '(');
	char path[512];

	if (!s->replicated || !args)
		return ch_sql_addf(q, " ENGINE = %s", engine);
	snprintf(path, sizeof(path), "/clickhouse/tables/{shard}/%s/%s", s->db, table);
	ch_sql_addf(q, " ENGINE = Replicated%.*s(", (int)(args - engine), engine);
	ch_sql_cstr(q, path);
	ch_sql_raw(q, ", '{replica}'");
	args += strspn(args + 1, " ") + 1;
	return ch_sql_addf(q, "%s%s", *args == ')' ? "" : ", ", args);
}

int ch_sql_engine_settings(struct ch_store *s, struct ch_sql *q, const char *engine)
{
	if (!s->replicated || !strstr(engine, "MergeTree("))
		return 0;
	return ch_sql_addf(q, " SETTINGS replicated_deduplication_window = %d", CH_DEDUP_WINDOW);
}

int ch_exec_resend(struct ch_http *h, bool resend, const char *insert, const void *body,
		   size_t len)
{
	int ret;

	for (int i = 0;; i++) {
		ret = insert ? ch_http_insert(h, insert, body, len) : ch_http_exec(h, body);
		if (ret == 0 || !resend || !ch_http_down(h) || i == CH_RESENDS)
			return ret;
		sleep(1);
	}
}

/* ---- batches ---- */

int ch_batch_init(struct ch_batch *b, const char *table, const char *const *cols, bool counted)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "INSERT INTO ");
	ch_sql_ident(&q, table);
	ch_sql_raw(&q, " (");
	for (size_t i = 0; cols[i]; i++) {
		if (i)
			ch_sql_raw(&q, ",");
		ch_sql_ident(&q, cols[i]);
	}
	ret = ch_sql_raw(&q, ") FORMAT RowBinary");
	if (ret < 0) {
		ch_sql_free(&q);
		return ret;
	}
	ch_batch_init_sql(b, q.buf, counted);
	return 0;
}

void ch_batch_init_sql(struct ch_batch *b, char *insert, bool counted)
{
	memset(b, 0, sizeof(*b));
	b->insert = insert;
	b->counted = counted;
}

void ch_batch_free(struct ch_batch *b)
{
	free(b->insert);
	ch_b_free(&b->rows);
	memset(b, 0, sizeof(*b));
}

int ch_batch_row_done(struct ch_batch *b)
{
	if (b->rows.oom)
		return -ENOMEM;
	b->nrows++;
	return 0;
}

int ch_batch_send(struct ch_store *s, struct ch_batch *b)
{
	int ret;

	if (!b->nrows)
		return 0;
	if (b->rows.oom)
		return -ENOMEM;
	ret = ch_after(s, ch_exec_resend(s->http, s->replicated, b->insert, b->rows.p,
					 b->rows.len));
	if (ret < 0)
		return ret;
	ch_b_reset(&b->rows);
	b->nrows = 0;
	return 0;
}

/* ---- ids ---- */

uint64_t ch_id(const char *const *parts, const size_t *lens, size_t n)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned mdlen = 0;
	uint64_t v = 0;
	int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL);

	for (size_t i = 0; ok && i < n; i++)
		ok = EVP_DigestUpdate(c, parts[i], lens[i]) && EVP_DigestUpdate(c, "", 1);
	ok = ok && EVP_DigestFinal_ex(c, md, &mdlen) && mdlen >= 8;
	EVP_MD_CTX_free(c);
	if (!ok)
		abort();	/* SHA-256 of a few bytes fails only without memory */
	for (int i = 0; i < 8; i++)
		v = v << 8 | md[i];
	return v & INT64_MAX;
}

uint64_t ch_id_str(const char *what, const char *a, const char *b)
{
	const char *p[3] = { what, a ? a : "", b ? b : "" };
	size_t l[3] = { strlen(p[0]), strlen(p[1]), strlen(p[2]) };

	return ch_id(p, l, b ? 3 : 2);
}

int64_t ch_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
