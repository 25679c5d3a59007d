/*
 * test_spool.c - the agent's spool of un-acknowledged pages: memory then
 * disk, acknowledgements, resend order, the full flag, give-up counting.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "agent/spool.h"
#include "tests/testutil.h"

#define PG	4096

static char dir[64];
static struct spool *sp;

static void setup(void)
{
	tu_tmpdir_make(dir, sizeof(dir), "spool");
	sp = NULL;
}

static void teardown(void)
{
	spool_close(sp);
	tu_tmpdir_remove(dir);
}

static void page(uint8_t *buf, uint16_t stream, uint64_t seq)
{
	memset(buf, (int)(seq * 7 + stream), PG);
	memcpy(buf, &seq, sizeof(seq));
}

static void add(uint16_t stream, uint64_t seq, bool sent)
{
	uint8_t buf[PG];

	page(buf, stream, seq);
	TU_OK(spool_add(sp, stream, seq, 0, 10, buf, PG, sent));
}

struct walk {
	uint64_t seqs[64];
	uint16_t streams[64];
	unsigned n, resends;
};

static int walk_cb(void *arg, const struct spool_page *p)
{
	struct walk *w = arg;
	uint8_t want[PG];

	page(want, p->stream, p->seq);
	ck_assert_uint_eq(p->len, PG);
	ck_assert_mem_eq(p->data, want, PG);	/* disk pages read back intact */
	ck_assert_uint_lt(w->n, 64);
	w->seqs[w->n] = p->seq;
	w->streams[w->n++] = p->stream;
	w->resends += p->resend;
	return 0;
}

START_TEST(test_memory_then_disk)
{
	struct spool_counts c;
	struct walk w = { 0 };
	uint64_t s;

	TU_OK(spool_open(2, 4 * PG, dir, 4 * PG, &sp));
	for (s = 1; s <= 4; s++)
		add(0, s, true);
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.mem_bytes, 4 * PG);
	ck_assert_uint_eq(c.disk_bytes, 0);
	ck_assert(!spool_full(sp));
	for (s = 5; s <= 8; s++)
		add(0, s, s < 7);
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.disk_bytes, 4 * PG);
	ck_assert_uint_eq(c.pages, 8);
	ck_assert(spool_full(sp));
	add(1, 1, false);	/* over both limits: kept in memory anyway */
	TU_OK(spool_resend(sp, walk_cb, &w));
	ck_assert_uint_eq(w.n, 9);
	for (s = 0; s < 8; s++)
		ck_assert_uint_eq(w.seqs[s], s + 1);
	ck_assert_uint_eq(w.streams[8], 1);
	ck_assert_uint_eq(w.resends, 6);	/* seq 1..6 had been sent */
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.resent_pages, 6);
}
END_TEST

START_TEST(test_ack_frees_and_reclaims)
{
	struct spool_counts c;
	struct walk w = { 0 };
	uint64_t s;

	TU_OK(spool_open(1, 2 * PG, dir, 8 * PG, &sp));
	for (s = 1; s <= 6; s++)
		add(0, s, true);
	spool_ack(sp, 0, 3);
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.pages, 3);
	ck_assert_uint_eq(c.mem_bytes, 0);
	ck_assert_uint_eq(c.disk_bytes, 3 * PG);
	spool_ack(sp, 0, 6);
	ck_assert(spool_empty(sp));
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.disk_bytes, 0);
	for (s = 7; s <= 16; s++)	/* the file space came back */
		add(0, s, true);
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.disk_bytes, 8 * PG);
	spool_ack(sp, 1, 100);		/* a stream we do not have: ignored */
	spool_ack(sp, 0, 9);
	TU_OK(spool_resend(sp, walk_cb, &w));
	ck_assert_uint_eq(w.n, 7);
	ck_assert_uint_eq(w.seqs[0], 10);
	spool_ack_all(sp);
	ck_assert(spool_empty(sp));
}
END_TEST

START_TEST(test_give_up_counts)
{
	struct spool_counts c;
	uint8_t buf[PG] = { 0 };

	TU_OK(spool_open(2, 64 * PG, NULL, 0, &sp));
	add(0, 1, true);
	add(0, 2, true);
	add(1, 5, false);
	TU_ERR(spool_add(sp, 0, 2, 0, 1, buf, PG, true), -EINVAL);
	TU_ERR(spool_add(sp, 2, 1, 0, 1, buf, PG, true), -EINVAL);
	spool_give_up(sp);
	ck_assert(spool_empty(sp));
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.lost_pages, 2);
	ck_assert_uint_eq(c.lost_events, 20);
	spool_counts(sp, 1, &c);
	ck_assert_uint_eq(c.lost_pages, 1);
	spool_counts(sp, 7, &c);
	ck_assert_uint_eq(c.lost_pages, 0);
}
END_TEST

static int stop_cb(void *arg, const struct spool_page *p)
{
	(void)arg;
	return p->seq == 2 ? -EPIPE : 0;
}

START_TEST(test_resend_stops_on_error)
{
	struct spool_counts c;

	TU_OK(spool_open(1, 64 * PG, NULL, 0, &sp));
	add(0, 1, true);
	add(0, 2, true);
	add(0, 3, true);
	TU_ERR(spool_resend(sp, stop_cb, NULL), -EPIPE);
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.resent_pages, 1);
	TU_ERR(spool_open(0, 1, NULL, 0, &(struct spool *){ 0 }), -EINVAL);
	TU_ERR(spool_open(1, 1, NULL, 1, &(struct spool *){ 0 }), -EINVAL);
}
END_TEST

/* Accepts pages of stream 0 up to seq 3, then says "would block". */
static int block_cb(void *arg, const struct spool_page *p)
{
	if (p->stream == 0 && p->seq > 3)
		return 1;
	return walk_cb(arg, p);
}

START_TEST(test_pending_in_order)
{
	struct walk w = { 0 };

	TU_OK(spool_open(2, 64 * PG, NULL, 0, &sp));
	add(0, 1, true);
	add(1, 1, true);
	ck_assert(!spool_pending(sp, -1));
	add(0, 2, false);
	add(0, 3, false);
	add(0, 4, false);
	add(1, 2, false);
	ck_assert(spool_pending(sp, 0));
	ck_assert(spool_pending(sp, 1));
	ck_assert(!spool_pending(sp, 5));
	/* stream 0 stops at seq 4; stream 1 still goes */
	TU_OK(spool_send_pending(sp, 7, block_cb, &w));
	ck_assert_uint_eq(w.n, 0);		/* no such stream */
	TU_OK(spool_send_pending(sp, -1, block_cb, &w));
	ck_assert_uint_eq(w.n, 3);
	ck_assert_uint_eq(w.seqs[0], 2);
	ck_assert_uint_eq(w.seqs[1], 3);
	ck_assert_uint_eq(w.streams[2], 1);
	ck_assert_uint_eq(w.seqs[2], 2);
	ck_assert(spool_pending(sp, 0));
	ck_assert(!spool_pending(sp, 1));
	/* an ACK of everything also forgets what was pending */
	spool_ack(sp, 0, 4);
	ck_assert(!spool_pending(sp, -1));
	/* a resend after a reconnect sends pending pages too */
	add(0, 5, false);
	memset(&w, 0, sizeof(w));
	TU_OK(spool_resend(sp, walk_cb, &w));
	ck_assert(!spool_pending(sp, -1));
	ck_assert_uint_eq(w.n, 3);
	ck_assert_uint_eq(w.resends, 2);	/* stream 1 seq 1 and 2 were sent before */
}
END_TEST

/* Pages in slots, copied in (spool_add) or read in place (reserve and
 * commit), across several chunks, come back intact and in order. */
START_TEST(test_slots)
{
	struct walk w = { 0 };
	struct spool_counts c;
	uint8_t buf[PG], *room;
	uint64_t seq;

	TU_OK(spool_open(2, 4096 * (size_t)PG, dir, 64 * PG, &sp));
	TU_ERR(spool_set_slot(sp, 0), -EINVAL);
	TU_ERR(spool_set_slot(sp, 4u << 20), -EINVAL);
	ck_assert_ptr_null(spool_reserve(sp, PG));	/* no slots yet */
	TU_OK(spool_set_slot(sp, PG));
	ck_assert_ptr_null(spool_reserve(sp, PG + 128));	/* too big */
	for (seq = 1; seq <= 3000; seq++) {
		if (seq % 2) {
			add(0, seq, true);
			continue;
		}
		room = spool_reserve(sp, PG);
		ck_assert_ptr_nonnull(room);
		ck_assert_ptr_eq(spool_reserve(sp, PG), room);	/* same room */
		page(room, 0, seq);
		TU_ERR(spool_commit(sp, 0, seq, 0, 10, room + 1, PG, true), -EINVAL);
		TU_ERR(spool_commit(sp, 0, seq, 0, 10, room, PG + 128, true), -EINVAL);
		TU_OK(spool_commit(sp, 0, seq, 0, 10, room, PG, true));
	}
	TU_ERR(spool_set_slot(sp, PG), -EINVAL);	/* in use */
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.pages, 3000);
	/* each page counts a whole slot against the limit */
	ck_assert_uint_ge(c.mem_bytes, 3000 * (uint64_t)PG);
	ck_assert_uint_le(c.mem_bytes, 3000 * (uint64_t)(PG + 64));
	spool_ack(sp, 0, 2990);
	TU_OK(spool_resend(sp, walk_cb, &w));
	ck_assert_uint_eq(w.n, 10);
	ck_assert_uint_eq(w.seqs[0], 2991);
	ck_assert_uint_eq(w.seqs[9], 3000);
	spool_ack_all(sp);		/* every slot free: chunks given back */
	ck_assert(spool_empty(sp));
	room = spool_reserve(sp, PG);
	page(buf, 1, 1);
	memcpy(room, buf, PG);
	TU_OK(spool_commit(sp, 1, 1, 0, 10, room, PG, false));
	ck_assert(spool_pending(sp, 1));
	memset(&w, 0, sizeof(w));
	TU_OK(spool_send_pending(sp, 1, walk_cb, &w));
	ck_assert_uint_eq(w.n, 1);
	TU_ERR(spool_commit(sp, 1, 1, 0, 10, spool_reserve(sp, PG),
			    PG, true), -EINVAL);	/* seq not above */
}
END_TEST

/* With the memory limit reached, pages go to disk: no room is reserved. */
START_TEST(test_slots_memory_limit)
{
	TU_OK(spool_open(1, 2 * PG, dir, 8 * PG, &sp));
	TU_OK(spool_set_slot(sp, PG));
	add(0, 1, false);
	add(0, 2, false);
	ck_assert_ptr_null(spool_reserve(sp, PG));
	add(0, 3, false);		/* to disk */
	spool_ack(sp, 0, 3);
	ck_assert_ptr_nonnull(spool_reserve(sp, PG));
}
END_TEST

/* Small pages in slots count whole slots: 3 of 100 bytes fill a limit of
 * 4 pages (less than a slot is left), the 4th goes to disk. */
START_TEST(test_slots_count_whole)
{
	uint8_t small[100] = { 0 };
	struct spool_counts c;
	uint64_t seq;

	TU_OK(spool_open(1, 4 * PG, dir, 8 * PG, &sp));
	TU_OK(spool_set_slot(sp, PG));
	for (seq = 1; seq <= 4; seq++)
		TU_OK(spool_add(sp, 0, seq, 0, 1, small, sizeof(small), false));
	spool_counts(sp, 0, &c);
	ck_assert_uint_eq(c.disk_bytes, sizeof(small));
	ck_assert_uint_gt(c.mem_bytes, 3 * PG);
}
END_TEST

static Suite *spool_suite(void)
{
	Suite *s = suite_create("spool");
	TCase *tc = tcase_create("spool");

	tcase_add_checked_fixture(tc, setup, teardown);
	tu_add_tests(tc, TU_TESTS(test_memory_then_disk, test_ack_frees_and_reclaims,
					test_give_up_counts, test_resend_stops_on_error,
					test_pending_in_order, test_slots, test_slots_memory_limit,
					test_slots_count_whole));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(spool_suite())
