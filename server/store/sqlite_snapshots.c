/*
 * sqlite_snapshots.c - the SQLite backend's flight-recorder snapshots: the
 * snapshots and snapshot_hosts tables (sql/0017-snapshots.sql), written by
 * the ingest worker from the journal's records (a replay writes nothing
 * twice) and read by traceq --snapshots through the asker's scope.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_hosts.h"
#include "server/store/sqlite_snapshots.h"
#include "server/store/sqlite_util.h"

static int sq_snapshot_asked(struct store_writer *w, const struct store_snapshot *sn)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?: sq_prepare(s,
		"INSERT OR IGNORE INTO snapshots (id, asked_ns, reason, who) VALUES (?, ?, ?, ?)",
		&st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)sn->id);
	sqlite3_bind_int64(st, 2, sn->asked_ns);
	sq_bind_text(st, 3, sn->reason ? sn->reason : "");
	sq_bind_text(st, 4, sn->who ? sn->who : "");
	ret = sq_run(s, st, true) ?: sq_prepare(s,
		"INSERT OR IGNORE INTO snapshot_hosts (snapshot_id, host_id) VALUES (?, ?)", &st);
	if (ret < 0)
		return ret;
	return sq_run_ints(s, st, true, (const int64_t[]){ (int64_t)sn->id,
							   (int64_t)sn->host_id }, 2);
}

/*
 * The host's row as its agent reported it. A snapshot whose FREEZE record
 * was not stored here (a collector restarted without its journal) still
 * gets its row: asked at 0, by no one.
 */
static int sq_snapshot_done(struct store_writer *w, const struct store_snapshot *sn)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?: sq_prepare(s,
		"INSERT OR IGNORE INTO snapshots (id, asked_ns, reason, who) VALUES (?, 0, '', '')",
		&st);

	if (ret == 0)
		ret = sq_run_ints(s, st, true, (const int64_t[]){ (int64_t)sn->id }, 1);
	if (ret == 0)
		ret = sq_prepare(s,
			"INSERT INTO snapshot_hosts (snapshot_id, host_id, done, pages, events,"
			" lost, first_ts, last_ts, first_trace, last_trace)"
			" VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?)"
			" ON CONFLICT (snapshot_id, host_id) DO UPDATE SET done = 1,"
			" pages = excluded.pages, events = excluded.events, lost = excluded.lost,"
			" first_ts = excluded.first_ts, last_ts = excluded.last_ts,"
			" first_trace = excluded.first_trace, last_trace = excluded.last_trace", &st);
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)sn->id);
	sqlite3_bind_int64(st, 2, (int64_t)sn->host_id);
	sqlite3_bind_int64(st, 3, (int64_t)sn->pages);
	sqlite3_bind_int64(st, 4, (int64_t)sn->events);
	sqlite3_bind_int64(st, 5, (int64_t)sn->lost);
	if (sn->window) {
		sqlite3_bind_int64(st, 6, sn->first_ts);
		sqlite3_bind_int64(st, 7, sn->last_ts);
		sqlite3_bind_int64(st, 8, (int64_t)sn->first_trace);
		sqlite3_bind_int64(st, 9, (int64_t)sn->last_trace);
	}	/* else NULL: the buffer held no event */
	return sq_run(s, st, true);
}

static int sq_snapshots(struct store_reader *r, const struct store_query *q, uint64_t id,
			int (*fn)(void *ctx, const struct store_snapshot *sn), void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st = NULL;
	int rc = SQLITE_DONE;
	int ret = sq_reader_enter(s) ?:
		  sq_prepare_hosts(s, "SELECT n.id, n.asked_ns, n.reason, n.who, sh.host_id,"
				      " h.name, sh.done, sh.pages, sh.events, sh.lost,"
				      " sh.first_ts IS NOT NULL, coalesce(sh.first_ts, 0),"
				      " coalesce(sh.last_ts, 0), coalesce(sh.first_trace, 0),"
				      " coalesce(sh.last_trace, 0) FROM snapshot_hosts AS sh"
				      " JOIN snapshots AS n ON n.id = sh.snapshot_id"
				      " JOIN hosts AS h ON h.id = sh.host_id"
				      " WHERE (:id = 0 OR n.id = :id)",
				   " ORDER BY n.id, h.name, sh.host_id", q, "sh.host_id", &st);

	if (ret == 0)
		sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":id"), (int64_t)id);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_snapshot sn = {
			.id = (uint64_t)sqlite3_column_int64(st, 0),
			.asked_ns = sqlite3_column_int64(st, 1),
			.reason = sq_text(st, 2), .who = sq_text(st, 3),
			.host_id = (uint64_t)sqlite3_column_int64(st, 4),
			.host = sq_text(st, 5), .done = sqlite3_column_int(st, 6) != 0,
			.pages = (uint64_t)sqlite3_column_int64(st, 7),
			.events = (uint64_t)sqlite3_column_int64(st, 8),
			.lost = (uint64_t)sqlite3_column_int64(st, 9),
			.window = sqlite3_column_int(st, 10) != 0,
			.first_ts = sqlite3_column_int64(st, 11),
			.last_ts = sqlite3_column_int64(st, 12),
			.first_trace = (uint64_t)sqlite3_column_int64(st, 13),
			.last_trace = (uint64_t)sqlite3_column_int64(st, 14),
		};

		ret = fn(ctx, &sn);
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "snapshots");
	if (st)
		sqlite3_finalize(st);
	return ret;
}

static int sq_snapshot_max(struct store_reader *r, uint64_t *id)
{
	struct sq_store *s = sq_reader_of(r);
	int64_t v = 0;
	int ret = sq_reader_enter(s) ?:
		  sq_int1(s, "SELECT max(id) FROM snapshots WHERE id > ?", 0, 0, &v);

	if (ret == 0)
		*id = (uint64_t)v;
	return ret;
}

void sq_snapshots_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->snapshot_asked = sq_snapshot_asked;
	w->snapshot_done = sq_snapshot_done;
	r->snapshots = sq_snapshots;
	r->snapshot_max = sq_snapshot_max;
}
