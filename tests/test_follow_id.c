/*
 * test_follow_id.c - a follower's position as an SSE id and back
 * (traceq/follow_id.c): every position comes back as it was, and a
 * Last-Event-ID that is not one of ours is refused whole.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traceq/follow.h"

/* A follower at @cursor with @n cursors i * 1000 + 7 (the last UINT64_MAX). */
static struct tq_follow at(uint64_t cursor, uint32_t n)
{
	struct tq_follow f = { .req = { .op = QOP_TAIL_WRITERS }, .cursor = cursor };

	for (uint32_t i = 0; i < n; i++)
		f.req.cursors[i] = i + 1 == n ? UINT64_MAX : i * 1000 + 7;
	f.req.ncursors = n;
	return f;
}

START_TEST(test_round_trip)
{
	static const uint32_t counts[] = { 0, 1, 2, QMSG_MAX_CURSORS };
	static const uint64_t cursors[] = { 0, 1, 123456789, UINT64_MAX };

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
		for (size_t k = 0; k < sizeof(cursors) / sizeof(cursors[0]); k++) {
			struct tq_follow f = at(cursors[k], counts[c]), g = at(5, 3);
			char id[TQ_FOLLOW_ID_MAX];
			size_t len = tq_follow_id(&f, id, sizeof(id));

			ck_assert_uint_eq(len, strlen(id));
			ck_assert_uint_lt(len, sizeof(id) - 1);	/* never cut */
			ck_assert_msg(tq_follow_resume(&g, id) == 0, "refused its own id %s", id);
			ck_assert_uint_eq(g.cursor, f.cursor);
			ck_assert_uint_eq(g.req.ncursors, f.req.ncursors);
			ck_assert(!memcmp(g.req.cursors, f.req.cursors,
					  f.req.ncursors * sizeof(f.req.cursors[0])));
		}
}
END_TEST

START_TEST(test_forms)
{
	struct tq_follow f = at(42, 0);
	char id[TQ_FOLLOW_ID_MAX];

	tq_follow_id(&f, id, sizeof(id));
	ck_assert_str_eq(id, "42");	/* a single collector's id, as before */
	f = at(42, 2);
	tq_follow_id(&f, id, sizeof(id));
	ck_assert_str_eq(id, "42:7,18446744073709551615");
	ck_assert_uint_eq(tq_follow_id(&f, id, 4), 3);	/* cut, terminated */
	ck_assert_str_eq(id, "42:");
}
END_TEST

START_TEST(test_refused)
{
	static const char *const bad[] = {
		"", "x", "-1", "+1", " 1", "1 ", "1:", "1:,2", "1:2,", "1:2,,3", "1;2",
		"18446744073709551616", "1:18446744073709551616", "1:2:3", "0x10", "1,2",
	};
	char many[TQ_FOLLOW_ID_MAX + 32];
	size_t at_ = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tq_follow f = at(9, 2);

		ck_assert_msg(tq_follow_resume(&f, bad[i]) < 0, "took \"%s\"", bad[i]);
		ck_assert_uint_eq(f.cursor, 9);		/* left as it was */
		ck_assert_uint_eq(f.req.ncursors, 2);
	}
	/* one cursor more than there are collector numbers */
	at_ = (size_t)snprintf(many, sizeof(many), "1");
	for (int i = 0; i <= QMSG_MAX_CURSORS; i++)
		at_ += (size_t)snprintf(many + at_, sizeof(many) - at_, "%c1", i ? ',' : ':');
	{
		struct tq_follow f = at(9, 2);

		ck_assert_int_lt(tq_follow_resume(&f, many), 0);
		ck_assert_uint_eq(f.req.ncursors, 2);
	}
	ck_assert_int_lt(tq_follow_resume(&(struct tq_follow){ 0 }, NULL), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("follow_id");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_forms);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
