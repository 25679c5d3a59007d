/*
 * ring_clock.c - timestamps for the user-space ring buffer and their
 * conversion to the kernel's trace clocks.
 *
 * Writers stamp events with the TSC (rdtsc: a few ns, no system call) on
 * x86-64, or CLOCK_MONOTONIC elsewhere or when asked. The kernel's "mono"
 * trace clock is CLOCK_MONOTONIC in ns; to put both on one timeline the
 * agent ships a conversion made here, in the kernel clocksource's form
 * (kernel/time/clocksource.c, clocks_calc_mult_shift):
 *     ns = mono0 + (((tsc - tsc0) * mult) >> shift)
 * from two (TSC, CLOCK_MONOTONIC) samples. Each sample reads the TSC on
 * both sides of clock_gettime and keeps the tightest of a few tries, so
 * the error per sample is about half a clock_gettime (~10 ns); over a 100
 * ms interval the rate error is ~1e-7. With the "x86-tsc" trace clock no
 * conversion is needed at all: both sides count the same TSC.
 */
#include "config.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "common/ring.h"
#include "common/ring_priv.h"

static uint64_t mono_ns(void)
{
	return ring_clock_read(RING_CLOCK_MONO);
}

uint64_t ring_clock_now(enum ring_clock_id clk)
{
	return ring_clock_read(clk);
}

/* One (tsc, mono) pair: the TSC read nearest to the clock_gettime. */
static void sample(uint64_t *tsc, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 8; i++) {
		uint64_t a = ring_clock_now(RING_CLOCK_TSC);
		uint64_t m = mono_ns();
		uint64_t b = ring_clock_now(RING_CLOCK_TSC);

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*mono = m;
		}
	}
}

int ring_clock_calibrate(unsigned interval_us, struct ring_clock_conv *out)
{
	uint64_t t0, m0, t1, m1, dt, dm;
	uint32_t shift = 32;
	unsigned __int128 mult;

	if (interval_us < 1000)
		return -EINVAL;
	sample(&t0, &m0);
	usleep(interval_us);
	sample(&t1, &m1);
	dt = t1 - t0;
	dm = m1 - m0;
	if (t1 <= t0 || !dm)
		return -ERANGE;
	/* largest shift whose mult fits 32 bits */
	do {
		mult = (((unsigned __int128)dm << shift) + dt / 2) / dt;
	} while (mult > UINT32_MAX && --shift);
	if (mult > UINT32_MAX || !mult)
		return -ERANGE;
	out->tsc0 = t0;
	out->mono0 = m0;
	out->mult = (uint32_t)mult;
	out->shift = shift;
	return 0;
}

uint64_t ring_clock_to_ns(const struct ring_clock_conv *c, uint64_t tsc)
{
	unsigned __int128 d;

	if (tsc >= c->tsc0) {
		d = (unsigned __int128)(tsc - c->tsc0) * c->mult;
		return c->mono0 + (uint64_t)(d >> c->shift);
	}
	d = (unsigned __int128)(c->tsc0 - tsc) * c->mult;
	return c->mono0 - (uint64_t)(d >> c->shift);
}
