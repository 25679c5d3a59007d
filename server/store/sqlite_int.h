/*
 * sqlite_int.h - what the parts of the SQLite backend share (private to
 * server/store/sqlite*.c; sqlite.c says which part does what).
 *
 * The handle (struct sq_store) and the per-type INSERT state (struct
 * store_type) are here because the writer, the schema and the read side
 * all use them. Functions are listed by the file that defines them; the
 * sq_ prefix is the backend's. The ops functions (sq_host ... sq_drops)
 * are declared for the ops table in sqlite.c only: the front calls them
 * through struct store_ops (store_ops.h), never by name.
 */
#ifndef SERVER_STORE_SQLITE_INT_H
#define SERVER_STORE_SQLITE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include <sqlite3.h>

#include "server/store/sqlite_filter.h"
#include "server/store/store_ops.h"

/* Which file a name leads to (sqlite_file.c); set: it was there. */
struct sq_file_id {
	dev_t dev;
	ino_t ino;
	bool set;
};

/*
 * A value bound to a nameless '?' of a WHERE text (sq_count_where()):
 * kind SIGNED/UNSIGNED use i, STRING/BLOB s+len. @eq_column (NULL: no
 * such promise) names a schema column that the WHERE requires to equal
 * this value (sq_filter_sql.eq): with an index on it, the store reads rows
 * through that index.
 */
struct sq_bind {
	enum store_kind kind;
	int64_t i;
	const char *s;
	size_t len;
	const char *eq_column;
};

/*
 * One value of a pending row: an integer, or bytes in the type's arena.
 * 16 bytes: a batch of 512 rows of 12 columns stays under 100 KiB.
 */
struct sq_val {
	enum store_kind kind;
	uint32_t len;		/* bytes at p (a value of one page: small) */
	union {
		int64_t i;
		const void *p;
	};
};

/*
 * Rows of one type on their way in: values (strings and blobs copied to
 * the arena), at most the type's `rows` of them.
 */
struct sq_batch {
	struct sq_batch *next;
	struct store_type *t;
	unsigned pending;	/* rows in vals */
	size_t cap;		/* vals has room for this many values */
	struct sq_val *vals;	/* pending * t->ncols */
	uint8_t *arena;		/* arena_size bytes (at most SQ_ARENA); NULL: none yet */
	size_t arena_size, arena_len;
};

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
 * that must see every row (COMMIT, retention, readers on this connection)
 * queue the partial batches too (sq_flush_all()). An INSERT that fails on
 * the writer makes every later call fail until the transaction is rolled
 * back, so no commit can go through without rows it should hold.
 */
struct store_type {
	struct store_type *next;
	char *system;
	char *name;
	char *format;		/* the format text this INSERT was built for */
	unsigned nfields;
	int *param;		/* per field: its '?' index, or 0 (duplicate name) */
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
	struct sq_val *scratch;	/* one row being decoded */
	int64_t type_id;	/* its event_types row, the key of its ts_blocks */
	int64_t fmt_id;		/* its formats row: every row it inserts has it (_tc_fmt) */
	bool retired;		/* of a file the store lost: no statements, no inserts */
};

struct sq_store {
	struct store base;	/* first */
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
	sqlite3_stmt *prog_find;	/* read side, prepared when first used */
	sqlite3_stmt *sym_find;
	sqlite3_stmt *printk_put;	/* prepared when first used */
	sqlite3_stmt *tgid_put;
	bool in_txn;		/* between begin and commit */
	/*
	 * Statements a reader prepares again and again (each page of each
	 * event type of a long answer, '*' has some hundred types): kept by
	 * their text, the least recently used replaced (sq_prepare_cached()).
	 */
	struct sq_cached {
		char *sql;
		uint64_t hash;	/* of sql */
		sqlite3_stmt *st;
		uint64_t used;
		bool out;	/* handed out, not yet released */
	} cache[96];
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
	/* the writer thread (sq_writer_main()); under lock: */
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
	/* the checkpointer (sq_ckpt_main()), its own connection; under lock: */
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

/* A growable string for building SQL text. */
struct sq_buf {
	char *s;
	size_t len;
	size_t cap;
	bool oom;
};

/* The SQLite handle whose base is @s (every store this backend opens is one). */
static inline struct sq_store *sq_store_of(struct store *s)
{
	return (struct sq_store *)s;
}

/* ---- helpers, by the file that defines them ---- */

/* sqlite.c: errors, SQL text, statements */

/*
 * sq_err - set @s's message to "@what: <sq_explain()>" ("<sq_explain()>
 * (running: SQL...)" when @what is SQL text); returns @err.
 */
int sq_err(struct store *s, int err, const char *what);

/* sqlite_errors.c */

/*
 * sq_explain - SQLite's failure @rc (extended) on @db (NULL: none) as words
 * a person can act on (not an SQLite database, permission denied, disk
 * full, read-only, locked by another process...), SQLite's message in
 * parentheses, into @buf.
 */
void sq_explain(sqlite3 *db, int rc, char *buf, size_t len);
/* Append to @b; after a failed allocation @b->oom is set and @b stays as it was. */
void sq_buf_add(struct sq_buf *b, const char *s, size_t n);
void sq_buf_str(struct sq_buf *b, const char *s);
/* sq_ident - append @name as a quoted SQL identifier (embedded quotes doubled). */
void sq_ident(struct sq_buf *b, const char *name);
/* sq_exec - run @sql (one or more statements). Return: 0; TC_ERR_DB. */
int sq_exec(struct store *s, const char *sql);
/* sq_prepare - one statement, no trailing text, into *@st. Return: 0; TC_ERR_DB. */
int sq_prepare(struct store *s, const char *sql, sqlite3_stmt **st);
/* sq_run - step @st to completion, then reset it (finalize when @once). */
int sq_run(struct store *s, sqlite3_stmt *st, bool once);
/* sq_bind_text - bind @v as TEXT (a copy), or NULL when @v is NULL. */
void sq_bind_text(sqlite3_stmt *st, int i, const char *v);
/* sq_dup_col - a malloc'd copy of text column @i ("" for NULL); NULL: no memory. */
char *sq_dup_col(sqlite3_stmt *st, int i);

/* sqlite_schema.c */

/* sq_column_name - append the column of field @field ("field_" + a reserved name). */
void sq_column_name(const char *field, struct sq_buf *b);
int sq_user_version(struct store *s, int *version);
/* sq_migrate - apply the migrations newer than the file's user_version. */
int sq_migrate(struct store *s);
void sq_type_free(struct store_type *t);

/* sqlite_write.c */

/* Start and stop @q's writer thread (stop: after it ran what is queued). */
int sq_writer_start(struct sq_store *q);
void sq_writer_stop(struct sq_store *q);
/*
 * sq_type_insert - @st's INSERTs into @table for @t's fields (field i into
 * column @cols[i]), rows of format @st->fmt_id, and its batch sizes.
 */
int sq_type_insert(struct store *s, struct store_type *st, const struct store_type_desc *t,
		   const char *table, char *const *cols);
/*
 * sq_sync - wait until the writer has run every queued batch; then the
 * connection is the caller's. Return: 0, or the writer's failure (until
 * the transaction is rolled back).
 */
int sq_sync(struct store *s);
/* sq_flush_all - queue every type's gathering rows and wait until they are in. */
int sq_flush_all(struct store *s);
void sq_batch_free(struct sq_batch *b);

/* sqlite.c */

/*
 * sq_connect - open @q->path into @q->db as the handle is (read-only or
 * writable: set up, migrated, with its checkpointer) and note its files.
 * On failure @q->db may be set: sq_disconnect() it.
 */
int sq_connect(struct sq_store *q);
/*
 * sq_prepare_cached - sq_prepare() @sql, or the statement of the same text
 * prepared before on this connection (reset, its bindings cleared). Give
 * it back with sq_release() (never sqlite3_finalize()); one handed out is
 * not handed out again until then (a second one is prepared).
 */
int sq_prepare_cached(struct store *s, const char *sql, sqlite3_stmt **st);
void sq_release(struct store *s, sqlite3_stmt *st);

/* sq_disconnect - stop the checkpointer, finalize every statement, close db. */
void sq_disconnect(struct sq_store *q);

/* sqlite_file.c: the file at the path (store.h, "the database removed or replaced") */

/* sq_file_note - note the files @q->db has open now (right after opening). */
void sq_file_note(struct sq_store *q);
/*
 * sq_file_check - after a COMMIT: is the file at the path still @s's? When
 * not, @s is lost. Return: 0; TC_ERR_DB (lost).
 */
int sq_file_check(struct store *s);
/* sq_follow - the follow op (store_ops.h). */
int sq_follow(struct store *s, bool reopen);

/* sqlite_ckpt.c: the checkpointer's thread and connection on @q's file */
int sq_ckpt_start(struct sq_store *q, const char *path);
void sq_ckpt_stop(struct sq_store *q);
/* sq_ckpt_after_commit - ask for a checkpoint when the WAL has grown (may wait). */
void sq_ckpt_after_commit(struct sq_store *q);

/* sqlite_index.c */

/* sq_ix_type - create the wanted field indexes that type @type_id lacks. */
int sq_ix_type(struct store *s, int64_t type_id, const char *system, const char *name,
	       const char *table, unsigned *created);
/* sq_ix_usable - whether a promised `column == value` of @b has an index. */
int sq_ix_usable(struct store *s, const struct store_schema *sc,
		 const struct sq_bind *b, size_t nb, bool *usable);

/* sqlite_read.c: the time index */

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
/* sq_bind_where - bind @b to @st's nameless '?'s, in order. */
int sq_bind_where(struct store *s, sqlite3_stmt *st, const struct sq_bind *b, size_t nb);

/*
 * sq_from - append " FROM (...) WHERE (@where)" over @sc's table (see
 * sqlite_read.c); @r NULL: no time range or keyset.
 */
struct sq_range;
void sq_comm_expr(struct sq_buf *b, const char *db, const char *pid);
void sq_from(struct sq_buf *b, const struct store_schema *sc, const char *where,
	     const struct sq_range *r);
/* The columns before a row's fields that sq_row() reads, for a SELECT over sq_from(). */
#define SQ_ROW_COLS	"SELECT _tc_rowid, host_id, cpu, ts, trace_ts"
/* sq_col_index - the schema index of the field @name, or -1. */
int sq_col_index(const struct store_schema *sc, const char *name);

/*
 * A select's row as a struct store_row: sq_row() reads the current row of
 * a statement whose columns are "_tc_rowid, host_id, _tc_host, cpu, ts,
 * trace_ts, _tc_comm" and then @sc's columns, into @r, whose values live
 * in @rb (ncols + 1 of each, allocated by the caller).
 */
struct sq_rowbuf {
	struct store_value *vals;
	bool *null;
	int pid;	/* schema index of common_pid, or -1 */
	struct sq_names *names;
};

/*
 * The host names and comms of the rows of one read (sqlite_names.c):
 * sq_names_new() starts a read on @s's connection's cache (nothing to
 * free: sq_disconnect() frees it with sq_names_free()), sq_names_host()
 * and sq_names_comm() (NULL: none known; valid until the next lookup of
 * a comm).
 */
struct sq_names;
int sq_names_new(struct store *s, struct sq_names **out);
const char *sq_names_host(struct sq_names *n, uint64_t host_id);
const char *sq_names_comm(struct sq_names *n, uint64_t host_id, int64_t pid);
void sq_names_free(struct sq_names *n);

void sq_row(sqlite3_stmt *st, const struct store_schema *sc, struct sq_rowbuf *rb,
	    struct store_row *r);
/* sq_row_names - finish @r, whose values are in @rb: its pid, host name and comm. */
void sq_row_names(const struct store_schema *sc, struct sq_rowbuf *rb, struct store_row *r);

/*
 * The rows of one window of a limited select, kept and sorted by (ts,
 * rowid) here (sqlite_window.c): sq_win_add() the current row of @st
 * (columns as sq_row() reads them; -E2BIG when the window would hold
 * more than its cap: have SQLite sort it instead), sq_win_sort(),
 * sq_win_row() the i-th into @rb and @r, sq_win_reset() for the next
 * window, sq_win_free().
 */
struct sq_win {
	struct sq_wrow *rows;
	struct sq_wkey *keys, *tmp;	/* keys[i] names the i-th row in order */
	size_t *runs;
	size_t n, cap;
	unsigned char *arena;
	size_t used, size;
};
/* What a window keeps at most, values and their bytes (32 MiB; tests lower it). */
extern size_t sq_win_cap;
int sq_win_add(struct sq_win *w, sqlite3_stmt *st, const struct store_schema *sc);
void sq_win_sort(struct sq_win *w);
void sq_win_row(const struct sq_win *w, size_t i, const struct store_schema *sc,
		struct sq_rowbuf *rb, struct store_row *r);
void sq_win_reset(struct sq_win *w);
void sq_win_free(struct sq_win *w);

/*
 * sq_stop_due - whether a read on @q must stop now (q->rstop); sets
 * q->stopped to why. The progress handler every reader has (sqlite.c),
 * which --sql's own handler calls too.
 */
int sq_stop_due(struct sq_store *q);
/* sq_stop_handler - install that handler on @q's connection (again). */
void sq_stop_handler(struct sq_store *q);

/* sqlite_tail.c: rows in storage order (store_tail()) */

/* sq_seq_load - set the writer's next storage sequence number from the file. */
int sq_seq_load(struct store *s);
int sq_tail(struct store *s, const struct store_query *const *qs, size_t nq,
	    struct store_tail *t, store_tail_fn fn, void *ctx);

/* sq_int1 - the integer @sql yields for one bound integer @arg (NULL: @dflt). */
int sq_int1(struct store *s, const char *sql, int64_t arg, int64_t dflt, int64_t *out);
/* sq_max_span - the widest span of a block of type @type_id (0: none). */
int sq_max_span(struct store *s, int64_t type_id, int64_t *span);

/*
 * sq_count_where, sq_select_where - store_count() and store_select() of
 * @sc's rows for which @where holds: an SQL boolean expression over the
 * quoted column names, "cpu", "host_id", "ts", "trace_ts" and "_tc_comm"
 * (the special COMM), with a nameless '?' for each of the @nb values
 * in @b. It is pasted into the statement: it comes from sq_count() and
 * sq_select() (which compile a store_query to it) or from a test, never
 * from a user. NULL: every row. sq_select_where() reads no column that
 * @skip (q->skip) marks: it comes as NULL.
 */
int sq_count_where(struct store *s, const struct store_schema *sc, const char *where,
		   const struct sq_bind *b, size_t nb, const struct store_window *win,
		   uint64_t *count);
int sq_select_where(struct store *s, const struct store_schema *sc, const char *where,
		    const struct sq_bind *b, size_t nb, const struct store_window *win,
		    int64_t after_ts, uint64_t after_rowid, size_t limit, bool reverse,
		    const bool *skip, store_row_fn fn, void *ctx);

/*
 * sq_rows_of, sq_rows_bind, sq_rows_free - the rows a store_query matches
 * as the FROM and WHERE of a statement of another read (sqlite_hist.c):
 * text appended to @b, then the values bound to the prepared statement.
 */
struct sq_rows;
int sq_rows_of(struct store *s, const struct store_query *q, struct sq_buf *b,
	       struct sq_rows **out);
int sq_rows_bind(struct store *s, sqlite3_stmt *st, const struct store_query *q,
		 const struct sq_rows *rows);
void sq_rows_free(struct sq_rows *rows);

/*
 * sq_hosts_cond, sq_hosts_bind, sq_hosts_len - the hosts a store_query
 * allows (host_glob, scope) as SQL conditions on a host-id column, with
 * bound parameters; every read applies them (sqlite_read.c).
 */
size_t sq_hosts_len(const struct store_query *q);
void sq_hosts_cond(char *out, const struct store_query *q, const char *col);
void sq_hosts_bind(sqlite3_stmt *st, int first, const struct store_query *q);

/* ---- the ops (store_ops.h; each one's contract is its store_*() in store.h) ---- */

/* sqlite_schema.c */
int sq_type(struct store *s, const struct store_type_desc *t, const struct store_origin *o,
	    struct store_type **out);
int sq_schema_get(struct store *s, const char *system, const char *event,
		  struct store_schema **out);
int sq_schema_list(struct store *s, const char *system,
		   int (*fn)(void *ctx, const struct store_schema *sc), void *ctx);
/* sq_schema_walk - sq_schema_list() with the columns of each schema when @cols. */
int sq_schema_walk(struct store *s, const char *system, bool cols,
		   int (*fn)(void *ctx, const struct store_schema *sc), void *ctx);

/* sqlite_write.c */
int sq_insert(struct store *s, struct store_type *t, const struct store_event *ev);

/* sqlite_index.c */
int sq_set_indexes(struct store *s, const struct store_indexes *ix, unsigned *created,
		   unsigned *dropped);

/* sqlite_read.c */
int sq_count(struct store *s, const struct store_query *q, uint64_t *count);
int sq_select(struct store *s, const struct store_query *q, store_row_fn fn, void *ctx);

/* sqlite_hist.c; sq_hist_grouped(): the grouped statement alone (tests compare) */
int sq_hist_grouped(struct store *s, const struct store_query *q, const struct store_hist *h,
		    int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		    struct store_hist_totals *tot);
int sq_hist(struct store *s, const struct store_query *q, const struct store_hist *h,
	    int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
	    struct store_hist_totals *tot);

/* sqlite_hosts.c */
int sq_host(struct store *s, const struct proto_hello *h, const char *peer_subject,
	    uint64_t *host_id);
int sq_host_clock(struct store *s, uint64_t host_id, int64_t offset_ns);
int sq_cpu_received(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
		    uint64_t events, uint64_t bytes);
int sq_cpu_stats(struct store *s, uint64_t host_id, const struct proto_cpu_stats *c);
int sq_stream_marks(struct store *s, uint64_t host_id, const char *boot_id,
		    uint64_t session, uint64_t *seqs, uint32_t n);
int sq_stream_mark(struct store *s, uint64_t host_id, const char *boot_id,
		   uint64_t session, uint32_t stream, uint64_t seq);
int sq_journal_mark(struct store *s, uint64_t file, uint64_t pos);
int sq_journal_forget(struct store *s, uint64_t from, uint64_t to);
int sq_journal_mark_get(struct store *s, uint64_t file, uint64_t *pos);
int sq_cpu_duplicates(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t n);
int sq_cpu_held(struct store *s, uint64_t host_id, uint32_t cpu, const struct store_held *h);
int sq_host_usage(struct store *s, int (*fn)(void *ctx, const char *host, uint64_t bytes),
		  void *ctx);
int sq_host_freed(struct store *s, uint64_t host_id, uint64_t rows);
int sq_cpu_not_stored(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
		      uint64_t events);
int sq_cmdlines(struct store *s, uint64_t host_id, const struct proto_cmdlines *c);
int sq_comm_change(struct store *s, uint64_t host_id, const struct store_comm_change *c);
int sq_dropped(struct store *s, uint64_t host_id, const char *system, const char *name,
	       const char *reason, uint64_t n);
int sq_stats(struct store *s, const struct store_query *q,
	     int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
		       const char *key, uint64_t value),
	     void *ctx);
int sq_hosts(struct store *s, const struct store_query *q,
	     int (*fn)(void *ctx, const struct store_host_info *h), void *ctx);
int sq_drops(struct store *s, const struct store_query *q,
	     int (*fn)(void *ctx, const char *host, const char *system, const char *name,
		       const char *reason, uint64_t count),
	     void *ctx);

/* sqlite_symbols.c */
int sq_program(struct store *s, uint64_t host_id, const struct store_program *p,
	       uint64_t *program_id);
int sq_symbol(struct store *s, uint64_t program_id, uint64_t addr, uint64_t size,
	      const char *name);
int sq_kallsyms_held(struct store *s, uint64_t host_id, const char *boot_id, bool *held);
int sq_host_boot_exists(struct store *s, const char *sql, uint64_t host_id,
			const char *boot_id, const char *what, bool *found);
int sq_host_find(struct store *s, const char *name, const struct store_scope *scope,
		 uint64_t *host_id);
int sq_type_seen(struct store *s, const struct store_schema *sc,
		 const struct store_scope *scope, bool *seen);
/* sqlite_import.c */
int sq_import_check(struct store *s, const char *name, const char *machine_id, bool *live,
		    bool *stored);
int sq_symbol_name(struct store *s, uint64_t host_id, int32_t pid, int64_t ts,
		   uint64_t addr, char *buf, size_t len);

/* sqlite_sql.c */
int sq_sql(struct store *s, const char *text, const struct store_scope *scope,
	   const struct store_sql_limits *lim, store_sql_fn fn, void *ctx);
/* sqlite_printk.c */
int sq_printk_put(struct store *s, uint64_t host_id, const char *boot_id, int64_t since,
		  uint64_t addr, const char *fmt, size_t len);
int sq_printk_held(struct store *s, uint64_t host_id, const char *boot_id, bool *held);
int sq_printk_list(struct store *s, uint64_t host_id, int64_t ts, uint32_t max,
		   int (*fn)(void *ctx, uint64_t addr, const char *fmt), void *ctx);
int sq_tgids_list(struct store *s, uint64_t host_id, int32_t after_pid, uint32_t max,
		  int (*fn)(void *ctx, int32_t pid, int32_t tgid), void *ctx);

/* sqlite_retain.c */
int sq_retain(struct store *s, int64_t before_ts, uint64_t max_bytes, uint64_t *removed);

#endif
