/*
 * sqlite.c - the SQLite backend of the storage layer, its top: opening
 * and closing a writer or a reader, a writer's transactions, and the two
 * ops tables (store_ops.h), which each part fills with its own ops.
 *
 * The fixed tables come from the numbered migrations in sql/ (embedded as
 * sql/schema.h; sqlite_migrate.c); the per-event tables are created from
 * the formats agents send (sqlite_schema.c). sql/schema.sql explains the
 * layout and its trade-offs. Every value reaches SQLite through a bound
 * parameter, every identifier is quoted (sqlite_util.c). Run-time DDL is
 * wrapped in a SAVEPOINT, so it joins the caller's transaction or stands
 * alone. Time order comes from the blocks of ts_blocks, not from an index
 * per row (schema.sql, "Time index"; sq_select_windows() in
 * sqlite_read.c).
 *
 * A writer has two threads of its own: one that runs the batched INSERTs
 * in queue order while the caller decodes (a bounded FIFO under one
 * mutex; every other op waits for it to drain, see struct store_type in
 * sqlite_write.h), and a checkpointer with its own connection
 * (sqlite_ckpt.c). A reader has none.
 *
 * The parts, each along one seam of the backend, from the top down; each
 * includes only the headers of parts below it (sqlite_int.h, the handle,
 * is everyone's), so includes and calls form a tree:
 *   sqlite.c         open, close, transactions, the ops tables
 *   sqlite_retain.c  retention by age and size                  (writer)
 *   sqlite_sql.c     the user SQL surface (store_sql())          (reader)
 *   sqlite_hist.c    histograms (store_hist())                   (reader)
 *   sqlite_tail.c    rows in storage order (store_tail())        (reader)
 *   sqlite_snapshots.c flight-recorder snapshots, per host      (both)
 *   sqlite_hosts.c   hosts, per-CPU counters, marks, comms and tgids,
 *                    drop counters                               (both)
 *   sqlite_printk.c  the kernel's printk_formats per host and boot (both)
 *   sqlite_boots.c   each boot's headers and formats, where kernels
 *                    lost events (issue 33's exports)           (both)
 *   sqlite_symbols.c programs and their symbols                  (both)
 *   sqlite_import.c  what an import asks first                   (reader)
 *   sqlite_schema.c  event tables and their columns, schemas     (both)
 *   sqlite_read.c    select and count through the time index, and a
 *                    store_query as SQL for the reads above      (reader)
 *   sqlite_index.c   field indexes (store_set_indexes())         (writer)
 *   sqlite_file.c    the file at the path: removed or replaced, reopened;
 *                    what every op does first (sq_*_enter())
 *   sqlite_conn.c    a connection to the file, set up for its role
 *   sqlite_write.c   the batched INSERTs, the writer thread, the storage
 *                    sequence (and the insert op)                (writer)
 *   sqlite_migrate.c the migrations of sql/
 *   sqlite_ckpt.c    the checkpointer thread
 *   sqlite_window.c  a limited select's window, sorted
 *   sqlite_names.c   rows' host names and comms, cached
 *   sqlite_filter.c  a bound filter as a WHERE clause
 *   sqlite_stacks.c  stacks stored once each: the writer's in memory, and
 *                    a stack column read back as its frames
 *   sqlite_util.c    errors, SQL text, statements, the statement cache
 *   sqlite_errors.c  SQLite's failures in words
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite.h"
#include "server/store/sqlite_boots.h"
#include "server/store/sqlite_ckpt.h"
#include "server/store/sqlite_conn.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_hist.h"
#include "server/store/sqlite_hosts.h"
#include "server/store/sqlite_snapshots.h"
#include "server/store/sqlite_import.h"
#include "server/store/sqlite_index.h"
#include "server/store/sqlite_printk.h"
#include "server/store/sqlite_read.h"
#include "server/store/sqlite_retain.h"
#include "server/store/sqlite_schema.h"
#include "server/store/sqlite_sql.h"
#include "server/store/sqlite_symbols.h"
#include "server/store/sqlite_tail.h"
#include "server/store/sqlite_util.h"
#include "server/store/sqlite_write.h"

/* ---- a writer's transactions ---- */

/* Roll back the open transaction, with what the writer failed on. */
static void sq_rollback(struct sq_store *s)
{
	sq_types_drop_rows(s);	/* rows gathered, not yet inserted: theirs too */
	if (s->db && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	pthread_mutex_lock(&s->lock);
	s->werr = 0;
	pthread_mutex_unlock(&s->lock);
	s->in_txn = false;
	if (s->db)	/* the numbers the rolled-back blocks took are free again */
		sq_seq_load(s);
}

/*
 * A writer that lost its file opens its path first. A transaction left
 * open by a failed commit (or one whose INSERTs failed on the writer) is
 * rolled back: none of it was acknowledged.
 */
static int sq_begin(struct store_writer *w)
{
	struct sq_store *s = sq_writer_of(w);
	int ret = sq_writer_reopen(s);

	if (ret < 0)
		return ret;
	ret = sq_sync(s);
	if (ret < 0 || !sqlite3_get_autocommit(s->db))
		sq_rollback(s);
	ret = sq_exec(s, "BEGIN");
	s->in_txn = ret == 0;
	return ret;
}

/* After the rollback, a writer that lost its file tries to reopen it. */
static int sq_abort(struct store_writer *w)
{
	struct sq_store *s = sq_writer_of(w);

	sq_sync(s);		/* the writer thread is done with the batch */
	sq_rollback(s);
	sq_writer_reopen(s);
	return 0;
}

/*
 * On failure the transaction is rolled back. Committed into a file that is
 * no longer at the path (sq_file_check()), it fails too: for the caller,
 * nothing of it is stored.
 */
static int sq_commit(struct store_writer *w)
{
	struct sq_store *s = sq_writer_of(w);
	int ret = sq_flush_all(s) ?: sq_exec(s, "COMMIT");

	if (ret < 0)
		sq_rollback(s);
	else if ((ret = sq_file_check(s)) == 0)
		sq_ckpt_after_commit(s);
	s->in_txn = false;
	return ret;
}

/* Run the writer and the checkpointer at @policy (SCHED_IDLE...). */
static int sq_thread_policy(struct store_writer *w, int policy)
{
	struct sq_store *s = sq_writer_of(w);
	struct sched_param sp = { 0 };
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	s->policy = policy;	/* for a checkpointer started after a reopen */
	s->policy_set = true;
	if (s->writer_started)
		ret = pthread_setschedparam(s->writer, policy, &sp);
	if (ret == 0 && s->ckpt_started)
		ret = pthread_setschedparam(s->ckpt, policy, &sp);
	pthread_mutex_unlock(&s->lock);
	return -ret;
}

/* ---- a reader's ---- */

static void sq_set_stop(struct store_reader *r, const struct store_stop *stop)
{
	struct sq_store *s = sq_reader_of(r);

	s->rstop = stop ? *stop : (struct store_stop){ 0 };
	s->stopped = 0;
}

/* ---- open, close ---- */

/* Stop the handle's threads, free it and everything it handed out. */
static void sq_free(struct sq_store *s)
{
	sq_ckpt_stop(s);
	sq_writer_free(s);
	sq_disconnect(s);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->done);
	pthread_cond_destroy(&s->ckpt_wake);
	pthread_cond_destroy(&s->ckpt_done);
	store_indexes_free(&s->ix);
	free(s->path);
	free(s);
}

static void sq_writer_close(struct store_writer *w)
{
	sq_free(sq_writer_of(w));
}

static void sq_reader_close(struct store_reader *r)
{
	sq_free(sq_reader_of(r));
}

/* Filled once, by sq_init(): each part puts its own ops in. */
static struct store_writer_ops sq_writer_ops = {
	.close = sq_writer_close,
	.thread_policy = sq_thread_policy,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_abort,
};

static struct store_reader_ops sq_reader_ops = {
	.close = sq_reader_close,
	.set_stop = sq_set_stop,
};

/*
 * Once, before the first handle: the parts' ops into the tables; and,
 * before SQLite initializes, no global memory statistics, whose mutex
 * every allocation would otherwise take (too late, SQLITE_MISUSE, only
 * when something in the process used SQLite first; then it stays on).
 */
static void sq_init(void)
{
	struct store_writer_ops *w = &sq_writer_ops;
	struct store_reader_ops *r = &sq_reader_ops;

	sq_write_ops(w);
	sq_index_ops(w);
	sq_schema_ops(w, r);
	sq_read_ops(r);
	sq_import_ops(r);
	sq_symbols_ops(w, r);
	sq_printk_ops(w, r);
	sq_boots_ops(w, r);
	sq_hosts_ops(w, r);
	sq_snapshots_ops(w, r);
	sq_tail_ops(r);
	sq_hist_ops(r);
	sq_sql_ops(r);
	sq_retain_ops(w, r);
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/*
 * A writer (@w) or a reader (@r: the other NULL) on @path, connected (a
 * writer's thread started); on failure its message into @errmsg.
 * Return: as the constructors.
 */
static int sq_open(const char *path, struct store_writer **w, struct store_reader **r,
		   char *errmsg, size_t len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct sq_store *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	pthread_once(&once, sq_init);
	s->reader = r != NULL;
	s->h = s->reader ? &s->base.r.h : &s->base.w.h;
	s->tail = &s->head;
	s->wait_below = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->done, NULL);
	pthread_cond_init(&s->ckpt_wake, NULL);
	pthread_cond_init(&s->ckpt_done, NULL);
	s->path = strdup(path);
	ret = s->path ? sq_connect(s) : -ENOMEM;
	if (ret == 0)
		sq_file_note(s);
	if (ret == 0 && !s->reader)
		ret = sq_writer_start(s);
	if (ret < 0) {
		snprintf(errmsg, len, "%s", s->h->errmsg);
		sq_free(s);
		return ret;
	}
	if (r) {
		s->base.r.ops = &sq_reader_ops;
		*r = &s->base.r;
	} else {
		s->base.w.ops = &sq_writer_ops;
		*w = &s->base.w;
	}
	return 0;
}

int store_sqlite_writer_open(const char *path, struct store_writer **out, char *errmsg,
			     size_t len)
{
	return sq_open(path, out, NULL, errmsg, len);
}

int store_sqlite_reader_open(const char *path, struct store_reader **out, char *errmsg,
			     size_t len)
{
	return sq_open(path, NULL, out, errmsg, len);
}
