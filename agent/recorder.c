/*
 * recorder.c - the agent's flight recorder (see recorder.h).
 *
 * While armed nobody reads the instance's buffer (reading trace_pipe_raw
 * consumes it), so in overwrite mode the kernel keeps the newest pages and
 * counts what it overwrote (per_cpu/cpuN/stats, overrun). A freeze
 * switches tracing off, the pump reads every page left (reader_drain())
 * and this module notes what they hold: the trace-clock time of the first
 * and last event (the snapshot's window, which the collector turns into
 * wall-clock time as it does for the events), pages and events.
 *
 * With --freeze-on the kernel freezes the instance itself, and the freeze
 * watch (freezewatch.h) says so: its descriptors are in the pump's poll
 * set only while the recorder waits for the trigger (armed, no FROZE sent,
 * no snapshot held), so a watch that holds records while a snapshot is
 * being taken or waits for its thaw never keeps poll() awake; the thaw
 * drains those (freezewatch_rearm()).
 *
 * The states, one at a time (enum rec_state):
 *
 *   ARMED     tracing on, the watch polled: a hit is a new trigger
 *   FIRED     the trigger froze the instance, FROZE sent; the collector's
 *             FREEZE for it, or RECORDER_FROZE_WAIT_MS, ends it
 *   SHIPPING  recorder_freeze() to recorder_end(): the buffer is read
 *   HELD      the snapshot ended, tracing off until the collector's thaw
 *             or RECORDER_THAW_WAIT_MS
 *
 * Only the way back to ARMED (recorder_rearm()) drains the watch and
 * switches tracing on: whatever hit the watch recorded since the freeze,
 * in FIRED, SHIPPING or HELD (a trigger program switching out once more,
 * exiting), froze nothing new and is never a second FROZE. A FREEZE that
 * waits in FIRED or HELD moves to SHIPPING; from ARMED too, as a freeze
 * by hand or by another host's trigger.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracefs.h>

/* the agent's lines, wherever in the agent they come from */
#define LOG_PREFIX "agent"
#include "agent/freezewatch.h"
#include "agent/hostinfo.h"
#include "agent/reader.h"
#include "agent/recorder.h"
#include "agent/tracing.h"
#include "common/log.h"
#include "common/page.h"
#include "common/ring.h"
#include "common/tc_error.h"
#include "common/util.h"

enum rec_state { REC_ARMED, REC_FIRED, REC_SHIPPING, REC_HELD };

struct recorder {
	struct recorder_conf c;
	struct tracing *t;		/* borrowed */
	struct freezewatch *fw;		/* --freeze-on's trigger and its watch; NULL: none */
	uint64_t asked[RECORDER_ASKED_MAX];	/* FREEZE ids, oldest first */
	unsigned nasked;
	uint64_t dropped;		/* FREEZEs past RECORDER_ASKED_MAX */
	uint64_t base_overrun;		/* the kernel's overrun at the last thaw */
	/* the snapshot being read */
	uint64_t id, pages, events, first_ns, last_ns;
	uint64_t off_ns;		/* the trace clock once tracing was off for sure;
					 * 0: not known (FIRED, SHIPPING, HELD) */
	enum rec_state state;
	int64_t state_ms;		/* util_now_ms() when FIRED or HELD began */
	bool thawed;			/* SHIPPING: the collector thawed it already */
	/* the freeze watch */
	int64_t next_check;		/* util_now_ms() of the next fallback check; 0: none */
	int check_err;			/* the last check's error, logged; 0: none */
	uint64_t snapshots;
	struct proto_snap_end kept[RECORDER_KEEP];	/* the last SNAP_ENDs, a ring */
	char event[2 * PROTO_MAX_EVENT_NAME + 2];	/* the trigger's event, for FROZE */
};

/* The kernel's overrun summed over the instance's CPUs. */
static uint64_t recorder_overrun(struct recorder *r)
{
	struct tracing_cpu_stats st;
	uint64_t sum = 0;

	for (int cpu = 0; cpu < tracing_ncpus(r->t); cpu++)
		if (tracing_cpu_stats(r->t, cpu, &st) == 0)
			sum += st.overrun;
	return sum;
}

/*
 * The instance's trace clock now, in its events' units (x86-tsc: counts;
 * mono, or a clock placed as if it were mono: ns): read after tracing_on 0
 * returned, a moment no event of the frozen buffer comes after.
 */
static uint64_t recorder_trace_now(const struct recorder *r)
{
	return ring_clock_now(strcmp(tracing_clock(r->t), "x86-tsc") ? RING_CLOCK_MONO :
			      RING_CLOCK_TSC);
}

static int recorder_overwrite(struct recorder *r, char *err, size_t errlen)
{
	struct tracefs_instance *inst = tracing_instance(r->t);

	errno = 0;
	if (tracefs_instance_file_write(inst, "options/overwrite", "1") >= 0)
		return 0;
	tc_seterr(err, errlen, "tracefs instance %s: cannot set options/overwrite: %s",
		  tracing_name(r->t), errno ? strerror(errno) : "refused");
	return errno ? -errno : TC_ERR_TRACEFS;
}

/*
 * --freeze-on: the freeze watch on the instance, `traceoff [if FILTER]` on
 * its event; FROZE names the event as the spec does (NAME or SYSTEM:NAME).
 */
static int recorder_watch(struct recorder *r, char *err, size_t errlen)
{
	char *event = NULL, *filter = NULL;
	int ret = freezewatch_parse(r->c.freeze_on, &event, &filter, err, errlen);

	if (ret == 0)
		ret = freezewatch_open(tracing_name(r->t), event, filter, tracing_clock(r->t),
				       &r->fw, err, errlen);
	if (ret == 0)
		snprintf(r->event, sizeof(r->event), "%s", event);
	if (ret == 0 && freezewatch_tick_ms(r->fw) >= 0)
		r->next_check = util_now_ms();
	free(event);
	free(filter);
	return ret;
}

int recorder_new(const struct recorder_conf *c, struct tracing *t, struct recorder **out,
		 char *err, size_t errlen)
{
	struct recorder *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	r->c = *c;
	r->t = t;
	ret = recorder_overwrite(r, err, errlen);
	if (ret == 0 && c->freeze_on)
		ret = recorder_watch(r, err, errlen);
	if (ret < 0) {
		recorder_free(r);
		return ret;
	}
	r->base_overrun = recorder_overrun(r);
	*out = r;
	return 0;
}

void recorder_free(struct recorder *r)
{
	if (!r)
		return;
	freezewatch_close(r->fw);
	free(r);
}

/*
 * Back to ARMED, tracing on again: the snapshot held is whole (or waited
 * long enough). With the freeze watch, its hits since the freeze are
 * dropped first: they froze nothing new.
 */
static void recorder_rearm(struct recorder *r)
{
	int ret = r->fw ? freezewatch_rearm(r->fw) : tracing_start(r->t);

	if (ret < 0)
		log_warn("flight recorder: cannot switch tracing on again: %s", tc_strerror(ret));
	r->state = REC_ARMED;
	r->thawed = false;
	r->off_ns = 0;
}

/* The thaw of snapshot @id: only the one held (or being read) is ours. */
static void recorder_thaw(struct recorder *r, uint64_t id)
{
	if (r->state == REC_HELD && r->id == id)
		recorder_rearm(r);
	else if (r->state == REC_SHIPPING && r->id == id)
		r->thawed = true;	/* the collector waited no longer: at the end */
}

void recorder_asked(struct recorder *r, const struct proto_freeze *f)
{
	uint64_t id = f->id;

	if (f->thaw) {
		recorder_thaw(r, id);
		return;
	}
	if (r->nasked == RECORDER_ASKED_MAX) {
		if (!r->dropped++)
			log_warn("flight recorder: more than %d freezes wait: the later ones are "
				 "dropped", RECORDER_ASKED_MAX);
		return;
	}
	r->asked[r->nasked++] = id;
}

bool recorder_due(const struct recorder *r)
{
	return r->nasked != 0;
}

int recorder_freeze(struct recorder *r, struct proto_snap_begin *b)
{
	bool off = r->state == REC_FIRED || r->state == REC_HELD;	/* since off_ns */
	int ret = tracing_stop(r->t);

	if (!off)
		r->off_ns = ret < 0 ? 0 : recorder_trace_now(r);

	r->id = r->asked[0];
	memmove(r->asked, r->asked + 1, --r->nasked * sizeof(r->asked[0]));
	r->pages = r->events = r->first_ns = r->last_ns = 0;
	/* the trigger's freeze, or a snapshot held before, is superseded */
	r->state = REC_SHIPPING;
	r->thawed = false;
	*b = (struct proto_snap_begin){ .id = r->id, .frozen_ns = hostinfo_trace_now(NULL) };
	return ret;
}

/*
 * The trace-clock times of the first and last event of @n bytes of
 * records at @data, the page's time @ts before them; false: none.
 */
static bool recorder_span(const uint8_t *data, size_t n, uint64_t ts, uint32_t page_size,
			  uint64_t *first, uint64_t *last)
{
	struct page_layout l = page_layout_host(page_size);
	struct page_record rec;
	struct page_iter it;
	bool any = false;

	page_iter_raw(&it, &l, data, n, ts);
	while (page_next_record(&it, &rec) == 1) {
		if (!page_record_is_data(&rec))
			continue;
		if (!any)
			*first = rec.ts;
		*last = rec.ts;
		any = true;
	}
	return any;
}

void recorder_page(struct recorder *r, const struct reader_page *pg, uint32_t page_size)
{
	struct page_layout l = page_layout_host(page_size);
	uint64_t first = 0, last = 0;
	struct page_info pi;
	bool any;

	r->pages++;
	r->events += pg->events;
	if (pg->head_len >= PAGE_TS_SIZE) {	/* mmap: the header apart from the records */
		uint64_t ts;

		memcpy(&ts, pg->head, sizeof(ts));
		any = recorder_span(pg->data, pg->len, ts, page_size, &first, &last);
	} else if (page_check(&l, pg->data, pg->len, &pi) == 0) {
		any = recorder_span(pi.data, pi.size, pi.ts, page_size, &first, &last);
	} else {
		any = false;	/* the collector says what is wrong with it */
	}
	if (!any)
		return;
	if (!r->first_ns || first < r->first_ns)
		r->first_ns = first;
	if (last > r->last_ns)
		r->last_ns = last;
}

void recorder_end(struct recorder *r, struct proto_snap_end *e)
{
	uint64_t overrun = recorder_overrun(r);
	*e = (struct proto_snap_end){ .id = r->id, .pages = r->pages, .events = r->events,
				      .lost = overrun - r->base_overrun,
				      .first_ns = r->events ? r->first_ns : 0,
				      .last_ns = r->events ? r->last_ns : 0,
				      .off_ns = r->off_ns <= INT64_MAX ? r->off_ns : 0 };
	if (e->first_ns > e->last_ns)	/* pages of several CPUs: never out of order */
		e->first_ns = e->last_ns;
	r->base_overrun = overrun;
	r->kept[r->snapshots++ % RECORDER_KEEP] = *e;
	log_info("flight recorder: snapshot %llu shipped: %llu pages, %llu events, %llu "
		 "overwritten before it; tracing off by trace clock %llu",
		 (unsigned long long)r->id, (unsigned long long)r->pages,
		 (unsigned long long)r->events, (unsigned long long)e->lost,
		 (unsigned long long)e->off_ns);
	r->state = REC_HELD;
	r->state_ms = util_now_ms();
	if (r->thawed)
		recorder_rearm(r);
}

/* Whether the recorder waits for its trigger: the watch's descriptors matter. */
static bool recorder_armed(const struct recorder *r)
{
	return r->fw && r->state == REC_ARMED && !r->nasked;
}

int recorder_fds(const struct recorder *r, int *fds, int max)
{
	return recorder_armed(r) ? freezewatch_fds(r->fw, fds, max) : 0;
}

/* How long FIRED and HELD wait for the collector; -1: no limit. */
static int recorder_state_wait_ms(const struct recorder *r)
{
	return r->state == REC_FIRED ? RECORDER_FROZE_WAIT_MS :
	       r->state == REC_HELD ? RECORDER_THAW_WAIT_MS : -1;
}

/*
 * FIRED with no FREEZE (the collector is gone, lost it, or refused the
 * FROZE), or HELD with no thaw, for too long: armed again. A FREEZE that
 * waits is taken first (recorder_freeze()).
 */
static void recorder_expired(struct recorder *r, int64_t now_ms)
{
	int wait = recorder_state_wait_ms(r);

	if (wait < 0 || r->nasked || now_ms - r->state_ms < wait)
		return;
	if (r->state == REC_FIRED)
		log_warn("flight recorder: frozen by its trigger, but no freeze came within %d ms: "
			 "armed again", wait);
	else
		log_warn("flight recorder: snapshot %llu was not thawed within %d ms: armed again",
			 (unsigned long long)r->id, wait);
	recorder_rearm(r);
}

int recorder_frozen(struct recorder *r, int64_t now_ms, bool woken, struct proto_froze *f)
{
	uint64_t ts;
	int ret;

	recorder_expired(r, now_ms);
	if (!recorder_armed(r))
		return 0;
	if (!woken && !(r->next_check && now_ms >= r->next_check))
		return 0;
	if (r->next_check)
		r->next_check = now_ms + freezewatch_tick_ms(r->fw);
	ret = freezewatch_check(r->fw, &ts);
	if (ret < 0 && ret != r->check_err)	/* once per kind: it may come each wakeup */
		log_warn("flight recorder: the freeze watch: %s", tc_strerror(ret));
	r->check_err = ret < 0 ? ret : 0;
	if (ret != 1)
		return 0;
	r->state = REC_FIRED;
	r->state_ms = now_ms;
	r->off_ns = recorder_trace_now(r);	/* freezewatch_check() made sure it is off */
	*f = (struct proto_froze){ .event = r->event, .trace_ns = ts };
	log_info("flight recorder: its trigger (%s) froze the instance", r->event);
	return 1;
}

int recorder_wait_ms(const struct recorder *r, int64_t now_ms)
{
	int wait = recorder_state_wait_ms(r);
	int64_t t;

	if (wait >= 0)
		t = r->state_ms + wait - now_ms;
	else if (recorder_armed(r) && r->next_check)
		t = r->next_check - now_ms;
	else
		return -1;
	return t < 0 ? 0 : (int)t;
}

int recorder_replay(const struct recorder *r, int (*fn)(void *arg, const struct proto_snap_end *e),
		    void *arg)
{
	uint64_t first = r->snapshots > RECORDER_KEEP ? r->snapshots - RECORDER_KEEP : 0;
	int ret = 0;

	for (uint64_t i = first; ret == 0 && i < r->snapshots; i++)
		ret = fn(arg, &r->kept[i % RECORDER_KEEP]);
	return ret;
}
