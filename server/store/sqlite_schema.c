/*
 * sqlite_schema.c - the SQLite backend's event types: one table per event
 * type with a column per field, made or widened as formats arrive
 * (store_type(), a writer's), and their description for the read side
 * (store_schema_get(), store_schema_list(), a reader's). The fixed tables
 * are sqlite_migrate.c's.
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
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_index.h"
#include "server/store/sqlite_schema.h"
#include "server/store/sqlite_util.h"
#include "server/store/sqlite_write.h"

/* ---- table and column names ---- */

/* Names a field column may not take: fixed columns, rowid aliases, ours. */
static const char *const sq_reserved[] = {
	"host_id", "cpu", "ts", "trace_ts", "rowid", "oid", "_rowid_",
	"_tc_rowid", "_tc_host", "_tc_comm", "_tc_fmt",
};

/* The column of field @field: its name, or "field_" + a reserved name. */
static void sq_column_name(const char *field, struct sq_buf *b)
{
	for (size_t i = 0; i < sizeof(sq_reserved) / sizeof(sq_reserved[0]); i++)
		if (!strcasecmp(field, sq_reserved[i])) {
			sq_buf_str(b, "field_");
			break;
		}
	sq_buf_str(b, field);
}

static const char *sq_sql_type(enum store_kind kind)
{
	switch (kind) {
	case STORE_SIGNED:
	case STORE_UNSIGNED:
		return "INTEGER";
	case STORE_STRING:
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

static int sq_name_taken(struct sq_store *s, const char *table, bool *taken)
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
static int sq_table_name(struct sq_store *s, const char *system, const char *name, char **out)
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
		ret = sq_errf(s, TC_ERR_DB, "no free table name for %s:%s", system, name);
	if (ret < 0)
		free(b.s);
	else
		*out = b.s;
	return ret;
}

/* ---- event types and their tables ---- */

/*
 * A table has at most this many columns (SQLite's own limit is 2000): a
 * format that would take its type's table past it is refused.
 */
#define SQ_MAX_TABLE_COLS	1000
/* Formats one host may have sent for one type (every boot counted once per text). */
#define SQ_MAX_HOST_FORMATS	16

static const char sq_kind_suffix[] = { [STORE_SIGNED] = 'i', [STORE_UNSIGNED] = 'u',
				       [STORE_STRING] = 's', [STORE_BLOB] = 'b' };

/* The event_types row of (system, name): 1 when there is none. */
static int sq_type_find(struct sq_store *s, const struct store_type_desc *t, int64_t *type_id,
			char **table)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT id, table_name FROM event_types WHERE system = ?1"
				" AND name = ?2", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_text(st, 1, t->system, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, t->name, -1, SQLITE_STATIC);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		*type_id = sqlite3_column_int64(st, 0);
		*table = sq_dup_col(st, 1);
		ret = *table ? 0 : -ENOMEM;
		break;
	case SQLITE_DONE:
		ret = 1;
		break;
	default:
		ret = sq_err(s, TC_ERR_DB, "event_types");
	}
	sqlite3_finalize(st);
	return ret;
}

/* A new (system, name): pick its table and record it (the table comes later). */
static int sq_type_add(struct sq_store *s, const struct store_type_desc *t, const char *format,
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
	return ret;
}

/*
 * The caps on what host @o adds for type @type_id with format @fmt_id
 * (0: a new format): its formats of this type, the types it has formats
 * for. Return: 0; TC_ERR_FORMAT_LIMIT; TC_ERR_DB.
 */
static int sq_host_caps(struct sq_store *s, const struct store_type_desc *t,
			const struct store_origin *o, int64_t type_id, int64_t fmt_id)
{
	int64_t has = 0, n = 0;
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT count(DISTINCT format_id),"
				" count(*) FILTER (WHERE format_id = ?3)"
				" FROM host_formats WHERE host_id = ?1 AND type_id = ?2", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)o->host_id);
	sqlite3_bind_int64(st, 2, type_id);
	sqlite3_bind_int64(st, 3, fmt_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		n = sqlite3_column_int64(st, 0);
		has = sqlite3_column_int64(st, 1);
	} else {
		ret = sq_err(s, TC_ERR_DB, "host_formats");
	}
	sqlite3_finalize(st);
	if (ret < 0 || has)
		return ret;
	if (n >= SQ_MAX_HOST_FORMATS)
		return sq_errf(s, TC_ERR_FORMAT_LIMIT,
			       "%s:%s: the host sent %lld formats of it already"
			       " (at most %d)", t->system, t->name, (long long)n,
			       SQ_MAX_HOST_FORMATS);
	if (n || !o->max_types)
		return 0;
	ret = sq_int1(s, "SELECT count(DISTINCT type_id) FROM host_formats WHERE host_id = ?",
		      (int64_t)o->host_id, 0, &n);
	if (ret == 0 && n >= o->max_types)
		ret = sq_errf(s, TC_ERR_FORMAT_LIMIT,
			      "%s:%s: the host has %lld event types already"
			      " (max-event-types %u)", t->system, t->name,
			      (long long)n, o->max_types);
	return ret;
}

/* The formats row of @text for @type_id: 0 when there is none. */
static int sq_fmt_find(struct sq_store *s, int64_t type_id, const char *text, int64_t *id)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT id FROM formats WHERE type_id = ? AND text = ?", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, type_id);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	*id = 0;
	switch (sqlite3_step(st)) {
	case SQLITE_ROW: *id = sqlite3_column_int64(st, 0); break;
	case SQLITE_DONE: break;
	default: ret = sq_err(s, TC_ERR_DB, "formats");
	}
	sqlite3_finalize(st);
	return ret;
}

/* The column of field (@name, @kind) of @type_id: 1 (*col NULL) when there is none. */
static int sq_col_find(struct sq_store *s, int64_t type_id, const char *name, enum store_kind kind,
		       char **col)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT col FROM event_fields WHERE type_id = ? AND name = ?"
				" AND kind = ? ORDER BY ordinal LIMIT 1", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, type_id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, store_kind_name(kind), -1, SQLITE_STATIC);
	*col = NULL;
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		*col = sq_dup_col(st, 0);
		ret = *col ? 0 : -ENOMEM;
		break;
	case SQLITE_DONE:
		ret = 1;
		break;
	default:
		ret = sq_err(s, TC_ERR_DB, "event_fields");
	}
	sqlite3_finalize(st);
	return ret;
}

/*
 * The columns a format is stored in, found or made: per field i, cols[i]
 * (malloc'd) and whether it is new (not in event_fields yet).
 */
struct sq_cols {
	char **cols;
	bool *fresh;
	unsigned n, nfresh;
	int64_t have;		/* columns of the table before */
};

static void sq_cols_free(struct sq_cols *c)
{
	for (unsigned i = 0; c->cols && i < c->n; i++)
		free(c->cols[i]);
	free(c->cols);
	free(c->fresh);
}

/* Whether @name is a column of @type_id already, or one picked in @c so far. */
static int sq_col_taken(struct sq_store *s, int64_t type_id, const struct sq_cols *c, unsigned upto,
			const char *name, bool *taken)
{
	for (unsigned i = 0; i < upto; i++)
		if (c->fresh[i] && !strcasecmp(c->cols[i], name)) {
			*taken = true;
			return 0;
		}
	for (size_t i = 0; i < sizeof(sq_reserved) / sizeof(sq_reserved[0]); i++)
		if (!strcasecmp(name, sq_reserved[i])) {
			*taken = true;
			return 0;
		}
	int64_t n = 0;
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT count(*) FROM event_fields WHERE type_id = ?"
				" AND col = ? COLLATE NOCASE", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, type_id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	else
		ret = sq_err(s, TC_ERR_DB, "event_fields");
	sqlite3_finalize(st);
	*taken = n > 0;
	return ret;
}

/*
 * A new column for field @f (the @i-th of its format): its name as the
 * field's (sq_column_name()) when free, else "<name>__<kind letter>",
 * then a number: a field of another kind than the column of its name
 * never shares that column.
 */
static int sq_col_pick(struct sq_store *s, int64_t type_id, struct sq_cols *c, unsigned i,
		       const struct store_field *f)
{
	struct sq_buf b = { 0 };
	bool taken = true;
	int ret = 0;

	for (unsigned n = 0; taken && ret == 0 && n < 100; n++) {
		char suffix[24];

		b.len = 0;
		sq_column_name(f->name, &b);
		if (n > 0) {
			snprintf(suffix, sizeof(suffix), "__%c", sq_kind_suffix[f->kind]);
			sq_buf_str(&b, suffix);
		}
		if (n > 1) {
			snprintf(suffix, sizeof(suffix), "%u", n);
			sq_buf_str(&b, suffix);
		}
		ret = b.oom ? -ENOMEM : sq_col_taken(s, type_id, c, i, b.s, &taken);
	}
	if (ret == 0 && taken)
		ret = sq_errf(s, TC_ERR_FORMAT_LIMIT, "no free column for field %s",
			      f->name);
	if (ret < 0) {
		free(b.s);
		return ret;
	}
	c->cols[i] = b.s;
	c->fresh[i] = true;
	c->nfresh++;
	return 0;
}

/* The columns of @t's fields in @type_id's table (@type_id 0: a new table). */
static int sq_cols_of(struct sq_store *s, const struct store_type_desc *t, int64_t type_id,
		      struct sq_cols *c)
{
	int ret = 0;

	c->n = t->nfields;
	c->cols = calloc(t->nfields + 1, sizeof(*c->cols));
	c->fresh = calloc(t->nfields + 1, sizeof(*c->fresh));
	if (!c->cols || !c->fresh)
		return -ENOMEM;
	if (type_id)
		ret = sq_int1(s, "SELECT count(*) FROM event_fields WHERE type_id = ?", type_id, 0,
			      &c->have);
	for (unsigned i = 0; i < t->nfields && ret == 0; i++) {
		const struct store_field *f = &t->fields[i];
		unsigned j;

		for (j = 0; j < i && strcmp(t->fields[j].name, f->name); j++)
			;
		if (j < i) {	/* a name twice: its first column (the INSERT sets it once) */
			c->cols[i] = strdup(c->cols[j]);
			ret = c->cols[i] ? 0 : -ENOMEM;
			continue;
		}
		ret = type_id ? sq_col_find(s, type_id, f->name, f->kind, &c->cols[i]) : 1;
		if (ret == 1)
			ret = sq_col_pick(s, type_id, c, i, f);
	}
	if (ret == 0 && c->have + c->nfresh > SQ_MAX_TABLE_COLS)
		ret = sq_errf(s, TC_ERR_FORMAT_LIMIT,
			      "%s:%s: its table would have %lld columns (at most %d)",
			      t->system, t->name, (long long)(c->have + c->nfresh),
			      SQ_MAX_TABLE_COLS);
	return ret;
}

/* One column definition: "name" TYPE. */
static void sq_col_def(struct sq_buf *b, const char *col, enum store_kind kind)
{
	sq_ident(b, col);
	sq_buf_str(b, " ");
	sq_buf_str(b, sq_sql_type(kind));
}

/*
 * The new columns of @c: for a new table, one CREATE TABLE with all of
 * them (DDL re-parses the whole schema each time: an ALTER per field made
 * thousands of types quadratic); for a known one, an ALTER TABLE each.
 */
static int sq_cols_make(struct sq_store *s, const struct store_type_desc *t, const char *table,
			bool create, const struct sq_cols *c)
{
	struct sq_buf b = { 0 };
	int ret = 0;

	if (create) {
		sq_buf_str(&b, "CREATE TABLE ");
		sq_ident(&b, table);
		sq_buf_str(&b, " (host_id INTEGER NOT NULL, cpu INTEGER NOT NULL,"
			    " ts INTEGER NOT NULL, trace_ts INTEGER NOT NULL, _tc_fmt INTEGER");
		for (unsigned i = 0; i < c->n; i++)
			if (c->fresh[i]) {
				sq_buf_str(&b, ", ");
				sq_col_def(&b, c->cols[i], t->fields[i].kind);
			}
		sq_buf_str(&b, ")");
		ret = b.oom ? -ENOMEM : sq_exec(s, b.s);
	}
	for (unsigned i = 0; !create && i < c->n && ret == 0; i++) {
		if (!c->fresh[i])
			continue;
		b.len = 0;
		sq_buf_str(&b, "ALTER TABLE ");
		sq_ident(&b, table);
		sq_buf_str(&b, " ADD COLUMN ");
		sq_col_def(&b, c->cols[i], t->fields[i].kind);
		ret = b.oom ? -ENOMEM : sq_exec(s, b.s);
	}
	free(b.s);
	return ret;
}

/* Record the new columns of @c in event_fields, in field order. */
static int sq_cols_record(struct sq_store *s, int64_t type_id, const struct store_type_desc *t,
			  const struct sq_cols *c)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "INSERT INTO event_fields (type_id, name, col, kind, size, ordinal)"
				" VALUES (?1, ?2, ?3, ?4, ?5, (SELECT coalesce(max(ordinal) + 1, 0)"
				" FROM event_fields WHERE type_id = ?1))", &st);

	for (unsigned i = 0; i < c->n && ret == 0; i++) {
		const struct store_field *f = &t->fields[i];

		if (!c->fresh[i])
			continue;
		sqlite3_bind_int64(st, 1, type_id);
		sqlite3_bind_text(st, 2, f->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, c->cols[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, store_kind_name(f->kind), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, f->size);
		ret = sq_run(s, st, false);
	}
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/* A new formats row for @format of @type_id, with its fields' columns. */
static int sq_fmt_add(struct sq_store *s, int64_t type_id, const struct store_type_desc *t,
		      const char *format, const struct sq_cols *c, int64_t *id)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "INSERT INTO formats (type_id, text) VALUES (?, ?) RETURNING id",
			     &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, type_id);
	sqlite3_bind_text(st, 2, format, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	else
		ret = sq_err(s, TC_ERR_DB, "formats");
	sqlite3_finalize(st);
	st = NULL;
	if (ret == 0)
		ret = sq_prepare(s, "INSERT INTO format_fields (format_id, ordinal, name, col, type)"
				    " VALUES (?, ?, ?, ?, ?)", &st);
	for (unsigned i = 0; i < c->n && ret == 0; i++) {
		sqlite3_bind_int64(st, 1, *id);
		sqlite3_bind_int64(st, 2, i);
		sqlite3_bind_text(st, 3, t->fields[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, c->cols[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, t->fields[i].type ? t->fields[i].type : "", -1,
				  SQLITE_STATIC);
		ret = sq_run(s, st, false);
	}
	if (st && c->n)
		sqlite3_finalize(st);
	return ret;
}

/* Host @o sent format @fmt_id of @type_id (in its boot): host_formats, the latest format. */
static int sq_host_format(struct sq_store *s, const struct store_origin *o, int64_t type_id,
			  int64_t fmt_id, const char *format)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "INSERT OR IGNORE INTO host_formats (host_id, boot_id, type_id,"
				" format_id, since) VALUES (?, ?, ?, ?, ?)", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)o->host_id);
	sqlite3_bind_text(st, 2, o->boot_id ? o->boot_id : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, type_id);
	sqlite3_bind_int64(st, 4, fmt_id);
	sqlite3_bind_int64(st, 5, o->since);
	ret = sq_run(s, st, true);
	if (ret == 0)
		ret = sq_prepare(s, "UPDATE event_types SET format = ? WHERE id = ?", &st);
	if (ret == 0) {
		sqlite3_bind_text(st, 1, format, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, type_id);
		ret = sq_run(s, st, true);
	}
	return ret;
}

static struct store_type *sq_type_cached(struct sq_store *s, const struct store_type_desc *t,
					 const char *format)
{
	for (struct store_type *st = s->types; st; st = st->next)
		if (!strcmp(st->system, t->system) && !strcmp(st->name, t->name) &&
		    st->nfields == t->nfields && !strcmp(st->format, format))
			return st;
	return NULL;
}

static struct store_type *sq_type_new(const struct store_type_desc *t, const char *format)
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

/*
 * The type, its table, columns and format for @t, inside the caller's
 * savepoint; @st gets the type and format ids and its INSERT.
 */
static int sq_type_build(struct sq_store *s, struct store_type *st, const struct store_type_desc *t,
			 const char *format, const struct store_origin *o)
{
	struct sq_cols c = { 0 };
	char *table = NULL;
	int64_t type_id = 0, fmt_id = 0;
	unsigned created = 0;
	int ret = sq_type_find(s, t, &type_id, &table);
	bool create = ret == 1;

	if (ret == 0)
		ret = sq_fmt_find(s, type_id, format, &fmt_id);
	if (ret == 0 || create)
		ret = sq_host_caps(s, t, o, type_id, fmt_id);
	if (ret == 0 && create)
		ret = sq_type_add(s, t, format, &type_id, &table);
	if (ret == 0)
		ret = sq_cols_of(s, t, create ? 0 : type_id, &c);
	if (ret == 0)
		ret = sq_cols_make(s, t, table, create, &c) ?:
		      sq_cols_record(s, type_id, t, &c);
	if (ret == 0 && !fmt_id)
		ret = sq_fmt_add(s, type_id, t, format, &c, &fmt_id);
	if (ret == 0)
		ret = sq_host_format(s, o, type_id, fmt_id, format);
	st->type_id = type_id;
	st->fmt_id = fmt_id;
	if (ret == 0)
		ret = sq_ix_type(s, type_id, t->system, t->name, table, &created);
	if (ret == 0)
		ret = sq_type_insert(s, st, t, table, c.cols);
	sq_cols_free(&c);
	free(table);
	return ret;
}

/*
 * A format already stored (this run): the caps and host_formats for
 * host @o, which may be another host than the one that sent it first.
 */
static int sq_type_again(struct sq_store *s, struct store_type *st, const struct store_type_desc *t,
			 const struct store_origin *o)
{
	int ret = sq_host_caps(s, t, o, st->type_id, st->fmt_id);

	return ret ?: sq_host_format(s, o, st->type_id, st->fmt_id, st->format);
}

static int sq_type(struct store_writer *w, const struct store_type_desc *t,
		   const struct store_origin *o, struct store_type **out)
{
	struct sq_store *s = sq_writer_of(w);
	const char *format = t->format;
	struct store_type *st;
	int ret = sq_writer_enter(s);

	if (ret < 0)
		return ret;
	st = sq_type_cached(s, t, format);
	if (o->max_fields && t->nfields > o->max_fields)
		return sq_errf(s, TC_ERR_FORMAT_LIMIT,
			       "%s:%s: %u fields (max-event-fields %u)", t->system,
			       t->name, t->nfields, o->max_fields);
	if (st) {
		ret = sq_type_again(s, st, t, o);
		if (ret == 0)
			*out = st;
		return ret;
	}
	ret = sq_flush_all(s);	/* the table may change */
	if (ret < 0)
		return ret;
	st = sq_type_new(t, format);
	if (!st)
		return -ENOMEM;
	ret = sq_exec(s, "SAVEPOINT tc_type");
	if (ret == 0) {
		ret = sq_type_build(s, st, t, format, o);
		if (ret < 0)
			sqlite3_exec(s->db, "ROLLBACK TO tc_type", NULL, NULL, NULL);
		sqlite3_exec(s->db, "RELEASE tc_type", NULL, NULL, NULL);
	}
	if (ret < 0) {
		sq_type_free(st);
		return ret;
	}
	st->next = s->types;
	s->types = st;
	*out = st;
	return 0;
}

/* ---- schemas for the read side ---- */

static enum store_kind sq_kind(const char *name)
{
	for (int k = STORE_SIGNED; k <= STORE_BLOB; k++)
		if (name && !strcmp(name, store_kind_name((enum store_kind)k)))
			return (enum store_kind)k;
	return STORE_BLOB;
}

static int sq_schema_cols(struct sq_store *s, int64_t type_id, struct store_schema *sc)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int ret = sq_prepare_cached(s, "SELECT name, col, kind FROM event_fields WHERE type_id = ?"
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
	sq_release(s, st);
	return ret;
}

/* Format @f's fields: their columns (indices into @sc's) and C types. */
static int sq_fmt_fields(struct sq_store *s, const struct store_schema *sc, struct store_fmt *f)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int ret = sq_prepare_cached(s, "SELECT col, type FROM format_fields WHERE format_id = ?"
				       " ORDER BY ordinal", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, f->id);
	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		const char *col = (const char *)sqlite3_column_text(st, 0);
		size_t k;

		for (k = 0; k < sc->ncols && strcmp(sc->cols[k].column, col ? col : ""); k++)
			;
		if (k == sc->ncols)
			continue;	/* cannot be: every format's column is in event_fields */
		if (f->ncols == cap) {
			size_t *c;
			char **t;

			cap = cap ? cap * 2 : 16;
			c = realloc(f->cols, cap * sizeof(*c));
			if (c)
				f->cols = c;
			t = c ? realloc(f->types, cap * sizeof(*t)) : NULL;
			if (!t) {
				ret = -ENOMEM;
				break;
			}
			f->types = t;
		}
		f->cols[f->ncols] = k;
		f->types[f->ncols] = sq_dup_col(st, 1);
		if (!f->types[f->ncols++])
			ret = -ENOMEM;
	}
	sq_release(s, st);
	return ret;
}

/* Format @f's hosts, from host_formats. */
static int sq_fmt_hosts(struct sq_store *s, struct store_fmt *f)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int ret = sq_prepare_cached(s, "SELECT DISTINCT host_id FROM host_formats"
				       " WHERE format_id = ? ORDER BY host_id", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, f->id);
	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		if (f->nhosts == cap) {
			uint64_t *h;

			cap = cap ? cap * 2 : 8;
			h = realloc(f->host_ids, cap * sizeof(*h));
			if (!h) {
				ret = -ENOMEM;
				break;
			}
			f->host_ids = h;
		}
		f->host_ids[f->nhosts++] = (uint64_t)sqlite3_column_int64(st, 0);
	}
	sq_release(s, st);
	return ret;
}

/* @sc's formats (its columns loaded), oldest first. */
static int sq_schema_fmts(struct sq_store *s, struct store_schema *sc)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int ret = sq_prepare_cached(s, "SELECT id, text FROM formats WHERE type_id = ? ORDER BY id",
				   &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, sc->type_id);
	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		struct store_fmt *f;

		if (sc->nfmts == cap) {
			cap = cap ? cap * 2 : 4;
			f = realloc(sc->fmts, cap * sizeof(*f));
			if (!f) {
				ret = -ENOMEM;
				break;
			}
			sc->fmts = f;
		}
		f = &sc->fmts[sc->nfmts++];
		memset(f, 0, sizeof(*f));
		f->id = sqlite3_column_int64(st, 0);
		f->text = sq_dup_col(st, 1);
		ret = f->text ? 0 : -ENOMEM;
	}
	sq_release(s, st);
	/* hosts only tell formats apart: a type of one format (the usual) reads none */
	for (size_t i = 0; ret == 0 && i < sc->nfmts; i++)
		ret = sq_fmt_fields(s, sc, &sc->fmts[i]) ?:
		      (sc->nfmts > 1 ? sq_fmt_hosts(s, &sc->fmts[i]) : 0);
	return ret;
}

/*
 * Build the schema of the event_types row @st is on (id, system, name,
 * table, format), its columns only when @cols, its formats when @fmts.
 */
static int sq_schema_load(struct sq_store *s, sqlite3_stmt *st, bool cols, bool fmts,
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
	if (ret == 0 && fmts)
		ret = sq_schema_fmts(s, sc);
	if (ret < 0) {
		store_schema_free(sc);
		return ret;
	}
	*out = sc;
	return 0;
}

/* After a first match, collect the other systems for the error message. */
static int sq_ambiguous(struct sq_store *s, sqlite3_stmt *st, const char *event)
{
	struct sq_buf b = { 0 };
	int ret;

	sq_buf_str(&b, (const char *)sqlite3_column_text(st, 1));
	while (sqlite3_step(st) == SQLITE_ROW) {
		sq_buf_str(&b, ", ");
		sq_buf_str(&b, (const char *)sqlite3_column_text(st, 1));
	}
	ret = sq_errf(s, TC_ERR_AMBIGUOUS,
		      "event \"%s\" exists in several systems: %s; name one as SYSTEM:%s",
		      event, b.oom ? "?" : b.s, event);
	free(b.s);
	return ret;
}

int sq_schema_find(struct sq_store *s, const char *system, const char *event,
		   struct store_schema **out)
{
	sqlite3_stmt *st;
	int ret = sq_prepare_cached(s, "SELECT id, system, name, table_name, format"
				       " FROM event_types WHERE name = ?1 AND (?2 IS NULL OR"
				       " system = ?2) ORDER BY system", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_text(st, 1, event, -1, SQLITE_STATIC);
	sq_bind_text(st, 2, system);
	if (sqlite3_step(st) != SQLITE_ROW) {
		ret = sq_errf(s, TC_ERR_UNKNOWN_EVENT, "no event %s%s%s",
			      system ? system : "", system ? ":" : "", event);
	} else {
		ret = sq_schema_load(s, st, true, true, out);
		if (ret == 0 && !system && sqlite3_step(st) == SQLITE_ROW) {
			store_schema_free(*out);
			sqlite3_reset(st);
			sqlite3_step(st);
			ret = sq_ambiguous(s, st, event);
		}
	}
	sq_release(s, st);
	return ret;
}

int sq_schema_walk(struct sq_store *s, const char *system, bool cols,
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
		ret = sq_schema_load(s, st, cols, false, &sc);
		if (ret == 0) {
			ret = fn(ctx, sc);
			store_schema_free(sc);
		}
	}
	sqlite3_finalize(st);
	if (ret == 0 && !any && system)
		ret = sq_errf(s, TC_ERR_UNKNOWN_EVENT, "no events in system %s", system);
	return ret;
}

/*
 * Names only: every read of a query resolves its selectors through this
 * walk, and loading every type's columns cost more than the rest of a
 * 10,000-row page's setup.
 */
static int sq_schema_list(struct store_reader *r, const char *system,
			  int (*fn)(void *ctx, const struct store_schema *sc), void *ctx)
{
	struct sq_store *s = sq_reader_of(r);

	return sq_reader_enter(s) ?: sq_schema_walk(s, system, false, fn, ctx);
}

static int sq_schema_get(struct store_reader *r, const char *system, const char *event,
			 struct store_schema **out)
{
	struct sq_store *s = sq_reader_of(r);

	return sq_reader_enter(s) ?: sq_schema_find(s, system, event, out);
}

void sq_schema_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->type = sq_type;
	r->schema_get = sq_schema_get;
	r->schema_list = sq_schema_list;
}
