/*
 * freezewatch.c - `bench/run freezewatch` (issue 38): what an armed
 * --freeze-on watch (agent/freezewatch.c) costs, and how soon it sees a
 * freeze.
 *
 *   armed    a flight recorder of our own (overwrite, sched_switch on,
 *            mono clock) armed on 'sched_switch where prev_pid == -1'
 *            (never true) while two processes ping-pong over pipes (a
 *            sched_switch storm); this process sleeps in poll() on the
 *            watch's descriptors as the agent's loop would. Its CPU time
 *            (getrusage RUSAGE_SELF, children not counted) over the run
 *            is armed_cpu_pct.
 *   kernel   what the armed watch costs each hit of its event inside the
 *            kernel (the trigger's filter, the watch's event filter):
 *            this thread's CPU per getppid(2) while the recorder records
 *            it: not armed, with the trigger alone, armed (filters never
 *            true), chunks interleaved, medians.
 *   latency  a child calls getppid(2) at random moments (5-25 ms apart,
 *            each after the previous freeze was rearmed); the watch is
 *            armed on 'sys_enter_getppid where common_pid == CHILD'.
 *            Latency: from the event's timestamp (the trace clock, mono)
 *            to the moment freezewatch_check() returned 1
 *            (CLOCK_MONOTONIC), idle and under the same storm.
 *
 * Usage: bench-freezewatch [SECONDS [FIRES]] (defaults 10, 50). Prints
 * one line per part; the last:
 *   freezewatch: armed_cpu_pct=.. latency_us_p50=.. latency_us_max=..
 * (latency under the storm, the worse case on a small machine).
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <tracefs.h>

#include "common/tc_error.h"
#include "agent/freezewatch.h"

#define MAX_FDS		1024
#define MAX_FIRES	1000

static struct tracefs_instance *inst;
static char inst_name[64];

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

static int die(const char *what, int err)
{
	fprintf(stderr, "bench-freezewatch: %s: %s\n", what, tc_strerror(err));
	return 1;
}

/* The flight recorder: overwrite, mono, sched_switch and getppid on. */
static int recorder_open(void)
{
	snprintf(inst_name, sizeof(inst_name), "tcbench-fw-%d", (int)getpid());
	inst = tracefs_instance_create(inst_name);
	if (!inst ||
	    tracefs_instance_file_write(inst, "trace_clock", "mono") < 0 ||
	    tracefs_instance_file_write(inst, "buffer_size_kb", "1024") < 0 ||
	    tracefs_option_enable(inst, TRACEFS_OPTION_OVERWRITE) < 0 ||
	    tracefs_event_enable(inst, "sched", "sched_switch") < 0 ||
	    tracefs_event_enable(inst, "syscalls", "sys_enter_getppid") < 0 ||
	    tracefs_trace_on(inst) < 0)
		return errno ? -errno : TC_ERR_TRACEFS;
	return 0;
}

static void recorder_close(void)
{
	if (!inst)
		return;
	tracefs_event_disable(inst, NULL, NULL);
	tracefs_instance_destroy(inst);
	tracefs_instance_free(inst);
}

/* ---- the storm: two processes passing a byte back and forth --------- */

struct storm {
	pid_t pid[2];
	volatile uint64_t *trips;	/* shared: the first side's round trips */
};

static void storm_side(int in, int out, volatile uint64_t *trips, bool first)
{
	char c = 0;

	if (first && write(out, &c, 1) != 1)
		_exit(1);
	while (read(in, &c, 1) == 1 && write(out, &c, 1) == 1)
		if (first)
			(*trips)++;
	_exit(0);
}

static int storm_start(struct storm *s)
{
	int a[2], b[2];

	s->trips = mmap(NULL, sizeof(*s->trips), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s->trips == MAP_FAILED || pipe(a) || pipe(b))
		return -errno;
	*s->trips = 0;
	for (int i = 0; i < 2; i++) {
		s->pid[i] = fork();
		if (s->pid[i] < 0)
			return -errno;
		if (s->pid[i] == 0) {
			if (i == 0)
				storm_side(a[0], b[1], s->trips, true);
			storm_side(b[0], a[1], s->trips, false);
		}
	}
	close(a[0]); close(a[1]); close(b[0]); close(b[1]);
	return 0;
}

/* Stop the storm: its round trips, and its CPU seconds in *@cpu_s. */
static uint64_t storm_stop(struct storm *s, double *cpu_s)
{
	uint64_t n;

	*cpu_s = 0;
	for (int i = 0; i < 2; i++)
		kill(s->pid[i], SIGKILL);
	for (int i = 0; i < 2; i++) {
		struct rusage ru;
		int st;

		if (wait4(s->pid[i], &st, 0, &ru) > 0)
			*cpu_s += tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	}
	n = *s->trips;
	munmap((void *)s->trips, sizeof(*s->trips));
	return n;
}

/* ---- armed cost -------------------------------------------------------- */

/* Sleep in poll() on the watch for @secs as the agent would; fired count. */
static int watch_for(struct freezewatch *w, double secs)
{
	int fds[MAX_FDS], n = freezewatch_fds(w, fds, MAX_FDS), fired = 0;
	struct pollfd pfd[MAX_FDS];
	uint64_t end = mono_ns() + (uint64_t)(secs * 1e9);
	uint64_t ts;

	for (int i = 0; i < n && i < MAX_FDS; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	for (uint64_t now = mono_ns(); now < end; now = mono_ns()) {
		int ms = (int)((end - now) / 1000000) + 1;

		if (freezewatch_tick_ms(w) > 0)
			ms = freezewatch_tick_ms(w);
		if (poll(pfd, n < MAX_FDS ? n : MAX_FDS, ms) < 0 && errno != EINTR)
			return -errno;
		if (freezewatch_check(w, &ts) == 1)
			fired++;
	}
	return fired;
}

/*
 * Watch @w for @secs under the storm: this process's CPU % in *@self_pct,
 * the fires in *@fired; the storm's round trips per second returned.
 */
static double storm_watch(struct freezewatch *w, double secs, double *self_pct, int *fired)
{
	double cpu0, storm_cpu, wall;
	uint64_t trips, t0;
	struct storm s;
	int ret = storm_start(&s);

	if (ret < 0)
		return ret;
	t0 = mono_ns();
	cpu0 = self_cpu_s();
	*fired = watch_for(w, secs);
	wall = (mono_ns() - t0) / 1e9;
	*self_pct = (self_cpu_s() - cpu0) / wall * 100;
	trips = storm_stop(&s, &storm_cpu);
	return trips / wall;
}

static int bench_armed(double secs, double *armed_pct)
{
	char err[512] = "";
	struct freezewatch *w;
	int fired = 0, tick, ret;
	double rate;

	ret = freezewatch_open(inst_name, "sched:sched_switch", "prev_pid == -1", NULL, &w, err,
			       sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "bench-freezewatch: %s\n", err);
		return ret;
	}
	rate = storm_watch(w, secs, armed_pct, &fired);
	tick = freezewatch_tick_ms(w);
	freezewatch_close(w);
	printf("armed: secs=%.1f self_cpu_pct=%.4f fires=%d tick_ms=%d "
	       "storm_round_trips_per_s=%.0f\n", secs, *armed_pct, fired, tick, rate);
	return 0;
}

/* ---- the kernel's side ------------------------------------------------- */

static double thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* CPU ns per getppid(2) over one chunk of @calls. */
static double getppid_ns(int calls)
{
	double t0 = thread_cpu_ns();

	for (int i = 0; i < calls; i++)
		syscall(SYS_getppid);
	return (thread_cpu_ns() - t0) / calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define KCHUNKS	15
#define KCALLS	200000

/* The bare trigger, no watch: its share of what the armed watch costs. */
static int trigger_only(bool on)
{
	const char *cmd = on ? "traceoff if common_pid == -1" : "!traceoff";

	return tracefs_event_file_write(inst, "syscalls", "sys_enter_getppid", "trigger",
					cmd) < 0 ? -EIO : 0;
}

/*
 * What an armed watch costs each hit of its event in the kernel (the
 * trigger's filter on the main instance, the watch's event filter): CPU
 * ns per getppid(2), recorded by the flight recorder; not armed, with the
 * trigger alone, armed (a filter never true); chunks interleaved, medians.
 */
static int bench_kernel(void)
{
	double plain[KCHUNKS], trig[KCHUNKS], armed[KCHUNKS];
	char err[512] = "";
	int ret = 0;

	for (int i = 0; i < KCHUNKS && ret == 0; i++) {
		struct freezewatch *w;

		plain[i] = getppid_ns(KCALLS);
		ret = trigger_only(true);
		trig[i] = getppid_ns(KCALLS);
		if (ret == 0)
			ret = trigger_only(false);
		if (ret == 0)
			ret = freezewatch_open(inst_name, "syscalls:sys_enter_getppid",
					       "common_pid == -1", NULL, &w, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "bench-freezewatch: kernel: %s\n", err);
			break;
		}
		armed[i] = getppid_ns(KCALLS);
		freezewatch_close(w);
	}
	if (ret < 0)
		return ret;
	qsort(plain, KCHUNKS, sizeof(double), cmp_double);
	qsort(trig, KCHUNKS, sizeof(double), cmp_double);
	qsort(armed, KCHUNKS, sizeof(double), cmp_double);
	printf("kernel: getppid_ns recorded=%.0f with_trigger=%.0f armed=%.0f "
	       "extra_ns_per_hit=%.0f of_which_watch=%.0f (filters never true; medians of %d "
	       "chunks)\n", plain[KCHUNKS / 2], trig[KCHUNKS / 2], armed[KCHUNKS / 2],
	       armed[KCHUNKS / 2] - plain[KCHUNKS / 2], armed[KCHUNKS / 2] - trig[KCHUNKS / 2],
	       KCHUNKS);
	return 0;
}

/* ---- latency ----------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The firing child: one getppid per byte from @go, after a random pause. */
static void firer(int go)
{
	char c;

	srand((unsigned)getpid());
	while (read(go, &c, 1) == 1) {
		struct timespec d = { 0, (5 + rand() % 20) * 1000000L };

		nanosleep(&d, NULL);
		syscall(SYS_getppid);
	}
	_exit(0);
}

/* Wait for one freeze: its latency in ns into *@lat. */
static int wait_fire(struct freezewatch *w, struct pollfd *pfd, int n, uint64_t *lat)
{
	uint64_t ts, now;

	for (int i = 0; i < 10000; i++) {
		int tick = freezewatch_tick_ms(w);
		int ret;

		if (poll(pfd, n, tick > 0 ? tick : 2000) < 0 && errno != EINTR)
			return -errno;
		ret = freezewatch_check(w, &ts);
		now = mono_ns();
		if (ret < 0)
			return ret;
		if (ret == 1) {
			*lat = now > ts ? now - ts : 0;
			return 0;
		}
	}
	return -ETIMEDOUT;
}

static int latency_run(int fires, bool storm, uint64_t *lat)
{
	int go[2], fds[MAX_FDS], n, ret = 0;
	struct pollfd pfd[MAX_FDS];
	struct freezewatch *w = NULL;
	char err[512] = "", filter[64];
	struct storm s;
	double storm_cpu;
	pid_t child;

	if (pipe(go) < 0)
		return -errno;
	child = fork();
	if (child == 0) {
		close(go[1]);
		firer(go[0]);
	}
	close(go[0]);
	snprintf(filter, sizeof(filter), "common_pid == %d", (int)child);
	ret = freezewatch_open(inst_name, "syscalls:sys_enter_getppid", filter, NULL, &w, err,
			       sizeof(err));
	if (ret < 0)
		fprintf(stderr, "bench-freezewatch: %s\n", err);
	if (ret == 0 && storm && (ret = storm_start(&s)) < 0)
		storm = false;
	n = ret == 0 ? freezewatch_fds(w, fds, MAX_FDS) : 0;
	for (int i = 0; i < n && i < MAX_FDS; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	for (int i = 0; ret == 0 && i < fires; i++) {
		ret = write(go[1], "x", 1) == 1 ? 0 : -errno;
		if (ret == 0)
			ret = wait_fire(w, pfd, n < MAX_FDS ? n : MAX_FDS, &lat[i]);
		if (ret == 0)
			ret = freezewatch_rearm(w);
	}
	if (storm)
		storm_stop(&s, &storm_cpu);
	close(go[1]);
	waitpid(child, NULL, 0);
	freezewatch_close(w);
	tracefs_trace_on(inst);
	return ret;
}

static int bench_latency(int fires, bool storm, double *p50, double *max)
{
	uint64_t lat[MAX_FIRES];
	int ret = latency_run(fires, storm, lat);

	if (ret < 0)
		return ret;
	qsort(lat, fires, sizeof(lat[0]), cmp_u64);
	*p50 = lat[fires / 2] / 1e3;
	*max = lat[fires - 1] / 1e3;
	printf("latency (%s): fires=%d us_p50=%.1f us_p90=%.1f us_max=%.1f\n",
	       storm ? "sched_switch storm" : "idle", fires, *p50, lat[fires * 9 / 10] / 1e3,
	       *max);
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10, pct = 0, p50, max;
	int fires = argc > 2 ? atoi(argv[2]) : 50, ret;

	if (secs <= 0 || fires < 1 || fires > MAX_FIRES) {
		fprintf(stderr, "usage: bench-freezewatch [SECONDS [FIRES<=%d]]\n", MAX_FIRES);
		return 2;
	}
	ret = recorder_open();
	if (ret == 0)
		ret = bench_armed(secs, &pct);
	if (ret == 0)
		ret = bench_kernel();
	if (ret == 0)
		ret = bench_latency(fires, false, &p50, &max);
	if (ret == 0)
		ret = bench_latency(fires, true, &p50, &max);
	recorder_close();
	if (ret < 0)
		return die("failed", ret);
	printf("freezewatch: armed_cpu_pct=%.4f latency_us_p50=%.1f latency_us_max=%.1f\n", pct,
	       p50, max);
	return 0;
}
