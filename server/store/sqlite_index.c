/*
 * sqlite_index.c - the SQLite backend's field indexes: an index by
 * (field, ts) on the tables and columns that store_set_indexes() names,
 * kept as tables and columns come and go, and whether a query may read
 * through one.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_index.h"
#include "server/store/sqlite_util.h"

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

static int sq_ix_exists(struct sq_store *s, const char *table, const char *column, bool *exists)
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
static int sq_ix_create(struct sq_store *s, const char *table, const char *column,
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
int sq_ix_type(struct sq_store *s, int64_t type_id, const char *system, const char *name,
	       const char *table, unsigned *created)
{
	const struct store_indexes *ix = &s->ix;
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
static int sq_ix_drop_unwanted(struct sq_store *s, unsigned *dropped)
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
		if (v[0] && v[1] && v[2] && sq_ix_wanted(&s->ix, v[0], v[1], v[2]))
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
static int sq_ix_all(struct sq_store *s, unsigned *created)
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

static int sq_set_indexes(struct store_writer *w, const struct store_indexes *ix,
			  unsigned *created, unsigned *dropped)
{
	struct sq_store *s = sq_writer_of(w);
	struct store_indexes copy = { 0 };
	int ret = sq_writer_enter(s) ?: sq_ix_copy(&copy, ix);

	if (ret < 0)
		return ret;
	store_indexes_free(&s->ix);
	s->ix = copy;
	ret = sq_exec(s, "BEGIN IMMEDIATE");
	if (ret == 0)
		ret = sq_ix_drop_unwanted(s, dropped) ?: sq_ix_all(s, created);
	if (ret == 0)
		ret = sq_exec(s, "COMMIT");
	else
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

/*
 * Whether a query may read through an index: some bind is a value its
 * WHERE requires a column to equal, and that column has an index.
 */
int sq_ix_usable(struct sq_store *s, const struct store_schema *sc,
		 const struct sq_bind *b, size_t nb, bool *usable)
{
	int ret = 0;

	*usable = false;
	for (size_t i = 0; i < nb && ret == 0 && !*usable; i++)
		if (b[i].eq_column)
			ret = sq_ix_exists(s, sc->table, b[i].eq_column, usable);
	return ret;
}

void sq_index_ops(struct store_writer_ops *w)
{
	w->set_indexes = sq_set_indexes;
}
