/*
 * test_clocks.c - check tests for the collector's clock measurement (issue
 * 36): the probe bursts' arithmetic (server/conn/clockprobe.c) against
 * known one-way delays, asymmetric ones too (the error stays within the
 * uncertainty), and the placement (server/ingest/clockmap.c): continuous,
 * never backwards per trace time, slewing to a new point, the source
 * switching when the host's realtime disagrees past uncertainty + tolerance.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/conn/clockprobe.h"
#include "server/ingest/clockmap.h"
#include "tests/testutil.h"

#define S	INT64_C(1000000000)
#define MS	INT64_C(1000000)
#define US	INT64_C(1000)

/*
 * One round trip against a host whose trace clock reads our realtime
 * less @off: out @up ns, held @hold, back @down. Returns the echo, the
 * collector's clocks at its arrival in *@t4.
 */
static struct proto_clock_echo trip(struct clockprobe *p, int64_t *now, int64_t off, int64_t up,
				    int64_t hold, int64_t down)
{
	struct proto_clock_probe pr;
	struct proto_clock_echo e;

	ck_assert(clockprobe_next(p, *now, *now - 5 * S, &pr));
	e.id = pr.id;
	e.recv_ns = (uint64_t)(*now + up - off);
	e.send_ns = e.recv_ns + (uint64_t)hold;
	*now += up + hold + down;
	return e;
}

START_TEST(test_probe_best_of_burst)
{
	/* delays in us: the third trip is the shortest, and lopsided */
	static const int64_t up[] = { 900, 400, 30, 700 }, down[] = { 100, 600, 10, 300 };
	struct clockprobe p = { 0 };
	struct proto_clock_measure m;
	int64_t now = 1700000000 * S, off = 5 * S + 123;
	size_t i;

	clockprobe_burst(&p, 4);
	for (i = 0; i < 4; i++) {
		struct proto_clock_echo e = trip(&p, &now, off, up[i] * US, 7 * US, down[i] * US);

		TU_EQ(clockprobe_echo(&p, &e, now - 5 * S), 0);
	}
	ck_assert(!clockprobe_next(&p, now, now, &(struct proto_clock_probe){ 0 }));
	ck_assert(clockprobe_result(&p, &m));
	TU_EQ(m.probes, 4);
	TU_EQ(m.uncertainty_ns, 20 * US);	/* (30 + 10) / 2 */
	/* the error of the offset: (up - down) / 2 = 10 us, within the uncertainty */
	int64_t err = (m.realtime_ns - (int64_t)m.trace_ns) - off;
	ck_assert_int_le(llabs(err), (long long)m.uncertainty_ns);
	TU_EQ(err, -10 * US);
}
END_TEST

START_TEST(test_probe_late_and_impossible)
{
	struct clockprobe p = { 0 };
	struct proto_clock_measure m;
	struct proto_clock_echo e;
	int64_t now = 1000 * S;

	clockprobe_burst(&p, 2);
	e = trip(&p, &now, 0, 10 * US, 0, 10 * US);
	e.id++;						/* not the probe out */
	TU_EQ(clockprobe_echo(&p, &e, now - 5 * S), 1);
	e.id--;
	e.send_ns = e.recv_ns + (uint64_t)S;		/* held longer than the round trip */
	TU_EQ(clockprobe_echo(&p, &e, now - 5 * S), -1);
	ck_assert(!clockprobe_waiting(&p));
	ck_assert(!clockprobe_result(&p, &m));		/* nothing taken */
}
END_TEST

/* Times placed on one trace clock never go backwards through a slew and a step. */
START_TEST(test_map_monotonic)
{
	struct clockmap m;
	int64_t last = INT64_MIN, off0 = 1000 * S;
	uint64_t t;

	clockmap_init(&m);
	TU_EQ(clockmap_offset(&m, 5, 42), 42);		/* no point: the fallback */
	clockmap_init(&m);
	ck_assert(!clockmap_target(&m, 10 * (uint64_t)S, off0, 0));
	for (t = 10 * (uint64_t)S; t < 40 * (uint64_t)S; t += 997 * (uint64_t)US) {
		int64_t w = (int64_t)t + clockmap_offset(&m, t, 0);

		clockmap_note(&m, t);
		ck_assert_int_ge(w, last);
		last = w;
		if (t > 15 * (uint64_t)S && t < 15 * (uint64_t)S + MS)	/* 300 ms back: slewed */
			ck_assert(!clockmap_target(&m, t, off0 - 300 * MS, 0));
		if (t > 25 * (uint64_t)S && t < 25 * (uint64_t)S + MS)	/* drift, then a forward step */
			ck_assert(clockmap_target(&m, t, off0 + 5 * S, 1e-4));
	}
	/* the slew met its target: 300 ms back took 0.6 s of trace time */
	TU_EQ(llabs(clockmap_offset(&m, 20 * (uint64_t)S, 0) - (off0 - 300 * MS)) < US, 1);
}
END_TEST

/* A CPU whose pages come late is placed by the segment its times fall in. */
START_TEST(test_map_late_cpu)
{
	struct clockmap m;
	int64_t before;

	clockmap_init(&m);
	clockmap_target(&m, S, 0, 0);
	clockmap_note(&m, 2 * (uint64_t)S);			/* CPU 0 reached 2 s */
	before = clockmap_offset(&m, (uint64_t)(S + S / 2), 0);	/* CPU 1 at 1.5 s */
	clockmap_target(&m, 2 * (uint64_t)S, -100 * MS, 0);
	TU_EQ(clockmap_offset(&m, (uint64_t)(S + S / 2), 0), before);	/* unchanged */
}
END_TEST

START_TEST(test_source_switch)
{
	struct clocksrc c;
	uint64_t t = 100 * (uint64_t)S;

	clocksrc_init(&c, MS);
	TU_EQ(clocksrc_host(&c, t, 5 * S), 0);			/* the host says +5 s */
	TU_EQ(clocksrc_measure(&c, t + MS, 500 * US, 20 * US), CLOCKSRC_SWITCHED);
	ck_assert(c.measured);
	ck_assert_int_eq(c.disagree, 5 * S - 500 * US);
	TU_EQ(clockmap_offset(&c.map, t + 2 * MS, 0), 500 * US);	/* nothing placed yet: at once */
	/* within uncertainty + tolerance again: back to the host's clock */
	TU_EQ(clocksrc_host(&c, t + 2 * MS, 500 * US + 900 * US), CLOCKSRC_SWITCHED);
	ck_assert(!c.measured);
}
END_TEST

/*
 * Offsets the size of today's realtime (~2^60 ns) keep every nanosecond:
 * as doubles they would move in 256 ns steps (two hosts on one machine
 * once showed exactly 768 ns of disagreement). The disagreement, the
 * drift and a slew's target are exact to the nanosecond here.
 */
START_TEST(test_source_wall_sized)
{
	const int64_t wall = INT64_C(1796670053824000123);	/* 2026-12-06, in ns */
	struct clocksrc c;
	uint64_t t = 200000 * (uint64_t)S;

	clocksrc_init(&c, MS);
	clocksrc_host(&c, t, wall);
	clocksrc_measure(&c, t, wall - 5, 20 * US);
	ck_assert_int_eq(c.disagree, 5);
	clocksrc_host(&c, t + 2 * (uint64_t)S, wall + 3);	/* 1.5 ns/s: 1 ppb and a half */
	ck_assert_int_eq(clocksrc_drift_ppb(c.host), 2);	/* 1.5 rounded */
	clocksrc_measure(&c, t + 2 * (uint64_t)S, wall + 1, 20 * US);
	ck_assert_int_eq(c.disagree, 2);
	/* the map follows the host's line: at its latest point, its offset */
	TU_EQ(clockmap_offset(&c.map, t + 2 * (uint64_t)S, 0), wall + 3);
}
END_TEST

/*
 * A rotated journal file carries the source's whole state: a copy loaded
 * from clocksrc_save()'s bytes in the middle of a slew places every later
 * time as the original does, through later points too, and bad bytes are
 * refused with the copy untouched.
 */
START_TEST(test_source_save_load)
{
	struct clocksrc a, b, fresh;
	uint8_t buf[CLOCKSRC_SAVE_MAX];
	uint64_t t = 100 * (uint64_t)S;
	size_t n;

	clocksrc_init(&a, MS);
	clocksrc_host(&a, t, 5 * S);
	for (int i = 0; i < 12; i++) {	/* more points than segments kept */
		clockmap_note(&a.map, t + (uint64_t)i * S / 2);
		clocksrc_measure(&a, t + (uint64_t)i * S / 2, 500 * US + i * 37 * US, 20 * US);
	}
	clockmap_note(&a.map, t + 6 * (uint64_t)S + 1);
	clocksrc_measure(&a, t + 6 * (uint64_t)S, 900 * US, 30 * US);	/* slewing now */
	n = clocksrc_save(&a, buf);
	TU_EQ(n, CLOCKSRC_SAVE_MAX);
	clocksrc_init(&b, 2 * MS);
	TU_OK(clocksrc_load(&b, buf, n));
	TU_EQ(b.tol_ns, 2 * MS);	/* the tolerance is the loader's */
	b.tol_ns = a.tol_ns;
	for (uint64_t u = t; u < t + 20 * (uint64_t)S; u += 7 * (uint64_t)MS) {
		TU_EQ(clockmap_offset(&b.map, u, 0), clockmap_offset(&a.map, u, 0));
		clockmap_note(&a.map, u);
		clockmap_note(&b.map, u);
		if (u % (3 * (uint64_t)S) < 7 * (uint64_t)MS) {
			TU_EQ(clocksrc_host(&b, u, 5 * S + (int64_t)(u / 1000)),
			      clocksrc_host(&a, u, 5 * S + (int64_t)(u / 1000)));
			TU_EQ(clocksrc_measure(&b, u, 700 * US, 25 * US),
			      clocksrc_measure(&a, u, 700 * US, 25 * US));
		}
	}
	TU_EQ(clocksrc_save(&b, buf), n);
	/* refused: cut, another version, too many segments; b untouched */
	fresh = b;
	TU_ERR(clocksrc_load(&b, buf, n - 1), TC_ERR_MSG_MALFORMED);
	buf[0] = 2;
	TU_ERR(clocksrc_load(&b, buf, n), TC_ERR_MSG_MALFORMED);
	buf[0] = CLOCKSRC_SAVE_VERSION;
	buf[4] = CLOCKMAP_SEGS + 1;
	TU_ERR(clocksrc_load(&b, buf, n), TC_ERR_MSG_MALFORMED);
	ck_assert(!memcmp(&fresh, &b, sizeof(b)));
}
END_TEST

static Suite *clocks_suite(void)
{
	Suite *s = suite_create("clocks");
	TCase *tc = tcase_create("clocks");

	tu_add_tests(tc, TU_TESTS(test_probe_best_of_burst, test_probe_late_and_impossible,
				  test_map_monotonic, test_map_late_cpu, test_source_switch,
				  test_source_wall_sized, test_source_save_load));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(clocks_suite())
