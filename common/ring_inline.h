/*
 * ring_inline.h - the ring's inline write fast path (tiered like
 * lttng-ust's frontend headers: ring.h is the API, this the inline fast
 * path, ring_internal.h the layout). common/ring.c builds ring_write()
 * and its kin on it; lib/fgraph.c's exit hook, the hottest writer there
 * is, reserves with ring_fast_reserve() through its per-thread struct
 * ring_wcache, stores its record's fields in place, commits with
 * ring_fast_commit(), and falls back to ring_write_stamped() when the
 * reservation returns 1. The algorithm is in ring.c.
 */
#ifndef COMMON_RING_INLINE_H
#define COMMON_RING_INLINE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/page.h"
#include "common/ring.h"
#include "common/ring_internal.h"
#include "common/ring_priv.h"
#include "common/ring_rseq.h"

static inline void ring_prewrite(uint8_t *e, uint32_t total)
{
	uint32_t *h = (uint32_t *)e;

	h[1] = total - 4;
	ring_store_relaxed(&h[0], PAGE_TYPE_PADDING |
			   ((uint32_t)RING_UNFINISHED_MARK << PAGE_TYPE_LEN_BITS));
}

/* How far ahead of the event the fast path fetches the page for writing
 * (prefetchw; the address wraps inside the page, so it never touches a
 * page the writer does not hold). 256 to 2048 measured alike. */
#define RING_PREFETCH	512

/*
 * The page that holds virtual page @q of buffer @b, if its first writer
 * has claimed it (set the slot's tag), else NULL. Read before the fast
 * path reserves in @q: once the reservation's compare finds wpos still in
 * @q, the page cannot have been taken since (a page is taken complete or
 * ended by the reader's flush, and either moves wpos on), and a virtual
 * page's physical page is set once.
 */
static inline uint8_t *claimed_page(const struct ring *r, struct ring_buf *b,
				    struct ring_slot *s, uint64_t q)
{
	uint64_t tag = ring_load_acquire(&s->tag);

	if ((tag >> RING_TAG_SEQ_SHIFT) == q &&
	    (tag & RING_TAG_PHYS_MASK) <= r->nslots)
		return ring_page(r, b, tag & RING_TAG_PHYS_MASK);
	return NULL;	/* the page's entrant is late: the general path */
}

/* Where a fast-path write went: a page of the current CPU's buffer. */
struct fast_pos {
	struct ring_slot *s;
	uint8_t *page;
	uint64_t now, delta;
	uint32_t off;
	int cpu;
};

/*
 * struct ring_wcache - one writer's memory of its last fast write: the
 * buffer of the CPU it ran on, and the slot and page that held the
 * virtual page it wrote in. A writer that keeps one (fgraph's exit hook,
 * per thread) skips the loads from struct ring to the buffer and from
 * the slot's tag to the page while it stays on that CPU and page. Sound
 * because a virtual page's physical page is set once, by its first
 * writer, and cannot be taken by the reader while a reservation in it is
 * uncommitted: a reservation that lands in the cached virtual page (the
 * rseq compare-and-swap of the write position succeeded) is in the
 * cached page. @gen tells rings apart (struct ring addresses are
 * reused). Zero-filled: empty. One writer at a time (not signal-safe:
 * the owner's guard must keep handlers out).
 */
struct ring_wcache {
	struct ring_buf *b;
	struct ring_slot *s;
	uint8_t *page;
	uint64_t q;		/* the virtual page that s and page hold */
	uint32_t gen;		/* struct ring's gen; 0: empty */
	int32_t cpu;
};

/*
 * struct ring_tcache - a thread's struct ring_wcache for ring_write() and
 * its kin (ring.c keeps one per thread), with the guard that makes it
 * signal-safe: @busy is set while a write reads or fills the cache, and a
 * write that finds it set (a signal handler's, nested in one) takes the
 * general path, which does not touch the cache; so the cache is never
 * read half-filled, nor filled under a reader. Compiler barriers suffice:
 * only the thread itself and its handlers touch it. A handler that never
 * returns (longjmp out of one nested in a write) leaves @busy set: that
 * thread's writes stay correct, on the general path.
 */
struct ring_tcache {
	struct ring_wcache wc;
	uint32_t busy;
};

#if RING_HAVE_RSEQ
/*
 * The reservation both fast paths make, inline: @total bytes in the
 * current CPU's buffer, in the current page, no time extend (one rseq
 * section: compare the write position, store the timestamp in the other
 * res.ts[], store the new position with the bit flipped). @c: the
 * writer's cache or NULL; @tsc: the caller found the ring's clock is the
 * TSC (constants: each caller gets its own copy). With @tsc, no calls:
 * the callers' fast paths stay leaves (the other clock's read is a call
 * to clock_gettime(), and with it in the path gcc gave every call a
 * stack frame and spills around it: ~0.2 ns an event; the six callee-
 * saved registers the path needs are pushed either way).
 * Return: 0 and *@p; 1 to take the general path (nothing reserved).
 */
static inline __attribute__((always_inline))
int claim_fast(struct ring *r, struct ring_wcache *c, uint32_t total,
	       bool tsc, struct fast_pos *p)
{
	struct ring_buf *b;
	uint64_t w, t, now, q;
	uint32_t off, alt;
	int cpu = ring_rseq_cpu();

	if (c && __builtin_expect(c->cpu == cpu && c->gen == r->gen, 1)) {
		b = c->b;
	} else {
		if ((unsigned)cpu >= r->ncpu)
			return 1;
		b = r->bufs[cpu];
		if (c) {
			c->b = b;
			c->cpu = cpu;
			c->gen = r->gen;
			c->q = ~0ull;
		}
	}
	w = ring_load_relaxed(&b->res.wpos);
	alt = (uint32_t)(w >> 15) & 1;	/* RING_WPOS_TS_ALT */
	t = ring_load_relaxed(&b->res.ts[alt]);
	q = w >> RING_WPOS_SHIFT;
	if (c && __builtin_expect(c->q == q, 1)) {
		p->s = c->s;
		p->page = c->page;
	} else {
		p->s = &b->slots[q & (r->nslots - 1)];
		p->page = claimed_page(r, b, p->s, q);
		if (!p->page)
			return 1;
		if (c) {
			c->s = p->s;
			c->page = p->page;
			c->q = q;
		}
	}
	now = ring_clock_read(tsc ? RING_CLOCK_TSC : r->clock);
	off = (uint32_t)(w & RING_WPOS_OFF_MASK);
	if (now - t >= (1u << PAGE_DELTA_BITS) || off + total > r->data_size ||
	    ring_rseq_reserve((uint32_t)cpu, &b->res.wpos, w,
			      (w + total) ^ RING_WPOS_TS_ALT,
			      &b->res.ts[alt ^ 1], now))
		return 1;
	p->now = now;
	p->delta = now - t;
	p->off = off;
	p->cpu = cpu;
	return 0;
}

/* The end of a fast write of @total bytes at @e whose header word is
 * @type (the payload in place): the header with the delta, the page's
 * commit field if the event ends the page, the commit count. */
static inline __attribute__((always_inline))
void commit_fast(const struct ring *r, const struct fast_pos *p, uint8_t *e,
		 uint32_t total, uint32_t type)
{
	ring_store_relaxed((uint32_t *)e,
			   type | (uint32_t)(p->delta << PAGE_TYPE_LEN_BITS));
	if (p->off + total == r->data_size)
		ring_store_relaxed((uint64_t *)(p->page + 8),
				   (uint64_t)r->data_size);
	if (ring_rseq_add((uint32_t)p->cpu, &p->s->commit_cpu,
			  total + RING_CC_EVENT))
		ring_add_release(&p->s->commit, total + RING_CC_EVENT);
}
#endif

/* memcpy for the payload: small ones in 16-byte moves, the last one
 * ending where the payload ends (overlapping the one before; gcc's inline
 * expansion of a variable-size memcpy is rep movsq: ~20 ns to start, and
 * a loop of 8-byte moves cost ~1.5 ns more than these per 32 bytes). */
static inline void copy_small(void *dst, const void *src, uint32_t len)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (__builtin_constant_p(len)) {
		memcpy(d, s, len);	/* constant: a few moves inline */
		return;
	}
	if (len >= 16) {
		for (uint32_t i = 0; i + 16 < len; i += 16)
			memcpy(d + i, s + i, 16);
		memcpy(d + len - 16, s + len - 16, 16);
	} else if (len >= 8) {
		memcpy(d, s, 8);
		memcpy(d + len - 8, s + len - 8, 8);
	} else if (len >= 4) {
		memcpy(d, s, 4);
		memcpy(d + len - 4, s + len - 4, 4);
	} else {
		while (len--)
			*d++ = *s++;
	}
}

/* copy_small() up to 128 bytes, memcpy() past. */
static inline void copy_payload(void *dst, const void *src, uint32_t len)
{
	if (len > 128)
		memcpy(dst, src, len);
	else
		copy_small(dst, src, len);
}

/*
 * ring_write's common case on an rseq ring, everything inline and in
 * registers: the current CPU's buffer, a 1..RING_MAX_PAYLOAD-byte
 * payload, in the current page, no time extend. The payload is the 8
 * bytes at @pre (if not NULL) followed by @len bytes at @data. Payloads
 * over 112 bytes have the kernel's 8-byte header (type_len 0, then the
 * length): prewrite() already puts that length where it goes. @big says
 * which; @tsc as for claim_fast(); @tc: the thread's cache or NULL
 * (constants: each caller gets its own copy).
 * Return: 0 written; 1 to take the general path (nothing reserved).
 */
static inline __attribute__((always_inline))
int write_fast(struct ring *r, const void *pre, const void *data,
	       uint32_t len, bool big, int ts_off, bool tsc,
	       struct ring_tcache *tc)
{
#if RING_HAVE_RSEQ
	uint32_t plen = len + (pre ? 8 : 0);
	uint32_t l4 = (plen + 3) & ~3u;
	uint32_t type = big ? 0 : l4 / 4;
	uint32_t total = (big ? 8 : 4) + l4;
	struct fast_pos p;
	uint8_t *e;
	int ret;

	if (tc) {
		if (tc->busy)
			return 1;
		tc->busy = 1;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		ret = claim_fast(r, &tc->wc, total, tsc, &p);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		tc->busy = 0;
	} else {
		ret = claim_fast(r, NULL, total, tsc, &p);
	}
	if (ret)
		return ret;
	e = p.page + RING_PAGE_HDR + p.off;
	ring_prefetch_w(p.page + ((RING_PAGE_HDR + p.off + RING_PREFETCH) &
				  (r->page_size - 1)));
	ring_prewrite(e, total);
	if (pre)
		memcpy(e + total - l4, pre, 8);
	if (big)
		copy_payload(e + total - l4 + plen - len, data, len);
	else	/* len <= 112: no call, the fast path stays a leaf */
		copy_small(e + total - l4 + plen - len, data, len);
	if (ts_off >= 0)
		memcpy(e + total - l4 + ts_off, &p.now, 8);
	commit_fast(r, &p, e, total, type);
	return 0;
#else
	(void)r;
	(void)pre;
	(void)data;
	(void)len;
	(void)big;
	(void)ts_off;
	(void)tsc;
	(void)tc;
	return 1;
#endif
}

/*
 * struct ring_fast - a fast reservation whose writer stores the payload
 * in place (ring_fast_reserve(), then ring_fast_commit()).
 */
struct ring_fast {
	struct fast_pos p;
	uint8_t *ev;
	uint32_t total;
};

/*
 * ring_fast_reserve - ring_write_stamped_fast()'s reservation, for a
 * writer that stores the @len-byte payload itself, field by field,
 * between this and ring_fast_commit() (building it elsewhere and copying
 * it costs a store-forwarding stall per 16-byte move of the copy), with
 * the writer's cache @c. @len: a constant multiple of 4, 4..112. The
 * payload is at ring_fast_payload() (4-byte aligned); its timestamp is
 * @w->p.now. Nothing else may be written to the ring in between.
 * Return: 0 reserved; 1 to take the general path (nothing reserved).
 */
static inline __attribute__((always_inline))
int ring_fast_reserve(struct ring *r, struct ring_wcache *c, uint32_t len,
		      struct ring_fast *w)
{
#if RING_HAVE_RSEQ
	int ret;

	if (!r->rseq)
		return 1;
	w->total = 4 + len;
	ret = claim_fast(r, c, w->total, false, &w->p);
	if (ret)
		return ret;
	w->ev = w->p.page + RING_PAGE_HDR + w->p.off;
	ring_prefetch_w(w->p.page +
			((RING_PAGE_HDR + w->p.off + RING_PREFETCH) &
			 (r->page_size - 1)));
	ring_prewrite(w->ev, w->total);
	return 0;
#else
	(void)r;
	(void)c;
	(void)len;
	(void)w;
	return 1;
#endif
}

static inline uint8_t *ring_fast_payload(const struct ring_fast *w)
{
	return w->ev + 4;
}

/* ring_fast_commit - publish what ring_fast_reserve() reserved. */
static inline __attribute__((always_inline))
void ring_fast_commit(const struct ring *r, const struct ring_fast *w)
{
#if RING_HAVE_RSEQ
	commit_fast(r, &w->p, w->ev, w->total, (w->total - 4) / 4);
#else
	(void)r;
	(void)w;
#endif
}

/*
 * ring_own_fast - where an event of @total bytes (header included) at
 * time @now goes in the own buffer @o (ring.h), if it fits the page in
 * hand with no time extend; NULL: call ring_own_enter() first.
 */
static inline uint8_t *ring_own_fast(const struct ring_own *o, uint32_t total,
				     uint64_t now)
{
	if (__builtin_expect(o->next && (uint32_t)(o->end - o->next) >= total &&
			     now - o->last_ts < (1u << PAGE_DELTA_BITS), 1))
		return o->next;
	return NULL;
}

/* ring_own_end - end the page in hand where its events end (o->next),
 * adding @add to the slot's count: the page's commit word says where the
 * data ends before the count says the page is complete. */
static inline void ring_own_end(struct ring_own *o, uint64_t add)
{
	ring_store_relaxed((uint64_t *)(o->page + 8),
			   (uint64_t)(o->next - (o->page + RING_PAGE_HDR)));
	ring_store_release(o->ccp, ring_load_relaxed(o->ccp) + add);
	o->next = o->end = NULL;	/* no room: the x86_64 hook checks that */
}

/* ring_own_commit - publish the @total-byte event at o->next, its payload
 * written, with header type @type, at time @now. An event that fills the
 * page to its last byte ends it; the next event enters a new page. */
static inline void ring_own_commit(struct ring_own *o, uint32_t total,
				   uint32_t type, uint64_t now)
{
	ring_store_relaxed((uint32_t *)o->next, type |
			   (uint32_t)((now - o->last_ts) << PAGE_TYPE_LEN_BITS));
	o->next += total;
	o->last_ts = now;
	if (__builtin_expect(o->next == o->end, 0))
		ring_own_end(o, total + RING_CC_EVENT);
	else
		ring_store_release(o->ccp, ring_load_relaxed(o->ccp) + total +
				   RING_CC_EVENT);
}

#endif
