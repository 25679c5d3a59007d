/*
 * clickhouse_filter.h - the ClickHouse backend's filter compiler: a bound
 * filter (common/filter.h) as a ClickHouse boolean expression with exactly
 * filter_eval()'s answers, for ClickHouse 18.16 (Debian 12) and every later
 * release.
 *
 * Like sqlite_filter.h it is a pure function of the filter: it includes
 * nothing of the backend but the escaping (clickhouse_escape.h), so its
 * tests and fuzz target build it alone with common/filter.c. It knows no
 * schema: where a field lives comes from the caller's ch_column_fn.
 *
 * 18.16 has no query parameters, so every constant is written into the text
 * by clickhouse_escape.h's functions (ch_sql_str(), ch_sql_i64(),
 * ch_sql_u64()), never pasted.
 *
 * What each predicate becomes (COL is what ch_column_fn wrote):
 *   number OP n      (COL OP toInt64(n)) for a signed field, toUInt64(n)
 *                    for an unsigned one: both sides have the field's
 *                    signedness, so no answer depends on how a release
 *                    compares signed with unsigned.
 *   number & m       (bitAnd(toUInt64(COL), m) != 0): filter_eval() ands
 *                    the value's 64-bit two's-complement pattern with the
 *                    mask's (a negative mask of a signed field too), and
 *                    toUInt64() of a signed value is that pattern (18.16
 *                    also widens mixed operands right; we do not rely on
 *                    it).
 *   CPUS{list}       & : ((COL BETWEEN lo AND hi) OR ...); == and != a
 *                    one-CPU list: COL = / != that CPU; == a longer list
 *                    is 0 and != it is 1 (filter.h).
 *   string == s      (COL = 's'), != as (COL != 's'): String compares as
 *                    bytes.
 *   string ~ glob    see below; a leading '!' (glob_not) is NOT (...).
 *
 * Globs. ClickHouse's like() and match() hand the pattern to re2, which
 * reads pattern and text as UTF-8: on 18.16 match(unhex('C3A9'), '^.$')
 * and unhex('C3A9') LIKE '_' are 1 (one character, two bytes), and
 * match(unhex('FF'), '^.$') is 0 (no character at all); a class matches
 * characters, and a byte of 0x80 and above in a pattern is no byte.
 * Our glob matches bytes (filter.h). re2's \C, though, is one byte in
 * either reading (on 18.16 match(unhex('C3A9'), '^\C\C$') is 1 and
 * '^\C$' 0). So a glob whose literals and classes are all ASCII (no
 * negated class: it would hold bytes past ASCII) is matched on COL's own
 * bytes: each literal and class member as \xHH (an ASCII byte is always a
 * whole character, and never part of another), '?' as \C, '*' as \C*,
 * anchored ^...$. Any other glob that is not a plain string with stars
 * is matched against hex(COL) instead (about half as fast; measured on
 * 18.16, 20 M rows): hex() writes each byte
 * as two upper-case hex digits, so the text re2 sees is ASCII, where its
 * UTF-8 and Latin-1 readings agree (whichever a release uses, the answer
 * is the same), and every element of our glob becomes
 * a regex that consumes exactly two digits:
 *   literal byte 0x6B   6B
 *   ?                   ..      (only hex digits are there to match)
 *   *                   (?:..)*
 *   [class]             the bytes of the class (of a negated one, the
 *                       others), the high digits that share their low
 *                       digits in one alternative: [!a-c] is
 *                       (?:[0-57-9A-F].|6[04-9A-F]); every byte is ..
 * anchored as ^...$, so pairs never straddle a byte boundary: match() then
 * says exactly what glob_match() says. A class that can match no byte makes
 * the predicate constant (0, or 1 negated), as in sqlite_filter.c.
 * Patterns of literal bytes and stars only take byte-exact string functions
 * instead, which are faster (no hex() of every row, no regex):
 *   lit         (COL = 'lit')
 *   pre*        startsWith(COL, 'pre')
 *   *suf        endsWith(COL, 'suf')
 *   pre*suf     (startsWith(..) AND endsWith(..) AND length(COL) >= n),
 *               n the bytes of pre and suf (they may not overlap)
 *   *mid*       (position(COL, 'mid') > 0)      (position(): bytes)
 *   *           1
 * Anything else (two stars with an anchor, ...) goes to the regex.
 *
 * A newer server does not change any of this: the functions used exist
 * since 18.16 and kept their meaning.
 */
#ifndef SERVER_STORE_CLICKHOUSE_FILTER_H
#define SERVER_STORE_CLICKHOUSE_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/filter.h"
#include "server/store/clickhouse_escape.h"

/*
 * ch_column_fn - append to @s the expression that holds field @field_index
 * (a schema index or FILTER_FIELD_CPU / FILTER_FIELD_COMM) of the row, e.g.
 * `prev_pid` (through ch_sql_ident()) or a function call. It is pasted as
 * is, so it must be a primary expression (name, call, or parenthesised).
 * Its type must have the field's kind: a signed integer type (Int8..Int64)
 * for FILTER_SIGNED, an unsigned one (UInt8..UInt64) for FILTER_UNSIGNED
 * and CPU, a String cut at its first NUL (as the store writes them) for
 * strings and COMM. Nullable is not allowed (NOT NULL is NULL).
 * Return: 0; TC_ERR_UNKNOWN_FIELD if the row has no such field; or @s's
 * sticky error.
 */
typedef int (*ch_column_fn)(void *ctx, int field_index, struct ch_sql *s);

/*
 * ch_filter_to_sql - append bound filter @f to @out as a ClickHouse boolean
 * expression (without WHERE), in parentheses where it is not a constant.
 * @column: writes the expression of a field (see ch_column_fn).
 * @ctx:    passed to @column.
 * @out:    the statement being built; on failure it is as it was.
 *
 * Return: 0; -EINVAL if @f is not bound; TC_ERR_UNKNOWN_FIELD if @column
 * knows no column for a field; TC_ERR_TOO_LONG when @out's cap is reached;
 * -ENOMEM. On failure @out keeps its text; its sticky error is set only
 * for -ENOMEM (or was already set: then that is returned).
 */
int ch_filter_to_sql(const struct filter *f, ch_column_fn column, void *ctx,
		     struct ch_sql *out);

/*
 * ch_filter_node_to_sql - ch_filter_to_sql() of the subtree at node @n of
 * bound @f only (a node from filter_root() and filter_node_get()); same
 * returns. ch_filter_node_uses - whether that subtree reads @field.
 */
int ch_filter_node_to_sql(const struct filter *f, uint32_t n, ch_column_fn column, void *ctx,
			  struct ch_sql *out);
bool ch_filter_node_uses(const struct filter *f, uint32_t n, int field);

/*
 * ch_glob_regex - the re2 pattern (not a literal: the bare text) that the
 * glob predicate at node @n of bound @f matches against hex() of the text,
 * appended to @out, whatever form ch_filter_to_sql() picks for it (the fuzz
 * target and the tests check it byte for byte against filter_eval()). The
 * leading '!' (glob_not) is not in it.
 * Return: 1 when written; 0 when the pattern has a class that matches no
 * byte (it matches nothing; @out unchanged); @out's sticky error.
 */
int ch_glob_regex(const struct filter *f, uint32_t n, struct ch_sql *out);

#endif
