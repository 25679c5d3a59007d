/*
 * sqlite_retain.c - the SQLite backend's retention (store_retain()): rows
 * older than a time go, then the oldest time slices while the pages in use
 * exceed a size; the time index's blocks shrink with them, and what went
 * is counted as dropped for "retention".
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_hosts.h"
#include "server/store/sqlite_read.h"
#include "server/store/sqlite_stacks.h"
#include "server/store/sqlite_retain.h"
#include "server/store/sqlite_util.h"
#include "server/store/sqlite_write.h"

/* How often retention deletes the stacks no row references any more, at most. */
#define SQ_STACKS_SWEEP_MS	(10 * 60 * 1000)

/* One integer from a one-row statement (NULL reads as @dflt). */
static int sq_int(struct sq_store *s, const char *sql, int64_t dflt, int64_t *out)
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

static int sq_used_bytes(struct sq_store *s, uint64_t *out)
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
static int sq_type_ts(struct sq_store *s, int64_t type_id, int64_t *lo, int64_t *hi)
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

/* @sql with the table named at each %T, prepared. */
static int sq_prepare_table(struct sq_store *s, const char *sql, const char *table,
			    sqlite3_stmt **out)
{
	struct sq_buf q = { 0 };
	int ret;

	for (const char *p = sql; *p; p++) {
		if (p[0] == '%' && p[1] == 'T') {
			sq_ident(&q, table);
			p++;
		} else {
			sq_buf_add(&q, p, 1);
		}
	}
	ret = q.oom ? -ENOMEM : sq_prepare(s, q.s, out);
	free(q.s);
	return ret;
}

/* Run @sql (the table named at each %T) with ?1 = @type_id, ?2 = @ts. */
static int sq_run_table(struct sq_store *s, const char *sql, const char *table, int64_t type_id,
			int64_t ts)
{
	sqlite3_stmt *st = NULL;
	int ret = sq_prepare_table(s, sql, table, &st);

	if (ret == 0) {
		sqlite3_bind_int64(st, 1, type_id);
		sqlite3_bind_int64(st, 2, ts);
		ret = sq_run(s, st, true);
	}
	return ret;
}

/* Rows removed per host, to give back their quota (sq_host_freed()). */
struct sq_freed {
	uint64_t host_id, rows;
};

#define SQ_FREED_HOSTS	64	/* hosts counted apart per statement; more share a pass */

/*
 * Run the DELETE @sql (... RETURNING host_id) with ?1 = @type_id, ?2 = @ts
 * and give each host back what its removed rows stored. Return: 0 and
 * *@n (rows removed); TC_ERR_DB; -ENOMEM.
 */
static int sq_delete_rows(struct sq_store *s, const char *sql, const char *table, int64_t type_id,
			  int64_t ts, int64_t *n)
{
	struct sq_freed f[SQ_FREED_HOSTS];
	sqlite3_stmt *st = NULL;
	size_t nf = 0, i;
	int ret = sq_prepare_table(s, sql, table, &st), rc = SQLITE_DONE;

	*n = 0;
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, type_id);
	sqlite3_bind_int64(st, 2, ts);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t host = (uint64_t)sqlite3_column_int64(st, 0);

		(*n)++;
		for (i = 0; i < nf && f[i].host_id != host; i++)
			;
		if (i == nf && nf == SQ_FREED_HOSTS) {	/* full: give back what it has */
			for (i = 0; i < nf && ret == 0; i++)
				ret = sq_host_freed(s, f[i].host_id, f[i].rows);
			nf = i = 0;
		}
		if (i == nf)
			f[nf++] = (struct sq_freed){ host, 0 };
		f[i].rows++;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "retention");
	sqlite3_finalize(st);
	for (i = 0; i < nf && ret == 0; i++)
		ret = sq_host_freed(s, f[i].host_id, f[i].rows);
	return ret;
}

/*
 * Delete the rows of event_types row @st (system, name, table, id) older
 * than @ts: those in the blocks that start before @ts. Blocks that end
 * before it go; the others shrink to the rows they keep (lo and hi too, so
 * no block reaches past the table's largest rowid, the next one SQLite
 * hands out; seq moves with lo, so it stays the storage number of lo's row).
 */
static int sq_delete_before(struct sq_store *s, sqlite3_stmt *st, int64_t ts, uint64_t *removed)
{
	const char *table = (const char *)sqlite3_column_text(st, 2);
	int64_t type_id = sqlite3_column_int64(st, 3), n;
	int ret = sq_delete_rows(s, "DELETE FROM %T WHERE rowid IN (SELECT e.rowid FROM ts_blocks"
				    " AS b CROSS JOIN %T AS e ON e.rowid BETWEEN b.lo AND b.hi"
				    " WHERE b.type_id = ?1 AND b.min_ts < ?2 AND e.ts < ?2)"
				    " RETURNING host_id", table, type_id, ts, &n);

	if (ret == 0)
		ret = sq_run_table(s, "DELETE FROM ts_blocks WHERE type_id = ?1 AND min_ts < ?2"
				      " AND max_ts < ?2", table, type_id, ts);
	if (ret == 0)
		ret = sq_run_table(s, "UPDATE ts_blocks SET"
				      " seq = seq + (SELECT min(rowid) FROM %T"
				      " WHERE rowid BETWEEN lo AND hi) - lo,"
				      " lo = (SELECT min(rowid) FROM %T WHERE rowid BETWEEN lo AND hi),"
				      " hi = (SELECT max(rowid) FROM %T WHERE rowid BETWEEN lo AND hi),"
				      " min_ts = (SELECT min(ts) FROM %T WHERE rowid BETWEEN lo AND hi),"
				      " span = max_ts - (SELECT min(ts) FROM %T"
				      " WHERE rowid BETWEEN lo AND hi)"
				      " WHERE type_id = ?1 AND min_ts < ?2", table, type_id, ts);
	if (ret == 0 && n > 0 && store_field_is_stack((const char *)sqlite3_column_text(st, 0),
						      (const char *)sqlite3_column_text(st, 1),
						      "caller"))
		s->stacks_orphaned = true;
	if (ret == 0 && n > 0) {
		*removed += (uint64_t)n;
		ret = sq_drop_add(s, 0, (const char *)sqlite3_column_text(st, 0),
				  (const char *)sqlite3_column_text(st, 1), "retention", (uint64_t)n);
	}
	return ret;
}

/* For each event table: delete ts < @before (when @before is set), and
 * widen [*lo, *hi] by its oldest and newest ts (when @lo is set). */
static int sq_each_table(struct sq_store *s, int64_t before, uint64_t *removed,
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
 * The names tasks took before @ts that a later one before @ts replaced:
 * no row kept reads them (the latest change at or before a row decides
 * its COMM), so what retention leaves is one name per task at most.
 */
static int sq_comm_changes_before(struct sq_store *s, int64_t ts)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "DELETE FROM comm_changes AS a WHERE a.ts < ?1 AND EXISTS"
				" (SELECT 1 FROM comm_changes AS b WHERE b.host_id = a.host_id"
				" AND b.pid = a.pid AND b.trace_ts > a.trace_ts AND b.ts < ?1)", &st);

	return ret < 0 ? ret : sq_run_ints(s, st, true, &ts, 1);
}

/* The losses before @ts (sql/0014-losses.sql): they go with the rows of their time. */
static int sq_losses_before(struct sq_store *s, int64_t ts)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "DELETE FROM losses WHERE ts < ?1", &st);

	return ret < 0 ? ret : sq_run_ints(s, st, true, &ts, 1);
}

/*
 * Size limit: cut the oldest slice of the time range in proportion to the
 * excess (at least 1% of it), until the pages in use fit.
 */
static int sq_retain_size(struct sq_store *s, uint64_t max_bytes, uint64_t *removed)
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
		ret = sq_each_table(s, cut, removed, NULL, NULL) ?:
		      sq_comm_changes_before(s, cut) ?: sq_losses_before(s, cut) ?:
		      sq_used_bytes(s, &used);
	}
	return ret;
}

static int sq_retain(struct store_writer *w, int64_t before_ts, uint64_t max_bytes,
		     uint64_t *removed)
{
	struct sq_store *s = sq_writer_of(w);
	uint64_t n = 0;
	int ret = sq_writer_enter(s);

	if (ret < 0)
		return ret;
	ret = sq_flush_all(s) ?: sq_exec(s, "SAVEPOINT tc_retain");

	if (ret == 0 && before_ts != INT64_MIN)
		ret = sq_each_table(s, before_ts, &n, NULL, NULL) ?:
		      sq_comm_changes_before(s, before_ts) ?: sq_losses_before(s, before_ts);
	if (ret == 0 && max_bytes)
		ret = sq_retain_size(s, max_bytes, &n);
	if (ret == 0 && s->stacks_orphaned &&
	    (!s->stacks_swept_ms || util_now_ms() - s->stacks_swept_ms >= SQ_STACKS_SWEEP_MS)) {
		/* a scan of the stack rows: not at each round */
		ret = sq_stacks_sweep(s);
		s->stacks_orphaned = ret < 0;
		s->stacks_swept_ms = util_now_ms();
	}
	if (ret < 0)
		sqlite3_exec(s->db, "ROLLBACK TO tc_retain", NULL, NULL, NULL);
	sqlite3_exec(s->db, "RELEASE tc_retain", NULL, NULL, NULL);
	if (ret == 0)
		*removed = n;
	return ret;
}

/* store_size(): the used pages, as retain-size counts them. */
static int sq_size(struct store_reader *r, uint64_t *bytes)
{
	struct sq_store *s = sq_reader_of(r);

	return sq_reader_enter(s) ?: sq_used_bytes(s, bytes);
}

void sq_retain_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->retain = sq_retain;
	r->size = sq_size;
}
