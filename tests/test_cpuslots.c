/*
 * test_cpuslots.c - per-CPU state sized by the CPUs that send
 * (common/cpuslots.c): a slot per CPU met, found again after the table
 * grows, in arrival order, zeroed when made; sparse CPU numbers up to the
 * protocol's 65535 cost a slot each, not a slot per number below them.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>

#include "common/cpuslots.h"
#include "tests/testutil.h"

struct elem {
	uint64_t seq;
	uint32_t cpu;
};

START_TEST(test_empty)
{
	struct cpuslots m;

	cpuslots_init(&m, sizeof(struct elem));
	ck_assert_ptr_null(cpuslots_find(&m, 0));
	ck_assert_ptr_null(cpuslots_find(&m, 65535));
	ck_assert_uint_eq(m.n, 0);
	cpuslots_free(&m);
}
END_TEST

START_TEST(test_sparse_cpus_grow)
{
	static const uint32_t cpus[] = { 65535, 0, 8191, 7, 4096, 1, 65534, 2, 3, 100, 9000 };
	const size_t n = sizeof(cpus) / sizeof(cpus[0]);
	struct cpuslots m;
	struct elem *e;

	cpuslots_init(&m, sizeof(struct elem));
	for (size_t i = 0; i < n; i++) {
		TU_OK(cpuslots_get(&m, cpus[i], (void **)&e));
		ck_assert_uint_eq(e->seq, 0);		/* made zeroed */
		e->seq = 1000 + i;
		e->cpu = cpus[i];
	}
	ck_assert_uint_eq(m.n, n);			/* a slot per CPU that sent */
	ck_assert_uint_le(m.cap, 16);
	for (size_t i = 0; i < n; i++) {
		e = cpuslots_find(&m, cpus[i]);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->seq, 1000 + i);	/* found again after growing */
		ck_assert_uint_eq(m.cpu[i], cpus[i]);	/* slots in arrival order */
		ck_assert_ptr_eq(cpuslots_at(&m, (uint32_t)i), e);
	}
	ck_assert_ptr_null(cpuslots_find(&m, 5));
	TU_OK(cpuslots_get(&m, 8191, (void **)&e));	/* not made twice */
	ck_assert_uint_eq(e->seq, 1002);
	ck_assert_uint_eq(m.n, n);
	cpuslots_free(&m);
	ck_assert_ptr_null(cpuslots_find(&m, 0));
}
END_TEST

START_TEST(test_many)
{
	struct cpuslots m;
	struct elem *e;

	cpuslots_init(&m, sizeof(struct elem));
	for (uint32_t c = 0; c < 8192; c += 3) {
		TU_OK(cpuslots_get(&m, c, (void **)&e));
		e->cpu = c;
	}
	for (uint32_t c = 0; c < 8192; c++) {
		e = cpuslots_find(&m, c);
		if (c % 3)
			ck_assert_ptr_null(e);
		else
			ck_assert_uint_eq(e->cpu, c);
	}
	cpuslots_free(&m);
}
END_TEST

static Suite *cpuslots_suite(void)
{
	Suite *s = suite_create("cpuslots");
	TCase *tc = tcase_create("cpuslots");

	tu_add_tests(tc, TU_TESTS(test_empty, test_sparse_cpus_grow, test_many));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(cpuslots_suite())
