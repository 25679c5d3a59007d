/*
 * clickhouse_query.h - a reader's reads of events on ClickHouse through
 * the filter compiler (clickhouse_filter.h): count and select.
 *
 * A store_query becomes one WHERE over the type's table: the bound filter
 * (schema columns by the query's field_col; CPU is the cpu column), the
 * hosts it may read (their ids: host names are few and matched here, as
 * clickhouse_reader.c does), the window [from_ts, to_ts) as SQLite reads
 * it, the CPUs, the format (_tc_fmt), and only rows of commits that
 * completed (clickhouse.h). A filter that reads COMM reads the rows
 * through clickhouse_comm.h's join instead, which gives each its task's
 * name as SQLite's COMM does (that header says how, on 18.16).
 *
 * Paging (select). There is no rowid; the key is
 * (ts, _tc_row), SQLite's (ts, rowid) with rowid := _tc_row, which the
 * writer sets to commit_id << 32 | the row's place in its commit
 * (clickhouse_schema.c): unique in a database (a commit id is never
 * reused, a commit holds fewer than 2^32 rows), fixed when the row is
 * written (a commit that failed is stored again under a new id, after
 * its rows are deleted), and known to the reader from the row itself,
 * so store_row.rowid and store_query.after_rowid carry it unchanged.
 * The condition is (ts > A OR (ts = A AND _tc_row > B)) with
 * ORDER BY ts, _tc_row (DESC and < for reverse): written so, the ts
 * bound also prunes partitions and granules. A select reads pages of
 * CH_PAGE_ROWS with one LIMIT each, from the last row's key. A row's
 * null columns are those its format (_tc_fmt: the schema's fmts) lacks,
 * as a column added later reads as its default in ClickHouse, not NULL.
 * A row's host name comes from the hosts table read once per select, its
 * comm from comms (the pid's latest name, as SQLite's rows have it), read
 * once per page for the page's (host, pid) pairs.
 */
#ifndef SERVER_STORE_CLICKHOUSE_QUERY_H
#define SERVER_STORE_CLICKHOUSE_QUERY_H

#include <stdbool.h>

#include "server/store/clickhouse_escape.h"
#include "server/store/clickhouse_int.h"
#include "server/store/clickhouse_reply.h"
#include "server/store/clickhouse_stacks.h"

/*
 * ch_query_hosts - the hosts' ids and latest names (host_id, name) into
 * @r, for ch_query_where()'s host condition.
 */
int ch_query_hosts(struct ch_store *s, struct ch_reply *r);

/*
 * ch_query_where - " FROM ... WHERE ..." of @q into @w (the WHERE above),
 * @hosts from ch_query_hosts() when @q limits its hosts, and @extra (" AND
 * ...", or NULL: none) on the table's own columns; *@none when no row can
 * match (no host allowed, an empty window). @comm: the rows carry
 * _tc_comm, the filters' COMM (clickhouse_comm.h; the filter's COMM is
 * _tc_comm, so @comm must be set when it reads COMM).
 * ch_query_reads_comm - whether @q's filter reads COMM.
 * ch_query_null_expr - "(_tc_fmt IN (...))" of the formats of @sc that
 * lack column @col (a row of them has NULL there in SQLite), or "0".
 */
int ch_query_where(struct ch_store *s, const struct store_query *q,
		   const struct ch_reply *hosts, const char *extra, bool comm,
		   struct ch_sql *w, bool *none);
bool ch_query_reads_comm(const struct store_query *q);
void ch_query_null_expr(struct ch_sql *w, const struct store_schema *sc, int col);

/* A name by (host, pid), sorted for bsearch() (clickhouse_query.c). */
struct ch_name;

struct ch_names {
	struct ch_name *v;
	size_t n;
};

/* What a select walks with: the query, its hosts, and one row's values. */
struct ch_walk {
	struct ch_store *s;
	const struct store_query *q;
	struct ch_reply hosts;
	struct ch_reply comms;		/* host_id, pid, comm of the page's rows */
	struct ch_names host_names, comm_names;
	int pid;			/* common_pid's schema column, or -1 */
	size_t *at;			/* per schema column: its reply column, 0 if not read */
	struct store_value *vals;
	bool *null;
	size_t *stack_at;		/* the reply columns of stacks (clickhouse_stacks.h) */
	size_t *stack_col;		/* ... and their schema columns */
	size_t nstack;
	struct ch_stack_page stacks;	/* the frames of the page's references */
};

/*
 * ch_walk_init, ch_walk_free - what reading @q's rows takes (its columns,
 * the hosts' names); free it after, even after a failed init.
 * ch_walk_tail - a page of @q's rows in storage order (_tc_row from @from
 * on, commits up to @last, of collector number @slot's commits when @slot
 * >= 0, at most @limit) into @r, their comms into @k.
 * ch_walk_row - row @i of page @r to @fn, its strings valid during @fn.
 */
int ch_walk_init(struct ch_walk *k, struct ch_store *s, const struct store_query *q);
void ch_walk_free(struct ch_walk *k);
int ch_walk_tail(struct ch_walk *k, uint64_t from, uint64_t last, int slot, size_t limit,
		 struct ch_reply *r);
int ch_walk_row(struct ch_walk *k, const struct ch_reply *r, size_t i, store_row_fn fn,
		void *ctx, struct store_row *row);

/* ch_query_reader_ops - put count and select into @r (after ch_reader_part_ops()). */
void ch_query_reader_ops(struct store_reader_ops *r);

#endif
