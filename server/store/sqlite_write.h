/*
 * sqlite_write.h - how the SQLite backend stores events: each event
 * type's INSERT, rows gathered in batches, the writer thread that runs
 * them, and the storage sequence numbers of the rows (sqlite_write.c).
 */
#ifndef SERVER_STORE_SQLITE_WRITE_H
#define SERVER_STORE_SQLITE_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "server/store/sqlite_int.h"

struct sq_val;

/*
 * Inside a transaction, rows are not inserted one statement each: they
 * gather per type in a batch and go in with one multi-row INSERT of `rows`
 * rows, which saves SQLite's per-statement work (cursors opened,
 * positioned and closed, the statement started and halted).
 *
 * The INSERTs run on a writer thread of the store's own, so decoding (the
 * caller's thread) and SQLite's B-tree and page work (the writer's) use
 * two cores. A full batch is queued to the writer (at most SQ_INFLIGHT at
 * a time: the caller waits beyond that); every other store call first
 * waits until the writer has run all of them (sq_sync()), so the
 * connection is only ever used by one thread at a time, and the calls
 * that must see every row (COMMIT, retention, a new table) queue the
 * partial batches too (sq_flush_all()). An INSERT that fails on the
 * writer makes every later call fail until the transaction is rolled
 * back, so no commit can go through without rows it should hold.
 */
struct store_type {
	struct store_type *next;
	char *system;
	char *name;
	char *format;		/* the format text this INSERT was built for */
	unsigned nfields;
	int *param;		/* per field: its '?' index, or 0 (duplicate name) */
	int stack_param;	/* the '?' of its stack column (sqlite_stacks.c); 0: none */
	sqlite3_stmt *insert;
	/* batching */
	char *values;		/* "(?, ?, ...)": one row of the INSERT */
	char *head;		/* "INSERT INTO ... (cols) VALUES " */
	unsigned ncols;		/* parameters per row */
	unsigned rows;		/* rows of insert_n; < 2: no batching */
	sqlite3_stmt *insert_n;	/* the multi-row INSERT (rows > 1) */
	struct sq_val *bound_n;	/* what insert_n's parameters hold (sq_rows_step()) */
	unsigned brows;		/* rows of insert_b: min(rows, SQ_BLOCK_ROWS) */
	sqlite3_stmt *insert_b;	/* for partial batches (brows > 1; may be insert_n) */
	struct sq_batch *cur;	/* rows gathering; NULL: none */
	size_t arena_hint;	/* arena bytes its batches get (grows when one fills) */
	struct sq_val *scratch;	/* one row on its way into a batch */
	int64_t type_id;	/* its event_types row, the key of its ts_blocks */
	int64_t fmt_id;		/* its formats row: every row it inserts has it (_tc_fmt) */
	bool retired;		/* of a file the store lost: no statements, no inserts */
};

/*
 * sq_type_insert - @st's INSERTs into @table for @t's fields (field i into
 * column @cols[i]), rows of format @st->fmt_id, and its batch sizes.
 */
int sq_type_insert(struct sq_store *s, struct store_type *st, const struct store_type_desc *t,
		   const char *table, char *const *cols);
void sq_type_free(struct store_type *t);
/*
 * sq_types_retire - @s's types keep their memory (their holders may still
 * hand them to insert, which then fails) and lose their statements and
 * gathered rows: the file they were made for is lost (sqlite_file.c).
 */
void sq_types_retire(struct sq_store *s);
/* sq_types_drop_rows - the rows gathered, not yet queued, are dropped (a rollback). */
void sq_types_drop_rows(struct sq_store *s);

/* sq_writer_start - start @q's writer thread. Return: 0; -errno. */
int sq_writer_start(struct sq_store *q);
/* sq_writer_free - stop the writer thread (after what is queued), free the types. */
void sq_writer_free(struct sq_store *s);
/*
 * sq_sync - wait until the writer has run every queued batch; then the
 * connection is the caller's. Return: 0, or the writer's failure (until
 * the transaction is rolled back).
 */
int sq_sync(struct sq_store *s);
/* sq_flush_all - queue every type's gathering rows and wait until they are in. */
int sq_flush_all(struct sq_store *s);

/* sq_seq_end - the storage sequence number after the newest block's rows (1: none). */
int sq_seq_end(struct sq_store *s, int64_t *end);
/*
 * sq_seq_load - the writer's next storage sequence number, and its next
 * stack id and stacks in memory (sqlite_stacks.c), from the file.
 */
int sq_seq_load(struct sq_store *s);

/* sq_write_ops - this part's ops (insert) into the writer's table (sqlite.c). */
void sq_write_ops(struct store_writer_ops *w);

#endif
