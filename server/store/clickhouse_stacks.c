/*
 * clickhouse_stacks.c - kernel stacks stored once each on ClickHouse: the
 * writer's references and the stacks rows it queues, retention's sweep of
 * the stacks no row references, the reader's frames of a page's
 * references (the design, and why the sweep is safe with several
 * collectors, is in clickhouse_stacks.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/clickhouse_stacks.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

#define CH_STACK_SLOTS		65536u	/* power of two */
#define CH_STACK_ENTRIES	(CH_STACK_SLOTS / 2)
#define CH_STACK_BYTES		(16u << 20)
#define CH_STACK_PROBES		64
#define CH_STACKS_REFRESH_MS	(3600 * 1000)	/* what the writer remembers is this young */
#define CH_STACKS_SWEEP_MAX	4096	/* stacks deleted at a sweep, at most (one ALTER) */
#define CH_STACKS_SWEEP_MS	(10 * 60 * 1000)	/* a sweep at most this often */

/* A stack the writer wrote: its host, id, frames and their hash (store_stack_hash()). */
struct ch_stack_ent {
	uint64_t host, id, hash;
	uint32_t len;
	uint8_t *frames;
};

/*
 * The stacks written, ent[0..n), found two ways, each an open-addressed
 * index of ent + 1 (0: an empty slot): by_frames by the cheap hash of a
 * host's frames, which every row looks up, and by_id by the id, which only
 * a stack not found costs (its SHA-256 then, and a check that no other
 * frames of the host have that id: a collision).
 */
struct ch_stacks {
	struct ch_stack_ent ent[CH_STACK_ENTRIES];
	uint32_t by_frames[CH_STACK_SLOTS], by_id[CH_STACK_SLOTS];
	size_t n, bytes;
	uint64_t seed;
	int64_t begun_ms;	/* the commit's ch_store.begun_ms they last saw */
	int64_t since_ms;	/* begun_ms of ent[0]'s commit */
	int64_t refresh_ms;	/* ch_stacks_refresh_ms() */
};

#ifdef TC_TEST_AIDS
/*
 * TRACECOLLECTD_TEST_STACKS_REFRESH=SECONDS (a test aid, only in a build
 * with --enable-test-aids): CH_STACKS_REFRESH_MS that long instead (1 to
 * 3600 s), so that a test sees stacks swept (tests/test_ch_stacks_retain.sh).
 */
static int64_t ch_stacks_refresh_ms(void)
{
	const char *v = getenv("TRACECOLLECTD_TEST_STACKS_REFRESH");
	unsigned long n = v ? strtoul(v, NULL, 10) : 0;

	return n >= 1 && n <= 3600 ? (int64_t)n * 1000 : CH_STACKS_REFRESH_MS;
}
#else
static inline int64_t ch_stacks_refresh_ms(void) { return CH_STACKS_REFRESH_MS; }
#endif

/* One reference a page's rows make, and its frames (in the page's reply). */
struct ch_stack_found {
	uint64_t host, id;
	const char *frames;
	size_t len;
};

void ch_stacks_forget(struct ch_store *s)
{
	struct ch_stacks *t = s->stacks;

	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->ent[i].frames);
	t->n = t->bytes = 0;
	memset(t->by_frames, 0, sizeof(t->by_frames));
	memset(t->by_id, 0, sizeof(t->by_id));
}

static bool ch_stack_same(const struct ch_stack_ent *e, uint64_t host, const void *frames,
			  size_t len)
{
	return e->host == host && e->len == len && !memcmp(e->frames, frames, len);
}

/*
 * The by_frames slot of @host's @frames (hashed @h): its entry's, or the
 * empty one it would take; NULL: none near.
 */
static uint32_t *ch_stack_by_frames(struct ch_stacks *t, uint64_t h, uint64_t host,
				    const void *frames, size_t len)
{
	for (unsigned k = 0; k < CH_STACK_PROBES; k++) {
		uint32_t *x = &t->by_frames[(h + k) & (CH_STACK_SLOTS - 1)];
		const struct ch_stack_ent *e = *x ? &t->ent[*x - 1] : NULL;

		if (!e || (e->hash == h && ch_stack_same(e, host, frames, len)))
			return x;
	}
	return NULL;
}

/* The by_id slot of (@host, @id): its entry's, or the empty one it would take; NULL: none near. */
static uint32_t *ch_stack_by_id(struct ch_stacks *t, uint64_t host, uint64_t id)
{
	for (unsigned k = 0; k < CH_STACK_PROBES; k++) {
		uint32_t *x = &t->by_id[(id + host + k) & (CH_STACK_SLOTS - 1)];
		const struct ch_stack_ent *e = *x ? &t->ent[*x - 1] : NULL;

		if (!e || (e->id == id && e->host == host))
			return x;
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

/* Remember @e (its frames copied) in both indexes' slots @fx and @ix, when there is memory. */
static void ch_stack_keep(struct ch_stacks *t, uint32_t *fx, uint32_t *ix,
			  const struct ch_stack_ent *e, const void *frames)
{
	struct ch_stack_ent *n = &t->ent[t->n];

	n->frames = malloc(e->len);
	if (!n->frames)
		return;
	memcpy(n->frames, frames, e->len);
	n->host = e->host;
	n->id = e->id;
	n->hash = e->hash;
	n->len = e->len;
	if (!t->n)
		t->since_ms = t->begun_ms;
	*fx = *ix = (uint32_t)++t->n;
	t->bytes += e->len;
}

/*
 * The id of @host's stack @frames, its stacks row queued when the writer
 * has not written it (*@id 0: a collision, the frames stay in the row).
 * Return: 0; what sending failed with.
 */
static int ch_stack_lookup(struct ch_store *s, uint64_t host, const void *frames, size_t len,
			   uint64_t *id)
{
	struct ch_stacks *t = s->stacks;
	struct ch_stack_ent e = { .host = host, .len = (uint32_t)len };
	uint32_t *fx, *ix;
	int ret;

	if (t->n >= CH_STACK_ENTRIES || t->bytes + len > CH_STACK_BYTES)
		ch_stacks_forget(s);	/* full (the sweep's bound: ch_stacks_commit()) */
	e.hash = store_stack_hash(t->seed ^ host, frames, len);
	fx = ch_stack_by_frames(t, e.hash, host, frames, len);
	if (fx && *fx) {
		*id = t->ent[*fx - 1].id;
		return 0;
	}
	e.id = ch_stack_id(host, frames, len);
	ix = ch_stack_by_id(t, host, e.id);
	if (ix && *ix) {	/* the id of other frames */
		*id = 0;
		return 0;
	}
	ret = ch_stack_put(s, host, e.id, frames, len);
	if (ret < 0)
		return ret;
	if (fx && ix)
		ch_stack_keep(t, fx, ix, &e, frames);
	*id = e.id;
	return 0;
}

/*
 * The first stacked row of a commit (ch_begin() read the clock once, into
 * s->begun_ms; no clock read per row): what the writer remembers is
 * forgotten when the oldest of it is CH_STACKS_REFRESH_MS old.
 */
static void ch_stacks_commit(struct ch_store *s, struct ch_stacks *t)
{
	t->begun_ms = s->begun_ms;
	if (t->n && t->begun_ms - t->since_ms >= t->refresh_ms)
		ch_stacks_forget(s);	/* the sweep's bound (clickhouse_stacks.h) */
}

int ch_stack_ref(struct ch_store *s, uint64_t host, struct store_value *v,
		 uint8_t ref[CH_STACK_REF_LEN])
{
	uint64_t id;
	int ret;

	if (v->kind != STORE_BLOB || !v->blob.len || v->blob.len > CH_STACK_MAX)
		return 0;
	if (!s->stacks) {
		s->stacks = calloc(1, sizeof(*s->stacks));
		if (!s->stacks)
			return -ENOMEM;
		s->stacks->seed = store_stack_seed(s->stacks);
		s->stacks->refresh_ms = ch_stacks_refresh_ms();
		s->stacks->begun_ms = s->begun_ms;	/* made within a commit */
	}
	if (s->stacks->begun_ms != s->begun_ms)
		ch_stacks_commit(s, s->stacks);
	ret = ch_stack_lookup(s, host, v->blob.p, v->blob.len, &id);
	if (ret < 0 || !id)
		return ret;
	ref[0] = CH_STACK_REF;
	for (int i = 0; i < 8; i++)
		ref[1 + i] = (uint8_t)(id >> (8 * i));
	v->blob.p = ref;
	v->blob.len = CH_STACK_REF_LEN;
	return 0;
}

/* ---- retention's ---- */

/*
 * " AND (host_id, id) NOT IN (the references of COL of TABLE)" for each
 * stack column of an event table (event_fields, store_field_is_stack()).
 */
static int ch_sweep_refs(struct ch_store *s, struct ch_sql *q)
{
	struct ch_reply r;
	int ret = ch_query_text(s, "SELECT DISTINCT system, name, table_name, col, field FROM"
				" (SELECT type_id, col, name AS field FROM event_fields"
				" WHERE kind = 'blob') ALL INNER JOIN (SELECT type_id, system, name,"
				" table_name FROM event_types) USING type_id", &r);

	if (ret < 0)
		return ret;
	for (size_t i = 0; i < r.nrows; i++) {
		const char *col = ch_reply_cell(&r, i, 3);

		if (!store_field_is_stack(ch_reply_cell(&r, i, 0), ch_reply_cell(&r, i, 1),
					  ch_reply_cell(&r, i, 4)))
			continue;
		ch_sql_raw(q, " AND (host_id, id) NOT IN (SELECT host_id, reinterpretAsUInt64("
			   "substring(");
		ch_sql_ident(q, col);
		ch_sql_raw(q, ", 2, 8)) FROM ");
		ch_sql_ident(q, ch_reply_cell(&r, i, 2));
		ch_sql_raw(q, " WHERE length(");
		ch_sql_ident(q, col);
		ch_sql_addf(q, ") = %d AND reinterpretAsUInt8(substring(", CH_STACK_REF_LEN);
		ch_sql_ident(q, col);
		ch_sql_addf(q, ", 1, 1)) = %d)", CH_STACK_REF);
	}
	ch_reply_free(&r);
	return 0;
}

/*
 * The stacks no event row references, those whose newest row is older
 * than @old (the server's seconds) first, at most CH_STACKS_SWEEP_MAX + 1:
 * host_id, id, whether old.
 */
static int ch_sweep_list(struct ch_store *s, uint64_t old, struct ch_reply *r)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT host_id, id, max(written) < toDateTime(%llu) AS old FROM stacks"
		    " WHERE 1", (unsigned long long)old);
	ret = ch_sweep_refs(s, &q);
	ch_sql_addf(&q, " GROUP BY host_id, id ORDER BY old DESC LIMIT %d",
		    CH_STACKS_SWEEP_MAX + 1);
	ret = ret ?: ch_sql_err(&q) ? ch_errf(s, ch_sql_err(&q), "the stacks' sweep") :
	      ch_query(s, &q, r);
	ch_sql_free(&q);
	return ret;
}

/* Delete the old stacks of @r (ch_sweep_list()); *@n: how many. */
static int ch_sweep_delete(struct ch_store *s, uint64_t old, const struct ch_reply *r,
			   size_t *n)
{
	struct ch_sql q;
	uint64_t host, id, is_old;
	int ret = 0;

	*n = 0;
	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "ALTER TABLE stacks DELETE WHERE written < toDateTime(%llu) AND"
		    " (host_id, id) IN (", (unsigned long long)old);
	for (size_t i = 0; i < r->nrows && *n < CH_STACKS_SWEEP_MAX; i++) {
		if (ch_reply_u64(r, i, 0, &host) < 0 || ch_reply_u64(r, i, 1, &id) < 0 ||
		    ch_reply_u64(r, i, 2, &is_old) < 0 || !is_old)
			continue;
		ch_sql_addf(&q, "%s(%llu, %llu)", (*n)++ ? ", " : "", (unsigned long long)host,
			    (unsigned long long)id);
	}
	ch_sql_raw(&q, ")");
	if (*n)
		ret = ch_sql_err(&q) ? ch_errf(s, ch_sql_err(&q), "the stacks' sweep") :
		      ch_exec(s, &q);
	ch_sql_free(&q);
	return ret;
}

int ch_stacks_sweep(struct ch_store *s)
{
	int64_t refresh = ch_stacks_refresh_ms(), every = refresh < CH_STACKS_SWEEP_MS ?
			  refresh : CH_STACKS_SWEEP_MS;
	struct ch_reply r;
	struct ch_sql q;
	uint64_t old = 0;
	size_t n = 0;
	int ret;

	if (!s->stacks_orphaned ||
	    (s->stacks_swept_ms && util_now_ms() - s->stacks_swept_ms < every))
		return 0;
	s->stacks_swept_ms = util_now_ms();
	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT toUInt32(now()) - %lld", (long long)(2 * refresh / 1000));
	ret = ch_query_u64(s, &q, &old);
	ch_sql_free(&q);
	ret = ret ?: ch_sweep_list(s, old, &r);
	if (ret < 0)
		return ret;
	ret = ch_sweep_delete(s, old, &r, &n);
	if (ret == 0)	/* none left, or some too young yet / past the bound: again later */
		s->stacks_orphaned = r.nrows > n;
	ch_reply_free(&r);
	return ret;
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
