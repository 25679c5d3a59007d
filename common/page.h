/*
 * page.h - the ring-buffer page (sub-buffer) format, and its one reader.
 *
 * The kernel's ftrace ring buffer (kernel/trace/ring_buffer.c,
 * include/linux/ring_buffer.h; events/header_page describes the header)
 * and tracecollect's user-space ring buffer (common/ring.c) lay a page out
 * the same way, in the writer's byte order:
 *
 *   u64 timestamp | commit word (a long: 4 or 8 bytes) | records ...
 *
 * The commit word's low 27 bits count the bytes of records; bit 31 says
 * events were lost before this page, bit 30 that their count is stored as
 * a long right after the records. Each record starts with a 32-bit word,
 * type_len:5 and time_delta:27 (type_len in the low bits on a
 * little-endian writer, the high bits on a big-endian one), and records
 * are 4-byte aligned:
 *
 *   type_len 1..28  data record: type_len * 4 bytes of payload follow;
 *   type_len 0      data record: a 32-bit word follows holding 4 + the
 *                   payload length (rounded up to 4), then the payload;
 *   29 padding      a discarded event or the unused end of the page: a
 *                   32-bit word follows holding the record's length
 *                   minus 4 (reaching past the commit: the page ends);
 *   30 time extend  the next 32-bit word holds bits 27..58 of a delta
 *                   too large for time_delta;
 *   31 time stamp   an absolute time: (word << 27) + time_delta, with the
 *                   top 5 bits kept from the running time.
 *
 * Every record's time_delta (padding's too) adds to the running time,
 * which starts at the page's timestamp: the rules of libtraceevent's
 * kbuffer, which the collector used before and trace-cmd uses.
 *
 * page_check() validates a page's header against its length, and
 * page_next_record() walks the records, never reading a byte outside the
 * committed data and rejecting lengths that do not fit: the pages come
 * from other hosts and from traced programs. Both are libc only (this
 * file is compiled into libtracecollect too, which traced programs link)
 * and need no allocation: struct page_iter lives on the caller's stack,
 * so it is not opaque, but its fields are private.
 *
 * Used by the collector's decoder (server/ingest/decode.c), the agent's page
 * readers (agent/reader.c) and the ring's reader (common/ring_reader.c);
 * the ring's writer (common/ring.c) takes its constants from here.
 */
#ifndef COMMON_PAGE_H
#define COMMON_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- the page header ---- */

#define PAGE_TS_SIZE		8	/* u64 timestamp */
/* The header: the timestamp and a commit word of the writer's long. */
#define PAGE_HDR_SIZE(long_size)	(PAGE_TS_SIZE + (long_size))

/* The commit word: the bytes of records, and two flags (RB_MISSED_*). */
#define PAGE_COMMIT_LEN_MASK	((1u << 27) - 1)
#define PAGE_COMMIT_MISSED	(1u << 31)	/* events lost before the page */
#define PAGE_COMMIT_STORED	(1u << 30)	/* ... their count follows the data */
#define PAGE_COMMIT_FLAGS	(PAGE_COMMIT_MISSED | PAGE_COMMIT_STORED)

/* ---- the record header: type_len:5, time_delta:27 ---- */

#define PAGE_TYPE_LEN_BITS	5
#define PAGE_DELTA_BITS		27
#define PAGE_DELTA_MASK		((1u << PAGE_DELTA_BITS) - 1)
#define PAGE_TYPE_DATA_MAX	28	/* 1..28: payload of type_len * 4 bytes */
#define PAGE_TYPE_PADDING	29
#define PAGE_TYPE_TIME_EXTEND	30
#define PAGE_TYPE_TIME_STAMP	31
#define PAGE_REC_ALIGN		4	/* every record, and the commit */
/* The bits of the running time an absolute time stamp leaves alone. */
#define PAGE_TS_MSB		(0x1fULL << 59)

/* How the writer laid its pages out. */
struct page_layout {
	uint32_t page_size;	/* bytes of a whole page */
	uint32_t long_size;	/* 4 or 8: the commit word's width */
	bool big_endian;	/* the writer's byte order */
};

/* page_layout_host - this host's layout for pages of @page_size bytes. */
struct page_layout page_layout_host(uint32_t page_size);

/* What page_check() found in a valid page. */
struct page_info {
	uint64_t ts;		/* the page's timestamp: the first delta's base */
	const uint8_t *data;	/* the first record (inside the page) */
	uint32_t size;		/* bytes of records: the commit's length */
	uint32_t used;		/* header + records + stored count: the
				 * bytes that matter; the rest is unused */
	bool missed;		/* PAGE_COMMIT_MISSED */
	bool missed_stored;	/* PAGE_COMMIT_STORED */
	uint64_t missed_count;	/* the stored count, else 0 */
};

/*
 * page_check - validate the header of the page at @page, @len bytes long,
 * laid out as @l says.
 *
 * @len may be less than the page size: a sender may leave out the unused
 * end of a page, never a byte of the header, the records or the stored
 * count. Records are not looked at (page_next_record() does that).
 *
 * Return: 0 and *@out (pointing into @page); TC_ERR_PAGE_MALFORMED when
 * @len is shorter than the header or longer than a page, the commit word
 * has a bit other than its length and the two flags set (or says the
 * count is stored without saying events were missed), its length is not
 * a multiple of 4, or the records (and the stored count) do not fit the
 * page or @len. *@out only on success.
 */
int page_check(const struct page_layout *l, const void *page, size_t len,
	       struct page_info *out);

/*
 * page_check_why - why page_check() rejects the page (a short static
 * sentence, the same for every page with that fault, so it can name a
 * counter), or NULL when it accepts it.
 */
const char *page_check_why(const struct page_layout *l, const void *page, size_t len);

/* A walk over a page's records: see page_iter_init(). Fields private. */
struct page_iter {
	const uint8_t *data;
	uint32_t size;
	uint32_t off;
	uint32_t page_size;
	bool big_endian;
	bool swap;
	bool too_long;
	uint64_t ts;
	const char *why;	/* the walk's error, a static sentence */
};

/* One record, as page_next_record() reports it. */
struct page_record {
	unsigned type_len;	/* PAGE_TYPE_*, or 0..28 for data */
	uint32_t delta;		/* the header's time_delta (27 bits) */
	uint64_t ts;		/* the running time after this record: a data
				 * record's timestamp */
	uint32_t off;		/* where the record starts, from the first */
	uint32_t size;		/* its bytes, header included; a padding that
				 * runs past the commit counts up to it */
	const uint8_t *payload;	/* data records: the payload; else NULL */
	uint32_t len;		/* ... and its length (a multiple of 4) */
};

/* page_record_is_data - whether @rec is a data record (type_len 0..28). */
static inline bool page_record_is_data(const struct page_record *rec)
{
	return rec->type_len <= PAGE_TYPE_DATA_MAX;
}

/*
 * page_iter_init - start a walk over the records of a page that
 * page_check() accepted (@pi, with the same @l).
 */
void page_iter_init(struct page_iter *it, const struct page_layout *l,
		    const struct page_info *pi);

/*
 * page_iter_raw - start a walk over @len bytes of records at @data (no
 * page header: the agent's mapped pages come in pieces), with @ts as the
 * running time before the first one. @l->page_size bounds padding; more
 * than PAGE_COMMIT_LEN_MASK bytes (no commit says that many) fail at the
 * first page_next_record().
 */
void page_iter_raw(struct page_iter *it, const struct page_layout *l,
		   const void *data, size_t len, uint64_t ts);

/*
 * page_next_record - the next record of @it's walk, whatever its type:
 * callers that want the data records skip the others
 * (page_record_is_data()).
 *
 * Never reads outside the walk's bytes. A padding record ends the walk
 * when it reaches the end of them (its length word may even lie beyond:
 * then it is not read).
 *
 * Return: 1 and *@rec; 0 at the end; TC_ERR_PAGE_MALFORMED when a record
 * does not fit the bytes left (header, length word or payload), a long
 * data record's length word is under 4, or a padding's length is not a
 * multiple of 4 or exceeds the page size. After an error the walk stays
 * at the bad record (every later call returns the error again), so the
 * end of the last record returned is where the valid records end.
 * *@rec only when 1 is returned.
 *
 * Inline: a short data record (type_len 1..28) of a little-endian writer
 * read on a little-endian host, which is most records the agent counts;
 * page_next_record_slow() takes every other case.
 */
int page_next_record_slow(struct page_iter *it, struct page_record *rec);

/*
 * page_iter_why - after page_next_record() failed: why (a short static
 * sentence, as page_check_why() gives); NULL before any error.
 */
const char *page_iter_why(const struct page_iter *it);

static inline int page_next_record(struct page_iter *it, struct page_record *rec)
{
	uint32_t left = it->size - it->off, word, type_len, size;

	if (left < 4 || it->big_endian || it->swap)
		return page_next_record_slow(it, rec);
	memcpy(&word, it->data + it->off, 4);
	type_len = word & ((1u << PAGE_TYPE_LEN_BITS) - 1);
	size = 4 + 4 * type_len;
	if (type_len - 1 >= PAGE_TYPE_DATA_MAX || size > left)
		return page_next_record_slow(it, rec);
	it->ts += word >> PAGE_TYPE_LEN_BITS;
	*rec = (struct page_record){ .type_len = type_len,
		.delta = word >> PAGE_TYPE_LEN_BITS, .ts = it->ts, .off = it->off,
		.size = size, .payload = it->data + it->off + 4, .len = size - 4 };
	it->off += size;
	return 1;
}

#endif
