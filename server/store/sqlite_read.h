/*
 * sqlite_read.h - the SQLite backend's reads of event rows (select and
 * count through the time index, sqlite_read.c), and what its other reads
 * share: a struct store_query as the FROM and WHERE of a statement, a
 * row as a struct store_row, the hosts a query allows.
 */
#ifndef SERVER_STORE_SQLITE_READ_H
#define SERVER_STORE_SQLITE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "server/store/sqlite_filter.h"
#include "server/store/sqlite_int.h"
#include "server/store/sqlite_names.h"
#include "server/store/sqlite_util.h"

/*
 * The WHERE text of a query and the values of its '?'s: the filter's
 * clause (sq_filter_to_sql()) and the host's, both over the columns
 * sq_from() offers. sq_where_of() makes it from a store_query;
 * sq_where_free() frees it, also after a failure.
 */
struct sq_where {
	char *text;
	struct sq_bind *b;
	size_t nb;
	struct sq_filter_sql sql;	/* the filter's part; b's strings point into it */
};

int sq_where_of(const struct store_query *q, struct sq_where *w);
void sq_where_free(struct sq_where *w);

/*
 * sq_from - append " FROM (...) WHERE (@where)" over @sc's table (see
 * sqlite_read.c); @r NULL: no time range or keyset. sq_comm_expr - the
 * special COMM of event row e (pid column @pid), tables in schema @db.
 */
struct sq_range;
void sq_comm_expr(struct sq_buf *b, const char *db, const char *pid);
void sq_from(struct sq_buf *b, const struct store_schema *sc, const char *where,
	     const struct sq_range *r);
/* The columns before a row's fields that sq_row() reads, for a SELECT over sq_from(). */
#define SQ_ROW_COLS	"SELECT _tc_rowid, host_id, cpu, ts, trace_ts"
/* sq_col_index - the schema index of the field @name (an integer one first), or -1. */
int sq_col_index(const struct store_schema *sc, const char *name);
/*
 * sq_row - the current row of a statement whose columns are SQ_ROW_COLS
 * and then @sc's columns, into @r, whose values live in @rb.
 */
void sq_row(sqlite3_stmt *st, const struct store_schema *sc, struct sq_rowbuf *rb,
	    struct store_row *r);

/* sq_max_span - the widest span of a block of type @type_id (0: none). */
int sq_max_span(struct sq_store *s, int64_t type_id, int64_t *span);

/*
 * sq_count_where, sq_select_where - store_count() and store_select() of
 * @sc's rows for which @where holds: an SQL boolean expression over the
 * quoted column names, "cpu", "host_id", "ts", "trace_ts" and "_tc_comm"
 * (the special COMM), with a nameless '?' for each of the @nb values
 * in @b. It is pasted into the statement: it comes from the count and
 * select ops (which compile a store_query to it) or from a test, never
 * from a user. NULL: every row. sq_select_where() reads no column that
 * @skip (q->skip) marks: it comes as NULL.
 */
int sq_count_where(struct sq_store *s, const struct store_schema *sc, const char *where,
		   const struct sq_bind *b, size_t nb, const struct store_window *win,
		   uint64_t *count);
int sq_select_where(struct sq_store *s, const struct store_schema *sc, const char *where,
		    const struct sq_bind *b, size_t nb, const struct store_window *win,
		    int64_t after_ts, uint64_t after_rowid, size_t limit, bool reverse,
		    const bool *skip, store_row_fn fn, void *ctx);

/*
 * sq_rows_of, sq_rows_bind, sq_rows_free - the rows a store_query matches
 * as the FROM and WHERE of a statement of another read (sqlite_hist.c):
 * text appended to @b, then the values bound to the prepared statement.
 */
struct sq_rows;
int sq_rows_of(struct sq_store *s, const struct store_query *q, struct sq_buf *b,
	       struct sq_rows **out);
int sq_rows_bind(struct sq_store *s, sqlite3_stmt *st, const struct store_query *q,
		 const struct sq_rows *rows);
void sq_rows_free(struct sq_rows *rows);

/*
 * sq_hosts_cond, sq_hosts_bind, sq_hosts_len - the hosts a store_query
 * allows (host_glob, host list, scope) as SQL conditions on a host-id
 * column, with bound parameters; every read applies them.
 */
size_t sq_hosts_len(const struct store_query *q);
void sq_hosts_cond(char *out, const struct store_query *q, const char *col);
void sq_hosts_bind(sqlite3_stmt *st, int first, const struct store_query *q);

/* sq_read_ops - this part's ops (select, count) into the reader's table (sqlite.c). */
void sq_read_ops(struct store_reader_ops *r);

#endif
