/*
 * clickhouse_escape.h - the one way a value enters ClickHouse SQL text: a
 * bounded, growable text buffer (struct ch_sql) and the functions that
 * append a string literal, a quoted identifier or an integer literal to it
 * by ClickHouse's lexer rules (18.16 and every later release read them
 * alike). 18.16 has no query parameters, so nothing else may paste a value
 * into a statement; our own SQL words go in through ch_sql_raw() and
 * ch_sql_addf(), which take only our text.
 *
 * String literal: '...'. ClickHouse reads a backslash as an escape: \b
 * \f \r \n \t \0 \a \v \xHH, and \c for any other c is c itself (so \'
 * and \\). We write a backslash as \\, a quote as \', newline, tab and CR
 * as \n \t \r, and every other byte below 0x20 and 0x7f as \xHH; bytes of
 * 0x80 and above (UTF-8 or not) go as they are, as ClickHouse strings are
 * bytes. Quoted identifier: `...`, with the same rules and \` for the
 * backquote.
 *
 * The buffer's error is sticky: an append past the cap (TC_ERR_TOO_LONG)
 * or out of memory (-ENOMEM) leaves the text as it was before that append
 * (never a literal cut in half) and every later append returns the same
 * error, so a builder can append a whole statement and check once
 * (ch_sql_err(), or the last append's return).
 *
 * Decoding (ch_unescape()) is the reader's side of the same rules: the
 * tests and the fuzz target check that a literal reads back as the bytes
 * it was made from, and the TabSeparated reply parser reads fields with it
 * (TabSeparated uses the same backslash escapes).
 */
#ifndef SERVER_STORE_CLICKHOUSE_ESCAPE_H
#define SERVER_STORE_CLICKHOUSE_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/* The default cap of a statement's text: ClickHouse's max_query_size is 256 KiB. */
#define CH_SQL_MAX_DEFAULT	(256u * 1024)

/*
 * A statement being built. buf is NUL-terminated (when not NULL) and len
 * bytes long; max caps len. Initialize with ch_sql_init(), free with
 * ch_sql_free(). The fields are read-only to callers.
 */
struct ch_sql {
	char *buf;
	size_t len;
	size_t cap;
	size_t max;
	int err;
};

/* ch_sql_init - an empty buffer whose text may grow to @max bytes (0: CH_SQL_MAX_DEFAULT). */
void ch_sql_init(struct ch_sql *s, size_t max);

/* ch_sql_free - free @s's text; @s is empty (and initialized) after. */
void ch_sql_free(struct ch_sql *s);

/* ch_sql_reset - empty the text and clear the error; the memory is kept. */
void ch_sql_reset(struct ch_sql *s);

/* ch_sql_err - the sticky error (0, TC_ERR_TOO_LONG or -ENOMEM). */
static inline int ch_sql_err(const struct ch_sql *s)
{
	return s->err;
}

/* ch_sql_text - the text so far ("" when none). */
static inline const char *ch_sql_text(const struct ch_sql *s)
{
	return s->buf ? s->buf : "";
}

/*
 * ch_sql_raw - append @text, our own SQL (keywords, table names we made),
 * never a value from a peer or user.
 * Return: 0, or the sticky error.
 */
int ch_sql_raw(struct ch_sql *s, const char *text);

/*
 * ch_sql_addf - append printf output; for our own SQL words and numbers
 * only (a value from a peer goes through ch_sql_str() or ch_sql_ident()).
 * Return: 0, or the sticky error.
 */
int ch_sql_addf(struct ch_sql *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * ch_sql_str - append the @n bytes at @v (any bytes, NUL too) as a string
 * literal '...'.
 * Return: 0, or the sticky error (nothing of the literal appended).
 */
int ch_sql_str(struct ch_sql *s, const char *v, size_t n);

/* ch_sql_cstr - ch_sql_str() of the C string @v. */
int ch_sql_cstr(struct ch_sql *s, const char *v);

/*
 * ch_sql_ident - append the C string @name as a quoted identifier `...`.
 * Return: 0, -EINVAL for an empty name (ClickHouse refuses ``), or the
 * sticky error.
 */
int ch_sql_ident(struct ch_sql *s, const char *name);

/* ch_sql_u64, ch_sql_i64 - append a decimal integer literal. Return: 0 or the sticky error. */
int ch_sql_u64(struct ch_sql *s, uint64_t v);
int ch_sql_i64(struct ch_sql *s, int64_t v);

/*
 * ch_escape_len - how many bytes ch_sql_str() adds for @n bytes at @v,
 * quotes included (for callers that size a buffer first).
 */
size_t ch_escape_len(const char *v, size_t n);

/*
 * ch_unescape - read ClickHouse's backslash escapes in the @n bytes at
 * @in (a literal's inside, without its quotes, or a TabSeparated field)
 * into @out, which has room for @n bytes (decoding never grows); *@outlen
 * is the decoded length. \xHH takes exactly two hex digits.
 * Return: 0; TC_ERR_SYNTAX for a backslash at the end or \x without two
 * hex digits (ClickHouse refuses both). @out may be written on error.
 */
int ch_unescape(const char *in, size_t n, char *out, size_t *outlen);

#endif
