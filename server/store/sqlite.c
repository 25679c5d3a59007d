/*
 * sqlite.c - the SQLite backend of the storage layer: opening and closing
 * a store, transactions, the SQL text and statement helpers its parts
 * share, and its ops table.
 *
 * The fixed tables come from the numbered migrations in sql/ (embedded as
 * sql/schema.h); the per-event tables are created from decoded formats
 * (sqlite_schema.c). sql/schema.sql explains the layout and its trade-offs.
 *
 * Every value reaches SQLite through a bound parameter. Identifiers (table
 * and column names derived from event formats) are always double-quoted
 * with embedded quotes doubled (sq_ident()). Run-time DDL is wrapped in a
 * SAVEPOINT, so it joins the caller's transaction or stands alone.
 *
 * Time order comes from the blocks of ts_blocks, not from an index per
 * row (schema.sql, "Time index"; sq_select_windows() in sqlite_read.c).
 *
 * A writable store has two threads of its own: a writer that runs the
 * batched INSERTs in queue order while the caller decodes (a bounded FIFO
 * under one mutex; every other call waits for it to drain, see struct
 * store_type in sqlite_int.h and sqlite_write.c), and a checkpointer with
 * its own connection (sqlite_ckpt.c).
 *
 * The parts, each along one seam of the backend, share sqlite_int.h:
 *   sqlite.c         open, close, transactions, helpers, the ops table
 *   sqlite_schema.c  migrations, event tables and their columns, schemas
 *   sqlite_write.c   the batched INSERTs and the writer thread
 *   sqlite_ckpt.c    the checkpointer thread
 *   sqlite_file.c    the file at the path: removed or replaced, reopened
 *   sqlite_index.c   field indexes (store_set_indexes())
 *   sqlite_read.c    select and count through the time index
 *   sqlite_filter.c  a bound filter as a WHERE clause (sqlite_filter.h)
 *   sqlite_hosts.c   hosts, per-CPU counters, marks, comms and tgids, drop counters
 *   sqlite_printk.c  the kernel's printk_formats per host and boot
 *   sqlite_symbols.c programs and their symbols
 *   sqlite_retain.c  retention by age and size
 *   sqlite_sql.c     the user SQL surface (store_sql(), traceq --sql)
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/sqlite_int.h"
#include "sql/schema.h"

int sq_err(struct store *s, int err, const char *what)
{
	struct sq_store *q = sq_store_of(s);
	sqlite3 *db = q->db;
	char why[STORE_ERRMSG_MAX];
	size_t n = strcspn(what, ";");

	if (q->stopped && db && (sqlite3_errcode(db) == SQLITE_INTERRUPT || err == TC_ERR_DB))
		return store_set_errmsg(s, q->stopped, "%s: %s", what, q->stopped == -ECANCELED ?
					"stopped: the asker went away" :
					"stopped at the time limit");
	sq_explain(db, db ? sqlite3_extended_errcode(db) : SQLITE_NOMEM, why, sizeof(why));
	if (n <= 40 && !what[n])
		return store_set_errmsg(s, err, "%s: %s", what, why);
	/* SQL text: the reason first, then where, shortened */
	return store_set_errmsg(s, err, "%s (running: %.*s%s)", why, (int)(n < 40 ? n : 40),
				what, what[n] || n > 40 ? "..." : "");
}

/* ---- stopping reads ---- */

#define SQ_STOP_TICK	4096	/* VM steps between two checks */

int sq_stop_due(struct sq_store *q)
{
	if (q->rstop.cancel && *q->rstop.cancel)
		q->stopped = -ECANCELED;
	else if (q->rstop.deadline_ms && util_now_ms() >= q->rstop.deadline_ms)
		q->stopped = TC_ERR_TIMEOUT;
	return q->stopped != 0;
}

static int sq_stop_progress(void *arg)
{
	return sq_stop_due(arg);
}

void sq_stop_handler(struct sq_store *q)
{
	if (q->db)
		sqlite3_progress_handler(q->db, SQ_STOP_TICK, sq_stop_progress, q);
}

static void sq_set_stop(struct store *s, const struct store_stop *stop)
{
	struct sq_store *q = sq_store_of(s);

	q->rstop = stop ? *stop : (struct store_stop){ 0 };
	q->stopped = 0;
}

/* ---- SQL text ---- */

void sq_buf_add(struct sq_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->s, cap);

		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void sq_buf_str(struct sq_buf *b, const char *s)
{
	sq_buf_add(b, s, strlen(s));
}

/* Append @name as a quoted SQL identifier. */
void sq_ident(struct sq_buf *b, const char *name)
{
	sq_buf_add(b, "\"", 1);
	for (const char *p = name; *p; p++) {
		if (*p == '"')
			sq_buf_add(b, "\"\"", 2);
		else
			sq_buf_add(b, p, 1);
	}
	sq_buf_add(b, "\"", 1);
}

/* ---- statements ---- */

int sq_exec(struct store *s, const char *sql)
{
	if (sqlite3_exec(sq_store_of(s)->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sq_err(s, TC_ERR_DB, sql);
	return 0;
}

int sq_prepare(struct store *s, const char *sql, sqlite3_stmt **st)
{
	const char *tail = NULL;

	if (sqlite3_prepare_v3(sq_store_of(s)->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st,
			       &tail) != SQLITE_OK)
		return sq_err(s, TC_ERR_DB, "prepare");
	if (tail && *tail) {
		sqlite3_finalize(*st);
		*st = NULL;
		return store_set_errmsg(s, TC_ERR_DB, "trailing text after the statement");
	}
	return 0;
}

int sq_prepare_cached(struct store *s, const char *sql, sqlite3_stmt **st)
{
	struct sq_store *q = sq_store_of(s);
	struct sq_cached *c, *victim = NULL;
	size_t n = sizeof(q->cache) / sizeof(q->cache[0]);
	uint64_t hash = 14695981039346656037ull;	/* FNV-1a */
	char *text;
	int ret;

	for (const char *p = sql; *p; p++)
		hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
	for (size_t i = 0; i < n; i++) {
		c = &q->cache[i];
		if (c->out)
			continue;
		if (c->st && c->hash == hash && !strcmp(c->sql, sql)) {
			sqlite3_reset(c->st);
			sqlite3_clear_bindings(c->st);
			c->used = ++q->cache_clock;
			c->out = true;
			*st = c->st;
			return 0;
		}
		/* an empty slot first, else the least recently used */
		if (!victim || (victim->st && (!c->st || c->used < victim->used)))
			victim = c;
	}
	ret = sq_prepare(s, sql, st);
	if (ret < 0 || !victim || !(text = strdup(sql)))
		return ret;	/* not kept: sq_release() finalizes it */
	sqlite3_finalize(victim->st);
	free(victim->sql);
	*victim = (struct sq_cached){ .sql = text, .hash = hash, .st = *st,
				      .used = ++q->cache_clock, .out = true };
	return 0;
}

void sq_release(struct store *s, sqlite3_stmt *st)
{
	struct sq_store *q = sq_store_of(s);

	if (!st)
		return;
	for (size_t i = 0; i < sizeof(q->cache) / sizeof(q->cache[0]); i++)
		if (q->cache[i].st == st) {
			sqlite3_reset(st);
			q->cache[i].out = false;
			return;
		}
	sqlite3_finalize(st);
}

/* Step @st to completion, then reset it (finalize when @once). */
int sq_run(struct store *s, sqlite3_stmt *st, bool once)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	rc = rc == SQLITE_DONE ? 0 : sq_err(s, TC_ERR_DB, "step");
	if (once)
		sqlite3_finalize(st);
	else
		sqlite3_reset(st);
	return rc;
}

void sq_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

char *sq_dup_col(sqlite3_stmt *st, int i)
{
	const char *v = (const char *)sqlite3_column_text(st, i);

	return strdup(v ? v : "");
}

/* ---- open, close ---- */

static int sq_setup_writer(struct store *s)
{
	struct sq_store *q = sq_store_of(s);
	int ret;

	/* a transaction's dirty pages stay in the cache until COMMIT, up to 64 MiB */
	ret = sq_exec(s, "PRAGMA page_size=16384; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			 " PRAGMA foreign_keys=ON; PRAGMA cache_size=-65536");
	if (ret == 0)
		ret = sq_migrate(s);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO cpus (host_id, cpu, pages, events, bytes)"
				    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (host_id, cpu) DO UPDATE"
				    " SET pages = pages + excluded.pages,"
				    " events = events + excluded.events,"
				    " bytes = bytes + excluded.bytes", &q->cpu_add);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO comms (host_id, pid, comm) VALUES (?, ?, ?)"
				    " ON CONFLICT (host_id, pid) DO UPDATE SET comm = excluded.comm",
				 &q->comm_put);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO comm_changes (host_id, pid, trace_ts, ts, tick_ns,"
				    " old, new) VALUES (?, ?, ?, ?, ?, ?, ?)", &q->comm_change_put);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO drops (host_id, system, name, reason, count)"
				    " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE"
				    " SET count = count + excluded.count", &q->drop_add);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO stream_marks (host_id, boot_id, session, stream, seq)"
				    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (host_id, boot_id, session,"
				    " stream) DO UPDATE SET seq = max(seq, excluded.seq)",
				 &q->mark_put);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT OR IGNORE INTO symbols (program_id, addr, size, name)"
				    " VALUES (?, ?, ?, ?)", &q->sym_put);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO ts_blocks (type_id, lo, hi, min_ts, max_ts, span,"
				    " seq) VALUES (?, ?, ?, ?, ?, ?, ?)", &q->block_put);
	if (ret == 0)
		ret = sq_seq_load(s);
	return ret;
}

static int sq_setup_reader(struct store *s)
{
	int version = 0;
	int ret = sq_user_version(s, &version);

	if (ret == 0 && version != SQL_SCHEMA_VERSION)
		ret = store_set_errmsg(s, TC_ERR_DB_SCHEMA,
				       "database schema %d, this program reads %d",
				       version, SQL_SCHEMA_VERSION);
	return ret;
}

/*
 * Before SQLite initializes: no global memory statistics, whose mutex every
 * allocation would otherwise take. Too late (SQLITE_MISUSE) only when
 * something in the process used SQLite first; then it just stays on.
 */
static void sq_config_once(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static const struct store_ops sq_ops;

int sq_connect(struct sq_store *q)
{
	struct store *s = &q->base;
	/*
	 * The writer belongs to one thread at a time (opened by main, used by
	 * the ingest worker and the store's writer thread in turn, closed
	 * after both stopped), and so does a reader (each query worker has its
	 * own): no per-call mutex, which cost a lock and an unlock per column
	 * of every row read.
	 */
	int flags = (s->readonly ? SQLITE_OPEN_READONLY :
		     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
	struct sched_param sp = { 0 };
	int ret;

	if (sqlite3_open_v2(q->path, &q->db, flags, NULL) != SQLITE_OK)
		return q->db ? sq_err(s, TC_ERR_DB, "open") : -ENOMEM;
	sqlite3_extended_result_codes(q->db, 1);
	sqlite3_busy_timeout(q->db, 5000);
	/* a reader closing never checkpoints nor removes PATH-wal (sqlite_file.c) */
	if (s->readonly) {
		sqlite3_db_config(q->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
		sq_stop_handler(q);
	}
	ret = s->readonly ? sq_setup_reader(s) : sq_setup_writer(s);
	if (ret == 0 && !s->readonly)
		ret = sq_ckpt_start(q, q->path);
	pthread_mutex_lock(&q->lock);	/* sq_thread_policy() may run meanwhile */
	if (ret == 0 && q->ckpt_started && q->policy_set)
		pthread_setschedparam(q->ckpt, q->policy, &sp);	/* best effort */
	pthread_mutex_unlock(&q->lock);
	if (ret == 0)
		sq_file_note(q);
	return ret;
}

void sq_disconnect(struct sq_store *q)
{
	sq_ckpt_stop(q);
	sqlite3_finalize(q->cpu_add);
	sqlite3_finalize(q->comm_put);
	sqlite3_finalize(q->comm_change_put);
	sqlite3_finalize(q->drop_add);
	sqlite3_finalize(q->mark_put);
	sqlite3_finalize(q->sym_put);
	sqlite3_finalize(q->block_put);
	sqlite3_finalize(q->prog_find);
	sqlite3_finalize(q->sym_find);
	sqlite3_finalize(q->printk_put);
	sqlite3_finalize(q->tgid_put);
	q->printk_put = q->tgid_put = NULL;
	q->cpu_add = q->comm_put = q->comm_change_put = q->drop_add = q->mark_put = NULL;
	q->sym_put = q->block_put = q->prog_find = q->sym_find = NULL;
	sq_names_free(q->names);
	q->names = NULL;
	for (size_t i = 0; i < sizeof(q->cache) / sizeof(q->cache[0]); i++) {
		sqlite3_finalize(q->cache[i].st);
		free(q->cache[i].sql);
		q->cache[i] = (struct sq_cached){ 0 };
	}
	sqlite3_close(q->db);
	q->db = NULL;
}

int store_sqlite_open(const char *path, bool readonly, struct store **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	struct sq_store *q = calloc(1, sizeof(*q));
	int ret;

	if (!q)
		return -ENOMEM;
	pthread_once(&once, sq_config_once);
	q->base.ops = &sq_ops;
	q->base.readonly = readonly;
	q->tail = &q->head;
	q->wait_below = -1;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	pthread_cond_init(&q->done, NULL);
	pthread_cond_init(&q->ckpt_wake, NULL);
	pthread_cond_init(&q->ckpt_done, NULL);
	q->path = strdup(path);
	ret = q->path ? sq_connect(q) : -ENOMEM;
	if (ret == 0 && !readonly)
		ret = sq_writer_start(q);
	if (ret < 0) {
		store_note_open_error(&q->base);
		sq_ops.close(&q->base);
		return ret;
	}
	*out = &q->base;
	return 0;
}

/* Run the writer and the checkpointer at @policy (SCHED_IDLE...). */
static int sq_thread_policy(struct store *s, int policy)
{
	struct sq_store *q = sq_store_of(s);
	struct sched_param sp = { 0 };
	int ret = 0;

	pthread_mutex_lock(&q->lock);
	q->policy = policy;	/* for a checkpointer started after a reopen */
	q->policy_set = true;
	if (q->writer_started)
		ret = pthread_setschedparam(q->writer, policy, &sp);
	if (ret == 0 && q->ckpt_started)
		ret = pthread_setschedparam(q->ckpt, policy, &sp);
	pthread_mutex_unlock(&q->lock);
	return -ret;
}

static void sq_types_free(struct store_type *t)
{
	while (t) {
		struct store_type *next = t->next;

		sq_type_free(t);
		t = next;
	}
}

static void sq_close(struct store *s)
{
	struct sq_store *q = sq_store_of(s);

	sq_ckpt_stop(q);
	sq_writer_stop(q);
	while (q->spare) {
		struct sq_batch *b = q->spare;

		q->spare = b->next;
		sq_batch_free(b);
	}
	sq_types_free(q->types);
	sq_types_free(q->retired);
	sq_disconnect(q);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->wake);
	pthread_cond_destroy(&q->done);
	pthread_cond_destroy(&q->ckpt_wake);
	pthread_cond_destroy(&q->ckpt_done);
	store_indexes_free(&q->ix);
	free(q->path);
	free(q);
}

/* ---- transactions ---- */

/* Roll back the open transaction, with what the writer failed on. */
static void sq_rollback(struct store *s)
{
	struct sq_store *q = sq_store_of(s);

	for (struct store_type *t = q->types; t; t = t->next)
		if (t->cur)	/* rows gathered, not yet inserted: theirs too */
			t->cur->pending = t->cur->arena_len = 0;
	if (q->db && !sqlite3_get_autocommit(q->db))
		sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
	pthread_mutex_lock(&q->lock);
	q->werr = 0;
	pthread_mutex_unlock(&q->lock);
	q->in_txn = false;
	if (q->db)	/* the numbers the rolled-back blocks took are free again */
		sq_seq_load(s);
}

/*
 * A transaction left open by a failed commit (or one whose INSERTs failed
 * on the writer) is rolled back first: none of it was acknowledged.
 */
static int sq_begin(struct store *s)
{
	int ret = sq_sync(s);

	if (ret < 0 || !sqlite3_get_autocommit(sq_store_of(s)->db))
		sq_rollback(s);
	ret = sq_exec(s, "BEGIN");
	sq_store_of(s)->in_txn = ret == 0;
	return ret;
}

static int sq_abort(struct store *s)
{
	sq_sync(s);		/* the writer thread is done with the batch */
	sq_rollback(s);
	return 0;
}

/*
 * On failure the transaction is rolled back. Committed into a file that is
 * no longer at the path (sq_file_check()), it fails too: for the caller,
 * nothing of it is stored.
 */
static int sq_commit(struct store *s)
{
	int ret = sq_flush_all(s) ?: sq_exec(s, "COMMIT");

	if (ret < 0)
		sq_rollback(s);
	else if ((ret = sq_file_check(s)) == 0)
		sq_ckpt_after_commit(sq_store_of(s));
	sq_store_of(s)->in_txn = false;
	return ret;
}

static const struct store_ops sq_ops = {
	.name = "sqlite",
	.close = sq_close,
	.host = sq_host,
	.host_clock = sq_host_clock,
	.type = sq_type,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_abort,
	.insert = sq_insert,
	.cpu_received = sq_cpu_received,
	.cpu_stats = sq_cpu_stats,
	.stream_marks = sq_stream_marks,
	.stream_mark = sq_stream_mark,
	.journal_mark = sq_journal_mark,
	.journal_mark_get = sq_journal_mark_get,
	.journal_forget = sq_journal_forget,
	.cpu_duplicates = sq_cpu_duplicates,
	.cpu_not_stored = sq_cpu_not_stored,
	.cpu_held = sq_cpu_held,
	.host_usage = sq_host_usage,
	.cmdlines = sq_cmdlines,
	.comm_change = sq_comm_change,
	.program = sq_program,
	.symbol = sq_symbol,
	.host_find = sq_host_find,
	.import_check = sq_import_check,
	.kallsyms_held = sq_kallsyms_held,
	.printk_put = sq_printk_put,
	.printk_held = sq_printk_held,
	.printk_list = sq_printk_list,
	.tgids_list = sq_tgids_list,
	.symbol_name = sq_symbol_name,
	.schema_get = sq_schema_get,
	.schema_list = sq_schema_list,
	.type_seen = sq_type_seen,
	.select = sq_select,
	.count = sq_count,
	.hist = sq_hist,
	.stats = sq_stats,
	.dropped = sq_dropped,
	.retain = sq_retain,
	.set_indexes = sq_set_indexes,
	.sync = sq_sync,
	.thread_policy = sq_thread_policy,
	.drops = sq_drops,
	.sql = sq_sql,
	.tail = sq_tail,
	.set_stop = sq_set_stop,
	.hosts = sq_hosts,
	.follow = sq_follow,
};
