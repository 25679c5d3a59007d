/*
 * test_page.c - one page format, three readers: the collector's decoder
 * (server/ingest/decode.c), the agent's page reader (agent/reader.c) and the
 * ring's repair walk (common/ring_reader.c) all read pages with
 * common/page.h. Fed the same pages (real ones from tests/data, recorded
 * by tests/data/capture.sh, and pages broken on purpose) they must give
 * the same verdict: accepted with N data records, or rejected.
 *
 * What each reader does with a page:
 *  - decoder: decoder_page() accepts it (N = events + unknown) or fails;
 *  - agent: reader_page_events() (the read(2) path and the user-space
 *    ring pages) counts N or fails; reader_walk_events() (the mmap path,
 *    which takes its header from the kernel's meta page and walks only the
 *    committed records) must agree wherever the header is good;
 *  - ring: ring_repair_page() never rejects, it keeps the records it can
 *    walk and pads out the rest: a page it keeps whole (same commit
 *    length, nothing lost) counts as accepted, a page it cuts as rejected.
 *    Its pages are whole pages of its own file, so it is not asked about
 *    pages shorter than that, and the header's flags on them are the ones
 *    it set (see check_flags_page()).
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/kbuffer.h>

#include "agent/reader.h"
#include "common/page.h"
#include "common/ring_priv.h"
#include "common/tc_error.h"
#include "server/ingest/decode.h"
#include "tests/data/capture_load.h"
#include "tests/testutil.h"

static struct capture cap;
static struct decoder *dec;
static const struct decode_type *types[CAPTURE_NFORMATS];

/* accepted with @records data records (ret 0), or rejected (ret < 0) */
struct verdict {
	int ret;
	unsigned records;
};

/* The pages made here are laid out for this host, as the captured ones. */
static void setup(void)
{
	TU_OK(capture_load(&cap));
	TU_OK(capture_decoder(&cap, &dec, types));
	ck_assert_uint_eq(cap.long_size, sizeof(long));
	ck_assert(!page_layout_host(cap.page_size).big_endian);
}

static void teardown(void)
{
	decoder_free(dec);
	dec = NULL;
	capture_free(&cap);
}

/* the page the tests below make */
static uint8_t made[65536];

static struct verdict accepted(unsigned records)
{
	return (struct verdict){ 0, records };
}

static struct verdict rejected(void)
{
	return (struct verdict){ TC_ERR_PAGE_MALFORMED, 0 };
}

static int count_cb(void *ctx, const struct decode_event *ev)
{
	(void)ctx;
	(void)ev;
	return 0;
}

static struct verdict by_decoder(const uint8_t *page, size_t len)
{
	struct decode_page_stats st;
	int ret = decoder_page(dec, 0, page, len, count_cb, NULL, &st);

	if (ret)
		return (struct verdict){ ret, 0 };
	return accepted((unsigned)(st.events + st.unknown));
}

static struct verdict by_agent(const uint8_t *page, size_t len)
{
	int n = reader_page_events(page, len);

	return n < 0 ? (struct verdict){ n, 0 } : accepted((unsigned)n);
}

/* The mmap path: the committed records only, as the kernel's header says. */
static struct verdict by_agent_mmap(const uint8_t *page, size_t len)
{
	uint64_t commit, ts;
	int n;

	ck_assert_uint_ge(len, 16);
	memcpy(&ts, page, 8);
	memcpy(&commit, page + 8, 8);
	commit &= PAGE_COMMIT_LEN_MASK;
	ck_assert_uint_le(16 + commit, len);
	n = reader_walk_events(page + 16, commit, cap.page_size, &ts);
	return n < 0 ? (struct verdict){ n, 0 } : accepted((unsigned)n);
}

/* Count the data records of a page the ring kept whole. */
static unsigned ring_records(const uint8_t *page)
{
	struct page_layout l = page_layout_host(cap.page_size);
	struct page_record rec;
	struct page_iter it;
	uint64_t commit;
	unsigned n = 0;
	int ret;

	memcpy(&commit, page + 8, 8);
	page_iter_raw(&it, &l, page + 16, commit & PAGE_COMMIT_LEN_MASK, 0);
	while ((ret = page_next_record(&it, &rec)) > 0)
		n += page_record_is_data(&rec);
	TU_OK(ret);
	return n;
}

static struct verdict by_ring(const uint8_t *page, size_t len)
{
	uint8_t *copy = calloc(1, cap.page_size);
	uint64_t before, after, lost;
	struct verdict v;

	ck_assert_ptr_nonnull(copy);
	ck_assert_uint_eq(len, cap.page_size);
	memcpy(copy, page, len);
	memcpy(&before, copy + 8, 8);
	lost = ring_repair_page(copy, cap.page_size);
	memcpy(&after, copy + 8, 8);
	if (lost || (after & PAGE_COMMIT_LEN_MASK) != (before & PAGE_COMMIT_LEN_MASK))
		v = rejected();
	else
		v = accepted(ring_records(copy));
	free(copy);
	return v;
}

static void expect(const char *reader, const char *what, struct verdict got,
		   struct verdict want)
{
	ck_assert_msg(got.ret == want.ret && got.records == want.records,
		      "%s: %s: got %s with %u records, want %s with %u", what, reader,
		      tc_strerror(got.ret), got.records, tc_strerror(want.ret),
		      want.records);
}

enum {
	/* the header is wrong: not for the mmap walk, which does not read it */
	HEADER_BAD = 1,
	/* not for the ring: shorter than a page (its pages are whole), or
	 * records behind a commit of 0 (on its pages: never ended, so the
	 * repair walks all of the data area) */
	NOT_RING = 2,
	/* the format allows it; the decoder needs room for common_type */
	DECODER_REJECTS = 4,
};

/* Feed @page through every reader; all must say @want. */
static void check_page(const char *what, const uint8_t *page, size_t len,
		       struct verdict want, unsigned flags)
{
	expect("decoder", what, by_decoder(page, len),
	       flags & DECODER_REJECTS ? rejected() : want);
	expect("agent", what, by_agent(page, len), want);
	if (!(flags & HEADER_BAD))
		expect("agent mmap walk", what, by_agent_mmap(page, len), want);
	if (!(flags & NOT_RING))
		expect("ring", what, by_ring(page, len), want);
}

/*
 * A page whose only fault is in the commit word's flag bits: the decoder
 * and the agent reject it; the ring's repair reads only the commit's
 * length (the flags on its pages are the ones ring_reader_get() set), so
 * it keeps the @records records.
 */
static void check_flags_page(const char *what, unsigned records)
{
	expect("decoder", what, by_decoder(made, cap.page_size), rejected());
	expect("agent", what, by_agent(made, cap.page_size), rejected());
	expect("ring", what, by_ring(made, cap.page_size), accepted(records));
}

/* ---- real pages ---- */

START_TEST(test_real_pages)
{
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++) {
		uint64_t total = 0;

		for (size_t off = 0; off < cap.raw_len[cpu]; off += cap.page_size) {
			const uint8_t *page = cap.raw[cpu] + off;
			struct verdict v = by_decoder(page, cap.page_size);
			char what[64];

			snprintf(what, sizeof(what), "cpu%u page %zu", cpu, off / cap.page_size);
			ck_assert_msg(v.ret == 0, "%s: %s", what, tc_strerror(v.ret));
			check_page(what, page, cap.page_size, v, 0);
			total += v.records;
		}
		ck_assert_uint_eq(total, cap.entries[cpu]);
	}
}
END_TEST

/* Every cut of a real page's commit: between two records the page is good
 * (with the records before the cut), inside one it is not. */
START_TEST(test_real_pages_cut)
{
	struct page_layout l = page_layout_host(cap.page_size);
	uint8_t *page = malloc(cap.page_size);
	unsigned cuts = 0, good = 0;

	ck_assert_ptr_nonnull(page);
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++) {
		for (size_t off = 0; off < cap.raw_len[cpu]; off += cap.page_size) {
			struct page_info pi;
			struct page_iter it;
			struct page_record rec;
			uint64_t commit;
			uint32_t next = 0;
			unsigned before = 0;

			memcpy(page, cap.raw[cpu] + off, cap.page_size);
			TU_OK(page_check(&l, page, cap.page_size, &pi));
			page_iter_init(&it, &l, &pi);
			memcpy(&commit, page + 8, 8);
			for (uint32_t cut = 0; cut <= pi.size; cut += 4) {
				char what[64];
				uint64_t c = (commit & ~(uint64_t)PAGE_COMMIT_LEN_MASK) | cut;

				while (next < cut && page_next_record(&it, &rec) > 0) {
					next = rec.off + rec.size;
					before += page_record_is_data(&rec);
				}
				memcpy(page + 8, &c, 8);
				snprintf(what, sizeof(what), "cpu%u page %zu cut at %u", cpu,
					 off / cap.page_size, cut);
				check_page(what, page, cap.page_size,
					   next == cut ? accepted(before) : rejected(),
					   cut ? 0 : NOT_RING);
				good += next == cut;
				cuts++;
			}
		}
	}
	ck_assert_uint_gt(good, 0);
	ck_assert_uint_gt(cuts, good);
	free(page);
}
END_TEST

/* ---- hand-made pages ---- */

static void page_init(uint64_t commit)
{
	memset(made, 0, sizeof(made));
	memcpy(made, &(uint64_t){ 1000 }, 8);
	memcpy(made + 8, &commit, 8);
}

static void put4(size_t off, uint32_t v)
{
	memcpy(made + off, &v, 4);
}

/* A record header word (a little-endian writer's: see setup()). */
static uint32_t rec_hdr(unsigned type_len, uint32_t delta)
{
	return type_len | delta << PAGE_TYPE_LEN_BITS;
}

/* @n events of 8 bytes (type_len 2: common_type 0 is unknown) from 16 */
static size_t put_events(size_t off, unsigned n)
{
	for (unsigned i = 0; i < n; i++, off += 12)
		put4(off, rec_hdr(2, 100 + i));
	return off;
}

static void check_made(const char *what, struct verdict want, unsigned flags)
{
	check_page(what, made, cap.page_size, want, flags);
}

START_TEST(test_header)
{
	page_init(0);
	check_made("empty page", accepted(0), 0);
	page_init(cap.page_size - 16 + 4);
	check_made("commit > page size", rejected(), HEADER_BAD);
	page_init((uint64_t)-1);
	check_made("negative commit", rejected(), HEADER_BAD);
	page_init((uint64_t)-16);
	check_made("negative commit (-16)", rejected(), HEADER_BAD);
	page_init(6);
	check_made("commit not a multiple of 4", rejected(), HEADER_BAD);
	page_init(1u << 28);
	check_flags_page("commit with a bit the kernel never sets", 0);
	page_init(12 | 1ull << 40);
	put_events(16, 1);
	check_flags_page("commit with a high bit set", 1);
	page_init(12 | PAGE_COMMIT_STORED);
	put_events(16, 1);
	check_flags_page("count stored without missed events", 1);
	/* a 64-bit kernel's MISSED, sign-extended into bits 32..63 */
	page_init(12 | 0xffffffff80000000ull);
	put_events(16, 1);
	check_made("missed events, sign-extended", accepted(1), 0);
	page_init(12 | 0xffffffffc0000000ull);
	put_events(16, 1);
	memcpy(made + 16 + 12, &(uint64_t){ 7 }, 8);
	check_made("missed count stored, sign-extended", accepted(1), 0);
	page_init(12 | 0xffffffff00000000ull);
	put_events(16, 1);
	check_flags_page("high bits set without missed events", 1);
	page_init((cap.page_size - 16) | PAGE_COMMIT_MISSED | PAGE_COMMIT_STORED);
	check_made("stored count past the page", rejected(), HEADER_BAD);
	page_init(0);
	check_page("10-byte page", made, 10, rejected(), HEADER_BAD | NOT_RING);
	check_page("0-byte page", made, 0, rejected(), HEADER_BAD | NOT_RING);
	check_page("header only", made, 16, accepted(0), NOT_RING);
	page_init(24);
	put_events(16, 2);
	check_page("tail left out", made, 16 + 24, accepted(2), NOT_RING);
	check_page("records cut by the length", made, 16 + 20, rejected(), HEADER_BAD | NOT_RING);
}
END_TEST

START_TEST(test_missed_events)
{
	uint64_t count = 1234;
	struct decode_page_stats st;

	page_init(24 | PAGE_COMMIT_MISSED);
	put_events(16, 2);
	check_made("missed-events flag", accepted(2), 0);
	page_init(24 | PAGE_COMMIT_MISSED | PAGE_COMMIT_STORED);
	put_events(16, 2);
	memcpy(made + 16 + 24, &count, 8);
	check_made("missed-events flag with the count", accepted(2), 0);
	TU_OK(decoder_page(dec, 0, made, cap.page_size, count_cb, NULL, &st));
	ck_assert(st.missed_events);
	ck_assert_uint_eq(st.missed, 1234);
}
END_TEST

START_TEST(test_records)
{
	page_init(16);
	put4(16, rec_hdr(0, 5));
	put4(20, 0x7ffffff0u);
	check_made("0x7ffffff0 event length", rejected(), 0);
	put4(20, 0xfffffff0u);
	check_made("0xfffffff0 event length", rejected(), 0);
	put4(20, 2);
	check_made("long event length under 4", rejected(), 0);
	put4(20, 12);	/* 4 + 8 bytes of payload: the record is 16 bytes */
	check_made("long event", accepted(1), 0);
	page_init(8);
	put4(16, rec_hdr(10, 5));
	check_made("event past the commit", rejected(), 0);
	page_init(4);
	put4(16, rec_hdr(PAGE_TYPE_TIME_EXTEND, 5));
	check_made("truncated time-extend", rejected(), 0);
	page_init(12 + 8);
	put4(16, rec_hdr(PAGE_TYPE_TIME_EXTEND, 5));
	put4(20, 3);
	put_events(24, 1);
	check_made("time-extend", accepted(1), 0);
	put4(16, rec_hdr(PAGE_TYPE_TIME_STAMP, 5));
	check_made("time stamp", accepted(1), 0);
	page_init(6 * 4 + 2);
	put_events(16, 2);
	check_made("commit cutting a record header", rejected(), HEADER_BAD);
	/* a long (type_len 0) first event has time delta 0 and a zero header
	 * word; the ring's repair used to cut it */
	page_init(16 + 12);
	put4(16, rec_hdr(0, 0));
	put4(20, 12);
	put_events(32, 1);
	check_made("long first event, delta 0", accepted(2), 0);
	/* the format allows an empty payload (the ring writes one for a
	 * 0-byte ring_write()); the decoder needs common_type */
	page_init(8);
	put4(16, rec_hdr(0, 1));
	put4(20, 4);
	check_made("empty payload", accepted(1), DECODER_REJECTS);
}
END_TEST

START_TEST(test_padding)
{
	size_t end;

	/* an event, then padding to the end of the commit */
	page_init(12 + 12);
	end = put_events(16, 1);
	put4(end, rec_hdr(PAGE_TYPE_PADDING, 1));
	put4(end + 4, 8);
	check_made("padding at the end", accepted(1), 0);
	/* padding between events (a discarded one) */
	page_init(12 + 12 + 12);
	end = put_events(16, 1);
	put4(end, rec_hdr(PAGE_TYPE_PADDING, 1));
	put4(end + 4, 8);
	put_events(end + 12, 1);
	check_made("discarded event", accepted(2), 0);
	/* padding claiming the rest of the page, past the commit */
	page_init(12 + 8);
	end = put_events(16, 1);
	put4(end, rec_hdr(PAGE_TYPE_PADDING, 1));
	put4(end + 4, cap.page_size - 16 - 16);
	check_made("padding past the commit", accepted(1), 0);
	/* a 4-byte padding ending the commit: its length is not read */
	page_init(12 + 4);
	end = put_events(16, 1);
	put4(end, rec_hdr(PAGE_TYPE_PADDING, 1));
	put4(end + 4, 3);
	check_made("padding whose length lies past the commit", accepted(1), 0);
	/* padding lengths that cannot be */
	page_init(16);
	put4(16, rec_hdr(PAGE_TYPE_PADDING, 1));
	put4(20, 0xfffffffcu);
	check_made("padding longer than a page", rejected(), 0);
	put4(20, 6);
	check_made("padding length not a multiple of 4", rejected(), 0);
}
END_TEST

struct stamps {
	unsigned n;
	uint64_t ts[8];
};

static int stamp_cb(void *ctx, const struct decode_event *ev)
{
	struct stamps *st = ctx;

	ck_assert_uint_lt(st->n, 8);
	st->ts[st->n++] = ev->ts;
	return 0;
}

/* An event of a known type (8 bytes: common_type, flags, pid) at @off. */
static size_t put_known(size_t off, uint32_t delta)
{
	uint16_t id = (uint16_t)types[0]->id;

	put4(off, rec_hdr(2, delta));
	memcpy(made + off + 4, &id, 2);
	return off + 12;
}

/* The reference: libtraceevent's kbuffer reads @n events stamped @want. */
static void kbuffer_stamps(const uint64_t *want, unsigned n)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST,
					   KBUFFER_ENDIAN_SAME_AS_HOST);
	unsigned long long ts;
	unsigned i = 0;

	ck_assert_ptr_nonnull(kb);
	TU_EQ(kbuffer_load_subbuffer(kb, made), 0);
	for (void *d = kbuffer_read_event(kb, &ts); d; d = kbuffer_next_event(kb, &ts)) {
		ck_assert_uint_lt(i, n);
		ck_assert_uint_eq(ts, want[i++]);
	}
	ck_assert_uint_eq(i, n);
	kbuffer_free(kb);
}

/* Deltas, time extends and an absolute time stamp, which keeps the top 5
 * bits of the running time: as libtraceevent's kbuffer counts them. */
START_TEST(test_timestamps)
{
	const uint64_t t0 = (3ull << 61) | 1000;
	const uint64_t want[3] = {
		t0 + 7,
		t0 + 7 + (3ull << 27) + 5 + 1,
		(t0 & PAGE_TS_MSB) + (2ull << 27) + 9 + 2,
	};
	struct stamps st = { 0 };
	uint64_t ts = t0;
	size_t end;

	page_init(0);
	memcpy(made, &t0, 8);
	end = put_known(16, 7);
	put4(end, rec_hdr(PAGE_TYPE_TIME_EXTEND, 5));
	put4(end + 4, 3);
	end = put_known(end + 8, 1);
	put4(end, rec_hdr(PAGE_TYPE_TIME_STAMP, 9));
	put4(end + 4, 2);
	end = put_known(end + 8, 2);
	memcpy(made + 8, &(uint64_t){ end - 16 }, 8);
	check_made("time stamps", accepted(3), 0);
	TU_OK(decoder_page(dec, 0, made, cap.page_size, stamp_cb, &st, NULL));
	ck_assert_uint_eq(st.n, 3);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_uint_eq(st.ts[i], want[i]);
	ck_assert_int_eq(reader_walk_events(made + 16, end - 16, cap.page_size, &ts), 3);
	ck_assert_uint_eq(ts, want[2]);
	kbuffer_stamps(want, 3);
}
END_TEST

static Suite *page_suite(void)
{
	Suite *s = suite_create("page");
	TCase *real = tcase_create("real-pages");
	TCase *hand = tcase_create("made-pages");

	tcase_add_checked_fixture(real, setup, teardown);
	tcase_add_test(real, test_real_pages);
	tcase_add_test(real, test_real_pages_cut);
	suite_add_tcase(s, real);
	tcase_add_checked_fixture(hand, setup, teardown);
	tu_add_tests(hand, TU_TESTS(test_header, test_missed_events, test_records, test_padding,
					test_timestamps));
	suite_add_tcase(s, hand);
	return s;
}

TU_MAIN(page_suite())
