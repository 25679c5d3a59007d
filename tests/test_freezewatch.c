/*
 * test_freezewatch.c - check tests for agent/freezewatch.c against the
 * real kernel: a flight-recorder instance of the test's own (overwrite
 * mode, syscall events on), armed with --freeze-on on this process's
 * getppid(2); the kernel must stop that instance at the event, the watch's
 * descriptors must wake, freezewatch_check() must give the event's
 * timestamp, other processes' hits must not fire, rearm and close must
 * leave the instance as it was. The spec parser is tested without the
 * kernel.
 *
 * Needs a writable tracefs with event triggers and the syscall events;
 * skips (exit 77) saying which is missing. Every instance is named
 * tctest-fw-<runner pid>-...; the runner removes any a failed test left.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <tracefs.h>

#include "common/page.h"
#include "common/tc_error.h"
#include "agent/freezewatch.h"
#include "tests/testutil.h"

#define FIRE_EVENT	"syscalls:sys_enter_getppid"
#define MARK_EVENT	"syscalls:sys_enter_getpid"
#define MAX_RECS	65536
#define MAX_FDS		1024
#define WAKE_BOUND_MS	10000	/* a bound on a wait, not a speed check */

static pid_t runner_pid;

/* One record of the main instance's buffer. */
struct rec {
	int cpu;
	uint64_t ts;
	unsigned type;
	int pid;
};

/* The test's main instance. */
struct fixture {
	struct tracefs_instance *inst;
	char name[64];
	unsigned fire_id, mark_id;	/* the events' ids (common_type) */
};

static struct fixture fx;

static const char *inst_name(void)
{
	static int n;

	snprintf(fx.name, sizeof(fx.name), "tctest-fw-%d-%d-%d", (int)runner_pid,
		 (int)getpid(), n++);
	return fx.name;
}

static unsigned event_id(const char *sys_ev)
{
	char path[128], *text;
	unsigned id;

	snprintf(path, sizeof(path), "events/%s/id", sys_ev);
	*strchr(path + 7, ':') = '/';
	text = tracefs_instance_file_read(fx.inst, path, NULL);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	id = (unsigned)strtoul(text, NULL, 10);
	free(text);
	return id;
}

/* A flight recorder of the test's own: mono clock, overwrite, both events. */
static void main_setup(void)
{
	fx.inst = tracefs_instance_create(inst_name());
	ck_assert_msg(fx.inst != NULL, "cannot create instance %s", fx.name);
	TU_EQ(tracefs_instance_file_write(fx.inst, "trace_clock", "mono") > 0, 1);
	TU_EQ(tracefs_option_enable(fx.inst, TRACEFS_OPTION_OVERWRITE), 0);
	TU_EQ(tracefs_event_enable(fx.inst, "syscalls", "sys_enter_getppid"), 0);
	TU_EQ(tracefs_event_enable(fx.inst, "syscalls", "sys_enter_getpid"), 0);
	fx.fire_id = event_id(FIRE_EVENT);
	fx.mark_id = event_id(MARK_EVENT);
	TU_EQ(tracefs_trace_on(fx.inst), 0);
}

static void main_teardown(void)
{
	if (!fx.inst)
		return;
	tracefs_event_disable(fx.inst, NULL, NULL);
	tracefs_instance_destroy(fx.inst);
	tracefs_instance_free(fx.inst);
	fx.inst = NULL;
}

static int tracing_on(void)
{
	int on = tracefs_trace_is_on(fx.inst);

	ck_assert_int_ge(on, 0);
	return on;
}

/*
 * The tick freezewatch must choose: -1 when the kernel takes buffer_percent
 * 0 (asked here on the main instance, with write(2) as the agent's
 * libtracefs does), FREEZEWATCH_TICK_MS when it refuses it
 * (tests/test_freezewatch_refused.sh plants the refusal).
 */
static int expected_tick(void)
{
	char *path = tracefs_instance_get_file(fx.inst, "buffer_percent");
	int fd, ok;

	ck_assert_ptr_nonnull(path);
	fd = open(path, O_WRONLY | O_TRUNC);
	tracefs_put_tracing_file(path);
	if (fd < 0)
		return errno == ENOENT ? -1 : FREEZEWATCH_TICK_MS;
	ok = write(fd, "0", 1) == 1;
	close(fd);
	return ok ? -1 : FREEZEWATCH_TICK_MS;
}

static char *own_filter(void)
{
	static char f[64];

	snprintf(f, sizeof(f), "common_pid == %d", (int)getpid());
	return f;
}

static struct freezewatch *arm(const char *event, const char *filter)
{
	struct freezewatch *w = NULL;
	char err[1024] = "";
	int ret = freezewatch_open(fx.name, event, filter, NULL, &w, err, sizeof(err));

	ck_assert_msg(ret == 0, "freezewatch_open: %s (%s)", tc_strerror(ret), err);
	return w;
}

/* Poll the watch's descriptors: 1 when one is readable within @ms. */
static int watch_wakes(struct freezewatch *w, int ms)
{
	struct pollfd pfd[MAX_FDS];
	int fds[MAX_FDS], n = freezewatch_fds(w, fds, MAX_FDS), ret;

	ck_assert_int_gt(n, 0);
	ck_assert_int_le(n, MAX_FDS);
	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	ret = poll(pfd, n, ms);
	ck_assert_int_ge(ret, 0);
	return ret > 0;
}

/* The watch saw the event: its descriptors wake (unless it ticks). */
static void expect_wakes(struct freezewatch *w)
{
	if (freezewatch_tick_ms(w) < 0)
		ck_assert_int_eq(watch_wakes(w, WAKE_BOUND_MS), 1);
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

/* The records of one page of the main instance. */
static void page_recs(const struct page_layout *l, const uint8_t *page, size_t len, int cpu,
		      struct rec *recs, size_t *n)
{
	struct page_record r;
	struct page_info pi;
	struct page_iter it;

	TU_OK(page_check(l, page, len, &pi));
	page_iter_init(&it, l, &pi);
	while (page_next_record(&it, &r) == 1) {
		uint16_t type;
		int32_t pid;

		if (!page_record_is_data(&r) || r.len < 8 || *n >= MAX_RECS)
			continue;
		memcpy(&type, r.payload, 2);
		memcpy(&pid, r.payload + 4, 4);
		recs[(*n)++] = (struct rec){ cpu, r.ts, type, pid };
	}
}

/* Everything the (stopped) main instance holds, every CPU. */
static size_t main_records(struct rec *recs)
{
	struct page_layout l = page_layout_host((uint32_t)getpagesize());
	uint8_t *page = malloc(l.page_size);
	size_t n = 0;

	ck_assert_ptr_nonnull(page);
	for (int cpu = 0;; cpu++) {
		char file[64];
		ssize_t got;
		int fd;

		snprintf(file, sizeof(file), "per_cpu/cpu%d/trace_pipe_raw", cpu);
		if (!tracefs_file_exists(fx.inst, file))
			break;
		fd = tracefs_instance_file_open(fx.inst, file, O_RDONLY | O_NONBLOCK);
		ck_assert_int_ge(fd, 0);
		for (int i = 0; i < 100000 && (got = read(fd, page, l.page_size)) > 0; i++)
			page_recs(&l, page, (size_t)got, cpu, recs, &n);
		close(fd);
	}
	free(page);
	return n;
}

/* ---- firing ------------------------------------------------------------ */

START_TEST(test_fires_at_the_event)
{
	static struct rec recs[MAX_RECS];
	struct freezewatch *w = arm(FIRE_EVENT, own_filter());
	uint64_t t0, t1, ts = 0, lo, hi;
	const struct rec *hit = NULL;
	size_t n, hits = 0;

	ck_assert_int_eq(freezewatch_tick_ms(w), expected_tick());
	ck_assert_int_eq(watch_wakes(w, 0), 0);
	TU_EQ(freezewatch_check(w, &ts), 0);
	ck_assert_int_eq(tracing_on(), 1);

	syscall(SYS_getpid);
	t0 = mono_ns();
	syscall(SYS_getppid);
	t1 = mono_ns();

	ck_assert_int_eq(tracing_on(), 0);		/* the kernel froze it */
	expect_wakes(w);
	TU_EQ(freezewatch_check(w, &ts), 1);
	ck_assert_int_eq(watch_wakes(w, 0), 0);		/* drained */

	n = main_records(recs);
	for (size_t i = 0; i < n; i++)
		if (recs[i].type == fx.fire_id && recs[i].pid == getpid()) {
			hit = &recs[i];
			hits++;
		}
	ck_assert_uint_eq(hits, 1);
	ck_assert_msg(t0 <= hit->ts && hit->ts <= t1 && t0 <= ts && ts <= t1,
		      "event %llu, watch %llu, outside the call [%llu, %llu]",
		      (unsigned long long)hit->ts, (unsigned long long)ts,
		      (unsigned long long)t0, (unsigned long long)t1);
	/* the watch's ts is this event's: no other record of its CPU between */
	lo = ts < hit->ts ? ts : hit->ts;
	hi = ts < hit->ts ? hit->ts : ts;
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(&recs[i] == hit || recs[i].cpu != hit->cpu || recs[i].ts <= lo ||
			      recs[i].ts >= hi, "record type %u at %llu between event %llu and "
			      "watch %llu", recs[i].type, (unsigned long long)recs[i].ts,
			      (unsigned long long)hit->ts, (unsigned long long)ts);
	fprintf(stderr, "test_freezewatch: watch ts - event ts = %lld ns\n",
		(long long)(ts - hit->ts));
	freezewatch_close(w);
}
END_TEST

START_TEST(test_other_hits_do_not_fire)
{
	static struct rec recs[MAX_RECS];
	struct freezewatch *w = arm(FIRE_EVENT, own_filter());
	size_t n, theirs = 0;
	uint64_t ts = 0;
	int status;
	pid_t child = fork();

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		for (int i = 0; i < 100; i++)
			syscall(SYS_getppid);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_int_eq(watch_wakes(w, 0), 0);
	TU_EQ(freezewatch_check(w, &ts), 0);
	ck_assert_int_eq(tracing_on(), 1);
	TU_EQ(tracefs_trace_off(fx.inst), 0);
	n = main_records(recs);
	for (size_t i = 0; i < n; i++)
		theirs += recs[i].type == fx.fire_id && recs[i].pid == child;
	ck_assert_uint_eq(theirs, 100);	/* they happened, and froze nothing */
	freezewatch_close(w);
}
END_TEST

START_TEST(test_rearm)
{
	struct freezewatch *w = arm("sys_enter_getppid", own_filter());
	uint64_t ts1 = 0, ts2 = 0, ts3 = 0;

	syscall(SYS_getppid);
	expect_wakes(w);
	TU_EQ(freezewatch_check(w, &ts1), 1);
	syscall(SYS_getppid);			/* while frozen: no new freeze */
	TU_OK(freezewatch_rearm(w));
	ck_assert_int_eq(tracing_on(), 1);
	ck_assert_int_eq(watch_wakes(w, 0), 0);
	TU_EQ(freezewatch_check(w, &ts2), 0);
	ck_assert_int_eq(tracing_on(), 1);
	syscall(SYS_getppid);
	ck_assert_int_eq(tracing_on(), 0);
	expect_wakes(w);
	TU_EQ(freezewatch_check(w, &ts3), 1);
	ck_assert_uint_gt(ts3, ts1);
	freezewatch_close(w);
}
END_TEST

/*
 * A drain that fails (a watch descriptor that cannot be read: CPU 0's
 * replaced by a write-only one, read(2) says EBADF) still re-arms: tracing
 * on again, 0 returned, each time.
 */
START_TEST(test_rearm_after_failed_drain)
{
	struct freezewatch *w = arm(FIRE_EVENT, own_filter());
	int fds[MAX_FDS], null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	uint64_t ts = 0;

	ck_assert_int_ge(null, 0);
	ck_assert_int_gt(freezewatch_fds(w, fds, MAX_FDS), 0);
	syscall(SYS_getppid);
	ck_assert_int_eq(tracing_on(), 0);
	TU_EQ(freezewatch_check(w, &ts), 1);
	ck_assert_int_eq(dup2(null, fds[0]), fds[0]);	/* closed by freezewatch_close() */
	close(null);
	for (int i = 0; i < 2; i++) {	/* the second: the same error, said before */
		TU_OK(freezewatch_rearm(w));
		ck_assert_int_eq(tracing_on(), 1);
		TU_EQ(tracefs_trace_off(fx.inst), 0);
	}
	TU_OK(freezewatch_rearm(w));
	TU_EQ(freezewatch_check(w, &ts), -EBADF);	/* nothing fired; CPU 0 unreadable */
	ck_assert_int_eq(tracing_on(), 1);
	freezewatch_close(w);
}
END_TEST

/* A hit between rearm's drain and tracing_on 1 is frozen by the check. */
START_TEST(test_check_freezes)
{
	struct freezewatch *w = arm(FIRE_EVENT, own_filter());
	uint64_t ts = 0;

	syscall(SYS_getppid);
	TU_EQ(tracefs_trace_on(fx.inst), 0);	/* as if rearmed just after it */
	TU_EQ(freezewatch_check(w, &ts), 1);
	ck_assert_int_eq(tracing_on(), 0);
	freezewatch_close(w);
}
END_TEST

/* ---- what is left behind ----------------------------------------------- */

static char *watch_name(void)
{
	static char name[128];

	snprintf(name, sizeof(name), "%s%s", fx.name, FREEZEWATCH_SUFFIX);
	return name;
}

static bool has_traceoff(void)
{
	char *t = tracefs_event_file_read(fx.inst, "syscalls", "sys_enter_getppid", "trigger",
					  NULL);
	bool yes;

	ck_assert_ptr_nonnull(t);
	yes = strstr(t, "traceoff") && !strstr(t, "# traceon traceoff");
	free(t);
	return yes;
}

START_TEST(test_close_leaves_nothing)
{
	struct freezewatch *w = arm(FIRE_EVENT, own_filter());

	ck_assert(tracefs_instance_exists(watch_name()));
	ck_assert(has_traceoff());
	freezewatch_close(w);
	ck_assert(!tracefs_instance_exists(watch_name()));
	ck_assert(!has_traceoff());
	syscall(SYS_getppid);
	ck_assert_int_eq(tracing_on(), 1);
}
END_TEST

static void expect_open_fails(const char *event, const char *filter, int code,
			      const char *says)
{
	struct freezewatch *w = (struct freezewatch *)&w;
	char err[1024] = "";
	int ret = freezewatch_open(fx.name, event, filter, NULL, &w, err, sizeof(err));

	ck_assert_msg(ret == code, "%s if %s: got %s, want %s (%s)", event, filter,
		      tc_strerror(ret), tc_strerror(code), err);
	ck_assert_ptr_eq(w, (struct freezewatch *)&w);	/* not written */
	ck_assert_msg(strstr(err, says), "'%s' not in: %s", says, err);
	ck_assert(!tracefs_instance_exists(watch_name()));
	ck_assert(!has_traceoff());
}

START_TEST(test_refusals_leave_nothing)
{
	struct tracefs_instance *other;
	char err[256];
	struct freezewatch *w;

	expect_open_fails(FIRE_EVENT, "no_such_field == 1", -EINVAL, "refused the filter");
	expect_open_fails("syscalls:no_such_event_tc", NULL, TC_ERR_UNKNOWN_EVENT,
			  "no_such_event_tc");
	expect_open_fails("no_such_event_tc", NULL, TC_ERR_UNKNOWN_EVENT, "no_such_event_tc");
	/* someone else's traceoff on the event: refused, and left alone */
	TU_EQ(tracefs_event_file_write(fx.inst, "syscalls", "sys_enter_getppid", "trigger",
				       "traceoff if common_pid == 1") > 0, 1);
	TU_ERR(freezewatch_open(fx.name, FIRE_EVENT, NULL, NULL, &w, err, sizeof(err)),
	       -EEXIST);
	ck_assert(!tracefs_instance_exists(watch_name()));
	ck_assert(has_traceoff());
	TU_EQ(tracefs_event_file_write(fx.inst, "syscalls", "sys_enter_getppid", "trigger",
				       "!traceoff") > 0, 1);
	/* an instance of the watch's name: refused, and left alone */
	other = tracefs_instance_create(watch_name());
	ck_assert_ptr_nonnull(other);
	TU_ERR(freezewatch_open(fx.name, FIRE_EVENT, NULL, NULL, &w, err, sizeof(err)),
	       -EEXIST);
	ck_assert(tracefs_instance_exists(watch_name()));
	ck_assert(!has_traceoff());
	TU_EQ(tracefs_instance_destroy(other), 0);
	tracefs_instance_free(other);
	TU_ERR(freezewatch_open("tctest-fw-no-such-instance", FIRE_EVENT, NULL, NULL, &w, err,
				sizeof(err)), -ENOENT);
}
END_TEST

/* ---- the spec ---------------------------------------------------------- */

static void expect_spec(const char *spec, const char *event, const char *filter)
{
	char err[1024] = "", *ev = NULL, *fl = NULL;
	int ret = freezewatch_parse(spec, &ev, &fl, err, sizeof(err));

	ck_assert_msg(ret == 0, "'%s': %s (%s)", spec, tc_strerror(ret), err);
	ck_assert_str_eq(ev, event);
	if (filter)
		ck_assert_str_eq(fl, filter);
	else
		ck_assert_ptr_null(fl);
	free(ev);
	free(fl);
}

static void expect_bad_spec(const char *spec, int code, const char *says)
{
	char err[1024] = "", *ev = (char *)&ev, *fl = (char *)&fl;
	int ret = freezewatch_parse(spec, &ev, &fl, err, sizeof(err));

	ck_assert_msg(ret == code, "'%s': got %s, want %s", spec, tc_strerror(ret),
		      tc_strerror(code));
	ck_assert_msg(strstr(err, says), "'%s' not in: %s", says, err);
	ck_assert_ptr_eq(ev, (char *)&ev);
	ck_assert_ptr_eq(fl, (char *)&fl);
}

START_TEST(test_parse)
{
	expect_spec("sched_switch", "sched_switch", NULL);
	expect_spec("sched:sched_switch where prev_state == 2", "sched:sched_switch",
		    "prev_state == 2");
	expect_spec("sched_switch WHERE\tprev_pid == 1 &&\nnext_pid == 2", "sched_switch",
		    "prev_pid == 1 && next_pid == 2");
	TU_OK(freezewatch_parse("irq:irq_handler_entry where irq == 3", NULL, NULL, NULL, 0));
	expect_bad_spec("sched_*", TC_ERR_SYNTAX, "no glob");
	expect_bad_spec("sched:*", TC_ERR_SYNTAX, "no glob");
	expect_bad_spec("sched_switch,sched_wakeup", TC_ERR_SYNTAX, "no list");
	expect_bad_spec("sched_switch where", TC_ERR_UNEXPECTED_END, "^");
	expect_bad_spec("sched_switch where prev_pid ==", TC_ERR_UNEXPECTED_END, "^");
	expect_bad_spec("sched_switch where (prev_pid == 1", TC_ERR_UNEXPECTED_END,
			"--freeze-on");
	expect_bad_spec("", TC_ERR_UNEXPECTED_END, "--freeze-on");
}
END_TEST

START_TEST(test_parse_long_filter)
{
	size_t n = 4000;
	char *spec = malloc(n + 64), *p;

	ck_assert_ptr_nonnull(spec);
	p = spec + sprintf(spec, "sched_switch where prev_pid == 1");
	while ((size_t)(p - spec) < n)
		p += sprintf(p, " || prev_pid == 1");
	expect_bad_spec(spec, TC_ERR_TOO_LONG, "longer than");
	free(spec);
}
END_TEST

/* ---- runner ------------------------------------------------------------ */

static int sweep_one(const char *name, void *prefix)
{
	struct tracefs_instance *inst;

	if (strncmp(name, prefix, strlen(prefix)))
		return 0;
	fprintf(stderr, "test_freezewatch: removing leftover instance %s\n", name);
	inst = tracefs_instance_alloc(NULL, name);
	if (inst) {
		tracefs_event_file_write(inst, "syscalls", "sys_enter_getppid", "trigger",
					 "!traceoff");
		tracefs_event_disable(inst, NULL, NULL);
		tracefs_instance_destroy(inst);
		tracefs_instance_free(inst);
	}
	return 0;
}

static void sweep_instances(void)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "tctest-fw-%d-", (int)runner_pid);
	tracefs_instances_walk(sweep_one, prefix);
}

static Suite *freezewatch_suite(bool kernel)
{
	Suite *s = suite_create("freezewatch");
	TCase *tc = tcase_create("spec");

	tu_add_tests(tc, TU_TESTS(test_parse, test_parse_long_filter));
	suite_add_tcase(s, tc);
	if (!kernel)
		return s;
	tc = tcase_create("kernel");
	tcase_add_checked_fixture(tc, main_setup, main_teardown);
	tcase_add_unchecked_fixture(tc, NULL, sweep_instances);
	tu_add_tests(tc, TU_TESTS(test_fires_at_the_event, test_other_hits_do_not_fire,
				  test_rearm, test_rearm_after_failed_drain, test_check_freezes,
				  test_close_leaves_nothing,
				  test_refusals_leave_nothing));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

/* Why the kernel tests cannot run here, or NULL. */
static const char *kernel_missing(void)
{
	static char why[512];
	const char *dir = tracefs_tracing_dir();
	char path[300];

	if (!dir)
		return "no tracefs mounted";
	snprintf(path, sizeof(path), "%s/instances", dir);
	if (access(path, W_OK) < 0) {
		snprintf(why, sizeof(why), "%s is not writable: %s", path, strerror(errno));
		return why;
	}
	snprintf(path, sizeof(path), "%s/events/syscalls/sys_enter_getppid/trigger", dir);
	if (access(path, F_OK) < 0)
		return "no syscall events with triggers (CONFIG_FTRACE_SYSCALLS)";
	return NULL;
}

int main(void)
{
	const char *why = kernel_missing();
	int rc;

	runner_pid = getpid();
	if (why)
		printf("test_freezewatch: SKIP the kernel tests: %s\n", why);
	rc = tu_run(freezewatch_suite(!why), NULL);
	sweep_instances();
	return rc == EXIT_SUCCESS && why ? 77 : rc;
}
