/*
 * main.c - traceagent: trace this host's kernel in a tracefs instance of
 * its own and ship the raw ring-buffer pages to tracecollectd over mutual
 * TLS. Here: signals, setting up the instance as the options ask, the
 * run from start to finish, the summary and the exit status. The options
 * themselves (the table, the defaults, --help, -C FILE) are options.c's,
 * the connections to the collector session.c's, the pages on their way
 * pump.c's (its pump_run() is the agent's loop); tracing.c, reader.c,
 * spool.c, ship.c and ubuf.c do the work below them.
 *
 * Exit status: 0 after a clean run, 1 for a runtime failure (one line on
 * stderr saying what and why), 2 for a usage error (options.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>

#define LOG_PREFIX "agent"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "agent/exec.h"
#include "agent/ftrace.h"
#include "agent/hostinfo.h"
#include "agent/options.h"
#include "agent/pump.h"
#include "agent/recorder.h"
#include "agent/session.h"
#include "agent/stacks.h"
#include "agent/tracing.h"
#include "agent/ubuf.h"
#include "proto/tls.h"

#define PROG			OPTIONS_PROG
#define TSC_CALIBRATE_US	100000	/* TSC against CLOCK_MONOTONIC: 100 ms */

/*
 * One run, owned by main(): the options, the host facts, the instance,
 * the --exec program. The connections are the session's, the pages the
 * pump's; both borrow the instance.
 */
struct agent {
	struct options o;
	struct hostinfo hi;
	struct tracing *t;
	struct ring_clock_conv tsc;	/* the instance's TSC in ns ("x86-tsc") */
	bool tsc_clock;			/* the instance runs on "x86-tsc" */
	bool ftrace_on;
	struct stacks *stacks;		/* --stacktrace's triggers */
	struct recorder *rec;		/* --flight-recorder; NULL: none */
	struct session *s;		/* the connections to the collector */
	struct pump *p;			/* the pages */
	bool reading;			/* the ring buffers are open */
	int64_t end;			/* --duration: stop then (ms); 0: never */
	pid_t child;			/* --exec, until reaped */
	int child_status;
	bool child_done;
	int64_t drain_ms;		/* tracing off to DONE */
	bool gave_up;			/* --drain-timeout passed: */
	uint64_t undelivered_pages;	/* what the collector did not */
	uint64_t undelivered_events;	/* acknowledge by then */
	char err[768];
};

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t snapshot_requested;

static void on_signal(int sig)
{
	if (sig == SIGCHLD)
		return;		/* only wakes poll(); the loop reaps */
	if (sig == SIGUSR1)
		snapshot_requested = 1;
	else
		stop_requested = stop_requested + 1;	/* a second one ends the drain */
}

/* SIGINT/SIGTERM only set a flag (no SA_RESTART, so poll() wakes up). */
static void signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}


static int fail(struct agent *a, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record the one line main() prints for a runtime failure. */
static int fail(struct agent *a, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
	return ret < 0 ? ret : TC_ERR_TRACEFS;
}

/*
 * -p: the kernel's function tracer in our instance, and its events'
 * formats. A kernel that refuses it gets one line; the events go on.
 */
static int setup_ftrace(struct agent *a)
{
	const char *ev;
	char why[512];
	size_t i;
	int ret;

	if (!a->o.tracer)
		return 0;
	ret = ftrace_start(tracing_instance(a->t), a->o.tracer,
			   a->o.ffilters, a->o.nffilters, why, sizeof(why));
	if (ftrace_refused(ret)) {
		fprintf(stderr, "%s" PROG ": %s; tracing the events only\n",
			log_prio_prefix(LOGL_WARN), why);
		return 0;
	}
	if (ret < 0)
		return fail(a, ret, "%s", why);
	a->ftrace_on = true;
	for (i = 0; ret == 0 && (ev = ftrace_event(a->o.tracer, i)); i++)
		ret = tracing_track(a->t, "ftrace", ev);
	return ret < 0 ? fail(a, ret, "out of memory") : 0;
}

/*
 * The sub-buffer size. Asked for (--subbuf-kb): the kernel's refusal fails,
 * unless the instance has that size already. The default: a refusal, or a
 * kernel without the setting, keeps the kernel's size, said in one line.
 */
static int set_subbuf(struct agent *a, char *why, size_t len)
{
	int ret = tracing_set_subbuf(a->t, a->o.subbuf_kb, why, len);
	unsigned kb = tracing_page_size(a->t) / 1024;

	if (ret == 0)
		return 0;
	if (a->o.subbuf_set)
		return fail(a, ret, "--subbuf-kb %zu: %s (the instance has %u KiB)",
			    a->o.subbuf_kb, why, kb);
	if (ret == -EOPNOTSUPP)
		log_info("this kernel has no buffer_subbuf_size_kb: using its "
			 "%u KiB sub-buffers", kb);
	else
		log_warn("%s; using the kernel's %u KiB sub-buffers", why, kb);
	return 0;
}

/* Whether /proc/cpuinfo says the TSC runs at one rate, also in idle states. */
static bool tsc_invariant(void)
{
	char line[4096];
	bool ok = false;
	FILE *f = fopen("/proc/cpuinfo", "re");

	while (f && !ok && fgets(line, sizeof(line), f))
		ok = !strncmp(line, "flags", 5) && strstr(line, " constant_tsc") &&
		     strstr(line, " nonstop_tsc");
	if (f)
		fclose(f);
	return ok;
}

/*
 * x86-tsc, when the kernel takes it and the TSC's rate can be measured;
 * else why not in @why. Return: 0 or the reason's code.
 */
static int try_tsc(struct agent *a, char *why, size_t len)
{
	int ret = ring_clock_calibrate(TSC_CALIBRATE_US, &a->tsc);

	if (ret < 0)
		snprintf(why, len, "cannot measure the TSC's rate: %s",
			 tc_strerror(ret));
	else
		ret = tracing_set_clock(a->t, "x86-tsc", why, len);
	a->tsc_clock = ret == 0;
	return ret;
}

/*
 * --trace-clock: "x86-tsc" (asked, or auto with an invariant TSC) when the
 * kernel takes it, else "mono" (tracing_open() set it). A clock asked for
 * by name that the kernel refuses fails; with auto, the instance keeps
 * what the kernel gives, and one line says why.
 */
static int setup_clock(struct agent *a)
{
	const char *want = a->o.trace_clock ? a->o.trace_clock : "auto";
	const char *refused = tracing_clock_refused(a->t);
	bool tried = strcmp(want, "auto") || tsc_invariant();
	char why[512] = "no invariant TSC";
	int ret;

	if (!strcmp(want, "mono"))
		return refused ? fail(a, TC_ERR_TRACEFS, "--trace-clock mono: %s",
				      refused) : 0;
	if (tried) {
		ret = try_tsc(a, why, sizeof(why));
		if (ret == 0)
			return 0;
		if (!strcmp(want, "x86-tsc"))
			return fail(a, ret, "--trace-clock x86-tsc: %s", why);
	}
	if (refused)
		log_warn("trace clock %s (the kernel's): %s; %s; its times are "
			 "placed as if it were mono", tracing_clock(a->t), why,
			 refused);
	else if (tried)
		log_info("trace clock mono: %s", why);
	return 0;
}

/*
 * The events that tell a task's new name: fork (task_newtask) and exec,
 * prctl(PR_SET_NAME) or /proc/PID/comm (task_rename). With them the
 * collector knows the name each task had at each event, which the
 * kernel's COMM filter reads (current->comm). Optional: a kernel without
 * them, or refusing them, leaves COMM to the saved cmdlines (one line).
 */
static void setup_comm_events(struct agent *a)
{
	static const char *const evs[] = { "task:task_newtask", "task:task_rename" };
	char why[512];
	size_t i;

	if (a->o.no_comm_events)
		return;
	for (i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		if (tracing_enable(a->t, evs[i], why, sizeof(why)) < 0) {
			log_info("%s; COMM in filters is then the saved cmdlines' name, not "
				 "the task's at each event", why);
			return;
		}
	}
	log_info("tracing task:task_newtask and task:task_rename too, so that the "
		 "collector knows each task's name at each event (COMM; "
		 "--no-comm-events: not)");
}

/* Create the instance and enable the requested events. */
static int setup_tracing(struct agent *a)
{
	char why[512];
	size_t i;
	int ret;

	ret = tracing_open(a->o.instance, a->o.buffer_kb, &a->t, why,
			   sizeof(why));
	if (ret < 0)
		return fail(a, ret, "%s", why);
	ret = a->o.subbuf_kb ? set_subbuf(a, why, sizeof(why)) : 0;
	if (ret < 0)
		return ret;
	ret = setup_clock(a);
	if (ret < 0)
		return ret;
	for (i = 0; i < a->o.nevents; i++) {
		ret = tracing_enable(a->t, a->o.events[i], why, sizeof(why));
		if (ret < 0)
			return fail(a, ret, "%s", why);
	}
	setup_comm_events(a);
	ret = stacks_start(a->t, a->o.stack_all, a->o.stacks, a->o.nstacks, &a->stacks,
			   why, sizeof(why));
	if (ret == 0 && a->o.user_stack)
		ret = stacks_user(a->t);
	if (ret == 0 && a->o.rec.mb)
		ret = recorder_new(&a->o.rec, a->t, &a->rec, why, sizeof(why));
	if (ret < 0)
		return fail(a, ret, "%s", why);
	if (a->rec)
		log_info("flight recorder: %zu MiB per CPU in overwrite mode%s%s%s%s; no page is "
			 "shipped until a freeze", a->o.rec.mb,
			 a->o.rec.freeze_on ? ", frozen by " : "",
			 a->o.rec.freeze_on ? a->o.rec.freeze_on : "",
			 a->o.rec.group ? ", group " : "", a->o.rec.group ? a->o.rec.group : "");
	return setup_ftrace(a);
}

/* --exec: start the program once the agent looks for its buffer. */
static int exec_open(struct agent *a)
{
	struct exec_env env = {
		.dir = a->o.pump.user_dir ? a->o.pump.user_dir : UBUF_DEFAULT_DIR,
		.tracer = a->o.tracer ? a->o.tracer : "function_graph",
	};
	int ret;

	if (!a->o.exec_argv)
		return 0;
	ret = exec_start(a->o.exec_argv, &env, &a->child);
	if (ret < 0)
		return fail(a, ret, "--exec %s: %s", a->o.exec_argv[0],
			    tc_strerror(ret));
	log_info("started %s (pid %d)", a->o.exec_argv[0], (int)a->child);
	return 0;
}

/* Whether the --exec program ended (then reaped and remembered). */
static bool exec_ended(struct agent *a)
{
	if (a->child > 0 && exec_reap(a->child, &a->child_status)) {
		a->child = 0;
		a->child_done = true;
	}
	return a->child_done;
}

/* pump_run()'s end: a signal, the end of --duration or of the program. */
static bool run_over(void *arg)
{
	struct agent *a = arg;

	return stop_requested || (a->end && util_now_ms() >= a->end) ||
	       exec_ended(a);
}

/*
 * --drain-timeout passed with pages not acknowledged: count them as lost
 * (the spool forgets them), keep the numbers for the summary, fail.
 */
static int give_up(struct agent *a)
{
	pump_give_up(a->p, &a->undelivered_pages, &a->undelivered_events);
	a->gave_up = true;
	return fail(a, TC_ERR_PEER_CLOSED, "the collector at %s port %s did "
		    "not acknowledge everything within --drain-timeout (%ld s): "
		    "%" PRIu64 " pages (%" PRIu64 " events) were not delivered",
		    session_addr(a->s)->host, session_addr(a->s)->port, a->o.drain_s,
		    a->undelivered_pages, a->undelivered_events);
}

/* How long to sleep until the next reconnect attempt, at most until @deadline. */
static int drain_wait_ms(struct agent *a, int64_t deadline)
{
	int64_t now = util_now_ms(), until = session_next_try(a->s);

	if (until > deadline)
		until = deadline;
	return until > now ? (int)(until - now) + 1 : 1;
}

/*
 * Tracing off, drain, then BYE/DONE. Until --drain-timeout after tracing
 * went off, a lost connection is reconnected (backoff) and the pages not
 * acknowledged are sent again, as while tracing; no wait on the collector
 * lasts past that deadline. Then what is left is given up (give_up()).
 */
static int finish(struct agent *a)
{
	int64_t deadline, t0 = util_now_ms();
	int ret;

	tracing_stop(a->t);
	deadline = t0 + a->o.drain_s * 1000;
	session_set_deadline(a->s, deadline);
	ret = pump_drain(a->p, a->err, sizeof(a->err));
	if (ret < 0)
		return ret;
	for (;;) {
		session_reconnect(a->s);
		if (session_connected(a->s) && pump_bye(a->p) == 0) {
			a->drain_ms = util_now_ms() - t0;
			return 0;
		}
		if (util_now_ms() >= deadline || stop_requested > 1)
			return give_up(a);
		poll(NULL, 0, drain_wait_ms(a, deadline));
	}
}

/*
 * The host name to report: --name, else the certificate's subject CN (the
 * collector stores only under a name of the certificate), else, with
 * --insecure-plain or an unreadable certificate (the connection then says
 * why), gethostname() (NULL).
 */
static const char *host_name(const struct agent *a, char *buf, size_t len)
{
	if (a->o.name || a->o.session.insecure_plain)
		return a->o.name;
	return tls_cert_file_cn(a->o.session.tls.cert, buf, len) == 0 ? buf : NULL;
}

/* Host facts, the instance, then the session and the pump on it. */
static int start_agent(struct agent *a)
{
	char cn[HOSTINFO_STR_MAX];
	struct session_host h;
	int ret;

	ret = hostinfo_get(host_name(a, cn, sizeof(cn)), &a->hi);
	if (ret < 0)
		return fail(a, ret, "cannot collect host facts: %s",
			    tc_strerror(ret));
	ret = setup_tracing(a);
	if (ret < 0)
		return ret;
	h = (struct session_host){
		.hi = &a->hi, .t = a->t, .tsc = &a->tsc,
		.tsc_clock = a->tsc_clock, .kernel_symbols = !a->o.no_kernel_symbols || a->ftrace_on,
		.recorder = a->rec != NULL, .group = a->o.rec.group,
	};
	ret = session_new(&a->o.session, &h, &a->s);
	if (ret < 0)
		return fail(a, ret, "out of memory");
	a->o.pump.snapshot = &snapshot_requested;
	a->o.pump.rec = a->rec;
	return pump_new(&a->o.pump, a->t, a->tsc_clock ? &a->tsc : NULL, a->s,
			&a->p, a->err, sizeof(a->err));
}

static int run(struct agent *a)
{
	int ret;

	ret = start_agent(a);
	if (ret == 0)
		ret = session_start(a->s, a->err, sizeof(a->err));
	if (ret == 0)
		ret = pump_open_reader(a->p, a->err, sizeof(a->err));
	if (ret < 0)
		return ret;
	a->reading = true;
	ret = tracing_start(a->t);
	if (ret < 0)
		return fail(a, ret, "cannot switch tracing on in instance %s",
			    tracing_name(a->t));
	ret = exec_open(a);
	if (ret < 0)
		return ret;
	a->end = a->o.duration_s ? util_now_ms() + a->o.duration_s * 1000 : 0;
	ret = pump_run(a->p, a->end, run_over, a, a->err, sizeof(a->err));
	return ret < 0 ? ret : finish(a);
}

static void summary(struct agent *a)
{
	const struct proto_done *done = session_done(a->s);
	struct tracing_cpu_stats tot = { 0 };
	struct proto_cpu_stats c, sum = { 0 };
	struct ubuf_totals ut;
	struct kfilter_stats fs;
	int cpu;

	for (cpu = 0; cpu < tracing_ncpus(a->t); cpu++) {
		pump_cpu_stats(a->p, cpu, &c);
		printf(PROG ": cpu%d: pages=%" PRIu64 " events=%" PRIu64
		       " bytes=%" PRIu64 " overrun=%" PRIu64 " dropped=%" PRIu64
		       " mmap=%" PRIu64 " splice=%" PRIu64 " read=%" PRIu64
		       " copied=%" PRIu64 " resent=%" PRIu64 "\n", cpu, c.pages,
		       c.events, c.bytes, c.overrun, c.dropped, c.pages_mmap,
		       c.pages_splice, c.pages_read, c.copied_bytes,
		       c.resent_pages);
		sum.pages += c.pages;
		sum.events += c.events;
		sum.bytes += c.bytes;
		sum.copied_bytes += c.copied_bytes;
		sum.resent_pages += c.resent_pages;
		tot.overrun += c.overrun;
		tot.dropped += c.dropped;
	}
	printf(PROG ": total: pages=%" PRIu64 " events=%" PRIu64 " bytes=%"
	       PRIu64 " overrun=%" PRIu64 " dropped=%" PRIu64
	       " copied=%" PRIu64 " resent=%" PRIu64 " reconnects=%" PRIu64
	       " %s=%" PRIu64 "\n", sum.pages, sum.events,
	       sum.bytes, tot.overrun, tot.dropped, sum.copied_bytes,
	       sum.resent_pages, session_reconnects(a->s),
	       /* a journaling collector answers DONE before it has decoded */
	       done->journaled ? "journaled_pages" : "stored_events",
	       done->journaled ? done->pages : done->events);
	printf(PROG ": spool: peak_mem_mb=%.1f drain_ms=%" PRId64 "\n",
	       (double)pump_spool_peak(a->p) / (1 << 20), a->drain_ms);
	if (a->gave_up)
		printf(PROG ": undelivered: pages=%" PRIu64 " events=%" PRIu64
		       " (not acknowledged within --drain-timeout)\n",
		       a->undelivered_pages, a->undelivered_events);
	if (session_filter_stats(a->s, &fs))
		printf(PROG ": pushdown: filters=%" PRIu64 " replaced=%" PRIu64
		       " written=%" PRIu64 " log_left_out=%" PRIu64 " unanswered=%" PRIu64 "\n",
		       fs.received, fs.replaced, fs.written, fs.log_left_out, fs.unanswered);
	if (pump_user_totals(a->p, &ut))
		printf(PROG ": user: programs=%" PRIu64 " pages=%" PRIu64
		       " events=%" PRIu64 " bytes=%" PRIu64 " lost=%" PRIu64 "\n",
		       ut.programs, ut.pages, ut.events, ut.bytes, ut.lost);
	if (a->child_done) {
		char how[64];

		printf(PROG ": program: %s %s\n", a->o.exec_argv[0],
		       exec_describe(a->child_status, how, sizeof(how)));
	}
}

/* Undo everything run() set up; the instance goes last (readers first). */
static void cleanup(struct agent *a)
{
	exec_kill(a->child);
	if (a->ftrace_on)
		ftrace_stop(tracing_instance(a->t));
	pump_free(a->p);
	session_free(a->s);
	stacks_stop(a->t, a->stacks);
	recorder_free(a->rec);
	tracing_close(a->t);
	options_free(&a->o);
}

int main(int argc, char **argv)
{
	static struct agent a;
	int ret;

	ret = options_parse(&a.o, argc, argv);
	if (ret)
		return ret < 0 ? 0 : ret;
	a.o.session.stop = &stop_requested;
	log_init(PROG, a.o.level, false);
	signals_install();
	ret = run(&a);
	if (ret < 0 && stop_requested && !a.reading)
		snprintf(a.err, sizeof(a.err), "interrupted by a signal "
			 "before tracing started");
	if (ret == 0 || a.gave_up)
		summary(&a);
	cleanup(&a);
	if (ret < 0) {
		fprintf(stderr, "%s" PROG ": %s\n", log_prio_prefix(LOGL_ERR), a.err);
		return OPTIONS_EXIT_RUNTIME;
	}
	return 0;
}
