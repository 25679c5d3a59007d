/*
 * fuzz_ch_reply.c - libFuzzer target for the parser of ClickHouse's
 * TabSeparated replies (server/store/clickhouse_reply.c): whatever bytes
 * a server (or what stands in its place) sends, the parser either refuses
 * them with a sentence or gives rows of one width within the caps; and a
 * reply it accepts, written again with our escaping, parses to the same
 * cells.
 *
 * Input: a cap byte (at most 1 + byte * 4 cells), then the reply.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/clickhouse_escape.h"
#include "server/store/clickhouse_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* @r written out again: each cell as our literal's inside, tabs and newlines between. */
static int rewrite(const struct ch_reply *r, struct ch_sql *out)
{
	struct ch_sql lit;
	int ret = 0;

	ch_sql_init(&lit, 0);
	for (size_t i = 0; i < r->nrows * r->ncols && !ret; i++) {
		ch_sql_reset(&lit);
		ret = ch_sql_str(&lit, r->cells[i], r->lens[i]);
		if (!ret) {
			lit.buf[lit.len - 1] = '\0';	/* drop the closing quote */
			ret = ch_sql_raw(out, lit.buf + 1);
		}
		if (!ret)
			ret = ch_sql_raw(out, (i + 1) % r->ncols ? "\t" : "\n");
	}
	ch_sql_free(&lit);
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ch_reply r, again;
	struct ch_sql out;
	char err[256];
	size_t max;

	if (size < 1)
		return 0;
	max = 1 + (size_t)data[0] * 4;
	err[0] = '\0';
	if (ch_reply_parse((const char *)data + 1, size - 1, max, &r, err, sizeof(err)) < 0) {
		if (!err[0] && size > 1)
			abort();	/* every refusal says why (but -ENOMEM) */
		return 0;
	}
	if (r.nrows * r.ncols > max || (r.nrows && !r.ncols) || r.ncols > CH_REPLY_MAX_COLS)
		abort();
	for (size_t i = 0; i < r.nrows * r.ncols; i++)
		if (r.lens[i] > size || r.cells[i][r.lens[i]] != '\0')
			abort();
	ch_sql_init(&out, 16 * size + 64);
	if (rewrite(&r, &out) ||
	    ch_reply_parse(out.buf ? out.buf : "", out.len, max, &again, err, sizeof(err)) < 0)
		abort();
	if (again.nrows != r.nrows || again.ncols != r.ncols)
		abort();
	for (size_t i = 0; i < r.nrows * r.ncols; i++)
		if (again.lens[i] != r.lens[i] || memcmp(again.cells[i], r.cells[i], r.lens[i]))
			abort();
	ch_reply_free(&again);
	ch_reply_free(&r);
	ch_sql_free(&out);
	return 0;
}
