/*
 * sqlite_boots.c - what an export to trace.dat needs of a host besides its
 * rows (issue 33; sql/0014-losses.sql): each boot as its kernel described
 * itself (host_boots: HELLO's layout and clock, HEADER_PAGE's texts), the
 * formats it sent in that boot (host_formats, read here by boot), and
 * where its kernel lost events (losses: one row per page whose header
 * carried the missed-events flag, written with the page's events).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/sqlite_boots.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_read.h"
#include "server/store/sqlite_util.h"

/* ---- writer ---- */

static int sq_losses_put(struct store_writer *w, uint64_t host_id, const char *boot_id,
			 const struct store_loss *l, size_t n)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st = NULL;
	int ret = sq_writer_enter(s) ?:
		  sq_prepare_cached(s, "INSERT INTO losses (host_id, boot_id, cpu, ts, trace_ts,"
				       " count) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
				    &st);

	for (size_t i = 0; ret == 0 && i < n; i++) {
		sqlite3_bind_int64(st, 1, (int64_t)host_id);
		sqlite3_bind_text(st, 2, boot_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, l[i].cpu);
		sqlite3_bind_int64(st, 4, l[i].ts);
		sqlite3_bind_int64(st, 5, (int64_t)l[i].trace_ts);
		if (l[i].count >= 0)
			sqlite3_bind_int64(st, 6, l[i].count);
		else
			sqlite3_bind_null(st, 6);
		ret = sq_run(s, st, false);
	}
	sq_release(s, st);
	return ret;
}

/* Bind text @v of @len bytes to @i, or NULL when there is none. */
static void bind_text_len(sqlite3_stmt *st, int i, const char *v, size_t len)
{
	if (v && len)
		sqlite3_bind_text(st, i, v, (int)len, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Bind @v to @i, or NULL when 0 (not told). */
static void bind_num(sqlite3_stmt *st, int i, int64_t v)
{
	if (v)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

static int sq_boot(struct store_writer *w, uint64_t host_id, const struct store_boot *b)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st = NULL;
	int ret = sq_writer_enter(s) ?:
		  sq_prepare_cached(s, "INSERT INTO host_boots (host_id, boot_id, since, kernel,"
				       " trace_clock, long_size, big_endian, page_size, header_page,"
				       " header_event) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
				       " ON CONFLICT (host_id, boot_id) DO UPDATE SET"
				       " kernel = coalesce(excluded.kernel, kernel),"
				       " trace_clock = coalesce(excluded.trace_clock, trace_clock),"
				       " long_size = coalesce(excluded.long_size, long_size),"
				       " big_endian = coalesce(excluded.big_endian, big_endian),"
				       " page_size = coalesce(excluded.page_size, page_size),"
				       " header_page = coalesce(excluded.header_page, header_page),"
				       " header_event = coalesce(excluded.header_event, header_event)",
				    &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, b->boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, b->since);
	sq_bind_text(st, 4, b->kernel);
	sq_bind_text(st, 5, b->trace_clock);
	bind_num(st, 6, b->long_size);
	if (b->long_size)	/* the byte order comes with the layout */
		sqlite3_bind_int64(st, 7, b->big_endian);
	bind_num(st, 8, b->page_size);
	bind_text_len(st, 9, b->header_page, b->header_page_len);
	bind_text_len(st, 10, b->header_event, b->header_event_len);
	ret = sq_run(s, st, false);
	sq_release(s, st);
	return ret;
}

/* ---- reader: losses ---- */

/* The WHERE of a losses read past the hosts' conditions: CPUs, window, paging. */
static void losses_where(struct sq_buf *b, const struct store_query *q)
{
	if (q->ncpus) {
		sq_buf_str(b, " AND l.cpu IN (");
		for (size_t i = 0; i < q->ncpus; i++)
			sq_buf_str(b, i ? ", ?" : "?");
		sq_buf_str(b, ")");
	}
	if (q->win)
		sq_buf_str(b, " AND l.ts >= :from AND l.ts < :to");
	if (q->after_rowid)
		sq_buf_str(b, q->reverse ? " AND (l.ts < :ats OR (l.ts = :ats AND l.id < :aid))" :
					   " AND (l.ts > :ats OR (l.ts = :ats AND l.id > :aid))");
	sq_buf_str(b, q->reverse ? " ORDER BY l.ts DESC, l.id DESC" : " ORDER BY l.ts, l.id");
	if (q->limit)
		sq_buf_str(b, " LIMIT :lim");
}

static void bind_named(sqlite3_stmt *st, const char *name, int64_t v)
{
	int i = sqlite3_bind_parameter_index(st, name);

	if (i > 0)
		sqlite3_bind_int64(st, i, v);
}

/* The statement of @q's losses, prepared and bound. */
static int losses_prepare(struct sq_store *s, const struct store_query *q, sqlite3_stmt **out)
{
	char *cond = calloc(1, sq_hosts_len(q) + 1);
	struct sq_buf b = { 0 };
	sqlite3_stmt *st = NULL;
	int ret = -ENOMEM, first;

	if (!cond)
		return -ENOMEM;
	sq_hosts_cond(cond, q, "l.host_id");
	sq_buf_str(&b, "SELECT l.id, h.name, l.boot_id, l.cpu, l.ts, l.trace_ts, l.count"
		       " FROM losses l JOIN hosts h ON h.id = l.host_id WHERE 1");
	sq_buf_str(&b, cond);
	losses_where(&b, q);
	if (!b.oom)
		ret = sq_prepare(s, b.s, &st);
	free(cond);
	free(b.s);
	if (ret < 0)
		return ret;
	sq_hosts_bind(st, 1, q);
	/* the CPUs' '?'s follow the hosts' (sq_hosts_cond()); named ones come after both */
	first = 1 + (q->host_glob != NULL) + (int)(q->hosts ? q->hosts->n : 0) +
		(int)(q->scope ? q->scope->n : 0);
	for (size_t i = 0; i < q->ncpus; i++)
		sqlite3_bind_int64(st, first + (int)i, q->cpus[i]);
	if (q->win) {
		bind_named(st, ":from", q->win->from_ts);
		bind_named(st, ":to", q->win->to_ts);
	}
	bind_named(st, ":ats", q->after_ts);
	bind_named(st, ":aid", (int64_t)q->after_rowid);
	bind_named(st, ":lim", (int64_t)q->limit);
	*out = st;
	return 0;
}

static int sq_losses(struct store_reader *r, const struct store_query *q,
		     int (*fn)(void *ctx, const struct store_loss_row *x), void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st = NULL;
	int ret = sq_reader_enter(s) ?: losses_prepare(s, q, &st);
	int rc = SQLITE_DONE;

	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *boot = (const char *)sqlite3_column_text(st, 2);
		struct store_loss_row x = {
			.id = sqlite3_column_int64(st, 0),
			.host = (const char *)sqlite3_column_text(st, 1),
			.boot_id = boot ? boot : "",
			.l = {
				.cpu = (uint32_t)sqlite3_column_int64(st, 3),
				.ts = sqlite3_column_int64(st, 4),
				.trace_ts = (uint64_t)sqlite3_column_int64(st, 5),
				.count = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 :
					 sqlite3_column_int64(st, 6),
			},
		};

		if (!x.host)
			x.host = "";
		ret = fn(ctx, &x);
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_stop_due(s) ?: sq_err(s, TC_ERR_DB, "losses");
	sqlite3_finalize(st);
	return ret;
}

/* ---- reader: boots ---- */

/*
 * The boot of @host_id up at @ts: host_boots' row first seen last at or
 * before @ts (else the first); a host without one (stored before 0014)
 * reads what its hosts row holds.
 */
#define SQ_BOOT_SQL								\
	"SELECT boot_id, since, kernel, trace_clock, long_size, big_endian,"	\
	" page_size, header_page, header_event FROM ("				\
	" SELECT * FROM (SELECT *, 0 AS o FROM host_boots WHERE host_id = ?1"	\
	"  AND since <= ?2 ORDER BY since DESC LIMIT 1)"			\
	" UNION ALL SELECT * FROM (SELECT *, 1 AS o FROM host_boots"		\
	"  WHERE host_id = ?1 ORDER BY since LIMIT 1)"				\
	" UNION ALL SELECT id, coalesce(boot_id, ''), first_seen, kernel,"	\
	"  trace_clock, NULL, NULL, page_size, NULL, NULL, 2 FROM hosts"	\
	"  WHERE id = ?1) ORDER BY o LIMIT 1"

static int sq_boot_get(struct store_reader *r, uint64_t host_id, int64_t ts,
		       int (*fn)(void *ctx, const struct store_boot *b), void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st = NULL;
	int ret = sq_reader_enter(s) ?: sq_prepare(s, SQ_BOOT_SQL, &st);
	int rc;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, ts);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *boot = (const char *)sqlite3_column_text(st, 0);
		struct store_boot b = {
			.boot_id = boot ? boot : "",
			.since = sqlite3_column_int64(st, 1),
			.kernel = (const char *)sqlite3_column_text(st, 2),
			.trace_clock = (const char *)sqlite3_column_text(st, 3),
			.long_size = (uint32_t)sqlite3_column_int64(st, 4),
			.big_endian = sqlite3_column_int64(st, 5) != 0,
			.page_size = (uint32_t)sqlite3_column_int64(st, 6),
			.header_page = (const char *)sqlite3_column_text(st, 7),
			.header_page_len = (size_t)sqlite3_column_bytes(st, 7),
			.header_event = (const char *)sqlite3_column_text(st, 8),
			.header_event_len = (size_t)sqlite3_column_bytes(st, 8),
		};

		ret = fn(ctx, &b);
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : sq_err(s, TC_ERR_DB, "boot");
	}
	sqlite3_finalize(st);
	return ret;
}

/* A reader's statement of @sql, its ?1 bound to @host_id and ?2 to @boot_id (kept by the caller). */
static int boot_stmt(struct sq_store *s, const char *sql, uint64_t host_id, const char *boot_id,
		     sqlite3_stmt **st)
{
	int ret = sq_reader_enter(s) ?: sq_prepare(s, sql, st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(*st, 1, (int64_t)host_id);
	sqlite3_bind_text(*st, 2, boot_id, -1, SQLITE_STATIC);
	return 0;
}

static int sq_boot_formats(struct store_reader *r, uint64_t host_id, const char *boot_id,
			   int64_t after_id, uint32_t max,
			   int (*fn)(void *ctx, int64_t id, const char *system, const char *name,
				     const char *text),
			   void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st = NULL;
	int ret = boot_stmt(s, "SELECT DISTINCT f.id, t.system, t.name, f.text FROM host_formats hf"
			       " JOIN formats f ON f.id = hf.format_id"
			       " JOIN event_types t ON t.id = hf.type_id"
			       " WHERE hf.host_id = ?1 AND hf.boot_id = ?2 AND f.id > ?3"
			       " ORDER BY f.id LIMIT ?4", host_id, boot_id, &st);
	int rc = SQLITE_DONE;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 3, after_id);
	sqlite3_bind_int64(st, 4, max);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		ret = fn(ctx, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
			 (const char *)sqlite3_column_text(st, 2),
			 (const char *)sqlite3_column_text(st, 3));
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "boot formats");
	sqlite3_finalize(st);
	return ret;
}

/* The programs @host_id announced in @boot_id (one row per agent run and group). */
static int sq_boot_programs(struct store_reader *r, uint64_t host_id, const char *boot_id,
			    uint32_t max, int (*fn)(void *ctx, const struct store_program *p),
			    void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st = NULL;
	int ret = boot_stmt(s, "SELECT session, grp, pid, comm, first_stream, nstreams, since"
			       " FROM programs WHERE host_id = ?1 AND boot_id = ?2 AND grp != 0"
			       " ORDER BY since, id LIMIT ?3", host_id, boot_id, &st);
	int rc = SQLITE_DONE;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 3, max);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *comm = (const char *)sqlite3_column_text(st, 3);
		struct store_program p = {
			.boot_id = boot_id, .session = (uint64_t)sqlite3_column_int64(st, 0),
			.group = (uint32_t)sqlite3_column_int64(st, 1),
			.pid = (int32_t)sqlite3_column_int64(st, 2), .comm = comm ? comm : "",
			.first_stream = (uint32_t)sqlite3_column_int64(st, 4),
			.nstreams = (uint32_t)sqlite3_column_int64(st, 5),
			.since_ns = sqlite3_column_int64(st, 6),
		};

		ret = fn(ctx, &p);
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "boot programs");
	sqlite3_finalize(st);
	return ret;
}

void sq_boots_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->losses_put = sq_losses_put;
	w->boot = sq_boot;
	r->losses = sq_losses;
	r->boot_get = sq_boot_get;
	r->boot_formats = sq_boot_formats;
	r->boot_programs = sq_boot_programs;
}
