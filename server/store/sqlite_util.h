/*
 * sqlite_util.h - the bottom of the SQLite backend: what every part uses
 * to build SQL text, run statements and say why one failed. It calls
 * nothing of the backend above it (only sqlite_errors.c).
 */
#ifndef SERVER_STORE_SQLITE_UTIL_H
#define SERVER_STORE_SQLITE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "server/store/sqlite_int.h"

/* ---- errors ---- */

/* sq_errf - printf into @s's error message (store_errmsg()); returns @err. */
int sq_errf(struct sq_store *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * sq_err - set @s's message to "@what: <sq_explain()>" ("<sq_explain()>
 * (running: SQL...)" when @what is SQL text), or to why the read was
 * stopped (store_set_stop()); returns @err (or why it was stopped).
 */
int sq_err(struct sq_store *s, int err, const char *what);

/* ---- SQL text ---- */

/* A growable string for building SQL text. */
struct sq_buf {
	char *s;
	size_t len;
	size_t cap;
	bool oom;
};

/* Append to @b; after a failed allocation @b->oom is set and @b stays as it was. */
void sq_buf_add(struct sq_buf *b, const char *s, size_t n);
void sq_buf_str(struct sq_buf *b, const char *s);
/* sq_ident - append @name as a quoted SQL identifier (embedded quotes doubled). */
void sq_ident(struct sq_buf *b, const char *name);

/* ---- statements ---- */

/* sq_exec - run @sql (one or more statements). Return: 0; TC_ERR_DB. */
int sq_exec(struct sq_store *s, const char *sql);
/* sq_prepare - one statement, no trailing text, into *@st. Return: 0; TC_ERR_DB. */
int sq_prepare(struct sq_store *s, const char *sql, sqlite3_stmt **st);
/*
 * sq_prepare_cached - sq_prepare() @sql, or the statement of the same text
 * prepared before on this connection (reset, its bindings cleared). Give
 * it back with sq_release() (never sqlite3_finalize()); one handed out is
 * not handed out again until then (a second one is prepared).
 */
int sq_prepare_cached(struct sq_store *s, const char *sql, sqlite3_stmt **st);
void sq_release(struct sq_store *s, sqlite3_stmt *st);
/* sq_cache_free - finalize every statement @s's cache holds (before closing db). */
void sq_cache_free(struct sq_store *s);
/* sq_run_ints - bind @v[0], ... @v[n - 1] to parameters 1, ... of @st, then sq_run(). */
int sq_run_ints(struct sq_store *s, sqlite3_stmt *st, bool once, const int64_t *v, size_t n);

/* sq_run - step @st to completion, then reset it (finalize when @once). */
int sq_run(struct sq_store *s, sqlite3_stmt *st, bool once);
/* sq_int1 - the integer @sql yields for one bound integer @arg (NULL, no row: @dflt). */
int sq_int1(struct sq_store *s, const char *sql, int64_t arg, int64_t dflt, int64_t *out);
/* sq_bind_text - bind @v as TEXT (a copy), or NULL when @v is NULL. */
void sq_bind_text(sqlite3_stmt *st, int i, const char *v);
/* sq_dup_col - a malloc'd copy of text column @i ("" for NULL); NULL: no memory. */
char *sq_dup_col(sqlite3_stmt *st, int i);

/*
 * A value bound to a nameless '?' of a WHERE text (sq_bind_where()):
 * kind SIGNED/UNSIGNED use i, STRING/BLOB s+len. @eq_column (NULL: no
 * such promise) names a schema column that the WHERE requires to equal
 * this value (sq_filter_sql.eq): with an index on it, the store reads rows
 * through that index (sqlite_index.c).
 */
struct sq_bind {
	enum store_kind kind;
	int64_t i;
	const char *s;
	size_t len;
	const char *eq_column;
};

/*
 * sq_bind_where - bind @b to @st's nameless '?'s, in order (the store's
 * own parameters are named, and may come first in the statement).
 */
int sq_bind_where(struct sq_store *s, sqlite3_stmt *st, const struct sq_bind *b, size_t nb);

/* ---- stopping reads ---- */

/*
 * sq_stop_due - whether a read on @s must stop now (s->rstop); sets
 * s->stopped to why. The progress handler every reader has, which
 * --sql's own handler calls too.
 */
int sq_stop_due(struct sq_store *s);
/* sq_stop_handler - install that handler on @s's connection (again). */
void sq_stop_handler(struct sq_store *s);

#endif
