/*
 * sqlite_stacks.h - kernel stacks stored once each (sql/0016-stacks.sql):
 * the writer's stacks in memory, found by a hash of their frames, the
 * sweep of those no row references after retention, and the SQL that
 * reads a stack column back as its frames.
 */
#ifndef SERVER_STORE_SQLITE_STACKS_H
#define SERVER_STORE_SQLITE_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "server/store/sqlite_int.h"
#include "server/store/sqlite_util.h"
#include "server/store/store_types.h"

/* Frames a stack row may hold, at most (bytes): a longer one stays in its row. */
#define SQ_STACK_MAX	4096u

/* What sq_stack_id() found. */
enum sq_stack_found {
	SQ_STACK_KNOWN,		/* stored before (or queued in this transaction) */
	SQ_STACK_FRESH,		/* a new id: store the frames with the row */
	SQ_STACK_INLINE,	/* not kept by id (empty, or past SQ_STACK_MAX) */
};

/*
 * sq_stack_id - the id of the stack whose frames are @len bytes at
 * @frames, into *@id: the id of the same frames stored before, or a new
 * one (the caller then stores them with sq_stack_put() in the transaction
 * of the row, or calls sq_stacks_forget()). The frames themselves are
 * compared, never the hash alone. Writer's caller thread only.
 * Return: an enum sq_stack_found; -ENOMEM.
 */
int sq_stack_id(struct sq_store *s, const void *frames, size_t len, int64_t *id);

/*
 * sq_stacks_forget - the stacks in memory are forgotten (an id handed out
 * was not stored: the row failed). Later stacks are new ones.
 */
void sq_stacks_forget(struct sq_store *s);

/*
 * sq_stacks_load - forget the stacks in memory, take the next id from the
 * file and its newest stacks back into memory (at open, after a
 * rollback). The connection is the caller's. Return: 0; TC_ERR_DB.
 */
int sq_stacks_load(struct sq_store *s);

/*
 * sq_stacks_sweep - the stacks no row references any more (retention
 * removed theirs) deleted, then the stacks in memory loaded again
 * (sq_stacks_load()): no id of a deleted stack is handed out after. The
 * connection is the caller's, every row stored. Return: 0; TC_ERR_DB;
 * -ENOMEM.
 */
int sq_stacks_sweep(struct sq_store *s);

/* sq_stacks_free - free @s's stacks in memory. */
void sq_stacks_free(struct sq_store *s);

/*
 * sq_stack_put - run @put (INSERT INTO stacks (id, frames)) for one stack.
 * Return: an SQLite result code.
 */
int sq_stack_put(sqlite3_stmt *put, int64_t id, const void *frames, size_t len);


/*
 * sq_col_read - append the SQL that reads @sc's column @i: the quoted
 * column (@tab, e.g. "e.", before it), or for a stack column its frames
 * from the stacks table of schema @db ("main." or "") when it holds an id.
 */
void sq_col_read(struct sq_buf *b, const struct store_schema *sc, size_t i, const char *db,
		 const char *tab);

#endif
