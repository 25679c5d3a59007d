/*
 * sqlite.c - the SQLite backend of the storage layer.
 *
 * The fixed tables come from the numbered migrations in sql/ (embedded as
 * sql/schema.h); the per-event tables are created here from decoded
 * formats. sql/schema.sql explains the layout and its trade-offs.
 *
 * Every value reaches SQLite through a bound parameter. Identifiers (table
 * and column names derived from event formats) are always double-quoted
 * with embedded quotes doubled (sq_ident()). Run-time DDL is wrapped in a
 * SAVEPOINT, so it joins the caller's transaction or stands alone.
 *
 * Time order comes from the blocks of ts_blocks, not from an index per
 * row (schema.sql, "Time index"; sq_range_fit()).
 *
 * A writable store has two threads of its own: a writer that runs the
 * batched INSERTs in queue order while the caller decodes (a bounded FIFO
 * under one mutex; every other call waits for it to drain, see struct
 * store_type), and a checkpointer with its own connection (sq_ckpt_main()).
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "proto/symbols.h"
#include "server/store/store_ops.h"
#include "sql/schema.h"

#define SQ_FIXED_COLS 4		/* host_id, cpu, ts, trace_ts */
#define SQ_BATCH_ROWS	512	/* rows per multi-row INSERT, at most */
#define SQ_BLOCK_ROWS	64	/* rows per ts_blocks row, at most */
#define SQ_ARENA	(256u << 10)	/* bytes of strings and blobs per batch */
#define SQ_INFLIGHT	4		/* batches handed to the writer thread, at most */
#define SQ_WAKE		1		/* batches queued that wake an idle writer */
#define SQ_CKPT_FRAMES	1000		/* WAL frames that start a checkpoint */
#define SQ_WAL_FRAMES	16384		/* WAL frames a commit waits below */
#define SQ_MIGRATION_BLOCKS 5		/* 0005-ts-blocks.sql */
#define SQ_BLOCKS_FIRST	64		/* blocks a limited select tries first */
#define SQ_BLOCK_SPAN	10000000000ull	/* ns a new block spans at most (one row: any) */

/*
 * One value of a pending row: an integer, or bytes in the type's arena.
 * 16 bytes: a batch of 512 rows of 12 columns stays under 100 KiB.
 */
struct sq_val {
	enum decode_kind kind;
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
	uint8_t *arena;		/* SQ_ARENA bytes */
	size_t arena_len;
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
	struct sq_val *scratch;	/* one row being decoded */
	int64_t type_id;	/* its event_types row, the key of its ts_blocks */
};

struct sq_store {
	struct store base;	/* first */
	sqlite3 *db;
	struct store_type *types;
	sqlite3_stmt *cpu_add;	/* hot statements, prepared once */
	sqlite3_stmt *comm_put;
	sqlite3_stmt *drop_add;
	sqlite3_stmt *mark_put;
	sqlite3_stmt *sym_put;
	sqlite3_stmt *block_put;	/* the writer thread's */
	sqlite3_stmt *prog_find;	/* read side, prepared when first used */
	sqlite3_stmt *sym_find;
	bool in_txn;		/* between begin and commit */
	/* the writer thread (sq_writer_main()); under lock: */
	pthread_t writer;
	bool writer_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* to the writer: a batch, or stop */
	pthread_cond_t done;	/* from the writer: a batch ran */
	struct sq_batch *head, **tail;	/* queued batches */
	struct sq_batch *spare;		/* batches to reuse */
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
	struct store_indexes ix;	/* field indexes to keep (store_set_indexes()) */
};

/* A growable string for building SQL text. */
struct sq_buf {
	char *s;
	size_t len;
	size_t cap;
	bool oom;
};

static const struct store_ops sq_ops;
static int sq_flush_all(struct store *s);
static int sq_sync(struct store *s);
static void *sq_writer_main(void *arg);
static int sq_ckpt_start(struct sq_store *q, const char *path);

/* The SQLite handle whose base is @s (every store this backend opens is one). */
static struct sq_store *sq_store_of(struct store *s)
{
	return (struct sq_store *)s;
}

static int sq_err(struct store *s, int err, const char *what)
{
	return store_set_errmsg(s, err, "%s: %s", what, sqlite3_errmsg(sq_store_of(s)->db));
}

static int64_t sq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- SQL text ---- */

static void sq_buf_add(struct sq_buf *b, const char *s, size_t n)
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

static void sq_buf_str(struct sq_buf *b, const char *s)
{
	sq_buf_add(b, s, strlen(s));
}

/* Append @name as a quoted SQL identifier. */
static void sq_ident(struct sq_buf *b, const char *name)
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

static int sq_exec(struct store *s, const char *sql)
{
	if (sqlite3_exec(sq_store_of(s)->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sq_err(s, TC_ERR_DB, sql);
	return 0;
}

static int sq_prepare(struct store *s, const char *sql, sqlite3_stmt **st)
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

/* Step @st to completion, then reset it (finalize when @once). */
static int sq_run(struct store *s, sqlite3_stmt *st, bool once)
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

static void sq_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

static char *sq_dup_col(sqlite3_stmt *st, int i)
{
	const char *v = (const char *)sqlite3_column_text(st, i);

	return strdup(v ? v : "");
}

/* ---- open, migrate, close ---- */

static int sq_user_version(struct store *s, int *version)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "PRAGMA user_version", &st);

	if (ret < 0)
		return ret;
	if (sqlite3_step(st) == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	else
		ret = sq_err(s, TC_ERR_DB, "user_version");
	sqlite3_finalize(st);
	return ret;
}

static int sq_blocks_backfill(struct store *s);

/* The part of migration @version SQL cannot do alone, or 0. */
static int sq_migrate_code(struct store *s, int version)
{
	return version == SQ_MIGRATION_BLOCKS ? sq_blocks_backfill(s) : 0;
}

static int sq_migrate_one(struct store *s, const struct sql_migration *m)
{
	char pragma[64];
	int ret;

	ret = sq_exec(s, "BEGIN IMMEDIATE");
	if (ret < 0)
		return ret;
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", m->version);
	if (sq_exec(s, m->sql) < 0 || sq_migrate_code(s, m->version) < 0 ||
	    sq_exec(s, pragma) < 0 || sq_exec(s, "COMMIT") < 0) {
		char msg[STORE_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", s->errmsg);
		sqlite3_exec(sq_store_of(s)->db, "ROLLBACK", NULL, NULL, NULL);
		return store_set_errmsg(s, TC_ERR_DB_SCHEMA, "migration %s: %s", m->name, msg);
	}
	return 0;
}

static int sq_migrate(struct store *s)
{
	size_t n = sizeof(sql_migrations) / sizeof(sql_migrations[0]);
	int version = 0;
	int ret = sq_user_version(s, &version);

	if (ret < 0)
		return ret;
	if (version > SQL_SCHEMA_VERSION)
		return store_set_errmsg(s, TC_ERR_DB_SCHEMA,
					"database schema %d is newer than this program's %d",
					version, SQL_SCHEMA_VERSION);
	for (size_t i = 0; i < n && ret == 0; i++)
		if (sql_migrations[i].version > version)
			ret = sq_migrate_one(s, &sql_migrations[i]);
	return ret;
}

static int sq_setup_writer(struct store *s)
{
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
				    " bytes = bytes + excluded.bytes", &sq_store_of(s)->cpu_add);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO comms (host_id, pid, comm) VALUES (?, ?, ?)"
				    " ON CONFLICT (host_id, pid) DO UPDATE SET comm = excluded.comm",
				 &sq_store_of(s)->comm_put);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO drops (host_id, system, name, reason, count)"
				    " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE"
				    " SET count = count + excluded.count",
				 &sq_store_of(s)->drop_add);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO stream_marks (host_id, boot_id, session, stream, seq)"
				    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (host_id, boot_id, session,"
				    " stream) DO UPDATE SET seq = max(seq, excluded.seq)",
				 &sq_store_of(s)->mark_put);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT OR IGNORE INTO symbols (program_id, addr, size, name)"
				    " VALUES (?, ?, ?, ?)", &sq_store_of(s)->sym_put);
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO ts_blocks (type_id, lo, hi, min_ts, max_ts, span)"
				    " VALUES (?, ?, ?, ?, ?, ?)", &sq_store_of(s)->block_put);
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

int store_sqlite_open(const char *path, bool readonly, struct store **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	struct sq_store *q = calloc(1, sizeof(*q));
	/*
	 * The writer belongs to one thread at a time (opened by main, used by
	 * the ingest worker and the store's writer thread in turn, closed
	 * after both stopped): no per-call mutex.
	 */
	int flags = readonly ? SQLITE_OPEN_READONLY :
		    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
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
	if (sqlite3_open_v2(path, &q->db, flags, NULL) != SQLITE_OK) {
		ret = q->db ? TC_ERR_DB : -ENOMEM;
		goto out;
	}
	sqlite3_extended_result_codes(q->db, 1);
	sqlite3_busy_timeout(q->db, 5000);
	ret = readonly ? sq_setup_reader(&q->base) : sq_setup_writer(&q->base);
	if (ret == 0 && !readonly) {
		ret = -pthread_create(&q->writer, NULL, sq_writer_main, q);
		q->writer_started = ret == 0;
	}
	if (ret == 0 && !readonly)
		ret = sq_ckpt_start(q, path);
out:
	if (ret < 0) {
		sq_ops.close(&q->base);
		return ret;
	}
	*out = &q->base;
	return 0;
}

static void sq_batch_free(struct sq_batch *b)
{
	if (!b)
		return;
	free(b->vals);
	free(b->arena);
	free(b);
}

static void sq_type_free(struct store_type *t)
{
	sqlite3_finalize(t->insert);
	if (t->insert_b != t->insert_n)
		sqlite3_finalize(t->insert_b);
	sqlite3_finalize(t->insert_n);
	free(t->bound_n);
	free(t->values);
	free(t->head);
	sq_batch_free(t->cur);
	free(t->scratch);
	free(t->system);
	free(t->name);
	free(t->format);
	free(t->param);
	free(t);
}

static void sq_writer_stop(struct sq_store *q)
{
	if (!q->writer_started)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->writer, NULL);
	q->writer_started = false;
}

static void sq_ckpt_stop(struct sq_store *q)
{
	if (q->ckpt_started) {
		pthread_mutex_lock(&q->lock);
		q->ckpt_stop = true;
		pthread_cond_signal(&q->ckpt_wake);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->ckpt, NULL);
		q->ckpt_started = false;
	}
	sqlite3_close(q->ckdb);
	q->ckdb = NULL;
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
	while (q->types) {
		struct store_type *t = q->types;

		q->types = t->next;
		sq_type_free(t);
	}
	sqlite3_finalize(q->cpu_add);
	sqlite3_finalize(q->comm_put);
	sqlite3_finalize(q->drop_add);
	sqlite3_finalize(q->mark_put);
	sqlite3_finalize(q->sym_put);
	sqlite3_finalize(q->block_put);
	sqlite3_finalize(q->prog_find);
	sqlite3_finalize(q->sym_find);
	sqlite3_close(q->db);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->wake);
	pthread_cond_destroy(&q->done);
	pthread_cond_destroy(&q->ckpt_wake);
	pthread_cond_destroy(&q->ckpt_done);
	store_indexes_free(&q->ix);
	free(q);
}

/* ---- hosts, counters, comms ---- */

static int sq_host(struct store *s, const struct proto_hello *h, const char *peer_subject,
		   uint64_t *host_id)
{
	sqlite3_stmt *st;
	int64_t now = sq_now_ns();
	int ret = sq_prepare(s,
		"INSERT INTO hosts (name, machine_id, boot_id, kernel, ncpus, page_size,"
		" trace_clock, clock_offset_ns, peer_subject, first_seen, last_seen)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)"
		" ON CONFLICT (machine_id, name) DO UPDATE SET boot_id = excluded.boot_id,"
		" kernel = excluded.kernel, ncpus = excluded.ncpus,"
		" page_size = excluded.page_size, trace_clock = excluded.trace_clock,"
		" clock_offset_ns = coalesce(excluded.clock_offset_ns, clock_offset_ns),"
		" peer_subject = excluded.peer_subject, last_seen = excluded.last_seen"
		" RETURNING id", &st);

	if (ret < 0)
		return ret;
	sq_bind_text(st, 1, h->host);
	sq_bind_text(st, 2, h->machine_id);
	sq_bind_text(st, 3, h->boot_id);
	sq_bind_text(st, 4, h->kernel);
	sqlite3_bind_int64(st, 5, h->ncpus);
	sqlite3_bind_int64(st, 6, h->page_size);
	sq_bind_text(st, 7, h->trace_clock);
	if (h->clock.trace_ns || h->clock.realtime_ns)
		sqlite3_bind_int64(st, 8, h->clock.realtime_ns - (int64_t)h->clock.trace_ns);
	sq_bind_text(st, 9, peer_subject);
	sqlite3_bind_int64(st, 10, now);
	if (sqlite3_step(st) == SQLITE_ROW)
		*host_id = (uint64_t)sqlite3_column_int64(st, 0);
	else
		ret = sq_err(s, TC_ERR_DB, "host");
	sqlite3_finalize(st);
	return ret;
}

static int sq_host_clock(struct store *s, uint64_t host_id, int64_t offset_ns)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "UPDATE hosts SET clock_offset_ns = ?, last_seen = ?"
				" WHERE id = ?", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, offset_ns);
	sqlite3_bind_int64(st, 2, sq_now_ns());
	sqlite3_bind_int64(st, 3, (int64_t)host_id);
	ret = sq_run(s, st, false);
	if (ret == 0 && sqlite3_changes(sq_store_of(s)->db) == 0)
		ret = store_set_errmsg(s, -ENOENT, "no host %llu", (unsigned long long)host_id);
	sqlite3_finalize(st);
	return ret;
}

static int sq_cpu_received(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
			   uint64_t events, uint64_t bytes)
{
	sqlite3_stmt *st = sq_store_of(s)->cpu_add;

	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, cpu);
	sqlite3_bind_int64(st, 3, (int64_t)pages);
	sqlite3_bind_int64(st, 4, (int64_t)events);
	sqlite3_bind_int64(st, 5, (int64_t)bytes);
	return sq_run(s, st, false);
}

static int sq_cpu_stats(struct store *s, uint64_t host_id, const struct proto_cpu_stats *c)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s,
		"INSERT INTO cpus (host_id, cpu, agent_pages, agent_events, agent_bytes,"
		" overrun, dropped, commit_overrun, resent_pages, lost_pages, lost_events,"
		" pages_mmap, pages_splice, pages_read, copied_bytes)"
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		" ON CONFLICT (host_id, cpu) DO UPDATE SET agent_pages = excluded.agent_pages,"
		" agent_events = excluded.agent_events, agent_bytes = excluded.agent_bytes,"
		" overrun = excluded.overrun, dropped = excluded.dropped,"
		" commit_overrun = excluded.commit_overrun,"
		" resent_pages = excluded.resent_pages, lost_pages = excluded.lost_pages,"
		" lost_events = excluded.lost_events, pages_mmap = excluded.pages_mmap,"
		" pages_splice = excluded.pages_splice, pages_read = excluded.pages_read,"
		" copied_bytes = excluded.copied_bytes", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, c->cpu);
	sqlite3_bind_int64(st, 3, (int64_t)c->pages);
	sqlite3_bind_int64(st, 4, (int64_t)c->events);
	sqlite3_bind_int64(st, 5, (int64_t)c->bytes);
	sqlite3_bind_int64(st, 6, (int64_t)c->overrun);
	sqlite3_bind_int64(st, 7, (int64_t)c->dropped);
	sqlite3_bind_int64(st, 8, (int64_t)c->commit_overrun);
	sqlite3_bind_int64(st, 9, (int64_t)c->resent_pages);
	sqlite3_bind_int64(st, 10, (int64_t)c->lost_pages);
	sqlite3_bind_int64(st, 11, (int64_t)c->lost_events);
	sqlite3_bind_int64(st, 12, (int64_t)c->pages_mmap);
	sqlite3_bind_int64(st, 13, (int64_t)c->pages_splice);
	sqlite3_bind_int64(st, 14, (int64_t)c->pages_read);
	sqlite3_bind_int64(st, 15, (int64_t)c->copied_bytes);
	return sq_run(s, st, true);
}

static int sq_stream_marks(struct store *s, uint64_t host_id, const char *boot_id,
			   uint64_t session, uint64_t *seqs, uint32_t n)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT stream, seq FROM stream_marks WHERE host_id = ?"
				" AND boot_id = ? AND session = ?", &st);
	int rc;

	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < n; i++)
		seqs[i] = 0;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)session);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t stream = sqlite3_column_int64(st, 0);

		if (stream >= 0 && stream < (int64_t)n)
			seqs[stream] = (uint64_t)sqlite3_column_int64(st, 1);
	}
	if (rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "stream marks");
	sqlite3_finalize(st);
	return ret;
}

static int sq_stream_mark(struct store *s, uint64_t host_id, const char *boot_id,
			  uint64_t session, uint32_t stream, uint64_t seq)
{
	sqlite3_stmt *st = sq_store_of(s)->mark_put;

	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)session);
	sqlite3_bind_int64(st, 4, stream);
	sqlite3_bind_int64(st, 5, (int64_t)seq);
	return sq_run(s, st, false);
}

/* One statement on journal marks with two numbers to bind (capped to int64). */
static int sq_journal_run(struct store *s, const char *sql, uint64_t a, uint64_t b)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, sql, &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, a > INT64_MAX ? INT64_MAX : (int64_t)a);
	sqlite3_bind_int64(st, 2, b > INT64_MAX ? INT64_MAX : (int64_t)b);
	return sq_run(s, st, true);
}

static int sq_journal_mark(struct store *s, uint64_t file, uint64_t pos)
{
	return sq_journal_run(s, "INSERT OR REPLACE INTO journal_marks (file, pos) VALUES (?, ?)",
			      file, pos);
}

static int sq_journal_forget(struct store *s, uint64_t from, uint64_t to)
{
	return sq_journal_run(s, "DELETE FROM journal_marks WHERE file BETWEEN ? AND ?", from, to);
}

static int sq_journal_mark_get(struct store *s, uint64_t file, uint64_t *pos)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT pos FROM journal_marks WHERE file = ?", &st);
	int rc;

	if (ret < 0)
		return ret;
	*pos = 0;
	sqlite3_bind_int64(st, 1, (int64_t)file);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*pos = (uint64_t)sqlite3_column_int64(st, 0);
	else if (rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "journal mark");
	sqlite3_finalize(st);
	return ret;
}

static int sq_cpu_duplicates(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t n)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "INSERT INTO cpus (host_id, cpu, dup_pages) VALUES (?, ?, ?)"
				" ON CONFLICT (host_id, cpu) DO UPDATE"
				" SET dup_pages = dup_pages + excluded.dup_pages", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, cpu);
	sqlite3_bind_int64(st, 3, (int64_t)n);
	return sq_run(s, st, true);
}

static int sq_cmdlines(struct store *s, uint64_t host_id, const struct proto_cmdlines *c)
{
	sqlite3_stmt *st = sq_store_of(s)->comm_put;
	int ret = sq_exec(s, "SAVEPOINT tc_comms");

	for (uint32_t i = 0; i < c->count && ret == 0; i++) {
		const struct proto_cmdline *cl = &c->items[i];

		sqlite3_bind_int64(st, 1, (int64_t)host_id);
		sqlite3_bind_int64(st, 2, cl->pid);
		sqlite3_bind_text(st, 3, cl->comm, (int)strnlen(cl->comm, sizeof(cl->comm)),
				  SQLITE_TRANSIENT);
		ret = sq_run(s, st, false);
	}
	if (ret < 0)
		sqlite3_exec(sq_store_of(s)->db, "ROLLBACK TO tc_comms", NULL, NULL, NULL);
	sqlite3_exec(sq_store_of(s)->db, "RELEASE tc_comms", NULL, NULL, NULL);
	return ret;
}

/* ---- the checkpointer ---- */

/*
 * Checkpoints (copying committed pages from the WAL into the database
 * file) run on a thread and connection of their own, so the writes and
 * fsyncs they make are off the ingest path (PRAGMA wal_autocheckpoint
 * would run them inside COMMIT). After a commit that left SQ_CKPT_FRAMES
 * or more frames in the WAL, the checkpointer is asked for a PASSIVE
 * checkpoint. The WAL starts over from its beginning only when a
 * transaction starts with every frame copied, which a writer that never
 * pauses would rarely see: a commit that leaves SQ_WAL_FRAMES or more
 * waits for a checkpoint of everything, so the WAL stays bounded.
 */
static int sq_thread_policy(struct store *s, int policy)
{
	struct sq_store *q = sq_store_of(s);
	struct sched_param sp = { 0 };
	int ret = 0;

	if (q->writer_started)
		ret = pthread_setschedparam(q->writer, policy, &sp);
	if (ret == 0 && q->ckpt_started)
		ret = pthread_setschedparam(q->ckpt, policy, &sp);
	return -ret;
}

static void *sq_ckpt_main(void *arg)
{
	struct sq_store *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		unsigned req;

		while (q->ckpt_ran == q->ckpt_req && !q->ckpt_stop)
			pthread_cond_wait(&q->ckpt_wake, &q->lock);
		if (q->ckpt_stop)
			break;
		req = q->ckpt_req;
		pthread_mutex_unlock(&q->lock);
		/*
		 * A failure loses nothing (the frames stay in the WAL for the
		 * next one) and has no caller to go to; a full disk shows at
		 * the next COMMIT.
		 */
		sqlite3_wal_checkpoint_v2(q->ckdb, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_lock(&q->lock);
		q->ckpt_ran = req;
		pthread_cond_broadcast(&q->ckpt_done);
	}
	q->ckpt_ran = q->ckpt_req;
	pthread_cond_broadcast(&q->ckpt_done);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* The WAL hook: how many frames the WAL holds after a commit. */
static int sq_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct sq_store *q = arg;

	(void)db;
	(void)name;
	q->wal_frames = frames;
	return SQLITE_OK;
}

static void sq_ckpt_after_commit(struct sq_store *q)
{
	unsigned req;

	if (!q->ckpt_started || q->wal_frames < SQ_CKPT_FRAMES)
		return;
	pthread_mutex_lock(&q->lock);
	req = ++q->ckpt_req;
	pthread_cond_signal(&q->ckpt_wake);
	while (q->wal_frames >= SQ_WAL_FRAMES && q->ckpt_ran - req > (~0u >> 1))
		pthread_cond_wait(&q->ckpt_done, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

static int sq_ckpt_start(struct sq_store *q, const char *path)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
	int ret;

	if (sqlite3_open_v2(path, &q->ckdb, flags, NULL) != SQLITE_OK)
		return store_set_errmsg(&q->base, TC_ERR_DB, "checkpointer: %s",
					q->ckdb ? sqlite3_errmsg(q->ckdb) : "out of memory");
	sqlite3_busy_timeout(q->ckdb, 5000);
	if (sqlite3_exec(q->ckdb, "PRAGMA synchronous=NORMAL; PRAGMA cache_size=16",
			 NULL, NULL, NULL) != SQLITE_OK)
		return store_set_errmsg(&q->base, TC_ERR_DB, "checkpointer: %s",
					sqlite3_errmsg(q->ckdb));
	ret = -pthread_create(&q->ckpt, NULL, sq_ckpt_main, q);
	q->ckpt_started = ret == 0;
	if (ret == 0)
		sqlite3_wal_hook(q->db, sq_wal_hook, q);	/* replaces autocheckpoint */
	return ret;
}

/* Roll back the open transaction, with what the writer failed on. */
static void sq_rollback(struct store *s)
{
	struct sq_store *q = sq_store_of(s);

	for (struct store_type *t = q->types; t; t = t->next)
		if (t->cur)	/* rows gathered, not yet inserted: theirs too */
			t->cur->pending = t->cur->arena_len = 0;
	if (!sqlite3_get_autocommit(q->db))
		sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
	pthread_mutex_lock(&q->lock);
	q->werr = 0;
	pthread_mutex_unlock(&q->lock);
	q->in_txn = false;
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

/* On failure the transaction is rolled back. */
static int sq_commit(struct store *s)
{
	int ret = sq_flush_all(s) ?: sq_exec(s, "COMMIT");

	if (ret < 0)
		sq_rollback(s);
	else
		sq_ckpt_after_commit(sq_store_of(s));
	sq_store_of(s)->in_txn = false;
	return ret;
}

/* ---- event types and their tables ---- */

/* Names a field column may not take: fixed columns, rowid aliases, ours. */
static const char *const sq_reserved[] = {
	"host_id", "cpu", "ts", "trace_ts", "rowid", "oid", "_rowid_",
	"_tc_rowid", "_tc_host", "_tc_comm",
};

static void sq_column_name(const char *field, struct sq_buf *b)
{
	for (size_t i = 0; i < sizeof(sq_reserved) / sizeof(sq_reserved[0]); i++)
		if (!strcasecmp(field, sq_reserved[i])) {
			sq_buf_str(b, "field_");
			break;
		}
	sq_buf_str(b, field);
}

static const char *sq_sql_type(enum decode_kind kind)
{
	switch (kind) {
	case DECODE_SIGNED:
	case DECODE_UNSIGNED:
		return "INTEGER";
	case DECODE_STRING:
		return "TEXT";
	default:
		return "BLOB";
	}
}

/* "ev_<system>_<name>" with [^A-Za-z0-9_] -> '_'. */
static void sq_table_base(struct sq_buf *b, const char *system, const char *name)
{
	const char *parts[2] = { system, name };

	sq_buf_str(b, "ev");
	for (int i = 0; i < 2; i++) {
		sq_buf_str(b, "_");
		for (const char *p = parts[i]; *p; p++) {
			char c = *p;
			bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				  (c >= '0' && c <= '9') || c == '_';

			sq_buf_add(b, ok ? &c : "_", 1);
		}
	}
}

static int sq_name_taken(struct store *s, const char *table, bool *taken)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT 1 FROM sqlite_master WHERE name = ?1 COLLATE NOCASE"
				" UNION ALL SELECT 1 FROM event_types"
				" WHERE table_name = ?1 COLLATE NOCASE", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW: *taken = true; break;
	case SQLITE_DONE: *taken = false; break;
	default: ret = sq_err(s, TC_ERR_DB, "table name");
	}
	sqlite3_finalize(st);
	return ret;
}

/* A table name for a new type: the sanitised base, then _2, _3, ... */
static int sq_table_name(struct store *s, const char *system, const char *name, char **out)
{
	struct sq_buf b = { 0 };
	bool taken = true;
	int ret = 0;

	for (unsigned n = 1; taken && ret == 0 && n < 10000; n++) {
		char suffix[16];

		b.len = 0;
		sq_table_base(&b, system, name);
		if (n > 1) {
			snprintf(suffix, sizeof(suffix), "_%u", n);
			sq_buf_str(&b, suffix);
		}
		ret = b.oom ? -ENOMEM : sq_name_taken(s, b.s, &taken);
	}
	if (ret == 0 && taken)
		ret = store_set_errmsg(s, TC_ERR_DB, "no free table name for %s:%s", system, name);
	if (ret < 0)
		free(b.s);
	else
		*out = b.s;
	return ret;
}

static int sq_create_table(struct store *s, const char *table)
{
	struct sq_buf b = { 0 };
	int ret;

	sq_buf_str(&b, "CREATE TABLE ");
	sq_ident(&b, table);
	sq_buf_str(&b, " (host_id INTEGER NOT NULL, cpu INTEGER NOT NULL,"
		    " ts INTEGER NOT NULL, trace_ts INTEGER NOT NULL)");
	ret = b.oom ? -ENOMEM : sq_exec(s, b.s);
	free(b.s);
	return ret;
}

/*
 * Migration 5 for one event table: its rows in blocks of 64 consecutive
 * rowids become ts_blocks rows, then its per-row ts index goes.
 */
static int sq_blocks_backfill_one(struct store *s, int64_t type_id, const char *table)
{
	struct sq_buf q = { 0 }, drop = { 0 };
	sqlite3_stmt *st = NULL;
	int ret;

	sq_buf_str(&q, "INSERT INTO ts_blocks (type_id, lo, hi, min_ts, max_ts, span)"
		    " SELECT ?, min(rowid), max(rowid), min(ts), max(ts), max(ts) - min(ts) FROM ");
	sq_ident(&q, table);
	sq_buf_str(&q, " GROUP BY rowid >> 6");
	sq_buf_str(&drop, "DROP INDEX IF EXISTS ");
	sq_ident(&drop, table);
	drop.len--;	/* the index was "<table>_ts" */
	sq_buf_str(&drop, "_ts\"");
	ret = q.oom || drop.oom ? -ENOMEM : sq_prepare(s, q.s, &st);
	if (ret == 0) {
		sqlite3_bind_int64(st, 1, type_id);
		ret = sq_run(s, st, true);
	}
	if (ret == 0)
		ret = sq_exec(s, drop.s);
	free(q.s);
	free(drop.s);
	return ret;
}

/* Migration 5 for every event table, in event_types order. */
static int sq_blocks_backfill(struct store *s)
{
	sqlite3_stmt *st = NULL;
	int64_t id = INT64_MIN;
	int ret = sq_prepare(s, "SELECT id, table_name FROM event_types WHERE id > ?"
				" ORDER BY id LIMIT 1", &st);

	while (ret == 0) {
		char *table;

		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) != SQLITE_ROW)
			break;
		id = sqlite3_column_int64(st, 0);
		table = sq_dup_col(st, 1);
		sqlite3_reset(st);	/* no statement may read while an index is dropped */
		ret = table ? sq_blocks_backfill_one(s, id, table) : -ENOMEM;
		free(table);
	}
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/* A new (system, name): pick its table, record it, create the table. */
static int sq_type_create(struct store *s, const struct decode_type *t, const char *format,
			  int64_t *type_id, char **table)
{
	sqlite3_stmt *st;
	int ret = sq_table_name(s, t->system, t->name, table);

	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO event_types (system, name, table_name, format)"
				    " VALUES (?, ?, ?, ?) RETURNING id", &st);
	if (ret < 0)
		return ret;
	sqlite3_bind_text(st, 1, t->system, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, t->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, *table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, format, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		*type_id = sqlite3_column_int64(st, 0);
	else
		ret = sq_err(s, TC_ERR_DB, "event_types");
	sqlite3_finalize(st);
	return ret == 0 ? sq_create_table(s, *table) : ret;
}

/* Find or create the event_types row of @t; *table is malloc'd. */
static int sq_type_row(struct store *s, const struct decode_type *t, const char *format,
		       int64_t *type_id, char **table)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "UPDATE event_types SET format = ?3 WHERE system = ?1"
				" AND name = ?2 RETURNING id, table_name", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_text(st, 1, t->system, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, t->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, format, -1, SQLITE_STATIC);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		*type_id = sqlite3_column_int64(st, 0);
		*table = strdup((const char *)sqlite3_column_text(st, 1));
		ret = *table ? 0 : -ENOMEM;
		break;
	case SQLITE_DONE:
		ret = 1;
		break;
	default:
		ret = sq_err(s, TC_ERR_DB, "event_types");
	}
	sqlite3_finalize(st);
	return ret == 1 ? sq_type_create(s, t, format, type_id, table) : ret;
}

static int sq_field_known(struct store *s, int64_t type_id, const struct decode_field *f,
			  bool *known)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "UPDATE event_fields SET kind = ?, size = ?"
				" WHERE type_id = ? AND name = ?", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_text(st, 1, decode_kind_name(f->kind), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, f->size);
	sqlite3_bind_int64(st, 3, type_id);
	sqlite3_bind_text(st, 4, f->name, -1, SQLITE_STATIC);
	ret = sq_run(s, st, false);
	*known = sqlite3_changes(sq_store_of(s)->db) > 0;
	sqlite3_finalize(st);
	return ret;
}

static int sq_field_record(struct store *s, int64_t type_id, const struct decode_field *f,
			   const char *col)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "INSERT INTO event_fields (type_id, name, col, kind, size, ordinal)"
				" VALUES (?1, ?2, ?3, ?4, ?5, (SELECT coalesce(max(ordinal) + 1, 0)"
				" FROM event_fields WHERE type_id = ?1))", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, type_id);
	sqlite3_bind_text(st, 2, f->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, col, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, decode_kind_name(f->kind), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, f->size);
	return sq_run(s, st, true);
}

/* Make the column of @f exist (ALTER TABLE ADD COLUMN for a new field). */
static int sq_type_field(struct store *s, int64_t type_id, const char *table,
			 const struct decode_field *f)
{
	struct sq_buf col = { 0 }, ddl = { 0 };
	bool known = false;
	int ret = sq_field_known(s, type_id, f, &known);

	if (ret < 0 || known)
		return ret;
	sq_column_name(f->name, &col);
	sq_buf_str(&ddl, "ALTER TABLE ");
	sq_ident(&ddl, table);
	sq_buf_str(&ddl, " ADD COLUMN ");
	sq_ident(&ddl, col.oom ? "" : col.s);
	sq_buf_str(&ddl, " ");
	sq_buf_str(&ddl, sq_sql_type(f->kind));
	if (col.oom || ddl.oom)
		ret = -ENOMEM;
	if (ret == 0)
		ret = sq_exec(s, ddl.s);
	if (ret == 0)
		ret = sq_field_record(s, type_id, f, col.s);
	free(col.s);
	free(ddl.s);
	return ret;
}

/* ---- field indexes (store_set_indexes()) ---- */

/* Whether @ix names field @field of @system:@name. */
static bool sq_ix_wanted(const struct store_indexes *ix, const char *system, const char *name,
			 const char *field)
{
	for (size_t i = 0; i < ix->n; i++)
		if (!strcmp(ix->v[i].field, field) && !fnmatch(ix->v[i].system, system, 0) &&
		    !fnmatch(ix->v[i].event, name, 0))
			return true;
	return false;
}

/* "ix:<table>:<column>", the name of the index of @column of @table. */
static void sq_ix_name(struct sq_buf *b, const char *table, const char *column)
{
	sq_buf_str(b, "ix:");
	sq_buf_str(b, table);
	sq_buf_str(b, ":");
	sq_buf_str(b, column);
}

static int sq_ix_exists(struct store *s, const char *table, const char *column, bool *exists)
{
	struct sq_buf n = { 0 };
	sqlite3_stmt *st = NULL;
	int ret;

	sq_ix_name(&n, table, column);
	ret = n.oom ? -ENOMEM : sq_prepare(s, "SELECT 1 FROM sqlite_master WHERE type = 'index'"
					     " AND name = ?", &st);
	if (ret == 0) {
		sqlite3_bind_text(st, 1, n.s, -1, SQLITE_STATIC);
		switch (sqlite3_step(st)) {
		case SQLITE_ROW: *exists = true; break;
		case SQLITE_DONE: *exists = false; break;
		default: ret = sq_err(s, TC_ERR_DB, "index");
		}
	}
	sqlite3_finalize(st);
	free(n.s);
	return ret;
}

/* CREATE INDEX "ix:<table>:<column>" ON "<table>" ("<column>", ts), once. */
static int sq_ix_create(struct store *s, const char *table, const char *column,
			unsigned *created)
{
	struct sq_buf b = { 0 }, n = { 0 };
	bool exists = false;
	int ret = sq_ix_exists(s, table, column, &exists);

	if (ret < 0 || exists)
		return ret;
	sq_ix_name(&n, table, column);
	sq_buf_str(&b, "CREATE INDEX ");
	sq_ident(&b, n.oom ? "" : n.s);
	sq_buf_str(&b, " ON ");
	sq_ident(&b, table);
	sq_buf_str(&b, " (");
	sq_ident(&b, column);
	sq_buf_str(&b, ", ts)");
	ret = b.oom || n.oom ? -ENOMEM : sq_exec(s, b.s);
	if (ret == 0)
		(*created)++;
	free(b.s);
	free(n.s);
	return ret;
}

/*
 * The wanted indexes of type @type_id (@system:@name, table @table) that
 * are missing. Its columns are read first: no statement may be reading
 * while the schema changes.
 */
static int sq_ix_type(struct store *s, int64_t type_id, const char *system, const char *name,
		      const char *table, unsigned *created)
{
	const struct store_indexes *ix = &sq_store_of(s)->ix;
	sqlite3_stmt *st = NULL;
	char **cols = NULL;
	size_t n = 0;
	int ret = ix->n ? sq_prepare(s, "SELECT name, col FROM event_fields WHERE type_id = ?"
					" ORDER BY ordinal", &st) : 0;

	if (ret < 0 || !ix->n)
		return ret;
	sqlite3_bind_int64(st, 1, type_id);
	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		char **c;

		if (!sq_ix_wanted(ix, system, name, (const char *)sqlite3_column_text(st, 0)))
			continue;
		c = realloc(cols, (n + 1) * sizeof(*cols));
		if (c)
			cols = c;
		if (!c || !(cols[n++] = sq_dup_col(st, 1)))
			ret = -ENOMEM;
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < n; i++) {
		if (ret == 0 && cols[i])
			ret = sq_ix_create(s, table, cols[i], created);
		free(cols[i]);
	}
	free(cols);
	return ret;
}

/*
 * Our indexes ("ix:*") that @ix no longer names, or whose column is gone.
 * Their names are collected first, then dropped (no statement may read
 * while an index is dropped).
 */
static int sq_ix_drop_unwanted(struct store *s, unsigned *dropped)
{
	sqlite3_stmt *st = NULL;
	struct sq_buf drop = { 0 };
	int ret = sq_prepare(s, "SELECT i.name, t.system, t.name, f.name FROM sqlite_master AS i"
				" LEFT JOIN event_types AS t ON t.table_name = i.tbl_name"
				" LEFT JOIN event_fields AS f ON f.type_id = t.id"
				" AND i.name = 'ix:' || t.table_name || ':' || f.col"
				" WHERE i.type = 'index' AND i.name GLOB 'ix:*'", &st);

	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		const char *v[3];

		for (int k = 0; k < 3; k++)
			v[k] = (const char *)sqlite3_column_text(st, k + 1);
		if (v[0] && v[1] && v[2] && sq_ix_wanted(&sq_store_of(s)->ix, v[0], v[1], v[2]))
			continue;
		sq_buf_str(&drop, "DROP INDEX ");
		sq_ident(&drop, (const char *)sqlite3_column_text(st, 0));
		sq_buf_add(&drop, ";", 1);
		(*dropped)++;
	}
	sqlite3_finalize(st);
	if (ret == 0 && drop.len)
		ret = drop.oom ? -ENOMEM : sq_exec(s, drop.s);
	free(drop.s);
	return ret;
}

/* Every event type: its wanted indexes. */
static int sq_ix_all(struct store *s, unsigned *created)
{
	sqlite3_stmt *st = NULL;
	int64_t id = INT64_MIN;
	int ret = sq_prepare(s, "SELECT id, system, name, table_name FROM event_types"
				" WHERE id > ? ORDER BY id LIMIT 1", &st);

	while (ret == 0) {
		char *v[3];

		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) != SQLITE_ROW)
			break;
		id = sqlite3_column_int64(st, 0);
		for (int k = 0; k < 3; k++)
			v[k] = sq_dup_col(st, k + 1);
		sqlite3_reset(st);
		ret = v[0] && v[1] && v[2] ? sq_ix_type(s, id, v[0], v[1], v[2], created) : -ENOMEM;
		for (int k = 0; k < 3; k++)
			free(v[k]);
	}
	sqlite3_finalize(st);
	return ret;
}

static int sq_ix_copy(struct store_indexes *to, const struct store_indexes *from)
{
	to->v = calloc(from->n ? from->n : 1, sizeof(*to->v));
	if (!to->v)
		return -ENOMEM;
	for (to->n = 0; to->n < from->n; to->n++) {
		const struct store_index *f = &from->v[to->n];
		struct store_index *t = &to->v[to->n];

		t->system = strdup(f->system);
		t->event = strdup(f->event);
		t->field = strdup(f->field);
		if (!t->system || !t->event || !t->field) {
			to->n++;
			store_indexes_free(to);
			return -ENOMEM;
		}
	}
	return 0;
}

static int sq_set_indexes(struct store *s, const struct store_indexes *ix, unsigned *created,
			  unsigned *dropped)
{
	struct store_indexes copy = { 0 };
	int ret = sq_ix_copy(&copy, ix);

	if (ret < 0)
		return ret;
	store_indexes_free(&sq_store_of(s)->ix);
	sq_store_of(s)->ix = copy;
	ret = sq_exec(s, "BEGIN IMMEDIATE");
	if (ret == 0)
		ret = sq_ix_drop_unwanted(s, dropped) ?: sq_ix_all(s, created);
	if (ret == 0)
		ret = sq_exec(s, "COMMIT");
	else
		sqlite3_exec(sq_store_of(s)->db, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

/*
 * Whether a query may read through an index: some bind is a value its
 * WHERE requires a column to equal, and that column has an index.
 */
static int sq_ix_usable(struct store *s, const struct store_schema *sc,
			const struct store_bind *b, size_t nb, bool *usable)
{
	int ret = 0;

	*usable = false;
	for (size_t i = 0; i < nb && ret == 0 && !*usable; i++)
		if (b[i].eq_column)
			ret = sq_ix_exists(s, sc->table, b[i].eq_column, usable);
	return ret;
}

/* INSERT INTO "table" (host_id, cpu, ts, trace_ts, "f1", ...) VALUES (?, ...) */
static int sq_batch_prepare(struct store *s, struct store_type *t, unsigned rows,
			    sqlite3_stmt **st);

/*
 * Size the type's batches, prepare the multi-row INSERTs (a full batch's,
 * and one of a block's rows for what a partial batch holds), a scratch row.
 */
static int sq_batch_init(struct store *s, struct store_type *st)
{
	int limit = sqlite3_limit(sq_store_of(s)->db, SQLITE_LIMIT_VARIABLE_NUMBER, -1);
	unsigned rows = (unsigned)limit / st->ncols;
	int ret = 0;

	st->rows = rows < SQ_BATCH_ROWS ? rows : SQ_BATCH_ROWS;
	st->brows = st->rows < SQ_BLOCK_ROWS ? st->rows : SQ_BLOCK_ROWS;
	st->scratch = calloc(st->ncols, sizeof(*st->scratch));
	if (!st->scratch)
		return -ENOMEM;
	if (st->rows > 1) {
		size_t n = (size_t)st->rows * st->ncols;

		st->bound_n = malloc(n * sizeof(*st->bound_n));
		if (!st->bound_n)
			return -ENOMEM;
		memset(st->bound_n, 0xff, n * sizeof(*st->bound_n));	/* no kind: unbound */
		ret = sq_batch_prepare(s, st, st->rows, &st->insert_n);
	}
	if (ret == 0 && st->brows > 1 && st->brows < st->rows)
		ret = sq_batch_prepare(s, st, st->brows, &st->insert_b);
	else if (ret == 0)
		st->insert_b = st->insert_n;
	return ret;
}

static int sq_type_insert(struct store *s, struct store_type *st, const struct decode_type *t,
			  const char *table)
{
	struct sq_buf b = { 0 }, v = { 0 };
	int n = SQ_FIXED_COLS, ret;

	sq_buf_str(&b, "INSERT OR FAIL INTO ");	/* see sq_batch_exec() */
	sq_ident(&b, table);
	sq_buf_str(&b, " (host_id, cpu, ts, trace_ts");
	sq_buf_str(&v, "?, ?, ?, ?");
	for (unsigned i = 0; i < t->nfields; i++) {
		struct sq_buf col = { 0 };
		bool dup = false;

		for (unsigned j = 0; j < i && !dup; j++)
			dup = !strcmp(t->fields[j].name, t->fields[i].name);
		st->param[i] = dup ? 0 : ++n;
		if (dup)
			continue;
		sq_column_name(t->fields[i].name, &col);
		sq_buf_str(&b, ", ");
		sq_ident(&b, col.oom ? "" : col.s);
		sq_buf_str(&v, ", ?");
		b.oom |= col.oom;
		free(col.s);
	}
	sq_buf_str(&b, ") VALUES ");
	st->head = b.oom ? NULL : strdup(b.s);
	sq_buf_str(&b, "(");
	sq_buf_str(&b, v.oom ? "" : v.s);
	sq_buf_str(&b, ")");
	st->values = b.oom ? NULL : strdup(b.s + strlen(st->head));
	st->ncols = (unsigned)n;
	ret = b.oom || v.oom || !st->head || !st->values ? -ENOMEM :
	      sq_prepare(s, b.s, &st->insert);
	if (ret == 0)
		ret = sq_batch_init(s, st);
	free(b.s);
	free(v.s);
	return ret;
}

static struct store_type *sq_type_cached(struct store *s, const struct decode_type *t,
					 const char *format)
{
	for (struct store_type *st = sq_store_of(s)->types; st; st = st->next)
		if (!strcmp(st->system, t->system) && !strcmp(st->name, t->name) &&
		    st->nfields == t->nfields && !strcmp(st->format, format))
			return st;
	return NULL;
}

static struct store_type *sq_type_new(const struct decode_type *t, const char *format)
{
	struct store_type *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->system = strdup(t->system);
	st->name = strdup(t->name);
	st->format = strdup(format);
	st->nfields = t->nfields;
	st->param = calloc(t->nfields ? t->nfields : 1, sizeof(*st->param));
	if (!st->system || !st->name || !st->format || !st->param) {
		sq_type_free(st);
		return NULL;
	}
	return st;
}

/* The DDL and the INSERT for @t, inside the caller's savepoint. */
static int sq_type_build(struct store *s, struct store_type *st, const struct decode_type *t,
			 const char *format)
{
	char *table = NULL;
	int64_t type_id = 0;
	unsigned created = 0;
	int ret = sq_type_row(s, t, format, &type_id, &table);

	st->type_id = type_id;
	for (unsigned i = 0; i < t->nfields && ret == 0; i++)
		ret = sq_type_field(s, type_id, table, &t->fields[i]);
	if (ret == 0)
		ret = sq_ix_type(s, type_id, t->system, t->name, table, &created);
	if (ret == 0)
		ret = sq_type_insert(s, st, t, table);
	free(table);
	return ret;
}

static int sq_type(struct store *s, const struct decode_type *t, const char *format,
		   struct store_type **out)
{
	struct store_type *st = sq_type_cached(s, t, format);
	int ret;

	if (st) {
		*out = st;
		return 0;
	}
	ret = sq_flush_all(s);	/* the table may change */
	if (ret < 0)
		return ret;
	st = sq_type_new(t, format);
	if (!st)
		return -ENOMEM;
	ret = sq_exec(s, "SAVEPOINT tc_type");
	if (ret == 0) {
		ret = sq_type_build(s, st, t, format);
		if (ret < 0)
			sqlite3_exec(sq_store_of(s)->db, "ROLLBACK TO tc_type", NULL, NULL, NULL);
		sqlite3_exec(sq_store_of(s)->db, "RELEASE tc_type", NULL, NULL, NULL);
	}
	if (ret < 0) {
		sq_type_free(st);
		return ret;
	}
	st->next = sq_store_of(s)->types;
	sq_store_of(s)->types = st;
	*out = st;
	return 0;
}

static int sq_bind_val(sqlite3_stmt *st, int p, const struct sq_val *v)
{
	if (v->kind == DECODE_SIGNED || v->kind == DECODE_UNSIGNED)
		return sqlite3_bind_int64(st, p, v->i);
	if (v->kind == DECODE_STRING)
		return sqlite3_bind_text(st, p, v->p, (int)v->len, SQLITE_STATIC);
	return sqlite3_bind_blob(st, p, v->p, (int)v->len, SQLITE_STATIC);
}

/*
 * Bind @n rows of values from @v to @st (which holds n rows), run it and
 * reset it. Touches only the connection and @bound, no store state: the
 * writer thread runs it. Return: an SQLite result code.
 *
 * @bound (NULL: none) mirrors what @st's parameters hold: bindings outlive
 * sqlite3_reset(), so a value equal to the one bound at its place in the
 * last run is not bound again. Equal means the same kind and integer, or
 * the same address and length: SQLITE_STATIC bytes are read when the
 * statement runs, so they are this row's. Many columns hardly change
 * (host, CPU, common_type, flags, priorities), and in the writer thread a
 * bind cost as much as a quarter of inserting the row's value.
 */
static int sq_rows_step(const struct store_type *t, sqlite3_stmt *st, const struct sq_val *v,
			unsigned n, struct sq_val *bound)
{
	int rc;

	for (unsigned i = 0; i < n * t->ncols; i++) {
		if (bound && !memcmp(&bound[i], &v[i], sizeof(*v)))
			continue;
		rc = sq_bind_val(st, (int)i + 1, &v[i]);
		if (bound && rc == SQLITE_OK)
			bound[i] = v[i];
		else if (bound)
			memset(&bound[i], 0xff, sizeof(*bound));
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int sq_block_row(sqlite3_stmt *st, int64_t type_id, int64_t lo, int64_t hi,
			int64_t lo_ts, int64_t hi_ts)
{
	int rc;

	sqlite3_bind_int64(st, 1, type_id);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, hi);
	sqlite3_bind_int64(st, 4, lo_ts);
	sqlite3_bind_int64(st, 5, hi_ts);
	sqlite3_bind_int64(st, 6, (int64_t)((uint64_t)hi_ts - (uint64_t)lo_ts));
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * Record the @n rows of @t just inserted in blocks of its time index:
 * their rowids are the @n up to the last one inserted (the store is the
 * only writer, and SQLite gives a new row the largest rowid plus one),
 * their ts (column 2) are in @v. A block holds SQ_BLOCK_ROWS rows at
 * most (a batch is several blocks). A row that would widen its block past
 * SQ_BLOCK_SPAN starts the next one, so a batch that mixes resent old
 * pages with new ones does not make every query of the type read further
 * back. Touches only the connection. Return: an SQLite result code.
 */
static int sq_block_put(sqlite3 *db, sqlite3_stmt *st, const struct store_type *t,
			const struct sq_val *v, unsigned n)
{
	int64_t first = sqlite3_last_insert_rowid(db) - (int64_t)n + 1;
	int64_t lo_ts = INT64_MAX, hi_ts = INT64_MIN;
	unsigned start = 0;
	int rc = SQLITE_OK;

	for (unsigned r = 0; r < n && rc == SQLITE_OK; r++) {
		int64_t ts = v[(size_t)r * t->ncols + 2].i;
		int64_t a = ts < lo_ts ? ts : lo_ts, b = ts > hi_ts ? ts : hi_ts;

		if (r > start && (r - start == SQ_BLOCK_ROWS ||
				  (uint64_t)b - (uint64_t)a > SQ_BLOCK_SPAN)) {
			rc = sq_block_row(st, t->type_id, first + start, first + r - 1, lo_ts, hi_ts);
			start = r;
			a = b = ts;
		}
		lo_ts = a;
		hi_ts = b;
	}
	if (rc == SQLITE_OK && n)
		rc = sq_block_row(st, t->type_id, first + start, first + n - 1, lo_ts, hi_ts);
	return rc;
}

/*
 * Insert batch @b (a full one with the multi-row statement; a partial
 * one a block's rows at a time, the rest row by row) and its blocks.
 *
 * The INSERTs are OR FAIL: a failing row leaves the rows before it in
 * place instead of undoing its statement. That undo is never needed (a
 * failed INSERT fails the whole transaction, see sq_writer_fail()), and
 * keeping it made SQLite copy every page a multi-row INSERT touched to a
 * statement journal first: with one field index, more bytes than the rows
 * themselves.
 */
static int sq_batch_exec(struct sq_store *q, const struct sq_batch *b)
{
	const struct store_type *t = b->t;
	unsigned r = 0;
	int rc = SQLITE_OK;

	if (b->pending == t->rows && t->insert_n) {
		rc = sq_rows_step(t, t->insert_n, b->vals, b->pending, t->bound_n);
		r = b->pending;
	}
	for (; t->insert_b && b->pending - r >= t->brows && rc == SQLITE_OK; r += t->brows)
		rc = sq_rows_step(t, t->insert_b, b->vals + (size_t)r * t->ncols, t->brows,
				  NULL);
	for (; r < b->pending && rc == SQLITE_OK; r++)
		rc = sq_rows_step(t, t->insert, b->vals + (size_t)r * t->ncols, 1, NULL);
	if (rc == SQLITE_OK && b->pending)
		rc = sq_block_put(q->db, q->block_put, t, b->vals, b->pending);
	return rc;
}

static int sq_batch_prepare(struct store *s, struct store_type *t, unsigned rows,
			    sqlite3_stmt **st)
{
	struct sq_buf b = { 0 };
	int ret;

	sq_buf_str(&b, t->head);
	for (unsigned r = 0; r < rows; r++) {
		if (r)
			sq_buf_add(&b, ",", 1);
		sq_buf_str(&b, t->values);
	}
	ret = b.oom ? -ENOMEM : sq_prepare(s, b.s, st);
	free(b.s);
	return ret;
}

/* ---- the writer thread ---- */

/* Called with the lock held: keep the first failure for sq_sync(). */
static void sq_writer_fail(struct sq_store *q, int rc)
{
	if (q->werr)
		return;
	q->werr = TC_ERR_DB;
	snprintf(q->werrmsg, sizeof(q->werrmsg), "insert: %s (%s)", sqlite3_errmsg(q->db),
		 sqlite3_errstr(rc));
}

/* Run queued batches in order; after a failure, only recycle them. */
static void *sq_writer_main(void *arg)
{
	struct sq_store *q = arg;
	struct sq_batch *b;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->head && !q->stop) {
			q->idle = true;
			pthread_cond_wait(&q->wake, &q->lock);
			q->idle = false;
		}
		b = q->head;
		if (!b)
			break;
		q->head = b->next;
		if (!q->head)
			q->tail = &q->head;
		if (!q->werr) {
			int rc;

			pthread_mutex_unlock(&q->lock);
			rc = sq_batch_exec(q, b);
			pthread_mutex_lock(&q->lock);
			if (rc != SQLITE_OK)
				sq_writer_fail(q, rc);
		}
		b->next = q->spare;
		q->spare = b;
		q->inflight--;
		if (q->wait_below >= 0 && q->inflight <= (unsigned)q->wait_below)
			pthread_cond_signal(&q->done);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/*
 * Called with the lock held: wait until at most @n batches are in flight.
 * The writer wakes the caller only then, not after every batch: in this
 * VM a futex wake-up costs about as much as inserting a few rows.
 */
static void sq_wait_below(struct sq_store *q, unsigned n)
{
	if (q->idle && q->inflight > n)
		pthread_cond_signal(&q->wake);	/* sq_flush() let it sleep */
	q->wait_below = (int)n;
	while (q->inflight > n)
		pthread_cond_wait(&q->done, &q->lock);
	q->wait_below = -1;
}

/*
 * Wait until the writer has run every queued batch; after that the
 * connection is the caller's. Return: 0, or the writer's failure (until
 * the transaction is rolled back).
 */
static int sq_sync(struct store *s)
{
	struct sq_store *q = sq_store_of(s);
	int ret;

	if (!q->writer_started)
		return 0;
	pthread_mutex_lock(&q->lock);
	sq_wait_below(q, 0);
	ret = q->werr;
	if (ret)
		store_set_errmsg(s, ret, "%s", q->werrmsg);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/*
 * Queue @t's gathering rows to the writer. With SQ_INFLIGHT in flight,
 * wait until the writer has worked the queue down to half. An idle writer
 * is woken only once SQ_WAKE batches wait (or by sq_wait_below()): when
 * the caller and the writer share a CPU, a wake-up is a context switch,
 * which must come per several hundred rows, not per few dozen.
 */
static int sq_flush(struct store *s, struct store_type *t)
{
	struct sq_store *q = sq_store_of(s);
	struct sq_batch *b = t->cur;
	int ret;

	if (!b || !b->pending)
		return 0;
	t->cur = NULL;
	b->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->inflight >= SQ_INFLIGHT)
		sq_wait_below(q, SQ_INFLIGHT / 2);
	*q->tail = b;
	q->tail = &b->next;
	q->inflight++;
	ret = q->werr;
	if (ret)
		store_set_errmsg(s, ret, "%s", q->werrmsg);
	if (q->idle && q->inflight >= SQ_WAKE)
		pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/* Queue every type's gathering rows and wait until they are in. */
static int sq_flush_all(struct store *s)
{
	int ret = 0;

	for (struct store_type *t = sq_store_of(s)->types; t; t = t->next) {
		int r = sq_flush(s, t);

		ret = ret < 0 ? ret : r;
	}
	return sq_sync(s) ?: ret;
}

/* A batch for @t to gather rows in: a spare one, or a new one. */
static int sq_batch_get(struct store *s, struct store_type *t)
{
	struct sq_store *q = sq_store_of(s);
	size_t need = (size_t)t->rows * t->ncols;
	struct sq_batch *b;

	pthread_mutex_lock(&q->lock);
	b = q->spare;
	if (b)
		q->spare = b->next;
	pthread_mutex_unlock(&q->lock);
	if (!b && !(b = calloc(1, sizeof(*b))))
		return -ENOMEM;
	if (!b->arena)
		b->arena = malloc(SQ_ARENA);
	if (b->arena && b->cap < need) {
		struct sq_val *v = realloc(b->vals, need * sizeof(*v));

		if (v) {
			b->vals = v;
			b->cap = need;
		}
	}
	if (!b->arena || b->cap < need) {
		sq_batch_free(b);
		return -ENOMEM;
	}
	b->t = t;
	b->pending = 0;
	b->arena_len = 0;
	t->cur = b;
	return 0;
}

static int sq_val_of(struct sq_val *out, const struct decode_value *v)
{
	size_t len = 0;

	out->kind = v->kind;
	if (v->kind == DECODE_SIGNED)
		out->i = v->i;
	else if (v->kind == DECODE_UNSIGNED)
		out->i = (int64_t)v->u;	/* bit pattern */
	else if (v->kind == DECODE_STRING)
		out->p = v->str.s, len = v->str.len;
	else
		out->p = v->blob.p, len = v->blob.len;
	out->len = (uint32_t)len;
	return len > INT32_MAX ? -E2BIG : 0;	/* SQLite takes an int */
}

/*
 * Decode @ev's fields into @row (strings and blobs still pointing into the
 * page); *@bytes receives how many bytes of them there are.
 */
static int sq_row_decode(struct store *s, const struct store_type *t, struct sq_val *row,
			 uint64_t host_id, const struct decode_event *ev, int64_t ts_wall,
			 size_t *bytes)
{
	size_t n = 0;

	row[0] = (struct sq_val){ .kind = DECODE_SIGNED, .i = (int64_t)host_id };
	row[1] = (struct sq_val){ .kind = DECODE_SIGNED, .i = ev->cpu };
	row[2] = (struct sq_val){ .kind = DECODE_SIGNED, .i = ts_wall };
	row[3] = (struct sq_val){ .kind = DECODE_SIGNED, .i = (int64_t)ev->ts };
	for (unsigned i = 0; i < t->nfields; i++) {
		struct decode_value v;
		int ret;

		if (!t->param[i])
			continue;
		ret = decode_field_value(ev, i, &v);
		if (ret < 0)
			return store_set_errmsg(s, ret, "field %s: %s", ev->type->fields[i].name,
						tc_strerror(ret));
		ret = sq_val_of(&row[t->param[i] - 1], &v);
		if (ret < 0)
			return store_set_errmsg(s, ret, "field %s: %s", ev->type->fields[i].name,
						tc_strerror(ret));
		if (v.kind == DECODE_STRING || v.kind == DECODE_BLOB)
			n += row[t->param[i] - 1].len;
	}
	*bytes = n;
	return 0;
}

/* Copy the row's strings and blobs out of the page, into the arena. */
static void sq_row_keep(struct sq_batch *b, unsigned ncols, struct sq_val *row)
{
	for (unsigned c = SQ_FIXED_COLS; c < ncols; c++) {
		if (row[c].kind != DECODE_STRING && row[c].kind != DECODE_BLOB)
			continue;
		if (row[c].len)
			memcpy(b->arena + b->arena_len, row[c].p, row[c].len);
		row[c].p = b->arena + b->arena_len;
		b->arena_len += row[c].len;
	}
}

static int sq_insert(struct store *s, struct store_type *t, uint64_t host_id,
		     const struct decode_event *ev, int64_t ts_wall)
{
	struct sq_store *q = sq_store_of(s);
	struct sq_val *row = t->scratch, *dst;
	struct sq_batch *b = t->cur;
	size_t bytes = 0, size = t->ncols * sizeof(*row);
	int ret;

	if (ev->type->nfields != t->nfields)
		return store_set_errmsg(s, -EINVAL, "event does not match its store type");
	/* rows gathering: decode straight into the batch's next row */
	if (b)
		row = b->vals + (size_t)b->pending * t->ncols;
	ret = sq_row_decode(s, t, row, host_id, ev, ts_wall, &bytes);
	if (ret < 0)
		return ret;
	/* a flush hands the batch to the writer: the row moves out first */
	if (b && (bytes > SQ_ARENA - b->arena_len || !q->in_txn)) {
		memcpy(t->scratch, row, size);
		row = t->scratch;
	}
	if (t->rows < 2 || bytes > SQ_ARENA || !q->in_txn) {
		/* alone, straight from the page; what is gathering goes first */
		ret = sq_flush(s, t) ?: sq_sync(s) ?: sq_exec(s, "SAVEPOINT tc_row");
		if (ret < 0)
			return ret;
		if (sq_rows_step(t, t->insert, row, 1, NULL) != SQLITE_OK ||
		    sq_block_put(q->db, q->block_put, t, row, 1) != SQLITE_OK) {
			ret = sq_err(s, TC_ERR_DB, "step");
			sqlite3_exec(q->db, "ROLLBACK TO tc_row", NULL, NULL, NULL);
		}
		sqlite3_exec(q->db, "RELEASE tc_row", NULL, NULL, NULL);
		return ret;
	}
	if (t->cur && bytes > SQ_ARENA - t->cur->arena_len && (ret = sq_flush(s, t)) < 0)
		return ret;
	if (!t->cur && (ret = sq_batch_get(s, t)) < 0)
		return ret;
	b = t->cur;
	dst = b->vals + (size_t)b->pending * t->ncols;
	if (row != dst)
		memcpy(dst, row, size);
	sq_row_keep(b, t->ncols, dst);
	if (++b->pending == t->rows)
		return sq_flush(s, t);
	return 0;
}

/* ---- read side ---- */

static enum decode_kind sq_kind(const char *name)
{
	for (int k = DECODE_SIGNED; k <= DECODE_BLOB; k++)
		if (name && !strcmp(name, decode_kind_name((enum decode_kind)k)))
			return (enum decode_kind)k;
	return DECODE_BLOB;
}


static int sq_schema_cols(struct store *s, int64_t type_id, struct store_schema *sc)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int ret = sq_prepare(s, "SELECT name, col, kind FROM event_fields WHERE type_id = ?"
				" ORDER BY ordinal", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, type_id);
	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		struct store_col *c;

		if (sc->ncols == cap) {
			cap = cap ? cap * 2 : 16;
			c = realloc(sc->cols, cap * sizeof(*c));
			if (!c) {
				ret = -ENOMEM;
				break;
			}
			sc->cols = c;
		}
		c = &sc->cols[sc->ncols++];
		c->name = sq_dup_col(st, 0);
		c->column = sq_dup_col(st, 1);
		c->kind = sq_kind((const char *)sqlite3_column_text(st, 2));
		if (!c->name || !c->column)
			ret = -ENOMEM;
		else if (!strcasecmp(c->column, "comm"))
			sc->comm_joined = false;
	}
	sqlite3_finalize(st);
	return ret;
}

/* Build the schema of the event_types row @st is on (id, system, name, table). */
static int sq_schema_load(struct store *s, sqlite3_stmt *st, struct store_schema **out)
{
	struct store_schema *sc = calloc(1, sizeof(*sc));
	int ret = -ENOMEM;

	if (!sc)
		return -ENOMEM;
	sc->comm_joined = true;
	sc->system = sq_dup_col(st, 1);
	sc->name = sq_dup_col(st, 2);
	sc->table = sq_dup_col(st, 3);
	sc->type_id = sqlite3_column_int64(st, 0);
	if (sc->system && sc->name && sc->table)
		ret = sq_schema_cols(s, sqlite3_column_int64(st, 0), sc);
	if (ret < 0) {
		store_schema_free(sc);
		return ret;
	}
	*out = sc;
	return 0;
}

/* After a first match, collect the other systems for the error message. */
static int sq_ambiguous(struct store *s, sqlite3_stmt *st, const char *event)
{
	struct sq_buf b = { 0 };
	int ret;

	sq_buf_str(&b, (const char *)sqlite3_column_text(st, 1));
	while (sqlite3_step(st) == SQLITE_ROW) {
		sq_buf_str(&b, ", ");
		sq_buf_str(&b, (const char *)sqlite3_column_text(st, 1));
	}
	ret = store_set_errmsg(s, TC_ERR_AMBIGUOUS,
			       "event \"%s\" exists in several systems: %s; name one as SYSTEM:%s",
			       event, b.oom ? "?" : b.s, event);
	free(b.s);
	return ret;
}

static int sq_schema_get(struct store *s, const char *system, const char *event,
			 struct store_schema **out)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT id, system, name, table_name FROM event_types"
				" WHERE name = ?1 AND (?2 IS NULL OR system = ?2) ORDER BY system",
			     &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_text(st, 1, event, -1, SQLITE_STATIC);
	sq_bind_text(st, 2, system);
	if (sqlite3_step(st) != SQLITE_ROW) {
		ret = store_set_errmsg(s, TC_ERR_UNKNOWN_EVENT, "no event %s%s%s",
				       system ? system : "", system ? ":" : "", event);
	} else {
		ret = sq_schema_load(s, st, out);
		if (ret == 0 && !system && sqlite3_step(st) == SQLITE_ROW) {
			store_schema_free(*out);
			sqlite3_reset(st);
			sqlite3_step(st);
			ret = sq_ambiguous(s, st, event);
		}
	}
	sqlite3_finalize(st);
	return ret;
}

static int sq_schema_list(struct store *s, const char *system,
			  int (*fn)(void *ctx, const struct store_schema *sc), void *ctx)
{
	sqlite3_stmt *st;
	bool any = false;
	int ret = sq_prepare(s, "SELECT id, system, name, table_name FROM event_types"
				" WHERE ?1 IS NULL OR system = ?1 ORDER BY system, name", &st);

	if (ret < 0)
		return ret;
	sq_bind_text(st, 1, system);
	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		struct store_schema *sc;

		any = true;
		ret = sq_schema_load(s, st, &sc);
		if (ret == 0) {
			ret = fn(ctx, sc);
			store_schema_free(sc);
		}
	}
	sqlite3_finalize(st);
	if (ret == 0 && !any && system)
		ret = store_set_errmsg(s, TC_ERR_UNKNOWN_EVENT, "no events in system %s", system);
	return ret;
}

static int sq_col_index(const struct store_schema *sc, const char *name)
{
	for (size_t i = 0; i < sc->ncols; i++)
		if (!strcmp(sc->cols[i].name, name))
			return (int)i;
	return -1;
}

/*
 * Bind @b to the WHERE's '?' parameters: the nameless ones, in order (the
 * store's own are named, and may come first in the statement).
 */
static int sq_bind_where(struct store *s, sqlite3_stmt *st, const struct store_bind *b,
			 size_t nb)
{
	int p = 0, np = sqlite3_bind_parameter_count(st);

	for (size_t i = 0; i < nb; i++) {
		int rc;

		while (++p <= np && sqlite3_bind_parameter_name(st, p))
			;
		if (p > np)
			return store_set_errmsg(s, TC_ERR_DB, "bind: more values than parameters");

		switch (b[i].kind) {
		case DECODE_SIGNED:
		case DECODE_UNSIGNED:
			rc = sqlite3_bind_int64(st, p, b[i].i);
			break;
		case DECODE_STRING:
			rc = sqlite3_bind_text(st, p, b[i].s, (int)b[i].len, SQLITE_TRANSIENT);
			break;
		default:
			rc = sqlite3_bind_blob(st, p, b[i].s, (int)b[i].len, SQLITE_TRANSIENT);
		}
		if (rc != SQLITE_OK)
			return sq_err(s, TC_ERR_DB, "bind");
	}
	return 0;
}

/*
 * The rows a time-ordered query reads, through the time index (see
 * schema.sql, "Time index"): ts in [lo, hi], found in the blocks that
 * start in [bmin, hi] and end at or after lo. Every block that can hold a
 * row with ts >= lo starts at or after lo minus the widest block's span.
 */
struct sq_range {
	int64_t lo, hi;		/* ts bounds, inclusive */
	int64_t bmin;
	bool keyset;		/* only rows after (after_ts, after_rowid) */
	int64_t after_ts;
	int64_t after_rowid;
	int64_t limit;		/* -1: none */
	bool by_index;		/* rows come through a field index, not blocks */
};

/*
 * Whether @where names the comms join's "comm": the word, bare or in
 * double quotes, in any case, outside a string literal (the filter
 * compiler binds every value, so it writes none; skipping them is for any
 * other caller).
 */
static bool sq_reads_comm(const struct store_schema *sc, const char *where)
{
	const char *p = where;

	while (sc->comm_joined && p && *p) {
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
				     "0123456789");

		if ((n == 4 && !strncasecmp(p, "comm", 4)) || !strncasecmp(p, "\"comm\"", 6))
			return true;
		if (*p == '"' || *p == '\'') {
			const char *end = strchr(p + 1, *p);	/* "" inside: two names, fine */

			p = end ? end + 1 : p + strlen(p);
		} else {
			p += n ? n : 1;
		}
	}
	return false;
}

/*
 * FROM (SELECT e.rowid AS _tc_rowid, e.*[, h.name AS _tc_host, c.comm AS _tc_comm]
 *       [, c.comm AS comm] FROM [ts_blocks AS b CROSS JOIN] "t" AS e
 *       [LEFT JOIN hosts ...] [LEFT JOIN comms ...] [WHERE <blocks of @r>])
 * WHERE (where) [AND ts BETWEEN lo AND hi] [AND keyset]: the WHERE text sees
 * only the subquery's columns, so no name there is ambiguous. With @r, each
 * block's rows are read by rowid range (CROSS JOIN keeps blocks outer),
 * unless r->by_index: then SQLite reads a field index by (value, ts).
 * Only @rows (a select) joins host names and comms for the output; a count
 * joins comms only when its WHERE reads them (an index can then count
 * without reading the rows).
 */
static void sq_from(struct sq_buf *b, const struct store_schema *sc, const char *where,
		    const struct sq_range *r, bool rows)
{
	int pid = sq_col_index(sc, "common_pid");
	bool blocks = r && !r->by_index, comms = rows || sq_reads_comm(sc, where);

	sq_buf_str(b, " FROM (SELECT e.rowid AS _tc_rowid, e.*");
	if (rows)
		sq_buf_str(b, ", h.name AS _tc_host, c.comm AS _tc_comm");
	if (comms && sc->comm_joined)
		sq_buf_str(b, ", c.comm AS comm");
	sq_buf_str(b, blocks ? " FROM ts_blocks AS b CROSS JOIN " : " FROM ");
	sq_ident(b, sc->table);
	sq_buf_str(b, blocks ? " AS e ON e.rowid BETWEEN b.lo AND b.hi" : " AS e");
	if (rows)
		sq_buf_str(b, " LEFT JOIN hosts AS h ON h.id = e.host_id");
	if (comms && pid >= 0) {
		sq_buf_str(b, " LEFT JOIN comms AS c ON c.host_id = e.host_id AND c.pid = e.");
		sq_ident(b, sc->cols[pid].column);
	} else if (comms) {
		sq_buf_str(b, " LEFT JOIN comms AS c ON 0");
	}
	if (blocks)
		sq_buf_str(b, " WHERE b.type_id = :tc_type AND b.min_ts BETWEEN :tc_bmin AND :tc_hi"
			   " AND b.max_ts >= :tc_lo");
	sq_buf_str(b, ") WHERE (");
	sq_buf_str(b, where && *where ? where : "1");
	sq_buf_str(b, ")");
	if (r)
		sq_buf_str(b, " AND ts BETWEEN :tc_lo AND :tc_hi");
	if (r && r->keyset)
		sq_buf_str(b, " AND (ts, _tc_rowid) > (:tc_after_ts, :tc_after_rowid)");
}

static void sq_bind_named(sqlite3_stmt *st, const char *name, int64_t v)
{
	int i = sqlite3_bind_parameter_index(st, name);

	if (i > 0)
		sqlite3_bind_int64(st, i, v);
}

/* Bind the WHERE's values and those of @r (when set) to @st. */
static int sq_bind_all(struct store *s, sqlite3_stmt *st, const struct store_bind *b, size_t nb,
		       const struct store_schema *sc, const struct sq_range *r)
{
	int ret = sq_bind_where(s, st, b, nb);

	if (ret < 0 || !r)
		return ret;
	sq_bind_named(st, ":tc_type", sc->type_id);
	sq_bind_named(st, ":tc_bmin", r->bmin);
	sq_bind_named(st, ":tc_lo", r->lo);
	sq_bind_named(st, ":tc_hi", r->hi);
	sq_bind_named(st, ":tc_after_ts", r->after_ts);
	sq_bind_named(st, ":tc_after_rowid", r->after_rowid);
	sq_bind_named(st, ":tc_limit", r->limit);
	return 0;
}

/* An integer a statement of one bound integer yields (NULL: @dflt). */
static int sq_int1(struct store *s, const char *sql, int64_t arg, int64_t dflt, int64_t *out)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, sql, &st);
	int rc;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, arg);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_type(st, 0) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		*out = dflt;
	else
		ret = sq_err(s, TC_ERR_DB, "ts_blocks");
	sqlite3_finalize(st);
	return ret;
}

/* The widest span of a block of type @type_id (0: none). */
static int sq_max_span(struct store *s, int64_t type_id, int64_t *span)
{
	return sq_int1(s, "SELECT max(span) FROM ts_blocks WHERE type_id = ?", type_id, 0, span);
}

/*
 * @r for a query of @sc over @win (NULL: all time), starting after
 * (@after_ts, @after_rowid) when @after_rowid != 0.
 */
static int sq_range_init(struct store *s, const struct store_schema *sc,
			 const struct store_window *win, int64_t after_ts, uint64_t after_rowid,
			 size_t limit, struct sq_range *r)
{
	int64_t span = 0;
	int ret = sq_max_span(s, sc->type_id, &span);

	if (ret < 0)
		return ret;
	r->lo = win ? win->from_ts : INT64_MIN;
	r->hi = !win || win->to_ts == INT64_MAX ? INT64_MAX :
		win->to_ts == INT64_MIN ? INT64_MIN : win->to_ts - 1;
	r->keyset = after_rowid != 0;
	r->by_index = false;
	r->after_ts = after_ts;
	r->after_rowid = (int64_t)after_rowid;
	if (r->keyset && after_ts > r->lo)
		r->lo = after_ts;
	r->bmin = r->lo < INT64_MIN + span ? INT64_MIN : r->lo - span;
	r->limit = limit ? (int64_t)limit : -1;
	if (win && win->to_ts == INT64_MIN)	/* an empty range */
		r->lo = INT64_MAX, r->hi = INT64_MIN;
	return 0;
}

/*
 * How many rows of @r there are, counting no further than r->limit, and
 * the newest ts among those counted (in block order, not time order).
 */
static int sq_count_upto(struct store *s, const struct store_schema *sc, const char *where,
			 const struct store_bind *b, size_t nb, const struct sq_range *r,
			 int64_t *n, int64_t *max_ts)
{
	struct sq_buf q = { 0 };
	sqlite3_stmt *st = NULL;
	int ret;

	sq_buf_str(&q, "SELECT count(*), max(ts) FROM (SELECT ts");
	sq_from(&q, sc, where, r, false);
	sq_buf_str(&q, " LIMIT :tc_limit)");
	ret = q.oom ? -ENOMEM : sq_prepare(s, q.s, &st);
	if (ret == 0)
		ret = sq_bind_all(s, st, b, nb, sc, r);
	if (ret == 0) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			*n = sqlite3_column_int64(st, 0);
			*max_ts = sqlite3_column_int64(st, 1);
		} else {
			ret = sq_err(s, TC_ERR_DB, "count");
		}
	}
	sqlite3_finalize(st);
	free(q.s);
	return ret;
}

/*
 * For a limited select: lower r->hi to just before the start of the k-th
 * block from r->bmin on (64, 512, ... blocks) as long as the rows before
 * it hold r->limit matches, then to the newest ts of r->limit of them.
 * Rows with ts below a block's start lie only in blocks that start
 * earlier, and the r->limit-th oldest match is no newer than the newest
 * of any r->limit matches, so the first r->limit rows in time order stay
 * the same, and only the blocks that start by then are read and sorted.
 */
static int sq_range_fit(struct store *s, const struct store_schema *sc, const char *where,
			const struct store_bind *b, size_t nb, struct sq_range *r)
{
	int64_t hi = r->hi, start, n = 0, newest = 0;
	int ret = 0;

	for (int64_t k = SQ_BLOCKS_FIRST; ret == 0; k *= 8) {
		sqlite3_stmt *st;
		int rc;

		ret = sq_prepare(s, "SELECT min_ts FROM ts_blocks WHERE type_id = ? AND min_ts >= ?"
				    " ORDER BY min_ts LIMIT 1 OFFSET ?", &st);
		if (ret < 0)
			break;
		sqlite3_bind_int64(st, 1, sc->type_id);
		sqlite3_bind_int64(st, 2, r->bmin);
		sqlite3_bind_int64(st, 3, k);
		rc = sqlite3_step(st);
		start = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
		sqlite3_finalize(st);
		if (rc != SQLITE_ROW) {
			ret = rc == SQLITE_DONE ? 0 : sq_err(s, TC_ERR_DB, "ts_blocks");
			break;	/* no k-th block: read them all */
		}
		if (start > hi)
			break;
		if (start == INT64_MIN)
			continue;
		r->hi = start - 1;
		ret = sq_count_upto(s, sc, where, b, nb, r, &n, &newest);
		if (ret == 0 && n >= r->limit) {
			r->hi = newest;
			return 0;
		}
		r->hi = hi;
	}
	r->hi = hi;
	return ret;
}

static int sq_count(struct store *s, const struct store_schema *sc, const char *where,
		    const struct store_bind *b, size_t nb, const struct store_window *win,
		    uint64_t *count)
{
	struct sq_buf q = { 0 };
	struct sq_range r;
	sqlite3_stmt *st = NULL;
	int ret = sq_flush_all(s);

	if (ret == 0 && win)
		ret = sq_range_init(s, sc, win, 0, 0, 0, &r) ?:
		      sq_ix_usable(s, sc, b, nb, &r.by_index);
	if (ret < 0)
		return ret;
	sq_buf_str(&q, "SELECT count(*)");
	sq_from(&q, sc, where, win ? &r : NULL, false);
	ret = q.oom ? -ENOMEM : sq_prepare(s, q.s, &st);
	if (ret == 0)
		ret = sq_bind_all(s, st, b, nb, sc, win ? &r : NULL);
	if (ret == 0) {
		if (sqlite3_step(st) == SQLITE_ROW)
			*count = (uint64_t)sqlite3_column_int64(st, 0);
		else
			ret = sq_err(s, TC_ERR_DB, "count");
	}
	sqlite3_finalize(st);
	free(q.s);
	return ret;
}

static void sq_select_sql(struct sq_buf *q, const struct store_schema *sc, const char *where,
			  const struct sq_range *r)
{
	sq_buf_str(q, "SELECT _tc_rowid, host_id, _tc_host, cpu, ts, trace_ts, _tc_comm");
	for (size_t i = 0; i < sc->ncols; i++) {
		sq_buf_str(q, ", ");
		sq_ident(q, sc->cols[i].column);
	}
	sq_from(q, sc, where, r, true);
	sq_buf_str(q, " ORDER BY ts, _tc_rowid LIMIT :tc_limit");
}

/* Column @i of the current row as schema column @c's value. */
static void sq_row_value(sqlite3_stmt *st, int i, enum decode_kind kind,
			 struct decode_value *v, bool *null)
{
	*null = false;
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		*null = true;
		memset(v, 0, sizeof(*v));
		v->kind = kind;
		break;
	case SQLITE_TEXT:
		v->kind = DECODE_STRING;
		v->str.s = (const char *)sqlite3_column_text(st, i);
		v->str.len = (size_t)sqlite3_column_bytes(st, i);
		break;
	case SQLITE_BLOB:
		v->kind = DECODE_BLOB;
		v->blob.p = sqlite3_column_blob(st, i);
		v->blob.len = (size_t)sqlite3_column_bytes(st, i);
		break;
	default:	/* INTEGER (a REAL never gets stored) */
		v->kind = kind == DECODE_UNSIGNED ? DECODE_UNSIGNED : DECODE_SIGNED;
		v->i = sqlite3_column_int64(st, i);
	}
}

struct sq_rowbuf {
	struct decode_value *vals;
	bool *null;
	int pid;	/* schema index of common_pid, or -1 */
};

static void sq_row(sqlite3_stmt *st, const struct store_schema *sc, struct sq_rowbuf *rb,
		   struct store_row *r)
{
	memset(r, 0, sizeof(*r));
	r->rowid = (uint64_t)sqlite3_column_int64(st, 0);
	r->host_id = (uint64_t)sqlite3_column_int64(st, 1);
	r->host = (const char *)sqlite3_column_text(st, 2);
	r->cpu = (uint32_t)sqlite3_column_int64(st, 3);
	r->ts = sqlite3_column_int64(st, 4);
	r->trace_ts = (uint64_t)sqlite3_column_int64(st, 5);
	r->comm = (const char *)sqlite3_column_text(st, 6);
	for (size_t i = 0; i < sc->ncols; i++)
		sq_row_value(st, 7 + (int)i, sc->cols[i].kind, &rb->vals[i], &rb->null[i]);
	r->pid = rb->pid >= 0 && !rb->null[rb->pid] ? (int)rb->vals[rb->pid].i : -1;
	r->nvals = sc->ncols;
	r->vals = rb->vals;
	r->null = rb->null;
}

static int sq_select_run(struct store *s, sqlite3_stmt *st, const struct store_schema *sc,
			 store_row_fn fn, void *ctx)
{
	struct sq_rowbuf rb = { .pid = sq_col_index(sc, "common_pid") };
	int rows = 0, rc, ret = 0;

	rb.vals = calloc(sc->ncols + 1, sizeof(*rb.vals));
	rb.null = calloc(sc->ncols + 1, sizeof(*rb.null));
	if (!rb.vals || !rb.null)
		ret = -ENOMEM;
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_row r;

		sq_row(st, sc, &rb, &r);
		ret = fn(ctx, &r);
		rows++;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "select");
	free(rb.vals);
	free(rb.null);
	return ret ? ret : rows;
}

static int sq_select(struct store *s, const struct store_schema *sc, const char *where,
		     const struct store_bind *b, size_t nb, const struct store_window *win,
		     int64_t after_ts, uint64_t after_rowid, size_t limit, store_row_fn fn,
		     void *ctx)
{
	struct sq_buf q = { 0 };
	struct sq_range r;
	sqlite3_stmt *st = NULL;
	int ret = sq_flush_all(s) ?: sq_range_init(s, sc, win, after_ts, after_rowid, limit, &r) ?:
		  sq_ix_usable(s, sc, b, nb, &r.by_index);

	if (ret == 0 && limit && !r.by_index)
		ret = sq_range_fit(s, sc, where, b, nb, &r);
	if (ret < 0)
		return ret;
	sq_select_sql(&q, sc, where, &r);
	ret = q.oom ? -ENOMEM : sq_prepare(s, q.s, &st);
	if (ret == 0)
		ret = sq_bind_all(s, st, b, nb, sc, &r);
	if (ret == 0)
		ret = sq_select_run(s, st, sc, fn, ctx);
	sqlite3_finalize(st);
	free(q.s);
	return ret;
}

static int sq_stats(struct store *s,
		    int (*fn)(void *ctx, const char *host, uint32_t cpu, const char *key,
			      uint64_t value),
		    void *ctx)
{
	static const char *const keys[] = {
		"pages", "events", "bytes", "agent_pages", "agent_events", "agent_bytes",
		"overrun", "dropped", "commit_overrun", "dup_pages", "resent_pages",
		"lost_pages", "lost_events", "pages_mmap", "pages_splice", "pages_read",
		"copied_bytes",
	};
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT h.name, c.cpu, c.pages, c.events, c.bytes,"
				" c.agent_pages, c.agent_events, c.agent_bytes, c.overrun,"
				" c.dropped, c.commit_overrun, c.dup_pages, c.resent_pages,"
				" c.lost_pages, c.lost_events, c.pages_mmap, c.pages_splice,"
				" c.pages_read, c.copied_bytes FROM cpus AS c"
				" JOIN hosts AS h ON h.id = c.host_id ORDER BY h.name, h.id, c.cpu",
			     &st);

	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		const char *host = (const char *)sqlite3_column_text(st, 0);
		uint32_t cpu = (uint32_t)sqlite3_column_int64(st, 1);

		for (int k = 0; k < (int)(sizeof(keys) / sizeof(keys[0])) && ret == 0; k++)
			ret = fn(ctx, host, cpu, keys[k], (uint64_t)sqlite3_column_int64(st, 2 + k));
	}
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/* ---- drops and retention ---- */

static int sq_dropped(struct store *s, uint64_t host_id, const char *system, const char *name,
		      const char *reason, uint64_t n)
{
	sqlite3_stmt *st = sq_store_of(s)->drop_add;

	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, system, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)n);
	return sq_run(s, st, false);
}

static int sq_drops(struct store *s,
		    int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			      const char *reason, uint64_t count),
		    void *ctx)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT coalesce(h.name, ''), d.system, d.name, d.reason, d.count"
				" FROM drops AS d LEFT JOIN hosts AS h ON h.id = d.host_id"
				" ORDER BY 1, d.host_id, d.system, d.name, d.reason", &st);

	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW)
		ret = fn(ctx, (const char *)sqlite3_column_text(st, 0),
			 (const char *)sqlite3_column_text(st, 1),
			 (const char *)sqlite3_column_text(st, 2),
			 (const char *)sqlite3_column_text(st, 3),
			 (uint64_t)sqlite3_column_int64(st, 4));
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/* One integer from a one-row statement (NULL reads as @dflt). */
static int sq_int(struct store *s, const char *sql, int64_t dflt, int64_t *out)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, sql, &st);

	if (ret < 0)
		return ret;
	if (sqlite3_step(st) == SQLITE_ROW)
		*out = sqlite3_column_type(st, 0) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, 0);
	else
		ret = sq_err(s, TC_ERR_DB, sql);
	sqlite3_finalize(st);
	return ret;
}

static int sq_used_bytes(struct store *s, uint64_t *out)
{
	int64_t pages = 0, free_pages = 0, size = 0;
	int ret = sq_int(s, "PRAGMA page_count", 0, &pages);

	if (ret == 0)
		ret = sq_int(s, "PRAGMA freelist_count", 0, &free_pages);
	if (ret == 0)
		ret = sq_int(s, "PRAGMA page_size", 0, &size);
	if (ret == 0)
		*out = (uint64_t)((pages - free_pages) * size);
	return ret;
}

/*
 * The oldest and newest ts of type @type_id, from its blocks: the newest
 * block end is among the blocks that start no earlier than the latest
 * start minus the widest span.
 */
static int sq_type_ts(struct store *s, int64_t type_id, int64_t *lo, int64_t *hi)
{
	int64_t last = 0, span = 0;
	int ret = sq_int1(s, "SELECT min(min_ts) FROM ts_blocks WHERE type_id = ?", type_id,
			  INT64_MAX, lo);

	if (ret == 0)
		ret = sq_int1(s, "SELECT max(min_ts) FROM ts_blocks WHERE type_id = ?", type_id,
			      INT64_MIN, &last);
	if (ret == 0)
		ret = sq_max_span(s, type_id, &span);
	*hi = INT64_MIN;
	if (ret == 0 && last != INT64_MIN) {
		sqlite3_stmt *st;

		ret = sq_prepare(s, "SELECT max(max_ts) FROM ts_blocks WHERE type_id = ?"
				    " AND min_ts >= ?", &st);
		if (ret < 0)
			return ret;
		sqlite3_bind_int64(st, 1, type_id);
		sqlite3_bind_int64(st, 2, last < INT64_MIN + span ? INT64_MIN : last - span);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
			*hi = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return ret;
}

/* Run @sql (the table named at each %T) with ?1 = @type_id, ?2 = @ts. */
static int sq_run_table(struct store *s, const char *sql, const char *table, int64_t type_id,
			int64_t ts)
{
	struct sq_buf q = { 0 };
	sqlite3_stmt *st = NULL;
	int ret;

	for (const char *p = sql; *p; p++) {
		if (p[0] == '%' && p[1] == 'T') {
			sq_ident(&q, table);
			p++;
		} else {
			sq_buf_add(&q, p, 1);
		}
	}
	ret = q.oom ? -ENOMEM : sq_prepare(s, q.s, &st);
	if (ret == 0) {
		sqlite3_bind_int64(st, 1, type_id);
		sqlite3_bind_int64(st, 2, ts);
		ret = sq_run(s, st, true);
	}
	free(q.s);
	return ret;
}

/*
 * Delete the rows of event_types row @st (system, name, table, id) older
 * than @ts: those in the blocks that start before @ts. Blocks that end
 * before it go; the others shrink to the rows they keep (lo and hi too, so
 * no block reaches past the table's largest rowid, the next one SQLite
 * hands out).
 */
static int sq_delete_before(struct store *s, sqlite3_stmt *st, int64_t ts, uint64_t *removed)
{
	const char *table = (const char *)sqlite3_column_text(st, 2);
	int64_t type_id = sqlite3_column_int64(st, 3), n;
	int ret = sq_run_table(s, "DELETE FROM %T WHERE rowid IN (SELECT e.rowid FROM ts_blocks"
				  " AS b CROSS JOIN %T AS e ON e.rowid BETWEEN b.lo AND b.hi"
				  " WHERE b.type_id = ?1 AND b.min_ts < ?2 AND e.ts < ?2)",
			       table, type_id, ts);

	n = sqlite3_changes64(sq_store_of(s)->db);
	if (ret == 0)
		ret = sq_run_table(s, "DELETE FROM ts_blocks WHERE type_id = ?1 AND min_ts < ?2"
				      " AND max_ts < ?2", table, type_id, ts);
	if (ret == 0)
		ret = sq_run_table(s, "UPDATE ts_blocks SET"
				      " lo = (SELECT min(rowid) FROM %T WHERE rowid BETWEEN lo AND hi),"
				      " hi = (SELECT max(rowid) FROM %T WHERE rowid BETWEEN lo AND hi),"
				      " min_ts = (SELECT min(ts) FROM %T WHERE rowid BETWEEN lo AND hi),"
				      " span = max_ts - (SELECT min(ts) FROM %T"
				      " WHERE rowid BETWEEN lo AND hi)"
				      " WHERE type_id = ?1 AND min_ts < ?2", table, type_id, ts);
	if (ret == 0 && n > 0) {
		*removed += (uint64_t)n;
		ret = sq_dropped(s, 0, (const char *)sqlite3_column_text(st, 0),
				 (const char *)sqlite3_column_text(st, 1), "retention", (uint64_t)n);
	}
	return ret;
}

/* For each event table: delete ts < @before (when @before is set), and
 * widen [*lo, *hi] by its oldest and newest ts (when @lo is set). */
static int sq_each_table(struct store *s, int64_t before, uint64_t *removed,
			 int64_t *lo, int64_t *hi)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT system, name, table_name, id FROM event_types", &st);
	int64_t a, b;

	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		if (before != INT64_MIN)
			ret = sq_delete_before(s, st, before, removed);
		if (ret == 0 && lo)
			ret = sq_type_ts(s, sqlite3_column_int64(st, 3), &a, &b);
		if (ret == 0 && lo) {
			*lo = a < *lo ? a : *lo;
			*hi = b > *hi ? b : *hi;
		}
	}
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/*
 * Size limit: cut the oldest slice of the time range in proportion to the
 * excess (at least 1% of it), until the pages in use fit.
 */
static int sq_retain_size(struct store *s, uint64_t max_bytes, uint64_t *removed)
{
	uint64_t used = 0;
	int ret = sq_used_bytes(s, &used);

	for (int i = 0; i < 100 && ret == 0 && used > max_bytes; i++) {
		int64_t lo = INT64_MAX, hi = INT64_MIN, cut;
		double frac = (double)(used - max_bytes) / (double)used;

		ret = sq_each_table(s, INT64_MIN, removed, &lo, &hi);
		if (ret < 0 || lo > hi)
			break;
		frac = frac < 0.01 ? 0.01 : frac;
		cut = lo + 1 + (int64_t)((double)(hi - lo) * frac);
		ret = sq_each_table(s, cut, removed, NULL, NULL);
		if (ret == 0)
			ret = sq_used_bytes(s, &used);
	}
	return ret;
}

static int sq_retain(struct store *s, int64_t before_ts, uint64_t max_bytes, uint64_t *removed)
{
	uint64_t n = 0;
	int ret = sq_flush_all(s) ?: sq_exec(s, "SAVEPOINT tc_retain");

	if (ret == 0 && before_ts != INT64_MIN)
		ret = sq_each_table(s, before_ts, &n, NULL, NULL);
	if (ret == 0 && max_bytes)
		ret = sq_retain_size(s, max_bytes, &n);
	if (ret < 0)
		sqlite3_exec(sq_store_of(s)->db, "ROLLBACK TO tc_retain", NULL, NULL, NULL);
	sqlite3_exec(sq_store_of(s)->db, "RELEASE tc_retain", NULL, NULL, NULL);
	if (ret == 0)
		*removed = n;
	return ret;
}

/* ---- programs and symbols (0004-symbols.sql) ---- */

#define SQ_ADDR_FLIP	(1ull << 63)	/* unsigned order as signed order */
#define TC_XSTR(x)	#x
#define TC_STR(x)	TC_XSTR(x)

static int sq_program_find(struct store *s, uint64_t host_id, const struct store_program *p,
			   uint64_t *id)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT id FROM programs WHERE host_id = ? AND boot_id = ?"
				" AND session = ? AND grp = ? AND session != 0", &st);
	int rc;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, p->boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)p->session);
	sqlite3_bind_int64(st, 4, p->group);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = (uint64_t)sqlite3_column_int64(st, 0);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : sq_err(s, TC_ERR_DB, "program");
	sqlite3_finalize(st);
	return ret;
}

static int sq_program(struct store *s, uint64_t host_id, const struct store_program *p,
		      uint64_t *program_id)
{
	sqlite3_stmt *st;
	int ret = sq_program_find(s, host_id, p, program_id);

	if (ret != -ENOENT)
		return ret;
	ret = sq_prepare(s, "INSERT INTO programs (host_id, boot_id, session, grp, pid, comm,"
			    " first_stream, nstreams, since) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", &st);
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, p->boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)p->session);
	sqlite3_bind_int64(st, 4, p->group);
	sqlite3_bind_int64(st, 5, p->pid);
	sqlite3_bind_text(st, 6, p->comm, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, p->first_stream);
	sqlite3_bind_int64(st, 8, p->nstreams);
	sqlite3_bind_int64(st, 9, p->since_ns);
	ret = sq_run(s, st, true);
	if (ret == 0)
		*program_id = (uint64_t)sqlite3_last_insert_rowid(sq_store_of(s)->db);
	return ret;
}

static int sq_symbol(struct store *s, uint64_t program_id, uint64_t addr, uint64_t size,
		     const char *name)
{
	sqlite3_stmt *st = sq_store_of(s)->sym_put;

	sqlite3_bind_int64(st, 1, (int64_t)program_id);
	sqlite3_bind_int64(st, 2, (int64_t)(addr ^ SQ_ADDR_FLIP));
	sqlite3_bind_int64(st, 3, (int64_t)size);
	sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
	return sq_run(s, st, false);
}

#define SQ_SYM_CANDIDATES	8	/* programs tried per address */
#define SQ_SYM_UNSIZED_MAX	0x10000	/* a user symbol without size covers this */

/*
 * The symbol of program @prog covering @addr into @buf. A sized symbol
 * must contain it; an unsized one (kallsyms has no sizes) is taken as is
 * for the kernel (@kernel), within SQ_SYM_UNSIZED_MAX bytes otherwise.
 * Return: 0, -ENOENT, TC_ERR_DB.
 */
static int sq_symbol_in(struct store *s, int64_t prog, bool kernel, uint64_t addr,
			char *buf, size_t len)
{
	sqlite3_stmt **st = &sq_store_of(s)->sym_find;
	uint64_t start, size;
	int ret = 0, rc;

	if (!*st)
		ret = sq_prepare(s, "SELECT addr, size, name FROM symbols WHERE program_id = ?"
				    " AND addr <= ? ORDER BY addr DESC LIMIT 1", st);
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(*st, 1, prog);
	sqlite3_bind_int64(*st, 2, (int64_t)(addr ^ SQ_ADDR_FLIP));
	rc = sqlite3_step(*st);
	ret = rc == SQLITE_DONE ? -ENOENT : rc == SQLITE_ROW ? 0 : sq_err(s, TC_ERR_DB, "symbol");
	if (ret == 0) {
		start = (uint64_t)sqlite3_column_int64(*st, 0) ^ SQ_ADDR_FLIP;
		size = (uint64_t)sqlite3_column_int64(*st, 1);
		if (size ? addr - start >= size : !kernel && addr - start >= SQ_SYM_UNSIZED_MAX)
			ret = -ENOENT;
		else
			proto_sym_format(buf, len, (const char *)sqlite3_column_text(*st, 2),
					 addr - start);
	}
	sqlite3_reset(*st);
	return ret;
}

/*
 * Which program's symbols name a row's address: the row carries its
 * thread id (common_pid), not its program. The program whose pid is the
 * row's comes first (the main thread, single-threaded programs), then the
 * host's other programs, latest first, each announced no later than the
 * row; the first with a symbol covering @addr wins. The kernel's table
 * (grp 0) takes only kernel addresses, which lie above every user one.
 */
static int sq_symbol_name(struct store *s, uint64_t host_id, int32_t pid, int64_t ts,
			  uint64_t addr, char *buf, size_t len)
{
	sqlite3_stmt **st = &sq_store_of(s)->prog_find;
	int ret = 0, rc;

	if (!*st)
		ret = sq_prepare(s, "SELECT id, grp FROM programs WHERE host_id = ?1"
				    " AND since <= ?3 ORDER BY pid = ?2 AND grp != 0 DESC,"
				    " since DESC, id DESC LIMIT " TC_STR(SQ_SYM_CANDIDATES), st);
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(*st, 1, (int64_t)host_id);
	sqlite3_bind_int64(*st, 2, pid);
	sqlite3_bind_int64(*st, 3, ts);
	ret = -ENOENT;
	while (ret == -ENOENT && (rc = sqlite3_step(*st)) == SQLITE_ROW)
		ret = sq_symbol_in(s, sqlite3_column_int64(*st, 0),
				   sqlite3_column_int64(*st, 1) == 0, addr, buf, len);
	if (ret == -ENOENT && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "program lookup");
	sqlite3_reset(*st);
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
	.cmdlines = sq_cmdlines,
	.program = sq_program,
	.symbol = sq_symbol,
	.symbol_name = sq_symbol_name,
	.schema_get = sq_schema_get,
	.schema_list = sq_schema_list,
	.select = sq_select,
	.count = sq_count,
	.stats = sq_stats,
	.dropped = sq_dropped,
	.retain = sq_retain,
	.set_indexes = sq_set_indexes,
	.sync = sq_sync,
	.thread_policy = sq_thread_policy,
	.drops = sq_drops,
};
