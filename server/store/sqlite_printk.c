/*
 * sqlite_printk.c - what traceq needs besides formats and symbols to print
 * as the kernel and trace-cmd do (sql/0009-printk-tgids.sql): the kernel's
 * printk_formats per host and boot, stored as MSG_PRINTK brings them and
 * read back by traceq's printk op for the boot that was up at a row's
 * time; and the read side of the pid -> tgid table (traceq's tgids op).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_printk.h"
#include "server/store/sqlite_symbols.h"
#include "server/store/sqlite_util.h"

static int sq_printk_put(struct store_writer *w, uint64_t host_id, const char *boot_id,
			 int64_t since, uint64_t addr, const char *fmt, size_t len)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt **st = &s->printk_put;
	int ret = sq_writer_enter(s);

	if (ret == 0 && !*st)
		ret = sq_prepare(s, "INSERT INTO printk_formats (host_id, boot_id, addr, fmt, since)"
				    " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", st);
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(*st, 1, (int64_t)host_id);
	sqlite3_bind_text(*st, 2, boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(*st, 3, (int64_t)addr);
	sqlite3_bind_text(*st, 4, fmt, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(*st, 5, since);
	return sq_run(s, *st, false);
}

static int sq_printk_held(struct store_writer *w, uint64_t host_id, const char *boot_id,
			  bool *held)
{
	struct sq_store *s = sq_writer_of(w);

	return sq_writer_enter(s) ?:
	       sq_host_boot_exists(s, "SELECT 1 FROM printk_formats WHERE host_id = ? AND"
				   " boot_id = ? LIMIT 1", host_id, boot_id, "printk formats", held);
}

/*
 * The table of the boot whose first connection came last at or before
 * @ts; before any, the host's first boot's. In address order, at most
 * @max entries.
 */
static int sq_printk_list(struct store_reader *r, uint64_t host_id, int64_t ts, uint32_t max,
			  int (*fn)(void *ctx, uint64_t addr, const char *fmt), void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st;
	int ret = sq_reader_enter(s) ?:
		  sq_prepare(s, "SELECT addr, fmt FROM printk_formats WHERE host_id = ?1"
				" AND boot_id = coalesce((SELECT boot_id FROM printk_formats"
				"  WHERE host_id = ?1 AND since <= ?2 ORDER BY since DESC LIMIT 1),"
				" (SELECT boot_id FROM printk_formats WHERE host_id = ?1"
				"  ORDER BY since LIMIT 1)) ORDER BY addr LIMIT ?3", &st);
	int rc = SQLITE_DONE;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, ts);
	sqlite3_bind_int64(st, 3, max);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		ret = fn(ctx, (uint64_t)sqlite3_column_int64(st, 0),
			 (const char *)sqlite3_column_text(st, 1));
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "printk formats");
	sqlite3_finalize(st);
	return ret;
}

/* @host_id's pid -> tgid pairs with pid > @after_pid, in pid order, at most @max. */
static int sq_tgids_list(struct store_reader *r, uint64_t host_id, int32_t after_pid,
			 uint32_t max, int (*fn)(void *ctx, int32_t pid, int32_t tgid), void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st;
	int ret = sq_reader_enter(s) ?:
		  sq_prepare(s, "SELECT pid, tgid FROM tgids WHERE host_id = ? AND pid > ?"
				" ORDER BY pid LIMIT ?", &st);
	int rc = SQLITE_DONE;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, after_pid);
	sqlite3_bind_int64(st, 3, max);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		ret = fn(ctx, (int32_t)sqlite3_column_int64(st, 0),
			 (int32_t)sqlite3_column_int64(st, 1));
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "tgids");
	sqlite3_finalize(st);
	return ret;
}

void sq_printk_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->printk_put = sq_printk_put;
	w->printk_held = sq_printk_held;
	r->printk_list = sq_printk_list;
	r->tgids_list = sq_tgids_list;
}
