/*
 * test_qfair.c - the query pool's fair run queue (server/query/queryd_fair.c):
 * round-robin between identities, the cap on the workers one identity
 * holds, the cap on its requests in flight, and identities freed when
 * nothing of theirs is left.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "server/query/queryd_fair.h"
#include "tests/testutil.h"

static struct qauth_who uid(uint64_t n)
{
	return (struct qauth_who){ .kind = QAUTH_UID, .uid = n };
}

static struct qauth_who cert(const char *cn)
{
	struct qauth_who w = { .kind = QAUTH_CERT };

	snprintf(w.cert, sizeof(w.cert), "%s", cn);
	return w;
}

/* Enter and queue @it as @who's. */
static void queue(struct qfair *f, struct qauth_who who, struct qfair_item *it)
{
	TU_OK(qfair_enter(f, &who, it));
	qfair_push(f, it);
}

/* 10 heavy requests of uid 1000, then one of root's: root's runs next, not 11th. */
START_TEST(another_identity_is_served_next)
{
	struct qfair f;
	struct qfair_item heavy[10], root = { 0 };
	struct qfair_ident *id[4], *rid;

	qfair_init(&f, 4);
	ck_assert_uint_eq(f.run_max, 3);
	memset(heavy, 0, sizeof(heavy));
	for (int i = 0; i < 10; i++)
		queue(&f, uid(1000), &heavy[i]);
	for (int i = 0; i < 3; i++)
		ck_assert_ptr_eq(qfair_pop(&f, &id[i]), &heavy[i]);
	ck_assert_ptr_null(qfair_pop(&f, &id[3]));	/* 3 of 4 workers: its cap */
	queue(&f, uid(0), &root);
	ck_assert_ptr_eq(qfair_pop(&f, &rid), &root);	/* the 4th worker */
	qfair_leave(&f, &root);
	qfair_done(&f, rid);
	qfair_leave(&f, &heavy[0]);
	qfair_done(&f, id[0]);
	ck_assert_ptr_eq(qfair_pop(&f, &id[0]), &heavy[3]);	/* in arrival order */
	for (int i = 0; i < 10; i++)
		qfair_leave(&f, &heavy[i]);
	qfair_free(&f);
}
END_TEST

/* Identities with queued requests take turns, whatever the order they came in. */
START_TEST(identities_take_turns)
{
	struct qfair f;
	struct qfair_item a[3], b[3], *it;
	struct qfair_ident *id;
	char order[8] = "";

	qfair_init(&f, 8);
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	for (int i = 0; i < 3; i++)
		queue(&f, cert("alice"), &a[i]);
	for (int i = 0; i < 3; i++)
		queue(&f, cert("bob"), &b[i]);
	for (int i = 0; i < 6; i++) {
		it = qfair_pop(&f, &id);
		ck_assert_ptr_nonnull(it);
		strcat(order, it >= a && it < a + 3 ? "a" : "b");
		qfair_leave(&f, it);
		qfair_done(&f, id);
	}
	ck_assert_msg(!strcmp(order, "ababab") || !strcmp(order, "bababa"),
		      "served in the order %s", order);
	ck_assert_ptr_null(f.idents);	/* nothing left: every identity freed */
	qfair_free(&f);
}
END_TEST

/* QFAIR_HELD_MAX in flight for one identity: the next is refused, another's is not. */
START_TEST(held_max_per_identity)
{
	static struct qfair_item it[QFAIR_HELD_MAX + 2];
	struct qfair f;
	struct qauth_who w = uid(7), other = uid(8);

	qfair_init(&f, 1);
	ck_assert_uint_eq(f.run_max, 1);
	for (int i = 0; i < QFAIR_HELD_MAX; i++)
		TU_OK(qfair_enter(&f, &w, &it[i]));
	TU_ERR(qfair_enter(&f, &w, &it[QFAIR_HELD_MAX]), -EBUSY);
	ck_assert_ptr_null(it[QFAIR_HELD_MAX].id);
	TU_OK(qfair_enter(&f, &other, &it[QFAIR_HELD_MAX + 1]));
	qfair_leave(&f, &it[0]);
	TU_OK(qfair_enter(&f, &w, &it[QFAIR_HELD_MAX]));	/* one answered: room */
	for (int i = 1; i < QFAIR_HELD_MAX + 2; i++)
		qfair_leave(&f, &it[i]);
	ck_assert_ptr_null(f.idents);
	qfair_free(&f);
}
END_TEST

static Suite *qfair_suite(void)
{
	Suite *s = suite_create("qfair");
	TCase *tc = tcase_create("qfair");

	tu_add_tests(tc, TU_TESTS(another_identity_is_served_next, identities_take_turns,
				  held_max_per_identity));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(qfair_suite())
