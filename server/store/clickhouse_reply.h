/*
 * clickhouse_reply.h - ClickHouse's TabSeparated replies, read as the
 * untrusted input they are: a reply of rows of tab-separated, backslash-
 * escaped fields (clickhouse_escape.h's ch_unescape()), one row per line.
 *
 * Every size is capped before anything is allocated (rows, fields per row,
 * bytes), every row must have the first row's field count, and a bad
 * escape or a row cut short is an error with a sentence, never a guess.
 * The fuzz target tests/fuzz/fuzz_ch_reply.c holds it to that.
 */
#ifndef SERVER_STORE_CLICKHOUSE_REPLY_H
#define SERVER_STORE_CLICKHOUSE_REPLY_H

#include <stddef.h>
#include <stdint.h>

/* Caps of one reply (the caller's; CH_REPLY_* are the defaults). */
#define CH_REPLY_MAX_BYTES	(64u << 20)
#define CH_REPLY_MAX_CELLS	(4u << 20)
#define CH_REPLY_MAX_COLS	4096u

/*
 * A parsed reply: nrows rows of ncols cells each, cell (r, c) at
 * cells[r * ncols + c], decoded and NUL-terminated (a cell may hold NULs
 * too: lens[] has its length). All of it is one allocation's worth:
 * ch_reply_free() frees it.
 */
struct ch_reply {
	size_t nrows, ncols;
	char **cells;
	size_t *lens;
	char *text;		/* the cells' bytes */
};

/*
 * ch_reply_parse - parse the @len bytes at @buf (TabSeparated: a row is
 * fields joined by '\t' and ended by '\n') into @out, with at most
 * @max_cells cells and CH_REPLY_MAX_COLS fields a row. An empty reply is
 * zero rows. @out is written only on success.
 * Return: 0; TC_ERR_SYNTAX (a bad escape, a row with another field count,
 * a last row without its newline) or TC_ERR_TOO_LONG (past a cap), with a
 * sentence in @err; -ENOMEM.
 */
int ch_reply_parse(const char *buf, size_t len, size_t max_cells, struct ch_reply *out,
		   char *err, size_t errlen);

/* ch_reply_free - free what ch_reply_parse() made; @r is empty after. */
void ch_reply_free(struct ch_reply *r);

/* ch_reply_cell - cell (@row, @col) (NULL past the reply). */
static inline const char *ch_reply_cell(const struct ch_reply *r, size_t row, size_t col)
{
	return row < r->nrows && col < r->ncols ? r->cells[row * r->ncols + col] : NULL;
}

/*
 * ch_reply_u64, ch_reply_i64 - cell (@row, @col) as a decimal number.
 * Return: 0; TC_ERR_BAD_NUMBER (not one, or out of range); -ERANGE (no
 * such cell).
 */
int ch_reply_u64(const struct ch_reply *r, size_t row, size_t col, uint64_t *v);
int ch_reply_i64(const struct ch_reply *r, size_t row, size_t col, int64_t *v);

#endif
