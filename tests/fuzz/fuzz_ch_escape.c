/*
 * fuzz_ch_escape.c - libFuzzer target for the ClickHouse escaping
 * (server/store/clickhouse_escape.c): whatever bytes a peer or user hands
 * us, the literal (or identifier) is quoted at both ends, holds no
 * unescaped quote and no raw control byte, ch_escape_len() says its size,
 * it reads back (ch_unescape()) as exactly the input, and a cap it does not
 * fit leaves the text as it was, with a sticky TC_ERR_TOO_LONG.
 *
 * Input: a cap byte (the buffer's cap is 2 + byte * 4 bytes), a mode byte
 * (bit 0: identifier, cut at the first NUL), then the value.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_escape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* @t (@n bytes, inside the quotes @q): no bare @q, no raw control byte, no dangling backslash. */
static void check_quoted_inside(const char *t, size_t n, char q)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];

		if (c == (unsigned char)q || c < 0x20 || c == 0x7f)
			abort();
		if (c == '\\' && ++i == n)
			abort();
	}
}

static void check_one(const char *v, size_t n, size_t cap, int ident)
{
	struct ch_sql s, big;
	char *out;
	size_t outn;
	char q = ident ? '`' : '\'';
	int ret;

	ch_sql_init(&s, cap);
	ch_sql_init(&big, 64 + n * 4);
	if (ch_sql_raw(&s, "X") || ch_sql_raw(&big, "X"))
		abort();
	ret = ident ? ch_sql_ident(&s, v) : ch_sql_str(&s, v, n);
	if (ident ? ch_sql_ident(&big, v) : ch_sql_str(&big, v, n))
		abort();
	if (ret == TC_ERR_TOO_LONG) {	/* all or nothing, and sticky */
		if (big.len <= cap || s.len != 1 || strcmp(ch_sql_text(&s), "X") ||
		    ch_sql_raw(&s, "") != TC_ERR_TOO_LONG)
			abort();
	} else if (ret || strcmp(ch_sql_text(&s), ch_sql_text(&big)) || s.len != big.len) {
		abort();
	}
	if (!ident && ch_escape_len(v, n) != big.len - 1)
		abort();
	if (big.buf[1] != q || big.buf[big.len - 1] != q || strlen(big.buf) != big.len)
		abort();
	check_quoted_inside(big.buf + 2, big.len - 3, q);
	out = malloc(big.len);
	if (!out || ch_unescape(big.buf + 2, big.len - 3, out, &outn) || outn != n ||
	    memcmp(out, v, n))
		abort();
	free(out);
	ch_sql_free(&s);
	ch_sql_free(&big);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v;
	size_t n, cap;
	int ident;

	if (size < 2)
		return 0;
	cap = 2 + (size_t)data[0] * 4;
	ident = data[1] & 1;
	n = size - 2;
	v = malloc(n + 1);
	if (!v)
		abort();
	memcpy(v, data + 2, n);
	v[n] = '\0';
	if (ident)
		n = strlen(v);
	if (!ident || n)
		check_one(v, n, cap, ident);
	/* the decoder on raw input: never reads or writes out of bounds */
	{
		char *out = malloc(size);
		size_t outn;

		if (!out)
			abort();
		if (!ch_unescape((const char *)data, size, out, &outn) && outn > size)
			abort();
		free(out);
	}
	free(v);
	return 0;
}
