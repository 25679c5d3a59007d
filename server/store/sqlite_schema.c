/*
 * sqlite_schema.c - the SQLite backend's schema: the numbered migrations
 * of sql/ (and migration 5's backfill of the time index), one table per
 * event type with a column per field, made or widened as formats arrive
 * (store_type()), and their description for the read side
 * (store_schema_get(), store_schema_list()).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_int.h"
#include "sql/schema.h"

#define SQ_MIGRATION_BLOCKS 5		/* 0005-ts-blocks.sql */

/* ---- table and column names ---- */

/* Names a field column may not take: fixed columns, rowid aliases, ours. */
static const char *const sq_reserved[] = {
	"host_id", "cpu", "ts", "trace_ts", "rowid", "oid", "_rowid_",
	"_tc_rowid", "_tc_host", "_tc_comm",
};

void sq_column_name(const char *field, struct sq_buf *b)
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

/* ---- migrations ---- */

int sq_user_version(struct store *s, int *version)
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

int sq_migrate(struct store *s)
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

/* ---- event types and their tables ---- */

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

static struct store_type *sq_type_cached(struct store *s, const struct decode_type *t,
					 const char *format)
{
	for (struct store_type *st = sq_store_of(s)->types; st; st = st->next)
		if (!strcmp(st->system, t->system) && !strcmp(st->name, t->name) &&
		    st->nfields == t->nfields && !strcmp(st->format, format))
			return st;
	return NULL;
}

void sq_type_free(struct store_type *t)
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

int sq_type(struct store *s, const struct decode_type *t, const char *format,
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

/* ---- schemas for the read side ---- */

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
	}
	sqlite3_finalize(st);
	return ret;
}

/*
 * Build the schema of the event_types row @st is on (id, system, name,
 * table, format), its columns only when @cols.
 */
static int sq_schema_load(struct store *s, sqlite3_stmt *st, bool cols,
			  struct store_schema **out)
{
	struct store_schema *sc = calloc(1, sizeof(*sc));
	int ret = -ENOMEM;

	if (!sc)
		return -ENOMEM;
	sc->system = sq_dup_col(st, 1);
	sc->name = sq_dup_col(st, 2);
	sc->table = sq_dup_col(st, 3);
	sc->format = sq_dup_col(st, 4);
	sc->type_id = sqlite3_column_int64(st, 0);
	if (sc->system && sc->name && sc->table && sc->format)
		ret = cols ? sq_schema_cols(s, sqlite3_column_int64(st, 0), sc) : 0;
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

int sq_schema_get(struct store *s, const char *system, const char *event,
		  struct store_schema **out)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT id, system, name, table_name, format FROM event_types"
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
		ret = sq_schema_load(s, st, true, out);
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

int sq_schema_walk(struct store *s, const char *system, bool cols,
		   int (*fn)(void *ctx, const struct store_schema *sc), void *ctx)
{
	sqlite3_stmt *st;
	bool any = false;
	int ret = sq_prepare(s, "SELECT id, system, name, table_name, format FROM event_types"
				" WHERE ?1 IS NULL OR system = ?1 ORDER BY system, name", &st);

	if (ret < 0)
		return ret;
	sq_bind_text(st, 1, system);
	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		struct store_schema *sc;

		any = true;
		ret = sq_schema_load(s, st, cols, &sc);
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

/*
 * Names only: every read of a query resolves its selectors through this
 * walk, and loading every type's columns cost more than the rest of a
 * 10,000-row page's setup.
 */
int sq_schema_list(struct store *s, const char *system,
		   int (*fn)(void *ctx, const struct store_schema *sc), void *ctx)
{
	return sq_schema_walk(s, system, false, fn, ctx);
}
