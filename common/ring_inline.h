/*
 * ring_inline.h - the ring's inline write fast path (tiered like
 * lttng-ust's frontend headers: ring.h is the API, this the inline fast
 * path, ring_internal.h the layout). common/ring.c builds ring_write()
 * and its kin on it; lib/fgraph.c inlines ring_write_stamped_fast() into
 * its exit hook, the hottest writer there is, and falls back to
 * ring_write_stamped() when it returns 1. The algorithm is in ring.c.
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

/* Page of virtual page @q of buffer @b, which a reservation holds. */
static inline uint8_t *held_page(const struct ring *r, struct ring_buf *b,
				 struct ring_slot *s, uint64_t q)
{
	uint64_t tag = ring_load_acquire(&s->tag);

	if ((tag >> RING_TAG_SEQ_SHIFT) == q &&
	    (tag & RING_TAG_PHYS_MASK) <= r->nslots)
		return ring_page(r, b, tag & RING_TAG_PHYS_MASK);
	return ring_claim_page(r, b, q);	/* the page's entrant is late */
}

/* Where a fast-path write went: a page of the current CPU's buffer. */
struct fast_pos {
	struct ring_slot *s;
	uint8_t *page;
	uint64_t now, delta;
	uint32_t off;
	int cpu;
};

#if RING_HAVE_RSEQ
/*
 * The reservation both fast paths make, inline: @total bytes in the
 * current CPU's buffer, in the current page, no time extend (one rseq
 * compare-and-swap of write position and last timestamp).
 * Return: 0 and *@p; 1 to take the general path (nothing reserved); -EIO.
 */
static inline __attribute__((always_inline))
int claim_fast(struct ring *r, uint32_t total, struct fast_pos *p)
{
	struct ring_buf *b;
	uint64_t w, t, now, q;
	uint32_t off;
	int cpu = ring_rseq_cpu();

	if ((unsigned)cpu >= r->ncpu)
		return 1;
	b = r->bufs[cpu];
	w = ring_load_relaxed(&b->res.wpos);
	t = ring_load_relaxed(&b->res.last_ts);
	now = ring_clock_read(r->clock);
	off = (uint32_t)(w & RING_WPOS_OFF_MASK);
	if (now - t >= (1u << PAGE_DELTA_BITS) || off + total > r->data_size ||
	    ring_rseq_cas16((uint32_t)cpu, &b->res.wpos, w, t, w + total, now))
		return 1;
	q = w >> RING_WPOS_SHIFT;
	p->s = &b->slots[q & (r->nslots - 1)];
	p->page = held_page(r, b, p->s, q);
	p->now = now;
	p->delta = now - t;
	p->off = off;
	p->cpu = cpu;
	return p->page ? 0 : -EIO;
}
#endif

/* memcpy for the payload: small ones in 8-byte moves (gcc's inline
 * expansion of a variable-size memcpy is rep movsq: ~20 ns to start). */
static inline void copy_payload(void *dst, const void *src, uint32_t len)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (len > 128 || __builtin_constant_p(len)) {
		memcpy(d, s, len);	/* constant: a few moves inline */
		return;
	}
	for (; len >= 8; len -= 8, d += 8, s += 8)
		memcpy(d, s, 8);
	if (len >= 4) {
		memcpy(d, s, 4);
		len -= 4, d += 4, s += 4;
	}
	while (len--)
		*d++ = *s++;
}

/*
 * ring_write's common case on an rseq ring, everything inline and in
 * registers: the current CPU's buffer, a 1..RING_MAX_PAYLOAD-byte
 * payload, in the current page, no time extend. The payload is the 8
 * bytes at @pre (if not NULL) followed by @len bytes at @data. Payloads
 * over 112 bytes have the kernel's 8-byte header (type_len 0, then the
 * length): prewrite() already puts that length where it goes. @big says
 * which (a constant: each caller gets its own copy).
 * Return: 0 written; 1 to take the general path (nothing reserved); -EIO.
 */
static inline __attribute__((always_inline))
int write_fast(struct ring *r, const void *pre, const void *data,
	       uint32_t len, bool big, int ts_off)
{
#if RING_HAVE_RSEQ
	uint32_t plen = len + (pre ? 8 : 0);
	uint32_t l4 = (plen + 3) & ~3u;
	uint32_t type = big ? 0 : l4 / 4;
	uint32_t total = (big ? 8 : 4) + l4;
	struct fast_pos p;
	int ret = claim_fast(r, total, &p);
	uint8_t *e;

	if (ret)
		return ret;
	e = p.page + RING_PAGE_HDR + p.off;
	ring_prefetch_w(p.page + ((RING_PAGE_HDR + p.off + RING_PREFETCH) &
				  (r->page_size - 1)));
	ring_prewrite(e, total);
	if (pre)
		memcpy(e + total - l4, pre, 8);
	copy_payload(e + total - l4 + plen - len, data, len);
	if (ts_off >= 0)
		memcpy(e + total - l4 + ts_off, &p.now, 8);
	ring_store_relaxed((uint32_t *)e,
			   type | (uint32_t)(p.delta << PAGE_TYPE_LEN_BITS));
	if (p.off + total == r->data_size)
		ring_store_relaxed((uint64_t *)(p.page + 8),
				   (uint64_t)r->data_size);
	if (ring_rseq_add((uint32_t)p.cpu, &p.s->commit_cpu,
			  total + RING_CC_EVENT))
		ring_add_release(&p.s->commit, total + RING_CC_EVENT);
	return 0;
#else
	(void)r;
	(void)pre;
	(void)data;
	(void)len;
	(void)big;
	(void)ts_off;
	return 1;
#endif
}

/*
 * ring_write_stamped_fast - ring_write_stamped()'s common case, inline:
 * the current CPU's buffer of an rseq ring, in the current page, no time
 * extend. @len and @ts_off as there, and constants (4 <= @len <= 112).
 * Return: 0 written; 1 to call ring_write_stamped() instead (nothing
 * written); -EIO.
 */
static inline __attribute__((always_inline))
int ring_write_stamped_fast(struct ring *r, const void *data, uint32_t len,
			    uint32_t ts_off)
{
	if (!r->rseq)
		return 1;
	return write_fast(r, NULL, data, len, false, (int)ts_off);
}

#endif
