/*
 * clockmap.c - a slewing, piecewise-linear trace clock -> wall clock map
 * (see clockmap.h).
 */
#include "config.h"

#include <endian.h>
#include <math.h>	/* isfinite(), a macro: no libm */
#include <string.h>

#include "common/tc_error.h"
#include "server/ingest/clockmap.h"

#define SLEW_MIN_NS	1e9	/* a correction takes at least 1 s of trace time */
#define SLEW_RATE	0.5	/* and changes the offset at most 0.5 ns per ns */

static double dabs(double x)
{
	return x < 0 ? -x : x;
}

static double dclamp(double x, double lim)
{
	return x < -lim ? -lim : x > lim ? lim : x;
}

static int64_t round_i64(double x)
{
	return (int64_t)(x < 0 ? x - 0.5 : x + 0.5);
}

void clockmap_init(struct clockmap *m)
{
	m->n = m->head = 0;
	m->placed = 0;
}

static struct clockmap_seg *seg_at(const struct clockmap *m, unsigned i)
{
	return (struct clockmap_seg *)&m->seg[(m->head + i) % CLOCKMAP_SEGS];
}

/* Offset of @t on @g (extrapolated before its start). */
static int64_t seg_offset(const struct clockmap_seg *g, uint64_t t)
{
	double dt = (double)t - (double)g->t0;
	double slew = (double)g->t1 - (double)g->t0;

	if (t < g->t1)
		return g->o0 + (int64_t)round_i64(g->k * dt);
	return g->o0 + (int64_t)round_i64(g->k * slew + g->d * (dt - slew));
}

/* The segment @t falls in: the newest that starts at or before it, else the oldest. */
static const struct clockmap_seg *seg_of(const struct clockmap *m, uint64_t t)
{
	unsigned i = m->n;

	while (i-- > 1)
		if (seg_at(m, i)->t0 <= t)
			return seg_at(m, i);
	return seg_at(m, 0);
}

static void seg_push(struct clockmap *m, const struct clockmap_seg *g)
{
	if (m->n == CLOCKMAP_SEGS)
		m->head = (m->head + 1) % CLOCKMAP_SEGS;
	else
		m->n++;
	*seg_at(m, m->n - 1) = *g;
}

bool clockmap_target(struct clockmap *m, uint64_t trace_ns, int64_t off, double drift)
{
	struct clockmap_seg g = { .d = dclamp(drift, CLOCKMAP_MAX_DRIFT) };
	uint64_t s;
	double lift, delta, w;

	if (!isfinite(g.d))
		g.d = 0;
	if (m->n == 0 || m->placed == 0) {	/* nothing placed yet: the line itself */
		g.t0 = g.t1 = trace_ns;
		g.o0 = off;
		m->n = m->head = 0;
		seg_push(m, &g);
		return false;
	}
	s = m->placed > seg_at(m, m->n - 1)->t0 ? m->placed : seg_at(m, m->n - 1)->t0;
	g.t0 = s;
	g.o0 = seg_offset(seg_of(m, s), s);
	/*
	 * L(s) - o0. Offsets are wall-clock sized (~2^60 ns): as doubles they
	 * keep 256 ns steps, so they are subtracted as integers first (the
	 * drift's term is small and exact enough in a double).
	 */
	lift = g.d * ((double)s - (double)trace_ns);
	delta = (double)(off - g.o0) + lift;
	if (dabs(delta) > (double)CLOCKMAP_STEP_NS) {
		g.o0 = off + round_i64(lift);
		g.t1 = s;
		seg_push(m, &g);
		return true;
	}
	w = dabs(delta) / SLEW_RATE;
	if (w < SLEW_MIN_NS)
		w = SLEW_MIN_NS;
	g.k = g.d + delta / w;
	g.t1 = s + (uint64_t)w;
	seg_push(m, &g);
	return false;
}

int64_t clockmap_offset(const struct clockmap *m, uint64_t t, int64_t fallback)
{
	return m->n ? seg_offset(seg_of(m, t), t) : fallback;
}

void clockmap_note(struct clockmap *m, uint64_t t)
{
	if (t > m->placed)
		m->placed = t;
}

/* ---- the source ---- */

void clocksrc_init(struct clocksrc *c, int64_t tol_ns)
{
	*c = (struct clocksrc){ .tol_ns = tol_ns };
	clockmap_init(&c->map);
}

/* The drift of series @pt, offset ns per trace ns. */
static double pt_drift(const struct clock_pt pt[2])
{
	double dt;

	if (!pt[0].have || !pt[1].have || pt[0].t < pt[1].t + 1000000000u)
		return 0;
	dt = (double)(pt[0].t - pt[1].t);
	/* the offsets' difference as an integer: see clockmap_target() */
	return dclamp((double)(pt[0].o - pt[1].o) / dt, CLOCKMAP_MAX_DRIFT);
}

int64_t clocksrc_drift_ppb(const struct clock_pt pt[2])
{
	return round_i64(pt_drift(pt) * 1e9);
}

static void pt_add(struct clock_pt pt[2], uint64_t t, int64_t o)
{
	if (pt[0].have && t < pt[0].t + 1000000000u && pt[1].have)
		;	/* keep the older one as the drift's base until 1 s passed */
	else
		pt[1] = pt[0];
	pt[0] = (struct clock_pt){ .t = t, .o = o, .have = true };
}

/* Follow the placing series' latest point. */
static int src_target(struct clocksrc *c)
{
	const struct clock_pt *pt = c->measured ? c->meas : c->host;

	if (!pt[0].have)
		return 0;
	return clockmap_target(&c->map, pt[0].t, pt[0].o, pt_drift(pt)) ?
	       CLOCKSRC_STEPPED : 0;
}

/* Compare the two series; switch the source when the verdict changes. */
static int src_judge(struct clocksrc *c)
{
	double lift;
	uint64_t lim;
	bool measured;

	if (!c->meas[0].have || !c->host[0].have)
		return 0;
	/* the host's line at the measurement's time, less the measurement:
	 * offsets subtracted as integers (see clockmap_target()) */
	lift = pt_drift(c->host) * ((double)c->meas[0].t - (double)c->host[0].t);
	c->disagree = (c->host[0].o - c->meas[0].o) + round_i64(lift);
	lim = c->unc + (uint64_t)c->tol_ns;
	measured = (c->disagree < 0 ? (uint64_t)-(c->disagree + 1) + 1 : (uint64_t)c->disagree) > lim;
	if (measured == c->measured)
		return 0;
	c->measured = measured;
	return CLOCKSRC_SWITCHED | src_target(c);
}

int clocksrc_host(struct clocksrc *c, uint64_t t, int64_t o)
{
	int r;

	pt_add(c->host, t, o);
	r = src_judge(c);
	if (!(r & CLOCKSRC_SWITCHED) && !c->measured)
		r |= src_target(c);
	return r;
}

int clocksrc_measure(struct clocksrc *c, uint64_t t, int64_t o, uint64_t unc)
{
	int r;

	pt_add(c->meas, t, o);
	c->unc = unc;
	r = src_judge(c);
	if (!(r & CLOCKSRC_SWITCHED) && c->measured)
		r |= src_target(c);
	return r;
}

/* ---- saved state (a rotated journal file's JREC_CLOCKMAP) ---- */

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
	return p + 8;
}

static uint64_t get64(const uint8_t **p)
{
	uint64_t v;

	memcpy(&v, *p, 8);
	*p += 8;
	return le64toh(v);
}

static uint64_t dbits(double x)
{
	uint64_t u;

	memcpy(&u, &x, 8);
	return u;
}

static double bitsd(uint64_t u)
{
	double x;

	memcpy(&x, &u, 8);
	return x;
}

size_t clocksrc_save(const struct clocksrc *c, uint8_t *buf)
{
	const struct clock_pt *pt[4] = { &c->host[0], &c->host[1], &c->meas[0], &c->meas[1] };
	uint8_t *p = buf;

	p = put64(p, CLOCKSRC_SAVE_VERSION | (uint64_t)c->map.n << 32);
	p = put64(p, c->map.placed);
	p = put64(p, c->unc);
	p = put64(p, (uint64_t)c->disagree);
	p = put64(p, c->measured);
	for (unsigned i = 0; i < 4; i++) {
		p = put64(p, pt[i]->t);
		p = put64(p, (uint64_t)pt[i]->o);
		p = put64(p, pt[i]->have);
	}
	for (unsigned i = 0; i < c->map.n; i++) {
		const struct clockmap_seg *g = seg_at(&c->map, i);

		p = put64(p, g->t0);
		p = put64(p, (uint64_t)g->o0);
		p = put64(p, dbits(g->k));
		p = put64(p, g->t1);
		p = put64(p, dbits(g->d));
	}
	return (size_t)(p - buf);
}

int clocksrc_load(struct clocksrc *c, const uint8_t *buf, size_t len)
{
	struct clocksrc n = { .tol_ns = c->tol_ns };
	struct clock_pt *pt[4] = { &n.host[0], &n.host[1], &n.meas[0], &n.meas[1] };
	const uint8_t *p = buf;
	uint64_t head;

	if (len < 136)
		return TC_ERR_MSG_MALFORMED;
	head = get64(&p);
	n.map.n = (unsigned)(head >> 32);
	if ((uint32_t)head != CLOCKSRC_SAVE_VERSION || n.map.n > CLOCKMAP_SEGS ||
	    len != 136 + (size_t)n.map.n * 40)
		return TC_ERR_MSG_MALFORMED;
	n.map.placed = get64(&p);
	n.unc = get64(&p);
	n.disagree = (int64_t)get64(&p);
	n.measured = get64(&p) != 0;
	for (unsigned i = 0; i < 4; i++) {
		pt[i]->t = get64(&p);
		pt[i]->o = (int64_t)get64(&p);
		pt[i]->have = get64(&p) != 0;
	}
	for (unsigned i = 0; i < n.map.n; i++) {
		struct clockmap_seg *g = &n.map.seg[i];

		g->t0 = get64(&p);
		g->o0 = (int64_t)get64(&p);
		g->k = bitsd(get64(&p));
		g->t1 = get64(&p);
		g->d = bitsd(get64(&p));
		/* as clockmap_target() makes them: |d| <= the drift's cap, |k| <= d + the slew */
		if (!isfinite(g->k) || !isfinite(g->d) || dabs(g->d) > CLOCKMAP_MAX_DRIFT ||
		    dabs(g->k) > SLEW_RATE + CLOCKMAP_MAX_DRIFT + 1e-9)
			return TC_ERR_MSG_MALFORMED;
	}
	*c = n;
	return 0;
}
