/*
 * sqlite_write.c - how the SQLite backend stores events: the prepared
 * (multi-row) INSERT of each event type, rows gathered in batches, and the
 * writer thread that runs them while the caller decodes the next page
 * (see struct store_type in sqlite_write.h for the design), plus each
 * batch's blocks of the time index (ts_blocks) and the storage sequence
 * numbers they take (sql/0009-follow.sql; sqlite_tail.c reads them). The
 * writer's insert op is here; its other ops are its parts' (sqlite.c).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_errors.h"
#include "server/store/sqlite_stacks.h"
#include "server/store/sqlite_util.h"
#include "server/store/sqlite_write.h"

#define SQ_FIXED_COLS 4		/* host_id, cpu, ts, trace_ts */
#define SQ_BATCH_ROWS	512	/* rows per multi-row INSERT, at most */
#define SQ_BLOCK_ROWS	64	/* rows per ts_blocks row, at most */
#define SQ_ARENA	(256u << 10)	/* bytes of strings and blobs per batch, at most */
#define SQ_ARENA_FIRST	(8u << 10)	/* a type's first batches' (doubled when it fills) */
#define SQ_VALS_FIRST	8		/* rows a batch has room for at first (doubled) */
#define SQ_SPARES	32		/* batches kept for reuse, at most */
#define SQ_INFLIGHT	4		/* batches handed to the writer thread, at most */
#define SQ_WAKE		1		/* batches queued that wake an idle writer */
#define SQ_BLOCK_SPAN	10000000000ull	/* ns a new block spans at most (one row: any) */

/*
 * One value of a pending row: an integer, or bytes in the type's arena.
 * 16 bytes: a batch of 512 rows of 12 columns stays under 100 KiB.
 */
struct sq_val {
	enum store_kind kind;
	uint32_t len;		/* bytes at p (a value of one page: small) */
	union {
		int64_t i;
		const void *p;
	};
};

/*
 * Rows of one type on their way in: values (strings and blobs copied to
 * the arena), at most the type's `rows` of them.
 */
struct sq_batch {
	struct sq_batch *next;
	struct store_type *t;
	unsigned pending;	/* rows in vals */
	size_t cap;		/* vals has room for this many values */
	struct sq_val *vals;	/* pending * t->ncols */
	uint8_t *arena;		/* arena_size bytes (at most SQ_ARENA); NULL: none yet */
	size_t arena_size, arena_len;
	/*
	 * The stacks its rows are the first to reference (sqlite_stacks.c),
	 * stored before them: each an int64 id, a uint32 length, the frames.
	 */
	struct sq_buf stacks;
};

/* A stack a row is the first to reference: the frames still in the page. */
struct sq_fresh {
	int64_t id;		/* 0: none */
	const void *p;
	size_t len;
};

static void sq_batch_free(struct sq_batch *b)
{
	if (!b)
		return;
	free(b->vals);
	free(b->arena);
	free(b->stacks.s);
	free(b);
}

/* ---- INSERT statements and batches ---- */

/*
 * INSERT INTO "table" (host_id, cpu, ts, trace_ts, _tc_fmt, "f1", ...)
 * VALUES (...), ... of @rows rows. Return: an SQLite result code.
 */
static int sq_batch_prepare(sqlite3 *db, const struct store_type *t, unsigned rows,
			    sqlite3_stmt **st)
{
	struct sq_buf b = { 0 };
	int rc;

	sq_buf_str(&b, t->head);
	for (unsigned r = 0; r < rows; r++) {
		if (r)
			sq_buf_add(&b, ",", 1);
		sq_buf_str(&b, t->values);
	}
	rc = b.oom ? SQLITE_NOMEM : sqlite3_prepare_v2(db, b.s, -1, st, NULL);
	free(b.s);
	return rc;
}

/*
 * Size the type's batches and its scratch row. The multi-row INSERTs are
 * prepared when a batch first needs one (sq_batch_stmts(), on the writer
 * thread): one of 512 rows costs some hundred KiB, and most of the types
 * a host may send never fill a batch.
 */
static int sq_batch_init(struct sq_store *s, struct store_type *st)
{
	int limit = sqlite3_limit(s->db, SQLITE_LIMIT_VARIABLE_NUMBER, -1);
	unsigned rows = (unsigned)limit / st->ncols;

	st->rows = rows < SQ_BATCH_ROWS ? rows : SQ_BATCH_ROWS;
	st->brows = st->rows < SQ_BLOCK_ROWS ? st->rows : SQ_BLOCK_ROWS;
	st->arena_hint = SQ_ARENA_FIRST;
	st->scratch = calloc(st->ncols, sizeof(*st->scratch));
	return st->scratch ? 0 : -ENOMEM;
}

/*
 * The multi-row INSERTs batch @b needs (a full batch's, and one of a
 * block's rows for what a partial batch holds), prepared on first need.
 * On the writer thread, which has the connection. Return: an SQLite code.
 */
static int sq_batch_stmts(sqlite3 *db, struct store_type *t, const struct sq_batch *b)
{
	int rc = SQLITE_OK;

	if (b->pending == t->rows && t->rows > 1 && !t->insert_n) {
		size_t n = (size_t)t->rows * t->ncols;

		t->bound_n = malloc(n * sizeof(*t->bound_n));
		if (!t->bound_n)
			return SQLITE_NOMEM;
		memset(t->bound_n, 0xff, n * sizeof(*t->bound_n));	/* no kind: unbound */
		rc = sq_batch_prepare(db, t, t->rows, &t->insert_n);
		if (rc != SQLITE_OK) {
			free(t->bound_n);
			t->bound_n = NULL;
			t->insert_n = NULL;
		}
	}
	if (rc == SQLITE_OK && b->pending >= t->brows && t->brows > 1 && !t->insert_b) {
		if (t->brows == t->rows && t->insert_n)
			t->insert_b = t->insert_n;
		else if (t->brows < t->rows)
			rc = sq_batch_prepare(db, t, t->brows, &t->insert_b);
		if (rc != SQLITE_OK)
			t->insert_b = NULL;
	}
	return rc;
}

int sq_type_insert(struct sq_store *s, struct store_type *st, const struct store_type_desc *t,
		   const char *table, char *const *cols)
{
	struct sq_buf b = { 0 }, v = { 0 };
	int n = SQ_FIXED_COLS, ret;
	char fmt[32];

	sq_buf_str(&b, "INSERT OR FAIL INTO ");	/* see sq_batch_exec() */
	sq_ident(&b, table);
	sq_buf_str(&b, " (host_id, cpu, ts, trace_ts, _tc_fmt");
	/* the format's id is ours, a literal of the statement, not a value per row */
	snprintf(fmt, sizeof(fmt), "?, ?, ?, ?, %lld", (long long)st->fmt_id);
	sq_buf_str(&v, fmt);
	for (unsigned i = 0; i < t->nfields; i++) {
		bool dup = false;

		for (unsigned j = 0; j < i && !dup; j++)
			dup = !strcmp(t->fields[j].name, t->fields[i].name);
		st->param[i] = dup ? 0 : ++n;
		if (dup)
			continue;
		if (t->fields[i].kind == STORE_BLOB &&
		    store_field_is_stack(t->system, t->name, t->fields[i].name))
			st->stack_param = n;
		sq_buf_str(&b, ", ");
		sq_ident(&b, cols[i]);
		sq_buf_str(&v, ", ?");
	}
	sq_buf_str(&b, ") VALUES ");
	st->head = b.oom ? NULL : strdup(b.s);
	sq_buf_str(&b, "(");
	sq_buf_str(&b, v.oom ? "" : v.s);
	sq_buf_str(&b, ")");
	st->values = b.oom ? NULL : strdup(b.s + strlen(st->head));
	st->ncols = (unsigned)n;
	ret = b.oom || v.oom || !st->head || !st->values ? -ENOMEM :
	      sq_prepare(s, b.s, &st->insert);
	if (ret == 0)
		ret = sq_batch_init(s, st);
	free(b.s);
	free(v.s);
	return ret;
}

static int sq_bind_val(sqlite3_stmt *st, int p, const struct sq_val *v)
{
	if (v->kind == STORE_SIGNED || v->kind == STORE_UNSIGNED)
		return sqlite3_bind_int64(st, p, v->i);
	if (v->kind == STORE_STRING)
		return sqlite3_bind_text(st, p, v->p, (int)v->len, SQLITE_STATIC);
	return sqlite3_bind_blob(st, p, v->p, (int)v->len, SQLITE_STATIC);
}

/*
 * Bind @n rows of values from @v to @st (which holds n rows), run it and
 * reset it. Touches only the connection and @bound, no store state: the
 * writer thread runs it. Return: an SQLite result code.
 *
 * @bound (NULL: none) mirrors what @st's parameters hold: bindings outlive
 * sqlite3_reset(), so a value equal to the one bound at its place in the
 * last run is not bound again. Equal means the same kind and integer, or
 * the same address and length: SQLITE_STATIC bytes are read when the
 * statement runs, so they are this row's. Many columns hardly change
 * (host, CPU, common_type, flags, priorities), and in the writer thread a
 * bind cost as much as a quarter of inserting the row's value.
 */
static int sq_rows_step(const struct store_type *t, sqlite3_stmt *st, const struct sq_val *v,
			unsigned n, struct sq_val *bound)
{
	int rc;

	for (unsigned i = 0; i < n * t->ncols; i++) {
		if (bound && !memcmp(&bound[i], &v[i], sizeof(*v)))
			continue;
		rc = sq_bind_val(st, (int)i + 1, &v[i]);
		if (bound && rc == SQLITE_OK)
			bound[i] = v[i];
		else if (bound)
			memset(&bound[i], 0xff, sizeof(*bound));
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int sq_block_row(sqlite3_stmt *st, int64_t type_id, int64_t lo, int64_t hi,
			int64_t lo_ts, int64_t hi_ts, int64_t *seq)
{
	int rc;

	sqlite3_bind_int64(st, 1, type_id);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, hi);
	sqlite3_bind_int64(st, 4, lo_ts);
	sqlite3_bind_int64(st, 5, hi_ts);
	sqlite3_bind_int64(st, 6, (int64_t)((uint64_t)hi_ts - (uint64_t)lo_ts));
	sqlite3_bind_int64(st, 7, *seq);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		*seq += hi - lo + 1;
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * Record the @n rows of @t just inserted in blocks of its time index:
 * their rowids are the @n up to the last one inserted (the store is the
 * only writer, and SQLite gives a new row the largest rowid plus one),
 * their ts (column 2) are in @v. A block holds SQ_BLOCK_ROWS rows at
 * most (a batch is several blocks). A row that would widen its block past
 * SQ_BLOCK_SPAN starts the next one, so a batch that mixes resent old
 * pages with new ones does not make every query of the type read further
 * back. Each block takes the next storage sequence numbers from *@seq
 * (sql/0009-follow.sql). Touches only the connection and *@seq. Return:
 * an SQLite result code.
 */
static int sq_block_put(sqlite3 *db, sqlite3_stmt *st, const struct store_type *t,
			const struct sq_val *v, unsigned n, int64_t *seq)
{
	int64_t first = sqlite3_last_insert_rowid(db) - (int64_t)n + 1;
	int64_t lo_ts = INT64_MAX, hi_ts = INT64_MIN;
	unsigned start = 0;
	int rc = SQLITE_OK;

	for (unsigned r = 0; r < n && rc == SQLITE_OK; r++) {
		int64_t ts = v[(size_t)r * t->ncols + 2].i;
		int64_t a = ts < lo_ts ? ts : lo_ts, b = ts > hi_ts ? ts : hi_ts;

		if (r > start && (r - start == SQ_BLOCK_ROWS ||
				  (uint64_t)b - (uint64_t)a > SQ_BLOCK_SPAN)) {
			rc = sq_block_row(st, t->type_id, first + start, first + r - 1, lo_ts, hi_ts,
					  seq);
			start = r;
			a = b = ts;
		}
		lo_ts = a;
		hi_ts = b;
	}
	if (rc == SQLITE_OK && n)
		rc = sq_block_row(st, t->type_id, first + start, first + n - 1, lo_ts, hi_ts, seq);
	return rc;
}

/*
 * Insert batch @b (a full one with the multi-row statement; a partial
 * one a block's rows at a time, the rest row by row) and its blocks.
 *
 * The INSERTs are OR FAIL: a failing row leaves the rows before it in
 * place instead of undoing its statement. That undo is never needed (a
 * failed INSERT fails the whole transaction, see sq_writer_fail()), and
 * keeping it made SQLite copy every page a multi-row INSERT touched to a
 * statement journal first: with one field index, more bytes than the rows
 * themselves.
 */
static int sq_batch_exec(struct sq_store *q, const struct sq_batch *b)
{
	struct store_type *t = b->t;
	unsigned r = 0;
	int rc = sq_batch_stmts(q->db, t, b);

	for (size_t o = 0; rc == SQLITE_OK && o < b->stacks.len;) {
		int64_t id;
		uint32_t len;

		memcpy(&id, b->stacks.s + o, sizeof(id));
		memcpy(&len, b->stacks.s + o + sizeof(id), sizeof(len));
		o += sizeof(id) + sizeof(len);
		rc = sq_stack_put(q->stack_put, id, b->stacks.s + o, len);
		o += len;
	}
	if (rc != SQLITE_OK)
		return rc;
	if (b->pending == t->rows && t->insert_n) {
		rc = sq_rows_step(t, t->insert_n, b->vals, b->pending, t->bound_n);
		r = b->pending;
	}
	for (; t->insert_b && b->pending - r >= t->brows && rc == SQLITE_OK; r += t->brows)
		rc = sq_rows_step(t, t->insert_b, b->vals + (size_t)r * t->ncols, t->brows,
				  NULL);
	for (; r < b->pending && rc == SQLITE_OK; r++)
		rc = sq_rows_step(t, t->insert, b->vals + (size_t)r * t->ncols, 1, NULL);
	if (rc == SQLITE_OK && b->pending)
		rc = sq_block_put(q->db, q->block_put, t, b->vals, b->pending, &q->seq);
	return rc;
}

/* ---- the writer thread ---- */

/* Called with the lock held: keep the first failure for sq_sync(). */
static void sq_writer_fail(struct sq_store *q, int rc)
{
	if (q->werr)
		return;
	static const char what[] = "insert: ";

	q->werr = TC_ERR_DB;
	memcpy(q->werrmsg, what, sizeof(what));
	sq_explain(q->db, rc, q->werrmsg + sizeof(what) - 1, sizeof(q->werrmsg) - sizeof(what) + 1);
}

/* Run queued batches in order; after a failure, only recycle them. */
static void *sq_writer_main(void *arg)
{
	struct sq_store *q = arg;
	struct sq_batch *b;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->head && !q->stop) {
			q->idle = true;
			pthread_cond_wait(&q->wake, &q->lock);
			q->idle = false;
		}
		b = q->head;
		if (!b)
			break;
		q->head = b->next;
		if (!q->head)
			q->tail = &q->head;
		if (!q->werr) {
			int rc;

			pthread_mutex_unlock(&q->lock);
			rc = sq_batch_exec(q, b);
			pthread_mutex_lock(&q->lock);
			if (rc != SQLITE_OK)
				sq_writer_fail(q, rc);
		}
		if (q->nspare < SQ_SPARES) {	/* a burst of types gives its memory back */
			b->next = q->spare;
			q->spare = b;
			q->nspare++;
		} else {
			sq_batch_free(b);
		}
		q->inflight--;
		if (q->wait_below >= 0 && q->inflight <= (unsigned)q->wait_below)
			pthread_cond_signal(&q->done);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* Start @q's writer thread. Return: 0; -errno. */
int sq_writer_start(struct sq_store *q)
{
	int ret = -pthread_create(&q->writer, NULL, sq_writer_main, q);

	q->writer_started = ret == 0;
	return ret;
}

static void sq_writer_stop(struct sq_store *q)
{
	if (!q->writer_started)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->writer, NULL);
	q->writer_started = false;
}

/*
 * Called with the lock held: wait until at most @n batches are in flight.
 * The writer wakes the caller only then, not after every batch: in this
 * VM a futex wake-up costs about as much as inserting a few rows.
 */
static void sq_wait_below(struct sq_store *q, unsigned n)
{
	if (q->idle && q->inflight > n)
		pthread_cond_signal(&q->wake);	/* sq_flush() let it sleep */
	q->wait_below = (int)n;
	while (q->inflight > n)
		pthread_cond_wait(&q->done, &q->lock);
	q->wait_below = -1;
}

/*
 * Wait until the writer has run every queued batch; after that the
 * connection is the caller's. Return: 0, or the writer's failure (until
 * the transaction is rolled back).
 */
int sq_sync(struct sq_store *s)
{
	int ret;

	if (!s->writer_started)
		return 0;
	pthread_mutex_lock(&s->lock);
	sq_wait_below(s, 0);
	ret = s->werr;
	if (ret)
		sq_errf(s, ret, "%s", s->werrmsg);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/*
 * Queue @t's gathering rows to the writer. With SQ_INFLIGHT in flight,
 * wait until the writer has worked the queue down to half. An idle writer
 * is woken only once SQ_WAKE batches wait (or by sq_wait_below()): when
 * the caller and the writer share a CPU, a wake-up is a context switch,
 * which must come per several hundred rows, not per few dozen.
 */
static int sq_flush(struct sq_store *s, struct store_type *t)
{
	struct sq_batch *b = t->cur;
	int ret;

	if (!b || !b->pending)
		return 0;
	t->cur = NULL;
	b->next = NULL;
	pthread_mutex_lock(&s->lock);
	if (s->inflight >= SQ_INFLIGHT)
		sq_wait_below(s, SQ_INFLIGHT / 2);
	*s->tail = b;
	s->tail = &b->next;
	s->inflight++;
	ret = s->werr;
	if (ret)
		sq_errf(s, ret, "%s", s->werrmsg);
	if (s->idle && s->inflight >= SQ_WAKE)
		pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* Queue every type's gathering rows and wait until they are in. */
int sq_flush_all(struct sq_store *s)
{
	int ret = 0;

	for (struct store_type *t = s->types; t; t = t->next) {
		int r = sq_flush(s, t);

		ret = ret < 0 ? ret : r;
	}
	return sq_sync(s) ?: ret;
}

/* A batch for @t to gather rows in: a spare one, or a new one. */
static int sq_batch_get(struct sq_store *s, struct store_type *t)
{
	size_t need = (size_t)t->rows * t->ncols;
	struct sq_batch *b;

	pthread_mutex_lock(&s->lock);
	b = s->spare;
	if (b) {
		s->spare = b->next;
		s->nspare--;
	}
	pthread_mutex_unlock(&s->lock);
	if (!b && !(b = calloc(1, sizeof(*b))))
		return -ENOMEM;
	if (need > (size_t)SQ_VALS_FIRST * t->ncols)	/* sq_batch_room() grows it */
		need = (size_t)SQ_VALS_FIRST * t->ncols;
	if (b->cap < need) {
		struct sq_val *v = realloc(b->vals, need * sizeof(*v));

		if (v) {
			b->vals = v;
			b->cap = need;
		}
	}
	if (b->cap < need) {
		sq_batch_free(b);
		return -ENOMEM;
	}
	b->t = t;
	b->pending = 0;
	b->arena_len = 0;
	b->stacks.len = 0;
	t->cur = b;
	return 0;
}

/* ---- inserts ---- */

static int sq_val_of(struct sq_val *out, const struct store_value *v)
{
	size_t len = 0;

	out->kind = v->kind;
	if (v->kind == STORE_SIGNED)
		out->i = v->i;
	else if (v->kind == STORE_UNSIGNED)
		out->i = (int64_t)v->u;	/* bit pattern */
	else if (v->kind == STORE_STRING)
		out->p = v->str.s, len = v->str.len;
	else
		out->p = v->blob.p, len = v->blob.len;
	out->len = (uint32_t)len;
	return len > INT32_MAX ? -E2BIG : 0;	/* SQLite takes an int */
}

/*
 * A stack column's frames as the id of their stacks row (one handed out
 * now goes to *@fresh, to be stored before the row); a stack kept inline
 * (sqlite_stacks.h) stays a blob.
 */
static int sq_val_stack(struct sq_store *s, struct sq_val *v, struct sq_fresh *fresh)
{
	int64_t id;
	int ret = sq_stack_id(s, v->p, v->len, &id);

	if (ret < 0 || ret == SQ_STACK_INLINE)
		return ret < 0 ? ret : 0;
	if (ret == SQ_STACK_FRESH)
		*fresh = (struct sq_fresh){ .id = id, .p = v->p, .len = v->len };
	*v = (struct sq_val){ .kind = STORE_SIGNED, .i = id };
	return 0;
}

/*
 * @ev's values into @row (strings and blobs still pointing into the
 * caller's page); *@bytes receives how many bytes of them there are, and
 * *@fresh the stack the row is the first to reference (id 0: none).
 */
static int sq_row_of(struct sq_store *s, const struct store_type *t, struct sq_val *row,
		     const struct store_event *ev, size_t *bytes, struct sq_fresh *fresh)
{
	size_t n = 0;

	row[0] = (struct sq_val){ .kind = STORE_SIGNED, .i = (int64_t)ev->host_id };
	row[1] = (struct sq_val){ .kind = STORE_SIGNED, .i = ev->cpu };
	row[2] = (struct sq_val){ .kind = STORE_SIGNED, .i = ev->ts };
	row[3] = (struct sq_val){ .kind = STORE_SIGNED, .i = (int64_t)ev->trace_ts };
	for (unsigned i = 0; i < t->nfields; i++) {
		struct store_value sv;
		struct sq_val *v;
		int ret;

		if (!t->param[i])
			continue;
		v = &row[t->param[i] - 1];
		ret = ev->value(ev->src, i, &sv);
		if (ret < 0)
			return ret;
		ret = sq_val_of(v, &sv);
		if (ret == 0 && t->param[i] == t->stack_param && v->kind == STORE_BLOB)
			ret = sq_val_stack(s, v, fresh);
		if (ret < 0)
			return sq_errf(s, ret, "%s:%s: field %u: %s", t->system, t->name,
				       i, tc_strerror(ret));
		if (v->kind == STORE_STRING || v->kind == STORE_BLOB)
			n += v->len;
	}
	*bytes = n;
	return 0;
}

/* Copy the row's strings and blobs out of the page, into the arena. */
/*
 * Room in @t's gathering batch for one more row of values and @bytes of
 * strings: its values grow (doubling; the batch is not queued yet, and
 * nothing points into them), its arena is allocated at the type's size
 * when it has none. 1: the arena is full (flush; the type's next batches
 * get a twice larger one, up to SQ_ARENA).
 */
static int sq_batch_room(struct store_type *t, size_t bytes)
{
	struct sq_batch *b = t->cur;
	size_t need = (size_t)(b->pending + 1) * t->ncols;

	if (b->cap < need) {
		size_t cap = b->cap * 2 > need ? b->cap * 2 : need;
		struct sq_val *v;

		if (cap > (size_t)t->rows * t->ncols)
			cap = (size_t)t->rows * t->ncols;
		v = realloc(b->vals, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->vals = v;
		b->cap = cap;
	}
	if (!bytes)
		return 0;
	if (!b->arena_len) {	/* nothing points into it: make it the size wanted */
		size_t want = t->arena_hint > bytes ? t->arena_hint : bytes;

		if (!b->arena || b->arena_size < want) {
			uint8_t *a = realloc(b->arena, want);

			if (!a)
				return -ENOMEM;
			b->arena = a;
			b->arena_size = want;
		}
		return 0;
	}
	if (bytes <= b->arena_size - b->arena_len)
		return 0;
	if (t->arena_hint < SQ_ARENA)
		t->arena_hint *= 2;
	return 1;
}

static void sq_row_keep(struct sq_batch *b, unsigned ncols, struct sq_val *row)
{
	for (unsigned c = SQ_FIXED_COLS; c < ncols; c++) {
		if (row[c].kind != STORE_STRING && row[c].kind != STORE_BLOB)
			continue;
		if (!row[c].len) {	/* (no pointer into an arena that may move) */
			row[c].p = "";
			continue;
		}
		memcpy(b->arena + b->arena_len, row[c].p, row[c].len);
		row[c].p = b->arena + b->arena_len;
		b->arena_len += row[c].len;
	}
}

/* Batch @b stores stack @f (copied out of the page) before its rows. */
static int sq_batch_stack(struct sq_batch *b, const struct sq_fresh *f)
{
	uint32_t len = (uint32_t)f->len;
	size_t was = b->stacks.len;

	sq_buf_add(&b->stacks, (const char *)&f->id, sizeof(f->id));
	sq_buf_add(&b->stacks, (const char *)&len, sizeof(len));
	sq_buf_add(&b->stacks, f->p, len);
	if (!b->stacks.oom)
		return 0;
	b->stacks.len = was;	/* none of it: the batch's other stacks stay whole */
	b->stacks.oom = false;
	return -ENOMEM;
}

static int sq_insert_row(struct sq_store *s, struct store_type *t, const struct store_event *ev,
			 struct sq_fresh *fresh)
{
	struct sq_val *row = t->scratch, *dst;
	struct sq_batch *b = t->cur;
	size_t bytes = 0, size = t->ncols * sizeof(*row);
	int ret;

	/* rows gathering: straight into the batch's next row */
	if (b && b->cap >= (size_t)(b->pending + 1) * t->ncols)
		row = b->vals + (size_t)b->pending * t->ncols;
	ret = sq_row_of(s, t, row, ev, &bytes, fresh);
	if (ret < 0)
		return ret;
	/* a flush hands the batch to the writer: the row moves out first */
	if (row != t->scratch && (!s->in_txn || bytes > SQ_ARENA ||
				  (bytes && (!b->arena || bytes > b->arena_size - b->arena_len)))) {
		memcpy(t->scratch, row, size);
		row = t->scratch;
	}
	if (t->rows < 2 || bytes > SQ_ARENA || !s->in_txn) {
		/* alone, straight from the page; what is gathering goes first */
		ret = sq_flush(s, t) ?: sq_sync(s) ?: sq_exec(s, "SAVEPOINT tc_row");
		if (ret < 0)
			return ret;
		if ((fresh->id && sq_stack_put(s->stack_put, fresh->id, fresh->p,
					       fresh->len) != SQLITE_OK) ||
		    sq_rows_step(t, t->insert, row, 1, NULL) != SQLITE_OK ||
		    sq_block_put(s->db, s->block_put, t, row, 1, &s->seq) != SQLITE_OK) {
			ret = sq_err(s, TC_ERR_DB, "step");
			sqlite3_exec(s->db, "ROLLBACK TO tc_row", NULL, NULL, NULL);
		}
		sqlite3_exec(s->db, "RELEASE tc_row", NULL, NULL, NULL);
		return ret;
	}
	if (t->cur && (ret = sq_batch_room(t, bytes)) != 0) {
		if (ret < 0 || (ret = sq_flush(s, t)) < 0)
			return ret;
	}
	if (!t->cur && ((ret = sq_batch_get(s, t)) < 0 || (ret = sq_batch_room(t, bytes)) < 0))
		return ret;
	b = t->cur;
	if (fresh->id && (ret = sq_batch_stack(b, fresh)) < 0)
		return ret;
	dst = b->vals + (size_t)b->pending * t->ncols;
	if (row != dst)
		memcpy(dst, row, size);
	sq_row_keep(b, t->ncols, dst);
	if (++b->pending == t->rows)
		return sq_flush(s, t);
	return 0;
}

/*
 * A stack id handed out for a row that failed may not have been stored:
 * the writer's stacks in memory are forgotten then (sqlite_stacks.c).
 */
static int sq_insert(struct store_writer *w, struct store_type *t, const struct store_event *ev)
{
	struct sq_store *s = sq_writer_of(w);
	struct sq_fresh fresh = { 0 };
	int ret;

	if (t->retired)
		return sq_errf(s, TC_ERR_DB, "database %s: event type %s:%s is of the"
			       " file that was removed or replaced", s->path, t->system,
			       t->name);
	if (ev->nvals != t->nfields)
		return sq_errf(s, -EINVAL, "event does not match its store type");
	ret = sq_insert_row(s, t, ev, &fresh);
	if (ret < 0 && fresh.id)
		sq_stacks_forget(s);
	return ret;
}

/* ---- types, the writer, the sequence ---- */

/* @t's statements finalized and its gathering batch freed (a retired type keeps the rest). */
static void sq_type_release(struct store_type *t)
{
	if (t->insert_b != t->insert_n)
		sqlite3_finalize(t->insert_b);
	sqlite3_finalize(t->insert_n);
	sqlite3_finalize(t->insert);
	t->insert = t->insert_n = t->insert_b = NULL;
	sq_batch_free(t->cur);
	t->cur = NULL;
}

void sq_type_free(struct store_type *t)
{
	sq_type_release(t);
	free(t->bound_n);
	free(t->values);
	free(t->head);
	free(t->scratch);
	free(t->system);
	free(t->name);
	free(t->format);
	free(t->param);
	free(t);
}

static void sq_types_free(struct store_type *t)
{
	while (t) {
		struct store_type *next = t->next;

		sq_type_free(t);
		t = next;
	}
}

void sq_types_retire(struct sq_store *s)
{
	while (s->types) {
		struct store_type *t = s->types;

		s->types = t->next;
		sq_type_release(t);
		t->retired = true;
		t->next = s->retired;
		s->retired = t;
	}
}

void sq_types_drop_rows(struct sq_store *s)
{
	for (struct store_type *t = s->types; t; t = t->next)
		if (t->cur)
			t->cur->pending = t->cur->arena_len = t->cur->stacks.len = 0;
}

void sq_writer_free(struct sq_store *s)
{
	sq_writer_stop(s);
	while (s->spare) {
		struct sq_batch *b = s->spare;

		s->spare = b->next;
		sq_batch_free(b);
	}
	sq_types_free(s->types);
	sq_types_free(s->retired);
	s->types = s->retired = NULL;
	sq_stacks_free(s);
}

int sq_seq_end(struct sq_store *s, int64_t *end)
{
	return sq_int1(s, "SELECT seq + hi - lo + 1 FROM ts_blocks WHERE ? = 0"
			  " ORDER BY rowid DESC LIMIT 1", 0, 1, end);
}

int sq_seq_load(struct sq_store *s)
{
	int64_t end = 1;
	int ret = sq_seq_end(s, &end);

	if (ret == 0)
		s->seq = end;
	/* the stacks' ids come from the file too: what a rollback undid is gone */
	return ret ?: sq_stacks_load(s);
}

void sq_write_ops(struct store_writer_ops *w)
{
	w->insert = sq_insert;
}
