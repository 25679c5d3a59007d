/*
 * test_qahead - pages read ahead (server/query/queryd_ahead.c): a page is given
 * only for the very request, asker and scope generation it was read for,
 * once; one that could not be read is not given; a page still being read
 * is waited for; the cache holds at most QAHEAD_MAX pages and lets at
 * most half the workers read ahead at once.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/query/queryd_ahead.h"
#include "tests/testutil.h"

static const struct qauth_who alice = { .kind = QAUTH_CERT, .cert = "alice" };
static const struct qauth_who bob = { .kind = QAUTH_CERT, .cert = "bob" };

/* The request for the page after row @after_id of a select. */
static struct qmsg_request page_req(uint64_t after_id)
{
	return (struct qmsg_request){ .op = QOP_SELECT, .query = "sys_exit where ret > 0",
				      .limit = 10000, .after_ts = 5, .after_id = after_id };
}

/* Read ahead the page for @r (as @who, @gen): "page N" as its bytes. */
static void read_page(struct qahead *a, const struct qauth_who *who, uint64_t after_id,
		      uint64_t gen)
{
	struct qmsg_request r = page_req(after_id);
	struct qsel_page pg = { .more = true, .last_id = after_id + 100, .rows = 100 };
	struct qahead_entry *e = qahead_begin(a, who, &r, gen);
	struct proto_buf page;
	char text[32];

	ck_assert_ptr_nonnull(e);
	proto_buf_init(&page);
	snprintf(text, sizeof(text), "page %llu", (unsigned long long)after_id);
	TU_OK(proto_buf_append(&page, text, strlen(text) + 1));
	qahead_done(a, e, &page, &pg, "100 rows");
	ck_assert_uint_eq(page.len, 0);	/* taken */
}

/* Whether the page for @after_id is given to @who at @gen; checks what it holds. */
static bool take(struct qahead *a, const struct qauth_who *who, uint64_t after_id, uint64_t gen)
{
	struct qmsg_request r = page_req(after_id);
	struct qsel_page pg = { 0 };
	struct proto_buf out;
	char result[QAHEAD_RESULT_MAX], want[32];
	bool got;

	proto_buf_init(&out);
	got = qahead_take(a, who, &r, gen, &out, &pg, result, sizeof(result));
	if (got) {
		snprintf(want, sizeof(want), "page %llu", (unsigned long long)after_id);
		ck_assert_str_eq((const char *)out.data, want);
		ck_assert_str_eq(result, "100 rows");
		ck_assert(pg.more);
		ck_assert_uint_eq(pg.last_id, after_id + 100);
	}
	proto_buf_free(&out);
	return got;
}

START_TEST(given_once_to_the_same_request)
{
	struct qahead *a;

	TU_OK(qahead_new(4, &a));
	ck_assert(!take(a, &alice, 1, 0));
	read_page(a, &alice, 1, 0);
	ck_assert(!take(a, &bob, 1, 0));	/* another asker */
	ck_assert(!take(a, &alice, 1, 1));	/* the scope rules changed */
	ck_assert(!take(a, &alice, 2, 0));	/* another page */
	ck_assert(take(a, &alice, 1, 0));
	ck_assert(!take(a, &alice, 1, 0));	/* once */
	qahead_free(a);
}
END_TEST

START_TEST(a_page_not_read_is_not_given)
{
	struct qmsg_request r = page_req(1);
	struct qahead *a;
	struct qahead_entry *e;

	TU_OK(qahead_new(4, &a));
	e = qahead_begin(a, &alice, &r, 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_null(qahead_begin(a, &alice, &r, 0));	/* already being read */
	qahead_done(a, e, NULL, NULL, "failed");
	ck_assert(!take(a, &alice, 1, 0));
	read_page(a, &alice, 1, 0);	/* its place is free again */
	ck_assert(take(a, &alice, 1, 0));
	qahead_free(a);
}
END_TEST

struct waiter {
	struct qahead *a;
	bool got;
};

static void *wait_page(void *arg)
{
	struct waiter *w = arg;

	w->got = take(w->a, &alice, 7, 0);
	return NULL;
}

START_TEST(a_page_being_read_is_waited_for)
{
	struct qmsg_request r = page_req(7);
	struct qsel_page pg = { .more = true, .last_id = 107, .rows = 100 };
	struct waiter w = { 0 };
	struct qahead_entry *e;
	struct proto_buf page;
	pthread_t t;

	TU_OK(qahead_new(4, &w.a));
	e = qahead_begin(w.a, &alice, &r, 0);
	ck_assert_ptr_nonnull(e);
	TU_EQ(pthread_create(&t, NULL, wait_page, &w), 0);
	proto_buf_init(&page);
	TU_OK(proto_buf_append(&page, "page 7", 7));
	qahead_done(w.a, e, &page, &pg, "100 rows");	/* before or after the take: given */
	TU_EQ(pthread_join(t, NULL), 0);
	ck_assert(w.got);
	qahead_free(w.a);
}
END_TEST

START_TEST(bounded)
{
	struct qmsg_request r1 = page_req(1), r2 = page_req(2), r3 = page_req(3);
	struct qahead_entry *e1, *e2;
	struct qahead *a;
	uint64_t taken, dropped;

	TU_OK(qahead_new(1, &a));	/* one worker reads no page ahead */
	ck_assert_ptr_null(qahead_begin(a, &alice, &r1, 0));
	qahead_free(a);

	TU_OK(qahead_new(4, &a));	/* four: two at once */
	e1 = qahead_begin(a, &alice, &r1, 0);
	e2 = qahead_begin(a, &alice, &r2, 0);
	ck_assert(e1 && e2);
	ck_assert_ptr_null(qahead_begin(a, &alice, &r3, 0));
	qahead_done(a, e1, NULL, NULL, "");
	qahead_done(a, e2, NULL, NULL, "");
	for (uint64_t i = 0; i < QAHEAD_MAX; i++)	/* kept pages fill the cache */
		read_page(a, &bob, 100 + i, 0);
	ck_assert_ptr_null(qahead_begin(a, &alice, &r3, 0));
	ck_assert(take(a, &bob, 100, 0));
	read_page(a, &alice, 3, 0);
	ck_assert(take(a, &alice, 3, 0));
	qahead_stats(a, &taken, &dropped);
	ck_assert_uint_eq(taken, 2);
	ck_assert_uint_eq(dropped, 0);
	qahead_free(a);
}
END_TEST

static Suite *qahead_suite(void)
{
	Suite *s = suite_create("qahead");
	TCase *tc = tcase_create("cache");

	tu_add_tests(tc, TU_TESTS(given_once_to_the_same_request, a_page_not_read_is_not_given,
				  a_page_being_read_is_waited_for, bounded));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(qahead_suite())
