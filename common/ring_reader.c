/*
 * ring_reader.c - the reader side of the user-space ring buffer (what
 * traceagent calls): mapping a ring file someone else created, checking
 * its geometry, swapping complete pages out, ending partial pages,
 * finishing the pages of a dead writer, and the format table.
 *
 * Reader page swap (ring-buffer-design.rst, "the reader page"): the
 * reader owns one page outside the ring. To take the oldest page (virtual
 * page rpos) it checks that the slot's committed byte count is complete
 * for that lap and cmpxchg's the slot's tag from
 * {rpos, phys} to {rpos, TOOK, reader page}. A writer entering the slot's
 * next lap (overwrite modes) cmpxchg's the same tag to {rpos + N, phys}:
 * exactly one of the two wins. If the reader wins, the writer writes into
 * the page the reader just gave; if the writer wins, the page was
 * overwritten, the writer counts its events as lost and moves rpos on
 * (the kernel's head-page push). Writers of the page itself are done
 * (its count is complete), so the page the reader takes is stable.
 *
 * Own buffers (ring.c) have one writer, whose committed bytes are a
 * prefix of its page: the reader never ends such a page while the owner
 * lives, but copies what was committed since its last copy into its own
 * page (own_copy(); the slot's tag, read again after the copy, tells a
 * page overwritten meanwhile), remembers how far it copied and at what
 * time, and cuts that part off the page when it takes it whole
 * (own_trim()). After the owner died, recovery ends the page at the
 * committed prefix: anything after it is from an earlier lap.
 *
 * The file is written by the traced program, which we do not trust to
 * keep it sane: geometry is checked once at open and kept locally, and
 * every physical page index read from the file is bounds-checked.
 *
 * Pages are not cleared when they go back to the ring: a cleared page
 * would reach the writer's CPU as ~64 cache-line transfers (measured: +15
 * ns per event). A dead writer's page is made decodable by walking its
 * event chain instead (ring_repair_page(), with common/page.h's reader).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/page.h"
#include "common/ring.h"
#include "common/ring_internal.h"
#include "common/ring_priv.h"
#include "common/tc_error.h"

static bool pow2_in(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

/* Geometry check of a header mapped from a file of @size bytes. */
static int hdr_check(const struct ring_hdr *h, uint64_t size)
{
	uint64_t ctl, span;

	if (h->magic != RING_MAGIC || h->version != RING_VERSION ||
	    !pow2_in(h->page_size, 4096, 32768) ||
	    !pow2_in(h->nr_slots, 2, 1u << 20) || h->nr_own > RING_MAX_OWN ||
	    h->nr_bufs < h->nr_own + 2 ||
	    h->nr_bufs > 4097 + h->nr_own || h->mode > RING_MODE_FLIGHT ||
	    h->clock > RING_CLOCK_MONO || h->file_size != size ||
	    (h->flags & ~RING_F_RSEQ) ||
	    sizeof(*h) + 8ull * h->nr_bufs > h->page_size)
		return TC_ERR_PAGE_MALFORMED;
	ctl = ring_buf_ctl_size(h->nr_slots, h->page_size);
	span = ctl + (h->nr_slots + 1ull) * h->page_size;
	for (uint32_t i = 0; i < h->nr_bufs; i++)
		if (h->buf_off[i] % RING_CACHELINE || h->buf_off[i] > size ||
		    size - h->buf_off[i] < span)
			return TC_ERR_PAGE_MALFORMED;
	if (h->fmt_off > size || size - h->fmt_off < h->fmt_size ||
	    h->fmt_off % 8 || h->fmt_size % 8)
		return TC_ERR_PAGE_MALFORMED;
	return 0;
}

int ring_open_fd(int fd, struct ring **out)
{
	struct ring *r = NULL;
	struct stat st;
	int ret, dfd;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_size == 0)
		return -EAGAIN;		/* made, not sized yet (ring_create()) */
	if ((uint64_t)st.st_size < 4096)
		return TC_ERR_PAGE_MALFORMED;
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	ret = ring_map_fd(dfd, (uint64_t)st.st_size, false, &r);
	if (ret) {
		close(dfd);
		return ret;
	}
	/* ring_create() publishes the magic last: none yet is a ring being made */
	ret = __atomic_load_n(&r->hdr->magic, __ATOMIC_ACQUIRE) == 0 ? -EAGAIN :
	      hdr_check(r->hdr, r->size);
	if (!ret)
		ret = ring_view(r);
	if (ret) {
		ring_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

int ring_open(const char *path, struct ring **out)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = ring_open_fd(fd, out);
	close(fd);
	return ret;
}

/* Committed byte count that completes virtual page @p. */
static uint64_t full_bytes(const struct ring *r, uint64_t p)
{
	return (((p >> r->nshift) + 1) * r->data_size) & RING_CC_BYTES_MASK;
}

/* Note lost events in the page's commit word, as the kernel does. */
static bool mark_missed(const struct ring *r, struct ring_buf *b,
			uint8_t *page)
{
	uint64_t lost = ring_load_relaxed(&b->lost_full) +
			ring_load_relaxed(&b->lost_busy) +
			ring_load_relaxed(&b->lost_overwritten);
	uint64_t commit = *(uint64_t *)(page + 8) & PAGE_COMMIT_LEN_MASK;
	uint64_t n = lost - b->lost_seen;

	if (!n)
		return false;
	b->lost_seen = lost;
	if (commit + 8 <= r->data_size) {
		memcpy(page + RING_PAGE_HDR + commit, &n, 8);
		commit |= PAGE_COMMIT_STORED;
	}
	*(uint64_t *)(page + 8) = commit | PAGE_COMMIT_MISSED;
	return true;
}

/* One attempt at swapping out virtual page @p. Returns 1 when taken,
 * 0 to retry with a fresh rpos, -EAGAIN when @p is not complete. */
static int try_swap(struct ring *r, struct ring_buf *b, uint64_t *p)
{
	struct ring_slot *s = &b->slots[*p & (r->nslots - 1)];
	uint64_t tag = ring_load_acquire(&s->tag);
	uint64_t seq = tag >> RING_TAG_SEQ_SHIFT;
	uint64_t mine = ring_load_relaxed(&b->reader_phys);

	if (seq < *p)
		return -EAGAIN;
	if (seq > *p) {		/* overwritten: push rpos past it */
		ring_cas(&b->rpos, p, seq - r->nslots + 1);
		*p = ring_load_acquire(&b->rpos);
		return 0;
	}
	if ((ring_slot_commit(s) & RING_CC_BYTES_MASK) != full_bytes(r, *p))
		return -EAGAIN;
	if (!ring_cas(&s->tag, &tag, (*p << RING_TAG_SEQ_SHIFT) |
		      RING_TAG_TOOK | mine))
		return 0;
	b->reader_phys = tag & RING_TAG_PHYS_MASK;
	return 1;
}

/* Bytes committed so far in own buffer @b's virtual page @q (slot @s):
 * a prefix of its data, written by the one writer; -1 if out of range. */
static int64_t own_committed(const struct ring *r, const struct ring_slot *s,
			     uint64_t q)
{
	uint64_t c = (ring_slot_commit(s) - (full_bytes(r, q) - r->data_size)) &
		     RING_CC_BYTES_MASK;

	return c <= r->data_size ? (int64_t)c : -1;
}

/* Whole records in @len bytes at @d, from running time @ts: their length
 * (what page_iter accepts), and in *@ts the time after them. */
static uint32_t whole_records(const struct ring *r, const uint8_t *d,
			      uint32_t len, uint64_t *ts)
{
	const struct page_layout l = page_layout_host(r->page_size);
	struct page_record rec;
	struct page_iter it;
	uint32_t off = 0;

	page_iter_raw(&it, &l, d, len, *ts);
	while (page_next_record(&it, &rec) > 0 && rec.off + rec.size <= len) {
		off = rec.off + rec.size;
		*ts = rec.ts;
	}
	return off;
}

/*
 * A copy of what own buffer @buf's writer committed in its page since the
 * last copy, in the reader's own page (outside the ring; the swap gives
 * it to the ring later). The slot's tag is read again after the copy: a
 * page overwritten meanwhile (overwrite modes) is not returned. Return: 0
 * and the page; -EAGAIN when there is nothing new.
 */
static int own_copy(struct ring *r, unsigned buf, uint8_t **out, uint64_t *seq)
{
	struct ring_buf *b = r->bufs[buf];
	struct ring_part *pt = &r->part[buf];
	uint64_t q = ring_load_acquire(&b->res.wpos) >> RING_WPOS_SHIFT;
	struct ring_slot *s = &b->slots[q & (r->nslots - 1)];
	uint64_t tag = ring_load_acquire(&s->tag), ts;
	uint8_t *src, *dst = ring_page(r, b, b->reader_phys);
	int64_t c;
	uint32_t len;

	/* only the page the reader takes next, while it is still partly
	 * written: a page after it, or one the writer ended meanwhile, is
	 * for the swap */
	if (q != ring_load_acquire(&b->rpos) ||
	    (tag >> RING_TAG_SEQ_SHIFT) != q || (tag & RING_TAG_TOOK) ||
	    (tag & RING_TAG_PHYS_MASK) > r->nslots)
		return -EAGAIN;
	src = ring_page(r, b, tag & RING_TAG_PHYS_MASK);
	if (pt->q != q)
		*pt = (struct ring_part){ .q = q,
			.ts = ring_load_relaxed((uint64_t *)src) };
	c = own_committed(r, s, q);
	if (c >= (int64_t)r->data_size || c <= (int64_t)pt->off)
		return -EAGAIN;
	len = (uint32_t)c - pt->off;
	memcpy(dst + RING_PAGE_HDR, src + RING_PAGE_HDR + pt->off, len);
	if (ring_load_acquire(&s->tag) != tag)
		return -EAGAIN;
	ts = pt->ts;
	len = whole_records(r, dst + RING_PAGE_HDR, len, &ts);
	if (!len)
		return -EAGAIN;
	memcpy(dst, &pt->ts, 8);
	*(uint64_t *)(dst + 8) = len;
	pt->off += len;
	pt->ts = ts;
	*seq = q;
	*out = dst;
	return 0;
}

/* Own buffer page @p, just taken whole: drop what own_copy() already
 * returned of it (the rest starts at the last copied event's time). */
static void own_trim(struct ring *r, unsigned buf, uint64_t p, uint8_t *page)
{
	struct ring_part *pt = &r->part[buf];
	uint32_t len = (uint32_t)(*(uint64_t *)(page + 8) & PAGE_COMMIT_LEN_MASK);

	if (pt->q != p) {
		pt->q = ~0ull;
		return;
	}
	if (len > r->data_size)
		len = r->data_size;
	len = len > pt->off ? len - pt->off : 0;
	memmove(page + RING_PAGE_HDR, page + RING_PAGE_HDR + pt->off, len);
	memcpy(page, &pt->ts, 8);
	*(uint64_t *)(page + 8) = len;
	pt->q = ~0ull;
}

/*
 * Ask the cache for what taking the next pages reads, once page @p is
 * taken: the header of page p+1 (its slot's tag, asked for one page ago,
 * names its frame) and the slot of page p+2. A reader that follows its
 * writers closely finds these lines in the writer's cache, so each is a
 * miss from the other core, one after the other, page after page; ahead
 * of time they overlap. A tag out of range is not followed (a corrupt
 * file: ring_reader_get() says so when it takes that page).
 */
static void ahead(const struct ring *r, const struct ring_buf *b, uint64_t p)
{
	const struct ring_slot *s1 = &b->slots[(p + 1) & (r->nslots - 1)];
	uint64_t phys = ring_load_relaxed(&s1->tag) & RING_TAG_PHYS_MASK;

	__builtin_prefetch(&b->slots[(p + 2) & (r->nslots - 1)]);
	if (phys <= r->nslots)
		__builtin_prefetch(ring_page(r, b, phys) + 8);
}

int ring_reader_get(struct ring *r, unsigned buf, struct ring_page_ref *out)
{
	struct ring_buf *b;
	uint64_t p;
	uint8_t *page;
	int ret;

	if (buf >= r->nbufs)
		return -EINVAL;
	if (r->held[buf])
		return -EBUSY;
	b = r->bufs[buf];
	if (b->reader_phys > r->nslots)
		return TC_ERR_PAGE_MALFORMED;
	p = ring_load_acquire(&b->rpos);
	/* bounded: a corrupt file must not make the reader spin forever */
	for (uint32_t i = 0; !(ret = try_swap(r, b, &p)); i++)
		if (i > 2 * r->nslots + 64)
			return -EAGAIN;
	if (ret == -EAGAIN && r->part[buf].want) {
		r->part[buf].want = false;
		if (own_copy(r, buf, &page, &p))
			return -EAGAIN;
		goto out;
	}
	if (ret < 0)
		return ret;
	if (b->reader_phys > r->nslots)
		return TC_ERR_PAGE_MALFORMED;
	if (r->mode == RING_MODE_PRODUCER)
		ring_store_release(&b->rpos, p + 1);
	else
		ring_cas(&b->rpos, &p, p + 1);
	page = ring_page(r, b, b->reader_phys);
	b->last_taken = p;
	b->pages_read++;
	ahead(r, b, p);
	if (ring_own_is(r, buf))
		own_trim(r, buf, p, page);
out:
	out->missed = mark_missed(r, b, page);
	out->data = page;
	out->len = r->page_size;
	out->seq = p;
	out->buf = buf;
	r->held[buf] = true;
	return 0;
}

void ring_reader_put(struct ring *r, unsigned buf)
{
	if (buf < r->nbufs)
		r->held[buf] = false;
}

/* End buffer @b's partial page with cmpxchg16b. Sound against rseq
 * writers only when run on the buffer's CPU (see ring_reader_flush()). */
static int flush_buf(struct ring *r, struct ring_buf *b)
{
	uint64_t w, t;
	uint32_t off;

	w = ring_load_relaxed(&b->res.wpos);
	t = ring_load_relaxed(&b->res.ts[0]);	/* the pair cmpxchg16b takes */
	do {
		off = (uint32_t)(w & RING_WPOS_OFF_MASK);
		if (off >= r->data_size)
			return 0;
	} while (!ring_cas16(&b->res.wpos, &w, &t,
			     (w & ~RING_WPOS_OFF_MASK) | r->data_size, t));
	ring_end_page(r, b, w >> RING_WPOS_SHIFT, off, r->data_size - off);
	return 1;
}

/* Writers of an rseq ring's per-CPU buffer move its reservation with
 * plain stores, atomic only against threads of that CPU: so the reader
 * runs there too while it ends the page. Once it runs there, no writer is
 * inside a critical section (preemption aborted it), and its one
 * cmpxchg16b cannot be interleaved by one. A dead owner has no writers. */
int ring_reader_flush(struct ring *r, unsigned buf)
{
	cpu_set_t saved;
	int ret;

	if (buf >= r->nbufs)
		return -EINVAL;
	if (ring_own_is(r, buf)) {	/* copied out by ring_reader_get() */
		r->part[buf].want = ring_owner_alive(r);
		return 0;
	}
	if (!r->rseq || buf >= r->ncpu || !ring_owner_alive(r))
		return flush_buf(r, r->bufs[buf]);
	if ((ring_load_relaxed(&r->bufs[buf]->res.wpos) & RING_WPOS_OFF_MASK) >=
	    r->data_size)
		return 0;	/* already ended: no need to move */
	ret = ring_pin(buf, &saved);
	if (ret)
		return ret;
	ret = flush_buf(r, r->bufs[buf]);
	ring_unpin(&saved);
	return ret;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/*
 * Make a dead writer's page decodable: walk its records up to the commit
 * (all of the data area when the commit says 0 or more than that);
 * unfinished events are padding already and get counted; from the first
 * record the page format rejects on, the rest becomes one padding record
 * (counted) unless it is unused. The commit then says where the records
 * end; its flags are dropped.
 */
uint64_t ring_repair_page(uint8_t *page, uint32_t page_size)
{
	const struct page_layout l = page_layout_host(page_size);
	const uint32_t data_size = page_size - RING_PAGE_HDR;
	uint8_t *d = page + RING_PAGE_HDR;
	uint32_t end = (uint32_t)(*(uint64_t *)(page + 8) & PAGE_COMMIT_LEN_MASK);
	uint32_t off = 0, pad[2];
	struct page_record rec;
	struct page_iter it;
	uint64_t lost = 0;

	if (!end || end > data_size)
		end = data_size;
	page_iter_raw(&it, &l, d, end, 0);
	while (page_next_record(&it, &rec) > 0) {
		lost += rec.type_len == PAGE_TYPE_PADDING &&
			rec.delta == RING_UNFINISHED_MARK;
		off = rec.off + rec.size;
	}
	if (off < end && end - off >= 8 && !all_zero(d + off, end - off)) {
		pad[0] = PAGE_TYPE_PADDING |
			 (RING_UNFINISHED_MARK << PAGE_TYPE_LEN_BITS);
		pad[1] = end - off - 4;
		memcpy(d + off, pad, 8);
		lost++;
		off = end;
	}
	*(uint64_t *)(page + 8) = off;
	return lost;
}

int ring_reader_recover(struct ring *r, unsigned buf)
{
	struct ring_buf *b;
	uint64_t first, last, cc;
	int n = 0;

	if (buf >= r->nbufs)
		return -EINVAL;
	if (ring_owner_alive(r))
		return -EBUSY;
	b = r->bufs[buf];
	ring_reader_flush(r, buf);
	last = ring_load_acquire(&b->res.wpos) >> RING_WPOS_SHIFT;
	first = ring_load_acquire(&b->rpos);
	if (last >= r->nslots && first < last - r->nslots)
		first = last - r->nslots;	/* at most one lap */
	for (uint64_t p = first; p <= last; p++) {
		struct ring_slot *s = &b->slots[p & (r->nslots - 1)];
		uint8_t *page;

		if ((ring_load_acquire(&s->tag) >> RING_TAG_SEQ_SHIFT) > p)
			continue;
		page = ring_claim_page(r, b, p);
		if (!page)
			return TC_ERR_PAGE_MALFORMED;
		if ((ring_slot_commit(s) & RING_CC_BYTES_MASK) ==
		    full_bytes(r, p))
			continue;
		if (ring_own_is(r, buf)) {	/* committed: a prefix */
			int64_t c = own_committed(r, s, p);

			if (c < 0)
				return TC_ERR_PAGE_MALFORMED;
			*(uint64_t *)(page + 8) = (uint64_t)c;
		}
		/* an own page with nothing committed has nothing to walk (a
		 * commit word of 0 would mean the whole data area) */
		if (!ring_own_is(r, buf) || *(uint64_t *)(page + 8))
			ring_add_relaxed(&b->unfinished,
					 ring_repair_page(page, r->page_size));
		/* the owner is dead: nobody adds to either part any more */
		cc = ring_load_acquire(&s->commit);
		ring_store_release(&s->commit, (cc & ~RING_CC_BYTES_MASK) |
				   ((full_bytes(r, p) - s->commit_cpu) &
				    RING_CC_BYTES_MASK));
		n++;
	}
	return n;
}

/* ------------------------------------------------------------ formats */

uint32_t ring_next_event_id(struct ring *r)
{
	return (uint32_t)ring_add_relaxed(&r->hdr->next_event_id, 1);
}

int ring_format_append(struct ring *r, const char *text)
{
	size_t tl = strlen(text) + 1;
	uint64_t size = (sizeof(struct ring_fmt_entry) + tl + 7) & ~7ull;
	uint64_t used = ring_load_relaxed(&r->hdr->fmt_used);
	struct ring_fmt_entry *e;

	do {
		if (used > r->fmt_size || r->fmt_size - used < size)
			return -ENOSPC;
	} while (!ring_cas(&r->hdr->fmt_used, &used, used + size));
	e = (struct ring_fmt_entry *)(r->base + r->fmt_off + used);
	memcpy(e->text, text, tl);
	e->size = (uint32_t)size;
	ring_store_release(&e->ready, 1u);
	return 0;
}

int ring_format_next(const struct ring *r, uint64_t *cursor,
		     const char **text)
{
	uint64_t used = ring_load_acquire(&r->hdr->fmt_used);
	const struct ring_fmt_entry *e;
	uint64_t c = *cursor;

	if (used > r->fmt_size)
		used = r->fmt_size;
	if (c >= used || used - c < sizeof(*e))
		return 0;
	e = (const struct ring_fmt_entry *)(r->base + r->fmt_off + c);
	if (!ring_load_acquire(&e->ready))
		return 0;
	if (e->size < sizeof(*e) + 1 || e->size % 8 || e->size > used - c ||
	    !memchr(e->text, 0, e->size - sizeof(*e)))
		return TC_ERR_PAGE_MALFORMED;
	*text = e->text;
	*cursor = c + e->size;
	return 1;
}
