/*
 * sqlite_migrate.c - the SQLite backend's fixed tables: the numbered
 * migrations of sql/ (embedded as sql/schema.h; sql/schema.sql explains
 * the layout and its trade-offs) applied to a writer's file in order,
 * each in one transaction, with the parts SQL cannot do alone (migration
 * 5's backfill of the time index, 13's format column).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_migrate.h"
#include "server/store/sqlite_util.h"
#include "sql/schema.h"

#define SQ_MIGRATION_BLOCKS 5		/* 0005-ts-blocks.sql */
#define SQ_MIGRATION_FORMATS 13		/* 0013-formats.sql */

int sq_user_version(struct sq_store *s, int *version)
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

/*
 * Migration 5 for one event table: its rows in blocks of 64 consecutive
 * rowids become ts_blocks rows, then its per-row ts index goes.
 */
static int sq_blocks_backfill_one(struct sq_store *s, int64_t type_id, const char *table)
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
static int sq_blocks_backfill(struct sq_store *s)
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

/*
 * Migration 13 for every event table: a _tc_fmt column whose default is
 * the format the migration recorded for the type, so that the rows stored
 * before read as of that format without being rewritten.
 */
static int sq_fmt_backfill(struct sq_store *s)
{
	sqlite3_stmt *st = NULL;
	int64_t id = INT64_MIN;
	int ret = sq_prepare(s, "SELECT t.id, t.table_name, f.id FROM event_types t"
				" JOIN formats f ON f.type_id = t.id WHERE t.id > ?"
				" ORDER BY t.id LIMIT 1", &st);

	while (ret == 0) {
		struct sq_buf b = { 0 };
		char def[48];

		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) != SQLITE_ROW)
			break;
		id = sqlite3_column_int64(st, 0);
		sq_buf_str(&b, "ALTER TABLE ");
		sq_ident(&b, (const char *)sqlite3_column_text(st, 1));
		snprintf(def, sizeof(def), " ADD COLUMN _tc_fmt INTEGER DEFAULT %lld",
			 (long long)sqlite3_column_int64(st, 2));
		sq_buf_str(&b, def);
		sqlite3_reset(st);
		ret = b.oom ? -ENOMEM : sq_exec(s, b.s);
		free(b.s);
	}
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/* The part of migration @version SQL cannot do alone, or 0. */
static int sq_migrate_code(struct sq_store *s, int version)
{
	if (version == SQ_MIGRATION_FORMATS)
		return sq_fmt_backfill(s);
	return version == SQ_MIGRATION_BLOCKS ? sq_blocks_backfill(s) : 0;
}

static int sq_migrate_one(struct sq_store *s, const struct sql_migration *m)
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

		snprintf(msg, sizeof(msg), "%s", s->h->errmsg);
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return sq_errf(s, TC_ERR_DB_SCHEMA, "migration %s: %s", m->name, msg);
	}
	return 0;
}

int sq_migrate(struct sq_store *s)
{
	size_t n = sizeof(sql_migrations) / sizeof(sql_migrations[0]);
	int version = 0;
	int ret = sq_user_version(s, &version);

	if (ret < 0)
		return ret;
	if (version > SQL_SCHEMA_VERSION)
		return sq_errf(s, TC_ERR_DB_SCHEMA,
			       "database schema %d is newer than this program's %d",
			       version, SQL_SCHEMA_VERSION);
	for (size_t i = 0; i < n && ret == 0; i++)
		if (sql_migrations[i].version > version)
			ret = sq_migrate_one(s, &sql_migrations[i]);
	return ret;
}
