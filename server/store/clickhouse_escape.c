/*
 * clickhouse_escape.c - ClickHouse string literals, quoted identifiers and
 * integer literals into a bounded text buffer (clickhouse_escape.h has the
 * rules).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/clickhouse_escape.h"

void ch_sql_init(struct ch_sql *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->max = max ? max : CH_SQL_MAX_DEFAULT;
}

void ch_sql_free(struct ch_sql *s)
{
	size_t max = s->max;

	free(s->buf);
	ch_sql_init(s, max);
}

void ch_sql_reset(struct ch_sql *s)
{
	s->len = 0;
	s->err = 0;
	if (s->buf)
		s->buf[0] = '\0';
}

/*
 * Room for @more bytes past the text and its NUL. On failure sets the
 * sticky error and returns it; the text is untouched.
 */
static int ch_reserve(struct ch_sql *s, size_t more)
{
	size_t want, cap;
	char *p;

	if (s->err)
		return s->err;
	if (more > s->max - s->len)
		return s->err = TC_ERR_TOO_LONG;
	want = s->len + more + 1;
	if (want <= s->cap)
		return 0;
	cap = s->cap ? s->cap : 256;
	while (cap < want)
		cap *= 2;
	p = realloc(s->buf, cap);
	if (!p)
		return s->err = -ENOMEM;
	s->buf = p;
	s->cap = cap;
	return 0;
}

static void ch_put(struct ch_sql *s, const void *p, size_t n)
{
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

int ch_sql_raw(struct ch_sql *s, const char *text)
{
	size_t n = strlen(text);
	int ret = ch_reserve(s, n);

	if (!ret)
		ch_put(s, text, n);
	return ret;
}

int ch_sql_addf(struct ch_sql *s, const char *fmt, ...)
{
	va_list ap;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return s->err ? s->err : (s->err = -EINVAL);
	ret = ch_reserve(s, (size_t)n);
	if (ret)
		return ret;
	va_start(ap, fmt);
	vsnprintf(s->buf + s->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
	return 0;
}

/* The escape of byte @c inside a literal quoted by @q (its length, 1 when none). */
static size_t ch_escape_byte(unsigned char c, char q, char out[4])
{
	static const char hex[] = "0123456789ABCDEF";

	switch (c) {
	case '\\': out[1] = '\\'; break;
	case '\n': out[1] = 'n'; break;
	case '\t': out[1] = 't'; break;
	case '\r': out[1] = 'r'; break;
	default:
		if (c == (unsigned char)q) {
			out[1] = q;
			break;
		}
		if (c >= 0x20 && c != 0x7f) {
			out[0] = (char)c;
			return 1;
		}
		out[0] = '\\';
		out[1] = 'x';
		out[2] = hex[c >> 4];
		out[3] = hex[c & 15];
		return 4;
	}
	out[0] = '\\';
	return 2;
}

static size_t ch_quoted_len(const char *v, size_t n, char q)
{
	char tmp[4];
	size_t len = 2;

	for (size_t i = 0; i < n; i++)
		len += ch_escape_byte((unsigned char)v[i], q, tmp);
	return len;
}

size_t ch_escape_len(const char *v, size_t n)
{
	return ch_quoted_len(v, n, '\'');
}

/* Append @v quoted by @q, all or nothing. */
static int ch_quoted(struct ch_sql *s, const char *v, size_t n, char q)
{
	char esc[4];
	int ret;

	if (n > s->max)		/* past the cap even unescaped: skip the sizing walk */
		return ch_reserve(s, n);
	ret = ch_reserve(s, ch_quoted_len(v, n, q));
	if (ret)
		return ret;
	ch_put(s, &q, 1);
	for (size_t i = 0; i < n; i++)
		ch_put(s, esc, ch_escape_byte((unsigned char)v[i], q, esc));
	ch_put(s, &q, 1);
	return 0;
}

int ch_sql_str(struct ch_sql *s, const char *v, size_t n)
{
	return ch_quoted(s, v, n, '\'');
}

int ch_sql_cstr(struct ch_sql *s, const char *v)
{
	return ch_quoted(s, v, strlen(v), '\'');
}

int ch_sql_ident(struct ch_sql *s, const char *name)
{
	if (s->err)
		return s->err;
	if (!*name)
		return -EINVAL;
	return ch_quoted(s, name, strlen(name), '`');
}

int ch_sql_u64(struct ch_sql *s, uint64_t v)
{
	return ch_sql_addf(s, "%" PRIu64, v);
}

/*
 * INT64_MIN is written as it is: ClickHouse's number parser takes the
 * minus with the digits, and -9223372036854775808 reads as Int64.
 */
int ch_sql_i64(struct ch_sql *s, int64_t v)
{
	return ch_sql_addf(s, "%" PRId64, v);
}

/* The byte an escape \c stands for (c not x). */
static char ch_unescape_char(char c)
{
	switch (c) {
	case 'b': return '\b';
	case 'f': return '\f';
	case 'r': return '\r';
	case 'n': return '\n';
	case 't': return '\t';
	case '0': return '\0';
	case 'a': return '\a';
	case 'v': return '\v';
	default: return c;
	}
}

int ch_unescape(const char *in, size_t n, char *out, size_t *outlen)
{
	size_t o = 0;
	int hi, lo;

	for (size_t i = 0; i < n; i++) {
		if (in[i] != '\\') {
			out[o++] = in[i];
			continue;
		}
		if (++i == n)
			return TC_ERR_SYNTAX;
		if (in[i] != 'x') {
			out[o++] = ch_unescape_char(in[i]);
			continue;
		}
		if (n - i < 3)
			return TC_ERR_SYNTAX;
		hi = util_hex_digit(in[i + 1]);
		lo = util_hex_digit(in[i + 2]);
		if (hi < 0 || lo < 0)
			return TC_ERR_SYNTAX;
		out[o++] = (char)(hi << 4 | lo);
		i += 2;
	}
	*outlen = o;
	return 0;
}
