/*
 * page.c - the one reader of the ring-buffer page format (see page.h).
 *
 * Lengths are computed in 64 bits and compared with the bytes left before
 * anything past a record header is read, so no length in a page (they
 * come from other hosts and from traced programs) can move a read outside
 * the committed records.
 */
#include "config.h"

#include <string.h>

#include "common/page.h"
#include "common/tc_error.h"

static bool host_big_endian(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 0;
}

struct page_layout page_layout_host(uint32_t page_size)
{
	return (struct page_layout){ .page_size = page_size,
				     .long_size = sizeof(long),
				     .big_endian = host_big_endian() };
}

static uint32_t rd4(bool swap, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static uint64_t rd8(bool swap, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return swap ? __builtin_bswap64(v) : v;
}

static uint64_t rd_long(const struct page_layout *l, bool swap, const uint8_t *p)
{
	return l->long_size == 8 ? rd8(swap, p) : rd4(swap, p);
}

static bool layout_swap(const struct page_layout *l)
{
	return l->big_endian != host_big_endian();
}

/*
 * The commit word's flags: only the two the kernel sets, STORED only with
 * MISSED (the count is stored only when events were missed). The kernel
 * adds the flags, int constants, to a long: on a 64-bit kernel a set
 * MISSED (1 << 31) sign-extends into bits 32..63, so those bits are all
 * ones with MISSED and all zeros without it.
 */
static uint64_t commit_unextend(uint64_t commit)
{
	if (commit >> 32 == 0xffffffffu && (commit & PAGE_COMMIT_MISSED))
		return commit & 0xffffffffu;
	return commit;
}

static bool commit_flags_ok(uint64_t commit)
{
	uint64_t flags = commit & ~(uint64_t)PAGE_COMMIT_LEN_MASK;

	if (flags & ~(uint64_t)PAGE_COMMIT_FLAGS)
		return false;
	return !(flags & PAGE_COMMIT_STORED) || (flags & PAGE_COMMIT_MISSED);
}

/* page_check()'s checks: NULL and *@out, or why the page is malformed. */
static const char *page_fault(const struct page_layout *l, const void *page, size_t len,
			      struct page_info *out)
{
	const uint8_t *p = page;
	const size_t hdr = PAGE_HDR_SIZE(l->long_size);
	bool swap = layout_swap(l);
	uint64_t commit, end;
	uint32_t size;

	if (len < hdr)
		return "page shorter than its header";
	if (len > l->page_size)
		return "page longer than the page size";
	commit = commit_unextend(rd_long(l, swap, p + PAGE_TS_SIZE));
	size = (uint32_t)commit & PAGE_COMMIT_LEN_MASK;
	if (!commit_flags_ok(commit))
		return "commit word with unknown flags";
	if (size % PAGE_REC_ALIGN)
		return "commit not a multiple of 4";
	end = hdr + (uint64_t)size;
	if (commit & PAGE_COMMIT_STORED)
		end += l->long_size;
	if (end > l->page_size)
		return "commit beyond the page size";
	if (end > len)
		return "commit beyond the bytes received";
	out->ts = rd8(swap, p);
	out->data = p + hdr;
	out->size = size;
	out->used = (uint32_t)end;
	out->missed = (commit & PAGE_COMMIT_MISSED) != 0;
	out->missed_stored = (commit & PAGE_COMMIT_STORED) != 0;
	out->missed_count = out->missed_stored ? rd_long(l, swap, p + hdr + size) : 0;
	return NULL;
}

int page_check(const struct page_layout *l, const void *page, size_t len,
	       struct page_info *out)
{
	return page_fault(l, page, len, out) ? TC_ERR_PAGE_MALFORMED : 0;
}

const char *page_check_why(const struct page_layout *l, const void *page, size_t len)
{
	struct page_info pi;

	return page_fault(l, page, len, &pi);
}

void page_iter_raw(struct page_iter *it, const struct page_layout *l,
		   const void *data, size_t len, uint64_t ts)
{
	it->data = data;
	/* no commit says more: such a walk fails at its first record */
	it->too_long = len > PAGE_COMMIT_LEN_MASK;
	it->size = it->too_long ? 0 : (uint32_t)len;
	it->off = 0;
	it->page_size = l->page_size;
	it->big_endian = l->big_endian;
	it->swap = layout_swap(l);
	it->ts = ts;
	it->why = NULL;
}

void page_iter_init(struct page_iter *it, const struct page_layout *l,
		    const struct page_info *pi)
{
	page_iter_raw(it, l, pi->data, pi->size, pi->ts);
}

/* A walk's error: @why stays with @it (page_iter_why()). */
static int record_bad(struct page_iter *it, const char *why)
{
	it->why = why;
	return TC_ERR_PAGE_MALFORMED;
}

const char *page_iter_why(const struct page_iter *it)
{
	return it->why;
}

/*
 * The record at it->off whose header word said @rec->type_len and delta,
 * with @left bytes from its start, unless a short data record (the common
 * case, in page_next_record()): sets rec->size (and for a long data
 * record its payload and len) and moves the running time on; on an error
 * changes neither.
 */
static int record_other(struct page_iter *it, uint32_t left, struct page_record *rec)
{
	const uint8_t *p = it->data + it->off;
	uint64_t word, size;

	if (rec->type_len == PAGE_TYPE_PADDING && left < 8) {
		rec->size = left;	/* its length word lies past the end */
		it->ts += rec->delta;
		return 0;
	}
	if (left < 8)
		return record_bad(it, "record runs past the commit");
	word = rd4(it->swap, p + 4);
	switch (rec->type_len) {
	case PAGE_TYPE_PADDING:
		if (word % PAGE_REC_ALIGN || word > it->page_size)
			return record_bad(it, "padding misaligned or longer than a page");
		size = 4 + word;
		rec->size = size < left ? (uint32_t)size : left;
		it->ts += rec->delta;
		return 0;
	case PAGE_TYPE_TIME_EXTEND:
		it->ts += (word << PAGE_DELTA_BITS) + rec->delta;
		rec->size = 8;
		return 0;
	case PAGE_TYPE_TIME_STAMP:
		it->ts = (it->ts & PAGE_TS_MSB) | ((word << PAGE_DELTA_BITS) + rec->delta);
		rec->size = 8;
		return 0;
	default:	/* 0: the length word counts itself */
		size = 4 + ((word + 3) & ~3ull);
		if (word < 4)
			return record_bad(it, "record length under 4");
		if (size > left)
			return record_bad(it, "record runs past the commit");
		rec->payload = p + 8;
		rec->len = (uint32_t)size - 8;
		it->ts += rec->delta;
		rec->size = (uint32_t)size;
		return 0;
	}
}

int page_next_record_slow(struct page_iter *it, struct page_record *rec)
{
	uint32_t left = it->size - it->off, word, type_len, delta, size;
	struct page_record r;
	int ret;

	if (left < 4 && it->too_long)
		return record_bad(it, "more records than a commit can hold");
	if (left < 4)
		return left ? record_bad(it, "record runs past the commit") : 0;
	word = rd4(it->swap, it->data + it->off);
	type_len = it->big_endian ? word >> PAGE_DELTA_BITS :
		   word & ((1u << PAGE_TYPE_LEN_BITS) - 1);
	delta = it->big_endian ? word & PAGE_DELTA_MASK : word >> PAGE_TYPE_LEN_BITS;
	if (type_len - 1 < PAGE_TYPE_DATA_MAX) {	/* 1..28: a short data record */
		size = 4 + 4 * type_len;
		if (size > left)
			return record_bad(it, "record runs past the commit");
		it->ts += delta;
		*rec = (struct page_record){ .type_len = type_len, .delta = delta,
			.ts = it->ts, .off = it->off, .size = size,
			.payload = it->data + it->off + 4, .len = size - 4 };
		it->off += size;
		return 1;
	}
	r = (struct page_record){ .type_len = type_len, .delta = delta, .off = it->off };
	ret = record_other(it, left, &r);
	if (ret < 0)
		return ret;
	r.ts = it->ts;
	it->off += r.size;
	*rec = r;
	return 1;
}
