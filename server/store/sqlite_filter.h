/*
 * sqlite_filter.h - the SQLite backend's filter compiler: a bound filter
 * (common/filter.h) as an SQLite WHERE clause with bound parameters.
 *
 * Private to the backend (sqlite_read.c), its tests and its fuzz target.
 * It includes nothing of the backend, as it needs no connection or
 * handle: it is a pure function of the filter, so the fuzz target and the
 * SQL tests build it alone, with common/filter.c.
 */
#ifndef SERVER_STORE_SQLITE_FILTER_H
#define SERVER_STORE_SQLITE_FILTER_H

#include <stddef.h>

#include "common/filter.h"

/*
 * sq_filter_sql.binds hold one value per '?' of sq_filter_sql.where, as
 * struct filter_value: bind @i with sqlite3_bind_int64() for both
 * FILTER_SIGNED and FILTER_UNSIGNED (for unsigned, @i aliases @u: the
 * two's-complement bit pattern, see sq_filter_to_sql()); bind strings
 * @str.s / @str.len as TEXT (@str.s is also NUL-terminated).
 */

/*
 * struct sq_filter_sql - a WHERE clause (without the WHERE keyword) and the
 * values for its '?' placeholders, in order.  Owned by the caller; free with
 * sq_filter_sql_free().
 */
#define SQ_FILTER_EQ_MAX	8

struct sq_filter_sql {
	char *where;
	struct filter_value *binds;
	size_t nbinds;
	/*
	 * The WHERE holds only where field eq[k].field (a schema index) equals
	 * bind eq[k].bind: the `FIELD == value` predicates joined by && at the
	 * top, not under || or !. A store may find such rows by an index.
	 */
	struct {
		int field;
		size_t bind;
	} eq[SQ_FILTER_EQ_MAX];
	size_t neq;
};

/*
 * sq_column_fn - the SQL expression that holds field @field_index (a
 * schema index or FILTER_FIELD_CPU / FILTER_FIELD_COMM), e.g. "\"prev_pid\""
 * or "cpu".  It is pasted as is, so it must be a primary expression (quoted
 * name, function call, or parenthesised).  Return NULL if there is none.
 */
typedef const char *(*sq_column_fn)(void *ctx, int field_index);

/*
 * sq_filter_to_sql - compile a bound filter to an SQLite WHERE clause.
 * @f:      a filter bound with filter_bind().
 * @column: maps field indexes to SQL expressions.
 * @ctx:    passed to @column.
 * @out:    receives the clause and binds on success; untouched on failure.
 *
 * Values never enter the SQL text: every constant becomes a '?' with an
 * entry in @out->binds.  Strings compare as TEXT (=, <>), globs become
 * GLOB with the pattern rewritten to SQLite's syntax ("[!..]" -> "[^..]",
 * escaped or literal metacharacters -> "[*]", "[?]", "[[]"), and `&`
 * becomes ((col & ?) <> 0).
 *
 * Unsigned 64-bit fields: SQLite integers are signed 64-bit, so the store
 * must keep a u64 value v as the INTEGER (int64_t)v (the bit pattern, as
 * sqlite3_bind_int64((int64_t)v) does).  Equality and & work unchanged on
 * that; < <= > >= are rewritten with a sign test so they follow unsigned
 * order (e.g. col <u 5 becomes (col >= 0 AND col < ?)).
 *
 * Known difference: filter_eval() matches globs byte by byte, SQLite GLOB
 * by UTF-8 character; '?' and classes agree only on ASCII text.  A class
 * that can match no byte at all compiles to the constant 0.
 *
 * Return: 0; -EINVAL if @f is not bound; TC_ERR_UNKNOWN_FIELD if @column
 * returned NULL; -ENOMEM.
 */
int sq_filter_to_sql(const struct filter *f, sq_column_fn column, void *ctx,
		     struct sq_filter_sql *out);

/* sq_filter_sql_free - free what sq_filter_to_sql() put in @s and zero it. */
void sq_filter_sql_free(struct sq_filter_sql *s);

#endif
