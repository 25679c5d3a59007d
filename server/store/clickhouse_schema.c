/*
 * clickhouse_schema.c - event tables, columns and formats (writer), and
 * the schemas readers get (clickhouse_schema.h).
 *
 * A type's table is ev_<system>_<name> (bytes outside [A-Za-z0-9_] become
 * '_', and then the type id's low 32 bits in hex follow, so that the name
 * is the same on every collector and two types never share one). A field
 * name has one column per kind, as with SQLite: the first kind the name
 * came with has the name itself (unless a fixed column has it), another
 * "<name>__<k>" (k: i, u, s, b; then a number). event_fields records which.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/clickhouse_reader.h"
#include "server/store/clickhouse_schema.h"
#include "server/store/clickhouse_shards.h"
#include "server/store/clickhouse_send.h"
#include "server/store/clickhouse_stacks.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

static const char *const ch_fixed_cols[] = { CH_EV_FIXED, NULL };

static const char *ch_kind_type(enum store_kind k)
{
	return k == STORE_SIGNED ? "Int64" : k == STORE_UNSIGNED ? "UInt64" : "String";
}

static int ch_kind_parse(const char *s, enum store_kind *k)
{
	static const enum store_kind kinds[] = { STORE_SIGNED, STORE_UNSIGNED, STORE_STRING,
						 STORE_BLOB };

	for (size_t i = 0; i < 4; i++)
		if (!strcmp(s, store_kind_name(kinds[i]))) {
			*k = kinds[i];
			return 0;
		}
	return TC_ERR_DB_SCHEMA;
}

void ch_table_name(const char *system, const char *name, uint64_t type_id, char *buf,
		   size_t len)
{
	bool clean = strlen(system) <= 50 && strlen(name) <= 50;
	size_t n;

	snprintf(buf, len, "ev_%.50s_%.50s", system, name);
	for (n = 3; buf[n]; n++) {
		char c = buf[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_')) {
			buf[n] = '_';
			clean = false;
		}
	}
	if (!clean)
		snprintf(buf + n, len - n, "_%08" PRIx32, (uint32_t)type_id);
}

/* ---- the writer's tables ---- */

static struct ch_col *ch_col_find(struct ch_table *tab, const char *name, enum store_kind k)
{
	for (size_t i = 0; i < tab->ncols; i++)
		if (tab->cols[i].kind == k && !strcmp(tab->cols[i].name, name))
			return &tab->cols[i];
	return NULL;
}

static bool ch_col_taken(struct ch_table *tab, const char *column)
{
	for (size_t i = 0; ch_fixed_cols[i]; i++)
		if (!strcmp(ch_fixed_cols[i], column))
			return true;
	for (size_t i = 0; i < tab->ncols; i++)
		if (!strcmp(tab->cols[i].column, column))
			return true;
	return false;
}

static int ch_col_add(struct ch_table *tab, const char *name, const char *column,
		      enum store_kind k)
{
	struct ch_col *v = util_grow(tab->cols, &tab->cap, tab->ncols, sizeof(*v), 16);
	struct ch_col *c;

	if (!v)
		return -ENOMEM;
	tab->cols = v;
	c = &v[tab->ncols];
	c->name = strdup(name);
	c->column = strdup(column);
	c->kind = k;
	if (!c->name || !c->column) {
		free(c->name);
		free(c->column);
		return -ENOMEM;
	}
	tab->ncols++;
	return 0;
}

/* A free column for field @name of kind @k (into @buf). */
static void ch_col_pick(struct ch_table *tab, const char *name, enum store_kind k, char *buf,
			size_t len)
{
	static const char letter[] = { 'i', 'u', 's', 'b' };

	snprintf(buf, len, "%s", name);
	for (unsigned n = 1; ch_col_taken(tab, buf); n++)
		snprintf(buf, len, n == 1 ? "%s__%c" : "%s__%c%u", name, letter[k], n);
}

/* A type's columns as event_fields has them: col, name, kind, in first-seen order. */
static int ch_fields_read(struct ch_store *s, int64_t type_id, struct ch_reply *r)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT col, name, kind FROM event_fields FINAL WHERE type_id = %lld"
		    " ORDER BY ordinal, col", (long long)type_id);
	ret = ch_query(s, &q, r);
	ch_sql_free(&q);
	return ret;
}

/* The columns the server has for @tab's type (event_fields), once. */
static int ch_table_load(struct ch_store *s, struct ch_table *tab)
{
	struct ch_reply r;
	enum store_kind k;
	int ret = ch_fields_read(s, tab->type_id, &r);

	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		ret = ch_kind_parse(ch_reply_cell(&r, i, 2), &k);
		if (ret == 0 && !ch_col_find(tab, ch_reply_cell(&r, i, 1), k))
			ret = ch_col_add(tab, ch_reply_cell(&r, i, 1), ch_reply_cell(&r, i, 0), k);
	}
	if (r.nrows || ret == 0)
		ch_reply_free(&r);
	return ret == TC_ERR_DB_SCHEMA ? ch_errf(s, ret, "event_fields: an unknown kind") : ret;
}

static struct ch_table *ch_table_get(struct ch_store *s, const char *system, const char *name,
				     int *err)
{
	uint64_t type_id = ch_id_str("type", system, name);
	struct ch_table *tab;
	char tname[160];

	for (tab = s->tables; tab; tab = tab->next)
		if (tab->type_id == (int64_t)type_id)
			return tab;
	tab = calloc(1, sizeof(*tab));
	ch_table_name(system, name, type_id, tname, sizeof(tname));
	if (!tab || !(tab->system = strdup(system)) || !(tab->name = strdup(name)) ||
	    !(tab->table = strdup(tname))) {
		*err = -ENOMEM;
		goto fail;
	}
	tab->type_id = (int64_t)type_id;
	*err = ch_table_load(s, tab);
	if (*err < 0)
		goto fail;
	tab->next = s->tables;
	s->tables = tab;
	return tab;
fail:
	if (tab) {
		free(tab->system); free(tab->name); free(tab->table);
		for (size_t i = 0; i < tab->ncols; i++) {
			free(tab->cols[i].name);
			free(tab->cols[i].column);
		}
		free(tab->cols);
		free(tab);
	}
	return NULL;
}

/* The ALTER TABLE ADD COLUMN of @tab's column @i alone (shards: clickhouse_shards.h). */
static int ch_table_ddl_one(struct ch_store *s, struct ch_table *tab, size_t i)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "ALTER TABLE ");
	ch_sql_ident(&q, tab->table);
	ch_sql_raw(&q, " ADD COLUMN ");
	ch_sql_ident(&q, tab->cols[i].column);
	ch_sql_addf(&q, " %s", ch_kind_type(tab->cols[i].kind));
	ret = ch_shards_table_ddl(s, tab->table, &q, false);
	ch_sql_free(&q);
	return ret;
}

/* CREATE TABLE (first) or ALTER TABLE ADD COLUMN for @tab's columns from @from on. */
static int ch_table_ddl(struct ch_store *s, struct ch_table *tab, size_t from)
{
	struct ch_sql q;
	bool create = from == 0;
	int ret;

	if (from == tab->ncols && !create)
		return 0;
	if (!create && s->nshards) {	/* one column at a time (clickhouse_shards.h) */
		ret = 0;
		for (size_t i = from; i < tab->ncols && ret == 0; i++)
			ret = ch_table_ddl_one(s, tab, i);
		return ret;
	}
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, create ? "CREATE TABLE IF NOT EXISTS " : "ALTER TABLE ");
	ch_sql_ident(&q, tab->table);
	if (create)
		ch_sql_raw(&q, " (host_id UInt64, cpu UInt32, ts Int64, trace_ts UInt64,"
			       " _tc_fmt Int64, _tc_commit UInt64, _tc_row UInt64");
	for (size_t i = from; i < tab->ncols; i++) {
		ch_sql_raw(&q, create ? ", " : i > from ? ", ADD COLUMN " : " ADD COLUMN ");
		ch_sql_ident(&q, tab->cols[i].column);
		ch_sql_addf(&q, " %s", ch_kind_type(tab->cols[i].kind));
	}
	if (create) {
		ch_sql_raw(&q, ")");
		ch_sql_engine(s, &q, tab->table, "MergeTree()");
		ch_sql_raw(&q, " PARTITION BY " CH_PARTITION " ORDER BY (host_id, ts)");
		ch_sql_engine_settings(s, &q, "MergeTree()");
	}
	ret = ch_shards_table_ddl(s, tab->table, &q, create);
	ch_sql_free(&q);
	return ret;
}

/*
 * The column of each field of @t (keep[i]: the first field of its name),
 * added to @tab (and to the server, with their event_fields rows) where
 * missing.
 */
static int ch_type_columns(struct ch_store *s, struct ch_table *tab,
			   const struct store_type_desc *t, struct store_type *ty)
{
	struct ch_batch *ef = &s->fixed[CH_B_EVENT_FIELDS];
	size_t from = tab->ncols;
	char col[300];
	int ret = 0;

	for (unsigned i = 0; i < t->nfields && !ret; i++) {
		const struct store_field *f = &t->fields[i];

		ty->kinds[i] = f->kind;
		ty->keep[i] = true;
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(t->fields[j].name, f->name))
				ty->keep[i] = false;
		if (!ty->keep[i] || ch_col_find(tab, f->name, f->kind))
			continue;
		ch_col_pick(tab, f->name, f->kind, col, sizeof(col));
		ret = ch_col_add(tab, f->name, col, f->kind);
		if (ret < 0)
			break;
		ch_b_i64(&ef->rows, tab->type_id);
		ch_b_cstr(&ef->rows, col);
		ch_b_cstr(&ef->rows, f->name);
		ch_b_cstr(&ef->rows, store_kind_name(f->kind));
		ch_b_u32(&ef->rows, f->size);
		ch_b_u32(&ef->rows, (uint32_t)(tab->ncols - 1));
		ret = ch_batch_row_done(ef);
	}
	if (ret == 0)
		ret = ch_table_ddl(s, tab, from);
	while (ret < 0 && tab->ncols > from) {	/* the server has not got them */
		tab->ncols--;
		free(tab->cols[tab->ncols].name);
		free(tab->cols[tab->ncols].column);
	}
	if (ret == 0 && !s->in_txn)
		ret = ch_batch_send(s, ef);	/* before any row names them */
	return ret;
}

/* The INSERT of @ty's rows: the fixed columns, then each kept field's. */
static int ch_type_batch(struct ch_store *s, struct ch_table *tab,
			 const struct store_type_desc *t, struct store_type *ty)
{
	struct ch_sql q;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "INSERT INTO ");
	ch_sql_ident(&q, tab->table);
	ch_sql_raw(&q, " (host_id, cpu, ts, trace_ts, _tc_fmt, _tc_commit, _tc_row");
	for (unsigned i = 0; i < t->nfields; i++) {
		if (!ty->keep[i])
			continue;
		ch_sql_raw(&q, ", ");
		ch_sql_ident(&q, ch_col_find(tab, t->fields[i].name, t->fields[i].kind)->column);
	}
	if (ch_sql_raw(&q, ") FORMAT RowBinary") < 0) {
		ch_sql_free(&q);
		return ch_errf(s, TC_ERR_FORMAT_LIMIT, "event %s:%s: its INSERT is too long",
			       tab->system, tab->name);
	}
	ch_batch_init_sql(&ty->batch, q.buf, true);
	return 0;
}

/* The facts of a format: formats, format_fields, event_types. */
static int ch_format_facts(struct ch_store *s, struct ch_table *tab,
			   const struct store_type_desc *t, int64_t format_id)
{
	struct ch_batch *b = &s->fixed[CH_B_FORMATS];
	int ret;

	ch_b_i64(&b->rows, format_id);
	ch_b_i64(&b->rows, tab->type_id);
	ch_b_cstr(&b->rows, t->format);
	ret = ch_fact_done(s, b);
	b = &s->fixed[CH_B_FORMAT_FIELDS];
	for (unsigned i = 0; i < t->nfields && ret == 0; i++) {
		const struct store_field *f = &t->fields[i];

		ch_b_i64(&b->rows, format_id);
		ch_b_u32(&b->rows, i);
		ch_b_cstr(&b->rows, ch_col_find(tab, f->name, f->kind)->column);
		ch_b_cstr(&b->rows, f->type);
		ret = ch_batch_row_done(b);
	}
	if (ret == 0 && !s->in_txn)
		ret = ch_batch_send(s, b);
	b = &s->fixed[CH_B_EVENT_TYPES];
	ch_b_i64(&b->rows, tab->type_id);
	ch_b_cstr(&b->rows, tab->system);
	ch_b_cstr(&b->rows, tab->name);
	ch_b_cstr(&b->rows, tab->table);
	ch_b_i64(&b->rows, format_id);
	ch_b_u64(&b->rows, (uint64_t)ch_now_ns());
	return ret ?: ch_fact_done(s, b);
}

static void ch_type_free(struct store_type *ty)
{
	if (!ty)
		return;
	ch_batch_free(&ty->batch);
	free(ty->kinds);
	free(ty->keep);
	free(ty);
}

/* A new handle for format @format_id of @t. */
static int ch_type_new(struct ch_store *s, const struct store_type_desc *t, int64_t format_id,
		       struct store_type **out)
{
	struct store_type *ty = calloc(1, sizeof(*ty));
	struct ch_table *tab;
	int ret = 0;

	if (!ty || !(ty->kinds = calloc(t->nfields + 1, sizeof(*ty->kinds))) ||
	    !(ty->keep = calloc(t->nfields + 1, sizeof(*ty->keep)))) {
		ch_type_free(ty);
		return -ENOMEM;
	}
	tab = ch_table_get(s, t->system, t->name, &ret);
	ret = ret ?: ch_type_columns(s, tab, t, ty) ?: ch_type_batch(s, tab, t, ty) ?:
	      ch_format_facts(s, tab, t, format_id);
	if (ret < 0) {
		ch_type_free(ty);
		return ret;
	}
	ty->tab = tab;
	ty->format_id = format_id;
	ty->nfields = t->nfields;
	ty->stack_field = -1;
	for (unsigned i = 0; i < t->nfields; i++)
		if (ty->keep[i] && t->fields[i].kind == STORE_BLOB &&
		    store_field_is_stack(t->system, t->name, t->fields[i].name))
			ty->stack_field = (int)i;
	ty->next = s->types;
	s->types = ty;
	*out = ty;
	return 0;
}

/* The event types host @h sent formats of, read from the server once. */
static int ch_host_types_read(struct ch_store *s, struct ch_host *h)
{
	struct ch_reply r;
	struct ch_sql q;
	int64_t *v, id;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT DISTINCT type_id FROM host_formats WHERE host_id = %llu",
		    (unsigned long long)h->id);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		if (ch_reply_i64(&r, i, 0, &id) < 0)
			continue;
		v = util_grow(h->types, &h->types_cap, h->ntypes, sizeof(*v), 64);
		if (!v)
			ret = -ENOMEM;
		else
			(h->types = v)[h->ntypes++] = id;
	}
	if (ret == 0 || r.nrows)
		ch_reply_free(&r);
	h->types_read = ret == 0;
	return ret;
}

/*
 * max-event-types: a host that has formats of @o->max_types types gets no
 * table for another (its events are counted as schema-cap drops).
 */
static int ch_types_cap(struct ch_store *s, const struct store_type_desc *t,
			const struct store_origin *o)
{
	int64_t type_id = (int64_t)ch_id_str("type", t->system, t->name), *v;
	struct ch_host *h = s->hosts;
	int ret = 0;

	while (h && h->id != o->host_id)
		h = h->next;
	if (!h || !o->max_types)
		return 0;	/* a host this writer did not see (imports): not capped here */
	if (!h->types_read && (ret = ch_host_types_read(s, h)) < 0)
		return ret;
	for (size_t i = 0; i < h->ntypes; i++)
		if (h->types[i] == type_id)
			return 0;
	if (h->ntypes >= o->max_types)
		return ch_errf(s, TC_ERR_FORMAT_LIMIT, "%.100s:%.100s: the host has %zu event "
			       "types already (max-event-types %u)", t->system, t->name,
			       h->ntypes, o->max_types);
	v = util_grow(h->types, &h->types_cap, h->ntypes, sizeof(*v), 64);
	if (!v)
		return -ENOMEM;
	(h->types = v)[h->ntypes++] = type_id;
	return 0;
}

static int ch_type(struct store_writer *w, const struct store_type_desc *t,
		   const struct store_origin *o, struct store_type **out)
{
	struct ch_store *s = ch_writer_of(w);
	char key[240];
	const char *parts[3] = { "format", key, t->format };
	size_t lens[3];
	struct store_type *ty;
	struct ch_batch *hf = &s->fixed[CH_B_HOST_FORMATS];
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	if (o->max_fields && t->nfields > o->max_fields)
		return ch_errf(s, TC_ERR_FORMAT_LIMIT, "event %.100s:%.100s has %u fields, more "
			       "than the %u a format may have", t->system, t->name, t->nfields,
			       o->max_fields);
	ret = ch_types_cap(s, t, o);
	if (ret < 0)
		return ret;
	snprintf(key, sizeof(key), "%.100s:%.100s", t->system, t->name);
	lens[0] = 6; lens[1] = strlen(key); lens[2] = strlen(t->format);
	int64_t format_id = (int64_t)ch_id(parts, lens, 3);

	for (ty = s->types; ty; ty = ty->next)
		if (ty->format_id == format_id && ty->nfields == t->nfields)
			break;
	if (!ty && (ret = ch_type_new(s, t, format_id, &ty)) < 0)
		return ret;
	ch_b_u64(&hf->rows, o->host_id);
	ch_b_cstr(&hf->rows, o->boot_id);
	ch_b_i64(&hf->rows, ty->tab->type_id);
	ch_b_i64(&hf->rows, format_id);
	ch_b_i64(&hf->rows, o->since);
	ret = ch_fact_done(s, hf);
	if (ret == 0)
		*out = ty;
	return ret;
}

/* One field's value into the row, as its column's type. */
static int ch_put_value(struct store_type *ty, unsigned i, const struct store_value *v)
{
	struct ch_bytes *b = &ty->batch.rows;

	if (v->kind != ty->kinds[i])
		return -EINVAL;
	switch (v->kind) {
	case STORE_SIGNED: ch_b_i64(b, v->i); break;
	case STORE_UNSIGNED: ch_b_u64(b, v->u); break;
	case STORE_STRING: ch_b_str(b, v->str.s, v->str.len); break;
	case STORE_BLOB: ch_b_str(b, v->blob.p, v->blob.len); break;
	}
	return 0;
}

static int ch_insert(struct store_writer *w, struct store_type *ty, const struct store_event *ev)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_bytes *b = &ty->batch.rows;
	size_t mark = b->len;
	struct store_value v;
	uint8_t ref[CH_STACK_REF_LEN];
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	if (ev->nvals != ty->nfields)
		return -EINVAL;
	ch_txn_saw_ts(s, ev->ts);	/* retention looks again below it */
	ch_b_u64(b, ev->host_id);
	ch_b_u32(b, ev->cpu);
	ch_b_i64(b, ev->ts);
	ch_b_u64(b, ev->trace_ts);
	ch_b_i64(b, ty->format_id);
	ch_b_u64(b, s->commit_id);
	ch_b_u64(b, s->commit_id << 32 | (s->row_seq & 0xffffffffu));
	for (unsigned i = 0; i < ty->nfields && ret == 0; i++)
		if (ty->keep[i])
			ret = ev->value(ev->src, i, &v) ?:
			      ((int)i == ty->stack_field ? ch_stack_ref(s, ev->host_id, &v, ref) : 0) ?:
			      ch_put_value(ty, i, &v);
	if (ret < 0) {
		b->len = mark;	/* no half row */
		return ret;
	}
	s->row_seq++;
	ret = ch_counted_done(s, &ty->batch);
	if (ret == 0 && b->len >= CH_TYPE_FLUSH_BYTES && s->in_txn) {
		s->sent = true;
		ret = ch_reserve_id(s) ?: ch_send_start(s, &ty->batch);
	}
	if (ret < 0)
		s->failed = ret;
	return ret;
}

void ch_schema_free(struct ch_store *s)
{
	while (s->types) {
		struct store_type *ty = s->types;

		s->types = ty->next;
		ch_type_free(ty);
	}
	while (s->tables) {
		struct ch_table *tab = s->tables;

		s->tables = tab->next;
		for (size_t i = 0; i < tab->ncols; i++) {
			free(tab->cols[i].name);
			free(tab->cols[i].column);
		}
		free(tab->cols); free(tab->system); free(tab->name); free(tab->table);
		free(tab);
	}
}

void ch_schema_writer_ops(struct store_writer_ops *w)
{
	w->type = ch_type;
	w->insert = ch_insert;
}

/* ---- the reader's schemas ---- */

static char *ch_strdup(const char *s)
{
	return strdup(s ? s : "");
}

/* @sc's columns (event_fields). */
static int ch_schema_cols(struct ch_store *s, struct store_schema *sc)
{
	struct ch_reply r;
	int ret = ch_fields_read(s, sc->type_id, &r);

	if (ret < 0)
		return ret;
	sc->cols = calloc(r.nrows + 1, sizeof(*sc->cols));
	for (size_t i = 0; sc->cols && ret == 0 && i < r.nrows; i++) {
		struct store_col *c = &sc->cols[sc->ncols];

		ret = ch_kind_parse(ch_reply_cell(&r, i, 2), &c->kind);
		if (ret < 0)
			break;
		c->column = ch_strdup(ch_reply_cell(&r, i, 0));
		c->name = ch_strdup(ch_reply_cell(&r, i, 1));
		sc->ncols++;
		if (!c->column || !c->name)
			ret = -ENOMEM;
	}
	if (!sc->cols)
		ret = -ENOMEM;
	ch_reply_free(&r);
	return ret;
}

static size_t ch_col_index(const struct store_schema *sc, const char *column)
{
	for (size_t i = 0; i < sc->ncols; i++)
		if (!strcmp(sc->cols[i].column, column))
			return i;
	return SIZE_MAX;
}

/* One format's fields (rows of @ff for it) and hosts (rows of @hf). */
static int ch_schema_fmt(struct store_schema *sc, struct store_fmt *f, const struct ch_reply *ff,
			 const struct ch_reply *hf)
{
	int64_t id;

	f->cols = calloc(ff->nrows + 1, sizeof(*f->cols));
	f->types = calloc(ff->nrows + 1, sizeof(*f->types));
	f->host_ids = calloc(hf->nrows + 1, sizeof(*f->host_ids));
	if (!f->cols || !f->types || !f->host_ids)
		return -ENOMEM;
	for (size_t i = 0; i < ff->nrows; i++) {
		if (ch_reply_i64(ff, i, 0, &id) < 0 || id != f->id)
			continue;
		f->cols[f->ncols] = ch_col_index(sc, ch_reply_cell(ff, i, 2));
		if (f->cols[f->ncols] == SIZE_MAX)
			return TC_ERR_DB_SCHEMA;
		f->types[f->ncols] = ch_strdup(ch_reply_cell(ff, i, 3));
		if (!f->types[f->ncols++])
			return -ENOMEM;
	}
	for (size_t i = 0; i < hf->nrows; i++)
		if (ch_reply_i64(hf, i, 0, &id) == 0 && id == f->id &&
		    ch_reply_u64(hf, i, 1, &f->host_ids[f->nhosts]) == 0)
			f->nhosts++;
	return 0;
}

/* @sc's formats: their texts, fields and hosts; the latest's text as sc->format. */
static int ch_schema_fmts(struct ch_store *s, struct store_schema *sc, int64_t latest)
{
	struct ch_reply fm, ff, hf;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT format_id, any(text) FROM formats WHERE type_id = %lld"
		    " GROUP BY format_id ORDER BY format_id", (long long)sc->type_id);
	ret = ch_query(s, &q, &fm);
	ch_sql_reset(&q);
	ch_sql_addf(&q, "SELECT format_id, idx, any(col), any(ctype) FROM format_fields WHERE"
		    " format_id IN (SELECT format_id FROM formats WHERE type_id = %lld)"
		    " GROUP BY format_id, idx ORDER BY format_id, idx", (long long)sc->type_id);
	if (ret == 0 && (ret = ch_query(s, &q, &ff)) < 0)
		ch_reply_free(&fm);
	ch_sql_reset(&q);
	ch_sql_addf(&q, "SELECT DISTINCT format_id, host_id FROM host_formats WHERE type_id = %lld"
		    " ORDER BY format_id, host_id", (long long)sc->type_id);
	if (ret == 0 && (ret = ch_query(s, &q, &hf)) < 0) {
		ch_reply_free(&fm);
		ch_reply_free(&ff);
	}
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	sc->fmts = calloc(fm.nrows + 1, sizeof(*sc->fmts));
	ret = sc->fmts ? 0 : -ENOMEM;
	for (size_t i = 0; ret == 0 && i < fm.nrows; i++) {
		struct store_fmt *f = &sc->fmts[sc->nfmts++];

		ch_reply_i64(&fm, i, 0, &f->id);
		f->text = ch_strdup(ch_reply_cell(&fm, i, 1));
		ret = f->text ? ch_schema_fmt(sc, f, &ff, &hf) : -ENOMEM;
		if (ret == 0 && (f->id == latest || !sc->format))
			ret = (free(sc->format), sc->format = ch_strdup(f->text)) ? 0 : -ENOMEM;
	}
	ch_reply_free(&fm);
	ch_reply_free(&ff);
	ch_reply_free(&hf);
	return ret;
}

/* The types named @event (of @system: NULL any): type_id, system, name, table, format_id. */
static int ch_types_read(struct ch_store *s, const char *system, const char *event,
			 struct ch_reply *r)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT type_id, system, name, argMax(table_name, version),"
		       " argMax(format_id, version) FROM event_types WHERE 1");
	if (system) {
		ch_sql_raw(&q, " AND system = ");
		ch_sql_cstr(&q, system);
	}
	if (event) {
		ch_sql_raw(&q, " AND name = ");
		ch_sql_cstr(&q, event);
	}
	ch_sql_raw(&q, " GROUP BY type_id, system, name ORDER BY system, name");
	ret = ch_query(s, &q, r);
	ch_sql_free(&q);
	return ret;
}

/* Row @i of a ch_types_read() reply as a schema without columns. */
static int ch_schema_head(const struct ch_reply *r, size_t i, struct store_schema **out)
{
	struct store_schema *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return -ENOMEM;
	ch_reply_i64(r, i, 0, &sc->type_id);
	sc->system = ch_strdup(ch_reply_cell(r, i, 1));
	sc->name = ch_strdup(ch_reply_cell(r, i, 2));
	sc->table = ch_strdup(ch_reply_cell(r, i, 3));
	if (!sc->system || !sc->name || !sc->table) {
		store_schema_free(sc);
		return -ENOMEM;
	}
	*out = sc;
	return 0;
}

static int ch_schema_get(struct store_reader *rd, const char *system, const char *event,
			 struct store_schema **out)
{
	struct ch_store *s = ch_reader_of(rd);
	struct store_schema *sc = NULL;
	struct ch_reply r;
	int64_t latest = 0;
	int ret = ch_types_read(s, system, event, &r);

	if (ret < 0)
		return ret;
	if (!r.nrows)
		ret = ch_errf(s, TC_ERR_UNKNOWN_EVENT, "unknown event");
	else if (r.nrows > 1)
		ret = ch_errf(s, TC_ERR_AMBIGUOUS, "event %.100s is in several systems: %.100s, "
			      "%.100s%s", event, ch_reply_cell(&r, 0, 1), ch_reply_cell(&r, 1, 1),
			      r.nrows > 2 ? ", ..." : "");
	else
		ret = ch_schema_head(&r, 0, &sc);
	ch_reply_i64(&r, 0, 4, &latest);
	ch_reply_free(&r);
	ret = ret ?: ch_schema_cols(s, sc) ?: ch_schema_fmts(s, sc, latest);
	if (ret < 0) {
		store_schema_free(sc);
		return ret;
	}
	*out = sc;
	return 0;
}

static int ch_schema_list(struct store_reader *rd, const char *system,
			  int (*fn)(void *ctx, const struct store_schema *sc), void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct store_schema *sc;
	struct ch_reply r;
	int ret = ch_types_read(s, system, NULL, &r);

	if (ret < 0)
		return ret;
	if (!r.nrows && system)
		ret = ch_errf(s, TC_ERR_UNKNOWN_EVENT, "no events of that system");
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		ret = ch_schema_head(&r, i, &sc);
		if (ret < 0)
			break;
		ret = fn(ctx, sc);
		store_schema_free(sc);
	}
	ch_reply_free(&r);
	return ret;
}

/* Whether a host of @scope sent a format of @sc (host names matched here: they are few). */
static int ch_type_seen(struct store_reader *rd, const struct store_schema *sc,
			const struct store_scope *scope, bool *seen)
{
	struct ch_store *s = ch_reader_of(rd);
	const struct store_query q = { .scope = scope };
	struct ch_reply r;
	struct ch_sql sql;
	bool any = false;
	int ret;

	ch_sql_init(&sql, 0);
	ch_sql_addf(&sql, "SELECT DISTINCT argMax(name, version) FROM hosts WHERE host_id IN"
		    " (SELECT host_id FROM host_formats WHERE type_id = %lld) GROUP BY host_id",
		    (long long)sc->type_id);
	ret = ch_query(s, &sql, &r);
	ch_sql_free(&sql);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < r.nrows && !any; i++)
		any = ch_host_allowed(&q, ch_reply_cell(&r, i, 0));
	ch_reply_free(&r);
	*seen = any;
	return 0;
}

void ch_schema_reader_ops(struct store_reader_ops *r)
{
	r->schema_get = ch_schema_get;
	r->schema_list = ch_schema_list;
	r->type_seen = ch_type_seen;
}
