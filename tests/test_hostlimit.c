/*
 * test_hostlimit.c - check tests for the per-host limits (server/conn/hostlimit.c):
 * parsing the settings and --host-limit rules (and the messages that name
 * the expected form), which rule wins, the token bucket's arithmetic on a
 * clock the test moves, what a page costs, and the hosts' table (shared
 * buckets, quota, reload).
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/page.h"
#include "common/tc_error.h"
#include "server/conn/hostlimit.h"
#include "tests/testutil.h"

#define S	1000000000LL	/* ns */

static char err[256];

START_TEST(test_parse_rate_and_quota)
{
	uint64_t v = 7;

	TU_OK(hostlimit_parse_rate("5000", &v));
	ck_assert_uint_eq(v, 5000);
	TU_OK(hostlimit_parse_rate("20/s", &v));
	ck_assert_uint_eq(v, 20);
	TU_OK(hostlimit_parse_rate("0", &v));
	ck_assert_uint_eq(v, 0);
	v = 7;
	TU_ERR(hostlimit_parse_rate("", &v), TC_ERR_CONFIG);
	TU_ERR(hostlimit_parse_rate("-1", &v), TC_ERR_CONFIG);
	TU_ERR(hostlimit_parse_rate("5k", &v), TC_ERR_CONFIG);
	TU_ERR(hostlimit_parse_rate("5/m", &v), TC_ERR_CONFIG);
	TU_ERR(hostlimit_parse_rate(" 5", &v), TC_ERR_CONFIG);
	TU_ERR(hostlimit_parse_rate("99999999999999999999", &v), TC_ERR_CONFIG);
	TU_ERR(hostlimit_parse_rate("1000000000001", &v), TC_ERR_CONFIG);
	ck_assert_uint_eq(v, 7);	/* untouched on failure */

	TU_OK(hostlimit_parse_quota("10G", &v));
	ck_assert_uint_eq(v, 10ULL << 30);
	TU_OK(hostlimit_parse_quota("64k", &v));
	ck_assert_uint_eq(v, 64 << 10);
	TU_OK(hostlimit_parse_quota("0", &v));
	ck_assert_uint_eq(v, 0);
	TU_ERR(hostlimit_parse_quota("10X", &v), TC_ERR_CONFIG);
	TU_ERR(hostlimit_parse_quota("-5M", &v), TC_ERR_CONFIG);
	TU_ERR(hostlimit_parse_quota("20000000T", &v), TC_ERR_CONFIG);
}
END_TEST

START_TEST(test_rules_parse)
{
	struct hostlimit_conf c = { 0 };

	TU_OK(hostlimit_conf_rule(&c, "web-* rate=1000 quota=10G", err, sizeof(err)));
	TU_OK(hostlimit_conf_rule(&c, "  db?\trate=5/s   burst=50 ", err, sizeof(err)));
	TU_OK(hostlimit_conf_rule(&c, "* quota=0", err, sizeof(err)));
	ck_assert_uint_eq(c.nrules, 3);
	ck_assert_str_eq(c.rules[0].glob, "web-*");
	ck_assert(c.rules[0].has_rate && c.rules[0].has_quota && !c.rules[0].has_burst);
	ck_assert_uint_eq(c.rules[0].v.rate, 1000);
	ck_assert_uint_eq(c.rules[0].v.quota, 10ULL << 30);
	ck_assert_str_eq(c.rules[1].glob, "db?");
	ck_assert_uint_eq(c.rules[1].v.rate, 5);
	ck_assert_uint_eq(c.rules[1].v.burst, 50);
	ck_assert(c.rules[2].has_quota && !c.rules[2].has_rate);

	/* each refusal names the form expected, and the rules stay as they were */
	TU_ERR(hostlimit_conf_rule(&c, "", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "host limit: no host glob: expected '" HOSTLIMIT_RULE_FORM "'");
	TU_ERR(hostlimit_conf_rule(&c, "rate=5", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "host limit: no host glob: expected '" HOSTLIMIT_RULE_FORM "'");
	TU_ERR(hostlimit_conf_rule(&c, "web", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "host limit: 'web' names no limit: expected '"
			 HOSTLIMIT_RULE_FORM "'");
	TU_ERR(hostlimit_conf_rule(&c, "web rate=fast", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "host limit: bad rate 'fast': expected rate="
			 HOSTLIMIT_RATE_FORM);
	TU_ERR(hostlimit_conf_rule(&c, "web quota=lots", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "host limit: bad quota 'lots': expected quota="
			 HOSTLIMIT_QUOTA_FORM);
	TU_ERR(hostlimit_conf_rule(&c, "web speed=5", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "host limit: 'speed=5' is not rate=, burst= or quota=: "
			 "expected '" HOSTLIMIT_RULE_FORM "'");
	TU_ERR(hostlimit_conf_rule(&c, "web burst=-1", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_uint_eq(c.nrules, 3);
	hostlimit_conf_free(&c);
	ck_assert_uint_eq(c.nrules, 0);
}
END_TEST

START_TEST(test_later_rules_win)
{
	struct hostlimit_conf c = { .dflt = { .rate = 100, .quota = 1 << 20 } };
	struct hostlimit_values v;

	v = hostlimit_resolve(&c, "any");
	ck_assert_uint_eq(v.rate, 100);
	ck_assert_uint_eq(v.burst, 100);	/* a second of events */
	ck_assert_uint_eq(v.quota, 1 << 20);
	ck_assert(hostlimit_conf_any(&c) && hostlimit_conf_quota(&c));

	TU_OK(hostlimit_conf_rule(&c, "web-* rate=1000", err, sizeof(err)));
	TU_OK(hostlimit_conf_rule(&c, "web-1 quota=0", err, sizeof(err)));
	TU_OK(hostlimit_conf_rule(&c, "web-? rate=0 burst=7", err, sizeof(err)));
	TU_OK(hostlimit_conf_rule(&c, "db* burst=500", err, sizeof(err)));

	v = hostlimit_resolve(&c, "web-12");	/* the first rule only */
	ck_assert_uint_eq(v.rate, 1000);
	ck_assert_uint_eq(v.burst, 1000);
	ck_assert_uint_eq(v.quota, 1 << 20);
	v = hostlimit_resolve(&c, "web-1");	/* all three web rules, the last wins */
	ck_assert_uint_eq(v.rate, 0);
	ck_assert_uint_eq(v.burst, 7);
	ck_assert_uint_eq(v.quota, 0);
	v = hostlimit_resolve(&c, "db1");	/* a rule that names only burst */
	ck_assert_uint_eq(v.rate, 100);
	ck_assert_uint_eq(v.burst, 500);
	hostlimit_conf_free(&c);

	c = (struct hostlimit_conf){ 0 };
	ck_assert(!hostlimit_conf_any(&c) && !hostlimit_conf_quota(&c));
	TU_OK(hostlimit_conf_rule(&c, "x rate=0 quota=0", err, sizeof(err)));
	ck_assert(!hostlimit_conf_any(&c));	/* nothing limited: nothing changes */
	hostlimit_conf_free(&c);
}
END_TEST

START_TEST(test_bucket)
{
	struct hostlimit_bucket b;
	int64_t t = 5 * S, w;

	hostlimit_bucket_init(&b, 1000, 0, t);	/* burst: the rate */
	TU_EQ(hostlimit_bucket_wait(&b, t), 0);
	hostlimit_bucket_take(&b, 999, t);
	TU_EQ(hostlimit_bucket_wait(&b, t), 0);	/* one token left */
	hostlimit_bucket_take(&b, 251, t);	/* a page dearer than what is left: debt */
	w = hostlimit_bucket_wait(&b, t);
	ck_assert_int_gt(w, 250 * S / 1000);	/* 250 tokens owed at 1000/s */
	ck_assert_int_le(w, 250 * S / 1000 + 1000);
	ck_assert_int_gt(hostlimit_bucket_wait(&b, t + w - 1000), 0);
	TU_EQ(hostlimit_bucket_wait(&b, t + w), 0);

	/* idle time fills it to the burst, no more */
	t += 3600 * S;
	TU_EQ(hostlimit_bucket_wait(&b, t), 0);
	ck_assert(b.tokens == 1000.0);

	/* over a long run, what is taken stays within burst + rate * T + a page */
	{
		uint64_t taken = 0;
		int64_t t0 = t;

		for (int i = 0; i < 100000; i++) {
			t += 1000000;	/* a page offered every ms */
			if (hostlimit_bucket_wait(&b, t) == 0) {
				hostlimit_bucket_take(&b, 37, t);
				taken += 37;
			}
		}
		ck_assert_uint_le(taken, 1000 + 1000 * (uint64_t)((t - t0) / S) + 37);
		ck_assert_uint_ge(taken, 1000 * (uint64_t)((t - t0) / S) - 37);
	}

	/* a clock that goes back takes nothing */
	hostlimit_bucket_init(&b, 10, 10, 100 * S);
	hostlimit_bucket_take(&b, 10, 100 * S);
	ck_assert_int_gt(hostlimit_bucket_wait(&b, 99 * S), 0);

	/* unlimited: never waits */
	hostlimit_bucket_init(&b, 0, 0, 0);
	hostlimit_bucket_take(&b, 1000000, 0);
	TU_EQ(hostlimit_bucket_wait(&b, 0), 0);

	/* a new rate keeps the tokens, cut to the new burst */
	hostlimit_bucket_init(&b, 1000, 0, 0);
	hostlimit_bucket_set(&b, 10, 0, 0);
	ck_assert(b.tokens == 10.0);
	hostlimit_bucket_take(&b, 20, 0);
	hostlimit_bucket_set(&b, 100, 0, 0);
	ck_assert(b.tokens == -10.0);
	/* from unlimited: full */
	hostlimit_bucket_init(&b, 0, 0, 0);
	hostlimit_bucket_set(&b, 50, 0, 0);
	ck_assert(b.tokens == 50.0);
}
END_TEST

/* Put a record header (type_len, delta 1) at @p; Return: bytes after it. */
static size_t put_rec(uint8_t *p, unsigned type_len)
{
	uint32_t w = type_len | (1u << 5);

	memcpy(p, &w, 4);
	return 4;
}

START_TEST(test_page_events)
{
	struct page_layout l = { .page_size = 4096, .long_size = 8 };
	uint8_t page[4096] = { 0 };
	size_t start = 16, off = start;	/* after the timestamp and the commit */
	uint64_t commit;
	uint32_t len;

	for (int i = 0; i < 5; i++) {	/* 5 short data records of 8 bytes of payload */
		off += put_rec(page + off, 2);
		off += 8;
	}
	off += put_rec(page + off, 30);	/* a time extend: not an event */
	off += 4;
	off += put_rec(page + off, 0);	/* a long data record: 12 bytes */
	len = 16;
	memcpy(page + off, &len, 4);
	off += 4 + 12;
	commit = off - start;
	memcpy(page + 8, &commit, 8);
	ck_assert_uint_eq(hostlimit_page_events(&l, page, sizeof(page)), 6);
	ck_assert_uint_eq(hostlimit_page_events(&l, page, off), 6);	/* sent cut */

	/* empty, too short, a commit past the page: 1, never a read outside */
	commit = 0;
	memcpy(page + 8, &commit, 8);
	ck_assert_uint_eq(hostlimit_page_events(&l, page, sizeof(page)), 1);
	ck_assert_uint_eq(hostlimit_page_events(&l, page, 10), 1);
	commit = 100000;
	memcpy(page + 8, &commit, 8);
	ck_assert_uint_eq(hostlimit_page_events(&l, page, sizeof(page)), 1);
	/* a record that does not fit: what precedes it */
	commit = 16 * 3;
	memcpy(page + 8, &commit, 8);
	put_rec(page + start + 24, 28);	/* 116 bytes claimed, 24 left */
	ck_assert_uint_eq(hostlimit_page_events(&l, page, sizeof(page)), 2);
}
END_TEST

START_TEST(test_hosts_share_a_bucket)
{
	struct hostlimit_conf c = { 0 };
	struct hostlimit *hl;
	struct hostlimit_host *a, *a2, *b;
	int64_t now = 1000 * S, w = 0;

	TU_OK(hostlimit_conf_rule(&c, "slow-* rate=100", err, sizeof(err)));
	TU_OK(hostlimit_new(&c, &hl));
	hostlimit_conf_free(&c);	/* the table has its own copy */
	TU_OK(hostlimit_attach(hl, "slow-1", &a));
	TU_OK(hostlimit_attach(hl, "slow-1", &a2));
	TU_OK(hostlimit_attach(hl, "fast", &b));
	ck_assert_ptr_eq(a, a2);	/* one bucket for every connection of a host */
	ck_assert_uint_eq(a->refs, 2);
	ck_assert_uint_eq(a->v.rate, 100);
	ck_assert_uint_eq(b->v.rate, 0);
	ck_assert(!hostlimit_quota_on(hl));

	a->bucket.at_ns = now;
	ck_assert_int_eq(hostlimit_check(a, now, &w), HOSTLIMIT_GO);
	hostlimit_charge(a, 150, 4096, now);
	ck_assert_int_eq(hostlimit_check(a2, now, &w), HOSTLIMIT_RATE);
	ck_assert_int_gt(w, S / 2);
	ck_assert_int_eq(hostlimit_check(a, now + S / 2 + 1000, &w), HOSTLIMIT_GO);
	hostlimit_charge(b, 1000000, 1 << 20, now);
	ck_assert_int_eq(hostlimit_check(b, now, &w), HOSTLIMIT_GO);

	/* a reload: a quota for slow-*, the rate lifted */
	TU_OK(hostlimit_conf_rule(&c, "slow-* quota=8k", err, sizeof(err)));
	TU_OK(hostlimit_set_conf(hl, &c));
	hostlimit_conf_free(&c);
	ck_assert(hostlimit_quota_on(hl));
	ck_assert_uint_eq(a->v.rate, 0);
	ck_assert_uint_eq(a->v.quota, 8192);
	ck_assert_int_eq(hostlimit_check(a, now, &w), HOSTLIMIT_GO);	/* 4096 read */
	hostlimit_charge(a, 1, 4096, now);	/* 8192: at the quota */
	ck_assert_int_eq(hostlimit_check(a, now, &w), HOSTLIMIT_QUOTA);
	ck_assert_int_eq(w, HOSTLIMIT_QUOTA_RECHECK_NS);
	ck_assert(a->quota_logged);
	/* what was read counts until it is committed; then the report has it */
	hostlimit_usage(hl, "slow-1", 100);
	ck_assert_int_eq(hostlimit_check(a, now, &w), HOSTLIMIT_QUOTA);
	hostlimit_committed(a, 4096);	/* 100 + 4096 pending */
	ck_assert_int_eq(hostlimit_check(a, now, &w), HOSTLIMIT_GO);
	hostlimit_committed(a, 100000);	/* never below 0 */
	ck_assert_uint_eq(a->pending, 0);
	ck_assert(!a->quota_logged);
	hostlimit_usage(hl, "slow-1", 9000);	/* retention has not run yet */
	ck_assert_int_eq(hostlimit_check(a, now, &w), HOSTLIMIT_QUOTA);
	hostlimit_usage(hl, "nobody", 1);	/* not in the table: not added */

	/* an agent that reconnects finds its host as it left it: not logged again */
	hostlimit_detach(hl, a);
	hostlimit_detach(hl, a2);
	hostlimit_detach(hl, b);
	TU_OK(hostlimit_attach(hl, "slow-1", &a));
	ck_assert_uint_eq(a->refs, 1);
	ck_assert_uint_eq(a->stored, 9000);
	ck_assert(a->quota_logged);
	ck_assert_int_eq(hostlimit_check(a, now, &w), HOSTLIMIT_QUOTA);
	hostlimit_detach(hl, a);

	/* idle hosts are kept up to HOSTLIMIT_IDLE_MAX, the longest idle go */
	for (int i = 0; i < HOSTLIMIT_IDLE_MAX + 10; i++) {
		char name[32];

		snprintf(name, sizeof(name), "h%d", i);
		TU_OK(hostlimit_attach(hl, name, &b));
		hostlimit_detach(hl, b);
	}
	TU_OK(hostlimit_attach(hl, "slow-1", &a));	/* went: fresh */
	ck_assert_uint_eq(a->stored, 0);
	ck_assert(!a->quota_logged);
	hostlimit_detach(hl, a);
	hostlimit_free(hl);
}
END_TEST

static Suite *hostlimit_suite(void)
{
	Suite *s = suite_create("hostlimit");
	TCase *tc = tcase_create("hostlimit");

	tu_add_tests(tc, TU_TESTS(test_parse_rate_and_quota, test_rules_parse,
				  test_later_rules_win, test_bucket, test_page_events,
				  test_hosts_share_a_bucket));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(hostlimit_suite())
