/*
 * sqlite_int.h - the SQLite backend's handle, struct sq_store, which every
 * part of the backend uses: data only. The functions are declared by the
 * part that defines them (sqlite_util.h at the bottom ... sqlite.h at the
 * top; sqlite.c says which part does what), and each part includes only
 * the headers of the parts below it, so the includes and the calls form a
 * tree (tests/test_layering.sh checks the includes).
 *
 * One handle serves either role: a writer (struct store_writer first: the
 * ingest worker's, with its writer thread and checkpointer) or a reader
 * (struct store_reader first: a query worker's). Which ops a handle has
 * says which it is; reader says it to the parts that serve both.
 */
#ifndef SERVER_STORE_SQLITE_INT_H
#define SERVER_STORE_SQLITE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include <sqlite3.h>

#include "server/store/store_ops.h"

struct sq_batch;
struct sq_names;
struct sq_stacks;
struct store_type;

/* Which file a name leads to (sqlite_file.c); set: it was there. */
struct sq_file_id {
	dev_t dev;
	ino_t ino;
	bool set;
};

/*
 * Statements a reader prepares again and again (each page of each event
 * type of a long answer, '*' has some hundred types): kept by their text,
 * the least recently used replaced (sq_prepare_cached(), sqlite_util.c).
 */
struct sq_cached {
	char *sql;
	uint64_t hash;		/* of sql */
	sqlite3_stmt *st;
	uint64_t used;
	bool out;		/* handed out, not yet released */
};

struct sq_store {
	union {			/* first: the handle the front holds */
		struct store_writer w;
		struct store_reader r;
	} base;
	struct store_handle *h;	/* base's: errors, generation, note */
	bool reader;		/* a reader's handle (else a writer's) */
	sqlite3 *db;		/* NULL only while a lost writer cannot reopen */
	char *path;
	/*
	 * The file db has open, and (WAL mode) its -wal and -shm, as their
	 * names led when it opened them (sqlite_file.c). lost: a commit found
	 * another file (or none) at path; writes fail until it is reopened.
	 */
	struct sq_file_id db_id, wal_id, shm_id;
	bool lost;
	struct store_type *types;
	struct store_type *retired;	/* types of files the store lost (their holders may
					 * still hand them to insert): freed by close */
	sqlite3_stmt *cpu_add;	/* hot statements, prepared once */
	sqlite3_stmt *comm_put;
	sqlite3_stmt *comm_change_put;
	sqlite3_stmt *drop_add;
	sqlite3_stmt *mark_put;
	sqlite3_stmt *sym_put;
	sqlite3_stmt *block_put;	/* the writer thread's */
	sqlite3_stmt *stack_put;	/* the writer thread's (sqlite_stacks.c) */
	struct sq_stacks *stacks;	/* the stacks stored, in memory (sqlite_stacks.c) */
	bool stacks_orphaned;	/* retention removed stack rows since the last sweep */
	int64_t stacks_swept_ms;	/* when the last sweep of unreferenced stacks ran */
	sqlite3_stmt *prog_find;	/* read side, prepared when first used */
	sqlite3_stmt *sym_find;	/* a symbol (sqlite_symbols.c) */
	sqlite3_stmt *sym_find_sized;	/* a symbol and the next address */
	sqlite3_stmt *printk_put;	/* prepared when first used */
	sqlite3_stmt *tgid_put;
	bool in_txn;		/* between begin and commit */
	struct sq_cached cache[256];	/* a select of every type: two each */
	uint64_t cache_clock;
	struct sq_names *names;	/* a reader's host names and comms (sqlite_names.c) */
	/*
	 * The storage sequence number of the next row stored (ts_blocks.seq):
	 * the writer thread's while batches are in flight, else the caller's;
	 * read again from the file after a rollback (sq_seq_load()).
	 */
	int64_t seq;
	/* reads stop (store_set_stop()): the reader's thread only */
	struct store_stop rstop;
	int stopped;		/* why the last read was stopped: TC_ERR_TIMEOUT, -ECANCELED; 0 */
	/* the writer thread (sqlite_write.c); under lock: */
	pthread_t writer;
	bool writer_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* to the writer: a batch, or stop */
	pthread_cond_t done;	/* from the writer: a batch ran */
	struct sq_batch *head, **tail;	/* queued batches */
	struct sq_batch *spare;		/* batches to reuse (at most SQ_SPARES) */
	unsigned nspare;
	unsigned inflight;	/* queued or running */
	int wait_below;		/* the caller waits for inflight <= this; -1: not */
	bool idle;		/* the writer waits for a batch */
	bool stop;
	int werr;		/* the first failed INSERT's error; 0: none */
	char werrmsg[STORE_ERRMSG_MAX];
	/* the checkpointer (sqlite_ckpt.c), its own connection; under lock: */
	sqlite3 *ckdb;
	pthread_t ckpt;
	bool ckpt_started;
	pthread_cond_t ckpt_wake;	/* to the checkpointer: a request, or stop */
	pthread_cond_t ckpt_done;	/* from it: a checkpoint finished */
	unsigned ckpt_req, ckpt_ran;	/* requests made, and served */
	bool ckpt_stop;
	int wal_frames;		/* in the WAL after the last commit (the WAL hook) */
	int policy;		/* thread_policy's, for a checkpointer started later */
	bool policy_set;
	struct store_indexes ix;	/* field indexes to keep (store_set_indexes()) */
};

/* The handle whose base is @w (every writer this backend opens is one). */
static inline struct sq_store *sq_writer_of(struct store_writer *w)
{
	return (struct sq_store *)w;
}

/* The handle whose base is @r (every reader this backend opens is one). */
static inline struct sq_store *sq_reader_of(struct store_reader *r)
{
	return (struct sq_store *)r;
}

#endif
