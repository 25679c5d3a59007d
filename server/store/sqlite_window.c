/*
 * sqlite_window.c - the rows of one window of a limited select
 * (sq_select_windows() in sqlite_read.c), kept and put in (ts, rowid)
 * order here instead of by SQLite's ORDER BY: its sorter inserted each
 * whole row into a temporary B-tree, a fifth of the collector's time when
 * printing a long answer (sq_win_sort()). A window covers at most some hundred blocks of
 * at most 64 rows; what it holds is capped at sq_win_cap all the same
 * (large strings), and past that the caller has SQLite sort the window.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "server/store/sqlite_window.h"

size_t sq_win_cap = 32u << 20;

/* A field's value: the integer, or where its bytes are in the arena. */
struct sq_wval {
	int64_t i;
	uint32_t len;
	uint8_t kind;		/* enum store_kind */
	bool null;
};

/* What a window is sorted by, and the row it stands for. */
struct sq_wkey {
	int64_t ts;
	int64_t rowid;
	size_t row;
};

struct sq_wrow {
	int64_t ts;
	int64_t rowid;
	uint64_t host_id;
	uint64_t trace_ts;
	uint32_t cpu;
	size_t vals;		/* arena offset of its ncols struct sq_wval */
};

void sq_win_free(struct sq_win *w)
{
	free(w->rows);
	free(w->keys);
	free(w->tmp);
	free(w->runs);
	free(w->arena);
	memset(w, 0, sizeof(*w));
}

void sq_win_reset(struct sq_win *w)
{
	w->n = 0;
	w->used = 0;
}

/* @len bytes of arena (8-aligned) at *@off: 0, -E2BIG past the cap, -ENOMEM. */
static int sq_win_room(struct sq_win *w, size_t len, size_t *off)
{
	size_t at = (w->used + 7) & ~(size_t)7, size = w->size ? w->size : 64u << 10;
	unsigned char *a;

	if (len > sq_win_cap || at > sq_win_cap - len)
		return -E2BIG;
	while (size < at + len)
		size *= 2;
	if (size != w->size) {
		a = realloc(w->arena, size);
		if (!a)
			return -ENOMEM;
		w->arena = a;
		w->size = size;
	}
	*off = at;
	w->used = at + len;
	return 0;
}

int sq_win_add(struct sq_win *w, sqlite3_stmt *st, const struct store_schema *sc)
{
	struct sq_wrow *r;
	size_t voff, off;
	int ret;

	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		struct sq_wkey *k, *t;
		size_t *runs;

		r = realloc(w->rows, cap * sizeof(*r));
		if (r)
			w->rows = r;
		k = r ? realloc(w->keys, cap * sizeof(*k)) : NULL;
		if (k)
			w->keys = k;
		t = k ? realloc(w->tmp, cap * sizeof(*t)) : NULL;
		if (t)
			w->tmp = t;
		runs = t ? realloc(w->runs, cap * sizeof(*runs)) : NULL;
		if (!runs)
			return -ENOMEM;
		w->runs = runs;
		w->cap = cap;
	}
	ret = sq_win_room(w, sc->ncols * sizeof(struct sq_wval), &voff);
	if (ret < 0)
		return ret;
	r = &w->rows[w->n];
	r->rowid = sqlite3_column_int64(st, 0);
	r->host_id = (uint64_t)sqlite3_column_int64(st, 1);
	r->cpu = (uint32_t)sqlite3_column_int64(st, 2);
	r->ts = sqlite3_column_int64(st, 3);
	r->trace_ts = (uint64_t)sqlite3_column_int64(st, 4);
	r->vals = voff;
	w->keys[w->n] = (struct sq_wkey){ .ts = r->ts, .rowid = r->rowid, .row = w->n };
	for (size_t i = 0; i < sc->ncols; i++) {
		/* one call into the statement (its lock) per column, not two */
		sqlite3_value *col = sqlite3_column_value(st, 5 + (int)i);
		int type = sqlite3_value_type(col);
		struct sq_wval v = { .kind = (uint8_t)sc->cols[i].kind };
		const void *p;

		if (type == SQLITE_NULL) {
			v.null = true;
		} else if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
			p = type == SQLITE_TEXT ? (const void *)sqlite3_value_text(col) :
			    sqlite3_value_blob(col);
			v.len = (uint32_t)sqlite3_value_bytes(col);
			v.kind = type == SQLITE_TEXT ? STORE_STRING : STORE_BLOB;
			ret = sq_win_room(w, (size_t)v.len + 1, &off);	/* NUL-ended, as SQLite's */
			if (ret < 0)
				return ret;
			if (v.len)
				memcpy(w->arena + off, p, v.len);
			w->arena[off + v.len] = 0;
			v.i = (int64_t)off;
		} else {	/* INTEGER (a REAL never gets stored) */
			v.kind = sc->cols[i].kind == STORE_UNSIGNED ? STORE_UNSIGNED :
				 STORE_SIGNED;
			v.i = sqlite3_value_int64(col);
		}
		memcpy(w->arena + voff + i * sizeof(v), &v, sizeof(v));
	}
	w->n++;
	return 0;
}

/* Whether key @a comes before key @b: (ts, rowid) order. */
static inline bool sq_wkey_before(const struct sq_wkey *a, const struct sq_wkey *b)
{
	return a->ts != b->ts ? a->ts < b->ts : a->rowid < b->rowid;
}

/* Merge the sorted runs @src[lo, mid) and @src[mid, hi) into @dst[lo, hi). */
static void sq_wkey_merge(const struct sq_wkey *src, struct sq_wkey *dst, size_t lo, size_t mid,
			  size_t hi)
{
	size_t i = lo, j = mid, k = lo;

	while (i < mid && j < hi)
		dst[k++] = sq_wkey_before(&src[j], &src[i]) ? src[j++] : src[i++];
	while (i < mid)
		dst[k++] = src[i++];
	while (j < hi)
		dst[k++] = src[j++];
}

/*
 * A natural merge sort of the keys: a window's rows come block by block,
 * each block pages of one CPU after another, so they arrive in a few
 * dozen ascending runs; those are found in one pass and merged pairwise
 * (log2 of the runs passes), where a general sort compares each row
 * some twelve times through a function pointer.
 */
void sq_win_sort(struct sq_win *w)
{
	struct sq_wkey *src = w->keys, *dst = w->tmp, *t;
	size_t n = w->n, *run = w->runs, nrun = 0;

	for (size_t i = 0; i < n; i++)	/* run[k]: where run k starts */
		if (i == 0 || sq_wkey_before(&src[i], &src[i - 1]))
			run[nrun++] = i;
	while (nrun > 1) {
		size_t m = 0;

		for (size_t r = 0; r < nrun; r += 2) {
			size_t lo = run[r], mid = r + 1 < nrun ? run[r + 1] : n,
			       hi = r + 2 < nrun ? run[r + 2] : n;

			sq_wkey_merge(src, dst, lo, mid, hi);
			run[m++] = lo;
		}
		nrun = m;
		t = src, src = dst, dst = t;
	}
	if (src != w->keys)	/* the sorted keys are in tmp: swap the arrays */
		w->tmp = w->keys, w->keys = src;
}

void sq_win_row(const struct sq_win *w, size_t i, const struct store_schema *sc,
		struct sq_rowbuf *rb, struct store_row *r)
{
	const struct sq_wrow *wr = &w->rows[w->keys[i].row];

	memset(r, 0, sizeof(*r));
	r->rowid = (uint64_t)wr->rowid;
	r->host_id = wr->host_id;
	r->cpu = wr->cpu;
	r->ts = wr->ts;
	r->trace_ts = wr->trace_ts;
	for (size_t c = 0; c < sc->ncols; c++) {
		struct store_value *d = &rb->vals[c];
		struct sq_wval v;

		memcpy(&v, w->arena + wr->vals + c * sizeof(v), sizeof(v));
		memset(d, 0, sizeof(*d));
		d->kind = (enum store_kind)v.kind;
		rb->null[c] = v.null;
		if (v.null)
			continue;
		if (d->kind == STORE_STRING) {
			d->str.s = (const char *)w->arena + v.i;
			d->str.len = v.len;
		} else if (d->kind == STORE_BLOB) {
			d->blob.p = w->arena + v.i;
			d->blob.len = v.len;
		} else {
			d->i = v.i;
		}
	}
	sq_row_names(sc, rb, r);
}
