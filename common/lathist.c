/*
 * lathist.c - lock-free latency histograms (see lathist.h).
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "common/lathist.h"

const uint64_t lathist_bounds_us[LATHIST_BUCKETS] = {
	500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};

uint64_t lathist_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void lathist_add(struct lathist *h, uint64_t us)
{
	size_t i = 0;

	if (!h)
		return;
	while (i < LATHIST_BUCKETS && us > lathist_bounds_us[i])
		i++;
	atomic_fetch_add_explicit(&h->n[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

void lathist_read(const struct lathist *h, struct lathist_snap *out)
{
	memset(out, 0, sizeof(*out));
	if (!h)
		return;
	for (size_t i = 0; i <= LATHIST_BUCKETS; i++)
		out->n[i] = atomic_load_explicit(&h->n[i], memory_order_relaxed);
	out->sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
}
