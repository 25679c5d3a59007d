/*
 * sqlite_conn.c - a connection of the SQLite backend to its file, as the
 * handle's role wants it: a writer's set up (WAL, migrated, its hot
 * statements prepared, its storage sequence loaded, its checkpointer
 * started), a reader's checked (the schema this program reads, the stop
 * handler of its reads). sqlite.c opens the first connection, sqlite_file.c
 * the next ones after the file was removed or replaced.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_ckpt.h"
#include "server/store/sqlite_conn.h"
#include "server/store/sqlite_migrate.h"
#include "server/store/sqlite_names.h"
#include "server/store/sqlite_util.h"
#include "server/store/sqlite_write.h"
#include "sql/schema.h"

static int sq_setup_writer(struct sq_store *s)
{
	/* The writer's statements made once, at open: what runs per page or per commit. */
	const struct {
		const char *sql;
		sqlite3_stmt **st;
	} stmts[] = {
		{ "INSERT INTO cpus (host_id, cpu, pages, events, bytes)"
		  " VALUES (?, ?, ?, ?, ?) ON CONFLICT (host_id, cpu) DO UPDATE"
		  " SET pages = pages + excluded.pages,"
		  " events = events + excluded.events,"
		  " bytes = bytes + excluded.bytes", &s->cpu_add },
		{ "INSERT INTO comms (host_id, pid, comm) VALUES (?, ?, ?)"
		  " ON CONFLICT (host_id, pid) DO UPDATE SET comm = excluded.comm", &s->comm_put },
		{ "INSERT INTO comm_changes (host_id, pid, trace_ts, ts, tick_ns,"
		  " old, new) VALUES (?, ?, ?, ?, ?, ?, ?)", &s->comm_change_put },
		{ "INSERT INTO drops (host_id, system, name, reason, count)"
		  " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE"
		  " SET count = count + excluded.count", &s->drop_add },
		{ "INSERT INTO stream_marks (host_id, boot_id, session, stream, seq)"
		  " VALUES (?, ?, ?, ?, ?) ON CONFLICT (host_id, boot_id, session,"
		  " stream) DO UPDATE SET seq = max(seq, excluded.seq)", &s->mark_put },
		{ "INSERT OR IGNORE INTO symbols (program_id, addr, size, name, module)"
		  " VALUES (?, ?, ?, ?, ?)", &s->sym_put },
		{ "INSERT INTO ts_blocks (type_id, lo, hi, min_ts, max_ts, span,"
		  " seq) VALUES (?, ?, ?, ?, ?, ?, ?)", &s->block_put },
		{ "INSERT INTO stacks (id, frames) VALUES (?, ?)", &s->stack_put },
	};
	int ret;

	/* a transaction's dirty pages stay in the cache until COMMIT, up to 64 MiB */
	ret = sq_exec(s, "PRAGMA page_size=16384; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			 " PRAGMA foreign_keys=ON; PRAGMA cache_size=-65536");
	if (ret == 0)
		ret = sq_migrate(s);
	for (size_t i = 0; ret == 0 && i < sizeof(stmts) / sizeof(stmts[0]); i++)
		ret = sq_prepare(s, stmts[i].sql, stmts[i].st);
	if (ret == 0)
		ret = sq_seq_load(s);
	return ret;
}

static int sq_setup_reader(struct sq_store *s)
{
	int version = 0;
	int ret = sq_user_version(s, &version);

	if (ret == 0 && version != SQL_SCHEMA_VERSION)
		ret = sq_errf(s, TC_ERR_DB_SCHEMA,
			      "database schema %d, this program reads %d",
			      version, SQL_SCHEMA_VERSION);
	return ret;
}

int sq_connect(struct sq_store *q)
{
	/*
	 * The writer belongs to one thread at a time (opened by main, used by
	 * the ingest worker and the store's writer thread in turn, closed
	 * after both stopped), and so does a reader (each query worker has its
	 * own): no per-call mutex, which cost a lock and an unlock per column
	 * of every row read.
	 */
	int flags = (q->reader ? SQLITE_OPEN_READONLY :
		     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
	struct sched_param sp = { 0 };
	int ret;

	if (sqlite3_open_v2(q->path, &q->db, flags, NULL) != SQLITE_OK)
		return q->db ? sq_err(q, TC_ERR_DB, "open") : -ENOMEM;
	sqlite3_extended_result_codes(q->db, 1);
	sqlite3_busy_timeout(q->db, 5000);
	/* a reader closing never checkpoints nor removes PATH-wal (sqlite_file.c) */
	if (q->reader) {
		sqlite3_db_config(q->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
		/*
		 * no statement re-prepared because of what is bound: a text
		 * bound to GLOB ? (the host glob every select has) marks it, so
		 * each reuse of a cached select re-prepared it, a quarter of a
		 * long select's time. Reads pick no index by a GLOB pattern.
		 */
		sqlite3_db_config(q->db, SQLITE_DBCONFIG_ENABLE_QPSG, 1, NULL);
		sq_stop_handler(q);
	}
	ret = q->reader ? sq_setup_reader(q) : sq_setup_writer(q);
	if (ret == 0 && !q->reader)
		ret = sq_ckpt_start(q, q->path);
	pthread_mutex_lock(&q->lock);	/* thread_policy may run meanwhile (sqlite.c) */
	if (ret == 0 && q->ckpt_started && q->policy_set)
		pthread_setschedparam(q->ckpt, q->policy, &sp);	/* best effort */
	pthread_mutex_unlock(&q->lock);
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
	sqlite3_finalize(q->stack_put);
	q->stack_put = NULL;
	sqlite3_finalize(q->prog_find);
	sqlite3_finalize(q->sym_find);
	sqlite3_finalize(q->sym_find_sized);
	sqlite3_finalize(q->printk_put);
	sqlite3_finalize(q->tgid_put);
	q->printk_put = q->tgid_put = NULL;
	q->cpu_add = q->comm_put = q->comm_change_put = q->drop_add = q->mark_put = NULL;
	q->sym_put = q->block_put = q->prog_find = q->sym_find = NULL;
	q->sym_find_sized = NULL;
	sq_names_free(q->names);
	q->names = NULL;
	sq_cache_free(q);
	sqlite3_close(q->db);
	q->db = NULL;
}
