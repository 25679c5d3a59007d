/*
 * sqlite_file.h - the SQLite backend keeps to the database file at its
 * path (store.h, "the database removed or replaced"; sqlite_file.c), and
 * what every op does first: sq_writer_enter(), sq_reader_enter().
 */
#ifndef SERVER_STORE_SQLITE_FILE_H
#define SERVER_STORE_SQLITE_FILE_H

#include "server/store/sqlite_int.h"

/* sq_file_note - note the files @q->db has open now (right after connecting). */
void sq_file_note(struct sq_store *q);
/*
 * sq_file_check - after a COMMIT: is the file at the path still @s's? When
 * not, @s is lost. Return: 0; TC_ERR_DB (lost).
 */
int sq_file_check(struct sq_store *s);

/*
 * sq_writer_enter - what a writer's op does before it touches the
 * connection (all but insert, begin, commit, rollback and host_usage):
 * fail while the file is lost, then wait for the writer thread
 * (sq_sync()). Return: 0; TC_ERR_DB (lost); the writer thread's failure.
 */
int sq_writer_enter(struct sq_store *s);
/*
 * sq_writer_reopen - a writer that lost its file opens its path again
 * (begin, and after a rollback). Return: 0 (not lost, or reopened);
 * TC_ERR_DB (still lost: s->h->errmsg says why).
 */
int sq_writer_reopen(struct sq_store *s);
/*
 * sq_reader_enter - what a reader's op does first (all but symbol_name,
 * called per row of a select that did it, and set_stop): open the path
 * again when it leads to another file. Return: 0; TC_ERR_DB.
 */
int sq_reader_enter(struct sq_store *s);

#endif
