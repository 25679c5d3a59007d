/*
 * dedup.c - per agent session, the spans of stored pages of each stream
 * (see dedup.h): an in-memory list shared by the connections of a
 * session, loaded from the store (every collector's spans) and written
 * back to it, one span per stream and commit.
 *
 * A stream's spans are a sorted array of disjoint, non-adjacent [lo, hi];
 * pages come in order, so adding one is almost always widening the last
 * span by one (O(1)); seen() is a binary search. A peer whose sequence
 * numbers leave gaps at every step could grow the array without end: past
 * DEDUP_SPANS_MAX spans the two oldest spans are joined (the pages of the
 * gap between them then count as stored: an agent resends only the pages
 * after its last ACK, never pages that old).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/ingest/dedup.h"

#define DEDUP_SPANS_MAX	4096	/* per stream */

struct dspans {			/* sorted, disjoint, not adjacent */
	struct dspan { uint64_t lo, hi; } *v;
	size_t n, cap;
};

struct dedup {
	struct dedup *next;
	unsigned refs;
	uint64_t host_id;
	char *boot_id;
	uint64_t session;
	uint32_t nstreams;
	struct dspans *stored;	/* per stream: what the store holds, and this commit */
	struct dspans *fresh;	/* per stream: stored since the last flush */
	uint32_t *dirty_list;	/* streams whose fresh is not empty, ndirty of them: */
	uint32_t ndirty;	/* a flush visits the streams that moved, not all */
};

/* The first span of @sp whose hi + 1 >= @seq (sp->n when none). */
static size_t spans_find(const struct dspans *sp, uint64_t seq)
{
	size_t a = 0, b = sp->n;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (sp->v[m].hi < seq && sp->v[m].hi + 1 < seq)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

static bool spans_has(const struct dspans *sp, uint64_t seq)
{
	size_t i = spans_find(sp, seq);

	return i < sp->n && sp->v[i].lo <= seq && seq <= sp->v[i].hi;
}

/* Add @lo..@hi to @sp, joining what it touches. Return: 0; -ENOMEM. */
static int spans_add(struct dspans *sp, uint64_t lo, uint64_t hi)
{
	size_t i = spans_find(sp, lo), j;

	if (i == sp->n || (hi != UINT64_MAX && sp->v[i].lo > hi + 1)) {	/* a span of its own */
		struct dspan *v = util_grow(sp->v, &sp->cap, sp->n, sizeof(*v), 4);

		if (!v)
			return -ENOMEM;
		sp->v = v;
		memmove(&sp->v[i + 1], &sp->v[i], (sp->n - i) * sizeof(*sp->v));
		sp->v[i] = (struct dspan){ lo, hi };
		sp->n++;
	} else {
		if (lo < sp->v[i].lo)
			sp->v[i].lo = lo;
		if (hi > sp->v[i].hi)
			sp->v[i].hi = hi;
	}
	for (j = i + 1; j < sp->n && sp->v[j].lo <= sp->v[i].hi + 1; j++)
		if (sp->v[j].hi > sp->v[i].hi)
			sp->v[i].hi = sp->v[j].hi;
	memmove(&sp->v[i + 1], &sp->v[j], (sp->n - j) * sizeof(*sp->v));
	sp->n -= j - i - 1;
	if (sp->n > DEDUP_SPANS_MAX) {	/* the two oldest joined (the header says why) */
		sp->v[0].hi = sp->v[1].hi;
		memmove(&sp->v[1], &sp->v[2], (sp->n - 2) * sizeof(*sp->v));
		sp->n--;
	}
	return 0;
}

static void spans_clear(struct dspans *sp, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		sp[i].n = 0;
}

static void spans_free(struct dspans *sp, uint32_t n)
{
	for (uint32_t i = 0; sp && i < n; i++)
		free(sp[i].v);
	free(sp);
}

static struct dedup *dedup_find(struct dedup *list, uint64_t host_id,
				const char *boot_id, uint64_t session)
{
	for (; list; list = list->next)
		if (list->host_id == host_id && list->session == session &&
		    strcmp(list->boot_id, boot_id) == 0)
			return list;
	return NULL;
}

static void dedup_free(struct dedup *d)
{
	free(d->boot_id);
	spans_free(d->stored, d->nstreams);
	spans_free(d->fresh, d->nstreams);
	free(d->dirty_list);
	free(d);
}

/* store_span_fn: a span the store holds, into d->stored. */
static int dedup_take(void *ctx, const struct store_span *sp)
{
	struct dedup *d = ctx;

	return sp->stream < d->nstreams ? spans_add(&d->stored[sp->stream], sp->lo, sp->hi) : 0;
}

/* d->stored: what @st holds now, and nothing waiting to be written. */
static int dedup_read(struct dedup *d, struct store_writer *st)
{
	spans_clear(d->stored, d->nstreams);
	spans_clear(d->fresh, d->nstreams);
	d->ndirty = 0;
	return store_stream_marks(st, d->host_id, d->boot_id, d->session, d->nstreams,
				  dedup_take, d);
}

static int dedup_load(struct store_writer *st, uint64_t host_id, const char *boot_id,
		      uint64_t session, uint32_t nstreams, struct dedup **out)
{
	struct dedup *d = calloc(1, sizeof(*d));
	int ret = -ENOMEM;

	if (!d)
		return -ENOMEM;
	d->host_id = host_id;
	d->session = session;
	d->nstreams = nstreams;
	d->boot_id = strdup(boot_id);
	d->stored = calloc(nstreams ? nstreams : 1, sizeof(*d->stored));
	d->fresh = calloc(nstreams ? nstreams : 1, sizeof(*d->fresh));
	d->dirty_list = calloc(nstreams ? nstreams : 1, sizeof(*d->dirty_list));
	if (d->boot_id && d->stored && d->fresh && d->dirty_list)
		ret = dedup_read(d, st);
	if (ret < 0) {
		dedup_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

int dedup_get(struct dedup **list, struct store_writer *st, uint64_t host_id,
	      const char *boot_id, uint64_t session, uint32_t nstreams,
	      struct dedup **out)
{
	struct dedup *d = dedup_find(*list, host_id, boot_id, session);
	int ret;

	if (d && d->nstreams != nstreams)
		return TC_ERR_MSG_MALFORMED;
	if (!d) {
		ret = dedup_load(st, host_id, boot_id, session, nstreams, &d);
		if (ret < 0)
			return ret;
		d->next = *list;
		*list = d;
	}
	d->refs++;
	*out = d;
	return 0;
}

void dedup_put(struct dedup **list, struct dedup *d)
{
	struct dedup **pp;

	if (!d || --d->refs)
		return;
	for (pp = list; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
	dedup_free(d);
}

bool dedup_seen(const struct dedup *d, uint32_t stream, uint64_t seq)
{
	return stream < d->nstreams && spans_has(&d->stored[stream], seq);
}

int dedup_stored(struct dedup *d, uint32_t stream, uint64_t seq)
{
	int ret;

	if (stream >= d->nstreams)
		return -EINVAL;
	ret = spans_add(&d->stored[stream], seq, seq);
	if (ret == 0 && !d->fresh[stream].n)
		d->dirty_list[d->ndirty++] = stream;
	return ret ?: spans_add(&d->fresh[stream], seq, seq);
}

int dedup_flush(struct dedup *d, struct store_writer *st)
{
	uint32_t i, n = 0;
	int ret = 0;

	if (!d)
		return 0;
	for (i = 0; i < d->ndirty; i++) {
		struct dspans *f = &d->fresh[d->dirty_list[i]];

		while (ret == 0 && f->n) {	/* newest first: what is written is gone */
			ret = store_stream_mark(st, d->host_id, d->boot_id, d->session,
						d->dirty_list[i], f->v[f->n - 1].lo,
						f->v[f->n - 1].hi);
			if (ret == 0)
				f->n--;
		}
		if (f->n)
			d->dirty_list[n++] = d->dirty_list[i];	/* written at the next flush */
	}
	d->ndirty = n;
	return ret;
}

int dedup_reload(struct dedup *list, struct store_writer *st)
{
	int ret = 0;

	for (struct dedup *d = list; d && ret == 0; d = d->next)
		ret = dedup_read(d, st);
	return ret;
}

uint64_t dedup_high(const struct dedup *d, uint32_t stream)
{
	const struct dspans *sp;

	if (stream >= d->nstreams)
		return 0;
	sp = &d->stored[stream];
	return sp->n ? sp->v[sp->n - 1].hi : 0;
}
