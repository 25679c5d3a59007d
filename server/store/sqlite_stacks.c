/*
 * sqlite_stacks.c - kernel stacks stored once each (sql/0016-stacks.sql,
 * issue 38). A stack record's frames go to the stacks table once; its row
 * holds the id. The writer remembers the stacks it stored in an
 * open-addressed table keyed by a seeded FNV-1a hash of the frames
 * (store_stack_hash(), as ClickHouse's clickhouse_stacks.c), and
 * reuses an id only when the frames themselves are equal: a collision
 * costs a probe, never a merge of two stacks. A probe run is bounded
 * (SQ_STACK_PROBES: frames crafted to collide cost at most that many
 * compares, then get an id of their own), and so is what the table holds
 * (SQ_STACK_ENTRIES stacks, SQ_STACK_BYTES of frames): past either it
 * starts empty again, and a stack seen again is stored again under a new
 * id. Duplicates cost bytes, never a wrong answer. The table is the
 * writer's caller thread's (the ingest worker); the writer thread only
 * runs the INSERTs the batches carry (sqlite_write.c). Retention removes
 * stack rows, not stacks: after it removed some, at most every ten
 * minutes (one scan of the stack rows), sq_stacks_sweep() deletes the
 * stacks no row references and reloads the table, so no id of a deleted
 * stack is handed out again.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/sqlite_stacks.h"

#define SQ_STACK_SLOTS		65536u	/* power of two */
#define SQ_STACK_ENTRIES	(SQ_STACK_SLOTS / 2)
#define SQ_STACK_BYTES		(16u << 20)
#define SQ_STACK_PROBES		64

struct sq_stack_ent {
	uint64_t hash;
	int64_t id;		/* 0: an empty slot */
	uint32_t len;
	uint8_t *frames;
};

struct sq_stacks {
	struct sq_stack_ent *slot;	/* SQ_STACK_SLOTS; NULL until the first stack */
	size_t n, bytes;
	uint64_t seed;
	int64_t next_id;
};

static void sq_stacks_clear(struct sq_stacks *t)
{
	if (!t->slot)
		return;
	for (size_t i = 0; i < SQ_STACK_SLOTS; i++)
		free(t->slot[i].frames);
	memset(t->slot, 0, SQ_STACK_SLOTS * sizeof(*t->slot));
	t->n = t->bytes = 0;
}

static struct sq_stacks *sq_stacks_of(struct sq_store *s)
{
	if (!s->stacks && (s->stacks = calloc(1, sizeof(*s->stacks))) != NULL) {
		s->stacks->seed = store_stack_seed(s->stacks);
		s->stacks->next_id = 1;
	}
	return s->stacks;
}

/*
 * The slot of @frames in @t: its entry (id set), or the empty slot it
 * would take; NULL: a probe run past SQ_STACK_PROBES.
 */
static struct sq_stack_ent *sq_stack_slot(struct sq_stacks *t, uint64_t h, const void *frames,
					  size_t len)
{
	for (unsigned k = 0; k < SQ_STACK_PROBES; k++) {
		struct sq_stack_ent *e = &t->slot[(h + k) & (SQ_STACK_SLOTS - 1)];

		if (!e->id || (e->hash == h && e->len == len && !memcmp(e->frames, frames, len)))
			return e;
	}
	return NULL;
}

/*
 * Remember @frames (hashed @h: store_stack_hash()) as stack @id in @t (when
 * there is room). Return: 0; -ENOMEM.
 */
static int sq_stack_keep(struct sq_stacks *t, int64_t id, uint64_t h, const void *frames,
			 size_t len)
{
	struct sq_stack_ent *e;

	if (!t->slot && !(t->slot = calloc(SQ_STACK_SLOTS, sizeof(*t->slot))))
		return -ENOMEM;
	if (t->n >= SQ_STACK_ENTRIES || t->bytes + len > SQ_STACK_BYTES)
		sq_stacks_clear(t);
	e = sq_stack_slot(t, h, frames, len);
	if (!e || e->id)
		return 0;	/* a run too long, or kept already: not remembered again */
	e->frames = malloc(len);
	if (!e->frames)
		return -ENOMEM;
	memcpy(e->frames, frames, len);
	e->hash = h;
	e->id = id;
	e->len = (uint32_t)len;
	t->n++;
	t->bytes += len;
	return 0;
}

int sq_stack_id(struct sq_store *s, const void *frames, size_t len, int64_t *id)
{
	struct sq_stacks *t = sq_stacks_of(s);
	struct sq_stack_ent *e;
	uint64_t h;
	int ret;

	if (!len || len > SQ_STACK_MAX)
		return SQ_STACK_INLINE;
	if (!t)
		return -ENOMEM;
	h = store_stack_hash(t->seed, frames, len);
	if (t->slot) {
		e = sq_stack_slot(t, h, frames, len);
		if (e && e->id) {
			*id = e->id;
			return SQ_STACK_KNOWN;
		}
	}
	ret = sq_stack_keep(t, t->next_id, h, frames, len);
	if (ret < 0)
		return ret;
	*id = t->next_id++;
	return SQ_STACK_FRESH;
}

void sq_stacks_forget(struct sq_store *s)
{
	if (s->stacks)
		sq_stacks_clear(s->stacks);
}

int sq_stacks_load(struct sq_store *s)
{
	struct sq_stacks *t = sq_stacks_of(s);
	sqlite3_stmt *st = NULL;
	int64_t last = 0;
	int ret, rc = SQLITE_DONE;

	if (!t)
		return -ENOMEM;
	sq_stacks_clear(t);
	ret = sq_int1(s, "SELECT max(id) FROM stacks WHERE ? = 0", 0, 0, &last);
	if (ret < 0)
		return ret;
	t->next_id = last + 1;
	/* the newest stacks first: the ones the hosts' next events most likely repeat */
	ret = sq_prepare(s, "SELECT id, frames FROM stacks ORDER BY id DESC LIMIT ?", &st);
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, SQ_STACK_ENTRIES - 1);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t len = (size_t)sqlite3_column_bytes(st, 1);
		const void *p = sqlite3_column_blob(st, 1);

		if (!p || !len || len > SQ_STACK_MAX || t->bytes + len > SQ_STACK_BYTES)
			continue;
		ret = sq_stack_keep(t, sqlite3_column_int64(st, 0),
				    store_stack_hash(t->seed, p, len), p, len);
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "stacks");
	sqlite3_finalize(st);
	if (ret < 0)
		sq_stacks_clear(t);
	return ret;
}

/*
 * "DELETE FROM stacks WHERE id NOT IN (SELECT caller FROM t WHERE ... UNION
 * ALL ...)" over every stack column of every event table, into @q; *@any
 * false: there is none (the text is not a statement then).
 */
static int sq_stacks_sweep_sql(struct sq_store *s, struct sq_buf *q, bool *any)
{
	sqlite3_stmt *st = NULL;
	int ret = sq_prepare(s, "SELECT t.system, t.name, t.table_name, f.name, f.col"
				" FROM event_types AS t JOIN event_fields AS f ON f.type_id = t.id"
				" WHERE f.kind = 'blob'", &st), rc = SQLITE_DONE;

	*any = false;
	/* (no NULL among them: NOT IN a list holding NULL is never true) */
	sq_buf_str(q, "DELETE FROM stacks WHERE id NOT IN (");
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *col[5];

		for (int i = 0; i < 5; i++)
			col[i] = (const char *)sqlite3_column_text(st, i);
		if (!col[2] || !col[4] || !store_field_is_stack(col[0], col[1], col[3]))
			continue;
		sq_buf_str(q, *any ? " UNION ALL SELECT " : "SELECT ");
		*any = true;
		sq_ident(q, col[4]);
		sq_buf_str(q, " FROM ");
		sq_ident(q, col[2]);
		sq_buf_str(q, " WHERE typeof(");
		sq_ident(q, col[4]);
		sq_buf_str(q, ") = 'integer'");
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "stacks");
	sqlite3_finalize(st);
	sq_buf_str(q, ")");
	return ret == 0 && q->oom ? -ENOMEM : ret;
}

int sq_stacks_sweep(struct sq_store *s)
{
	struct sq_buf q = { 0 };
	bool any;
	int ret = sq_stacks_sweep_sql(s, &q, &any);

	if (ret == 0 && any)
		ret = sq_exec(s, q.s);
	free(q.s);
	return ret ?: sq_stacks_load(s);
}

void sq_stacks_free(struct sq_store *s)
{
	if (!s->stacks)
		return;
	sq_stacks_clear(s->stacks);
	free(s->stacks->slot);
	free(s->stacks);
	s->stacks = NULL;
}

int sq_stack_put(sqlite3_stmt *put, int64_t id, const void *frames, size_t len)
{
	int rc;

	sqlite3_bind_int64(put, 1, id);
	sqlite3_bind_blob(put, 2, frames, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(put);
	sqlite3_reset(put);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void sq_col_read(struct sq_buf *b, const struct store_schema *sc, size_t i, const char *db,
		 const char *tab)
{
	if (!store_col_is_stack(sc, i)) {
		sq_buf_str(b, tab);
		sq_ident(b, sc->cols[i].column);
		return;
	}
	/* an id finds its row; a BLOB (a row stored before 0016) finds none: itself */
	sq_buf_str(b, "coalesce((SELECT frames FROM ");
	sq_buf_str(b, db);
	sq_buf_str(b, "stacks WHERE id = ");
	sq_buf_str(b, tab);
	sq_ident(b, sc->cols[i].column);
	sq_buf_str(b, "), ");
	sq_buf_str(b, tab);
	sq_ident(b, sc->cols[i].column);
	sq_buf_str(b, ")");
}
