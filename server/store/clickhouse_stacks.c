/*
 * clickhouse_stacks.c - kernel stacks stored once each on ClickHouse: the
 * writer's references and the stacks rows it queues, the reader's frames
 * of a page's references (the design is in clickhouse_stacks.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_stacks.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

#define CH_STACK_SLOTS		65536u	/* power of two */
#define CH_STACK_ENTRIES	(CH_STACK_SLOTS / 2)
#define CH_STACK_BYTES		(16u << 20)
#define CH_STACK_PROBES		64

/* A stack the writer wrote: its host and id (0: an empty slot) and frames. */
struct ch_stack_ent {
	uint64_t host, id;
	uint32_t len;
	uint8_t *frames;
};

struct ch_stacks {
	struct ch_stack_ent slot[CH_STACK_SLOTS];
	size_t n, bytes;
};

/* One reference a page's rows make, and its frames (in the page's reply). */
struct ch_stack_found {
	uint64_t host, id;
	const char *frames;
	size_t len;
};

void ch_stacks_forget(struct ch_store *s)
{
	if (!s->stacks)
		return;
	for (size_t i = 0; i < CH_STACK_SLOTS; i++)
		free(s->stacks->slot[i].frames);
	memset(s->stacks, 0, sizeof(*s->stacks));
}

/* The slot of (@host, @id) (its entry or the empty one it would take); NULL: none near. */
static struct ch_stack_ent *ch_stack_slot(struct ch_stacks *t, uint64_t host, uint64_t id)
{
	for (unsigned k = 0; k < CH_STACK_PROBES; k++) {
		struct ch_stack_ent *e = &t->slot[(id + host + k) & (CH_STACK_SLOTS - 1)];

		if (!e->id || (e->id == id && e->host == host))
			return e;
	}
	return NULL;
}

static uint64_t ch_stack_id(uint64_t host, const void *frames, size_t len)
{
	const char *parts[3] = { "stack", (const char *)&host, frames };
	size_t lens[3] = { 5, sizeof(host), len };
	uint64_t id = ch_id(parts, lens, 3);

	return id ? id : 1;	/* 0 marks an empty slot */
}

/* Queue the stacks row of (@host, @id). Return: 0; what sending failed with. */
static int ch_stack_put(struct ch_store *s, uint64_t host, uint64_t id, const void *frames,
			size_t len)
{
	struct ch_batch *b = &s->fixed[CH_B_STACKS];

	ch_b_u64(&b->rows, host);
	ch_b_u64(&b->rows, id);
	ch_b_str(&b->rows, frames, len);
	return ch_fact_done(s, b);
}

int ch_stack_ref(struct ch_store *s, uint64_t host, struct store_value *v,
		 uint8_t ref[CH_STACK_REF_LEN])
{
	struct ch_stack_ent *e;
	uint64_t id;

	if (v->kind != STORE_BLOB || !v->blob.len || v->blob.len > CH_STACK_MAX)
		return 0;
	if (!s->stacks && !(s->stacks = calloc(1, sizeof(*s->stacks))))
		return -ENOMEM;
	if (s->stacks->n >= CH_STACK_ENTRIES || s->stacks->bytes + v->blob.len > CH_STACK_BYTES)
		ch_stacks_forget(s);
	id = ch_stack_id(host, v->blob.p, v->blob.len);
	e = ch_stack_slot(s->stacks, host, id);
	if (e && e->id && (e->len != v->blob.len || memcmp(e->frames, v->blob.p, e->len)))
		return 0;	/* a collision: these frames stay in the row */
	if (!e || !e->id) {
		int ret = ch_stack_put(s, host, id, v->blob.p, v->blob.len);

		if (ret < 0)
			return ret;
		if (e && (e->frames = malloc(v->blob.len)) != NULL) {
			memcpy(e->frames, v->blob.p, v->blob.len);
			e->host = host;
			e->id = id;
			e->len = (uint32_t)v->blob.len;
			s->stacks->n++;
			s->stacks->bytes += v->blob.len;
		}
	}
	ref[0] = CH_STACK_REF;
	for (int i = 0; i < 8; i++)
		ref[1 + i] = (uint8_t)(id >> (8 * i));
	v->blob.p = ref;
	v->blob.len = CH_STACK_REF_LEN;
	return 0;
}

/* ---- the reader's ---- */

static bool ch_stack_is_ref(const char *cell, size_t len, uint64_t *id)
{
	if (!cell || len != CH_STACK_REF_LEN || cell[0] != CH_STACK_REF)
		return false;
	*id = 0;
	for (int i = 0; i < 8; i++)
		*id |= (uint64_t)(uint8_t)cell[1 + i] << (8 * i);
	return true;
}

static int ch_found_cmp(const void *a, const void *b)
{
	const struct ch_stack_found *x = a, *y = b;

	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void ch_stack_page_free(struct ch_stack_page *pg)
{
	ch_reply_free(&pg->r);
	free(pg->v);
	pg->v = NULL;
	pg->n = 0;
}

/*
 * The distinct references of page @r into @v (room for a reference per
 * cell of @cols), sorted; their query into @q. Return: how many.
 */
static size_t ch_stacks_sql(const struct ch_reply *r, const size_t *cols, size_t ncols,
			    struct ch_stack_found *v, struct ch_sql *q)
{
	size_t n = 0, k = 0;

	for (size_t i = 0; i < r->nrows; i++)
		for (size_t c = 0; c < ncols; c++)
			if (ch_stack_is_ref(ch_reply_cell(r, i, cols[c]),
					    r->lens[i * r->ncols + cols[c]], &v[n].id) &&
			    !ch_reply_u64(r, i, 0, &v[n].host))
				n++;
	qsort(v, n, sizeof(*v), ch_found_cmp);
	ch_sql_raw(q, "SELECT host_id, id, any(frames) FROM stacks WHERE (host_id, id) IN (");
	for (size_t i = 0; i < n; i++) {
		if (i && !ch_found_cmp(&v[i - 1], &v[i]))
			continue;	/* a page repeats its few stacks */
		ch_sql_raw(q, k++ ? ", (" : "(");
		ch_sql_u64(q, v[i].host);
		ch_sql_raw(q, ", ");
		ch_sql_u64(q, v[i].id);
		ch_sql_raw(q, ")");
	}
	ch_sql_raw(q, ") GROUP BY host_id, id");
	return k;
}

int ch_stacks_page(struct ch_store *s, const struct ch_reply *r, const size_t *cols,
		   size_t ncols, struct ch_stack_page *out)
{
	struct ch_stack_found *refs;
	struct ch_sql q;
	size_t n;
	int ret;

	ch_stack_page_free(out);
	if (!ncols || !r->nrows)
		return 0;
	refs = calloc(r->nrows * ncols, sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	ch_sql_init(&q, 0);
	n = ch_stacks_sql(r, cols, ncols, refs, &q);
	free(refs);
	ret = ch_sql_err(&q) ? ch_errf(s, ch_sql_err(&q), "the page's stacks") :
	      n ? ch_query(s, &q, &out->r) : 0;
	ch_sql_free(&q);
	if (ret < 0 || !n)
		return ret;
	out->v = calloc(out->r.nrows + 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < out->r.nrows; i++) {
		struct ch_stack_found *f = &out->v[out->n];

		if (ch_reply_u64(&out->r, i, 0, &f->host) || ch_reply_u64(&out->r, i, 1, &f->id))
			continue;
		f->frames = ch_reply_cell(&out->r, i, 2);
		f->len = out->r.lens[i * out->r.ncols + 2];
		out->n++;
	}
	qsort(out->v, out->n, sizeof(*out->v), ch_found_cmp);
	return 0;
}

void ch_stack_frames(const struct ch_stack_page *pg, uint64_t host, struct store_value *v)
{
	struct ch_stack_found key = { .host = host }, *f;

	if (v->kind != STORE_BLOB || !ch_stack_is_ref(v->blob.p, v->blob.len, &key.id))
		return;
	f = pg->n ? bsearch(&key, pg->v, pg->n, sizeof(key), ch_found_cmp) : NULL;
	v->blob.p = f ? f->frames : "";
	v->blob.len = f ? f->len : 0;
}
