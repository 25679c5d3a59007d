/*
 * clickhouse_reply.c - TabSeparated replies into cells (clickhouse_reply.h).
 * Two passes: the first counts rows and fields and checks the shape and
 * the caps without allocating; the second decodes into one block.
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
#include "server/store/clickhouse_escape.h"
#include "server/store/clickhouse_reply.h"

static int reply_err(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int reply_err(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* Pass one: rows and fields per row, the same in every row; within the caps. */
static int reply_shape(const char *buf, size_t len, size_t max_cells, size_t *nrows,
		       size_t *ncols, char *err, size_t errlen)
{
	size_t rows = 0, cols = 0, fields = 1, row_end = 0;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\\') {
			i++;	/* an escaped byte is never a separator */
			continue;
		}
		if (buf[i] == '\t' && ++fields > CH_REPLY_MAX_COLS)
			return reply_err(err, errlen, TC_ERR_TOO_LONG,
					 "ClickHouse reply row has more than %u fields",
					 CH_REPLY_MAX_COLS);
		if (buf[i] != '\n')
			continue;
		if (rows && fields != cols)
			return reply_err(err, errlen, TC_ERR_SYNTAX,
					 "ClickHouse reply row %zu has %zu fields, not %zu",
					 rows + 1, fields, cols);
		cols = fields;
		fields = 1;
		row_end = i + 1;
		if (++rows > max_cells / cols)
			return reply_err(err, errlen, TC_ERR_TOO_LONG,
					 "ClickHouse reply has more than %zu cells", max_cells);
	}
	if (row_end != len)
		return reply_err(err, errlen, TC_ERR_SYNTAX,
				 "ClickHouse reply cut short (no newline after its last row)");
	*nrows = rows;
	*ncols = rows ? cols : 0;
	return 0;
}

/* Pass two: decode each field into @r's block. */
static int reply_fill(const char *buf, size_t len, struct ch_reply *r, char *err,
		      size_t errlen)
{
	size_t cell = 0, start = 0, o = 0, n;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\\') {
			i++;
			continue;
		}
		if (buf[i] != '\t' && buf[i] != '\n')
			continue;
		if (ch_unescape(buf + start, i - start, r->text + o, &n) < 0)
			return reply_err(err, errlen, TC_ERR_SYNTAX,
					 "ClickHouse reply: bad escape in row %zu",
					 cell / r->ncols + 1);
		r->cells[cell] = r->text + o;
		r->lens[cell++] = n;
		o += n;
		r->text[o++] = '\0';
		start = i + 1;
	}
	return 0;
}

int ch_reply_parse(const char *buf, size_t len, size_t max_cells, struct ch_reply *out,
		   char *err, size_t errlen)
{
	struct ch_reply r = { 0 };
	size_t ncells;
	int ret;

	if (len > CH_REPLY_MAX_BYTES)
		return reply_err(err, errlen, TC_ERR_TOO_LONG,
				 "ClickHouse reply larger than %u bytes", CH_REPLY_MAX_BYTES);
	ret = reply_shape(buf, len, max_cells ? max_cells : 1, &r.nrows, &r.ncols, err, errlen);
	if (ret < 0)
		return ret;
	ncells = r.nrows * r.ncols;
	/* decoding never grows a field; a NUL per cell */
	r.text = malloc(len + ncells + 1);
	r.cells = calloc(ncells ? ncells : 1, sizeof(*r.cells));
	r.lens = calloc(ncells ? ncells : 1, sizeof(*r.lens));
	if (!r.text || !r.cells || !r.lens) {
		ch_reply_free(&r);
		return -ENOMEM;
	}
	ret = reply_fill(buf, len, &r, err, errlen);
	if (ret < 0) {
		ch_reply_free(&r);
		return ret;
	}
	*out = r;
	return 0;
}

void ch_reply_free(struct ch_reply *r)
{
	free(r->text);
	free(r->cells);
	free(r->lens);
	memset(r, 0, sizeof(*r));
}

/*
 * The cell as a decimal number in [@min, @max] (a '-' only when @min < 0):
 * -ERANGE for no such cell, TC_ERR_BAD_NUMBER for anything else.
 */
static int reply_num(const struct ch_reply *r, size_t row, size_t col,
		     intmax_t min, uintmax_t max, uintmax_t *mag, bool *neg)
{
	const char *s = ch_reply_cell(r, row, col), *p;

	if (!s)
		return -ERANGE;
	*neg = min < 0 && *s == '-';
	p = *neg ? s + 1 : s;
	if (!*p || strspn(p, "0123456789") != strlen(p))
		return TC_ERR_BAD_NUMBER;
	errno = 0;
	*mag = strtoumax(p, NULL, 10);
	if (errno || (*neg ? *mag > (uintmax_t)-(min + 1) + 1 : *mag > max))
		return TC_ERR_BAD_NUMBER;
	return 0;
}

int ch_reply_u64(const struct ch_reply *r, size_t row, size_t col, uint64_t *v)
{
	uintmax_t mag;
	bool neg;
	int ret = reply_num(r, row, col, 0, UINT64_MAX, &mag, &neg);

	if (ret == 0)
		*v = (uint64_t)mag;
	return ret;
}

int ch_reply_i64(const struct ch_reply *r, size_t row, size_t col, int64_t *v)
{
	uintmax_t mag;
	bool neg;
	int ret = reply_num(r, row, col, INT64_MIN, INT64_MAX, &mag, &neg);

	if (ret == 0)
		*v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return ret;
}
