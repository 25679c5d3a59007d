/*
 * main.c - traceagent: trace this host's kernel in a tracefs instance of
 * its own and ship the raw ring-buffer pages to tracecollectd over mutual
 * TLS. Here: the options, signals, setting up the instance as the options
 * ask, the run from start to finish, the summary and the exit status. The
 * connections to the collector are session.c's, the pages on their way
 * pump.c's (its pump_run() is the agent's loop); tracing.c, reader.c,
 * spool.c, ship.c and ubuf.c do the work below them.
 *
 * Exit status: 0 after a clean run, 1 for a runtime failure (one line on
 * stderr saying what and why), 2 for a usage error.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>

#define LOG_PREFIX "agent"
#include "common/cli.h"
#include "common/config_file.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "agent/exec.h"
#include "agent/ftrace.h"
#include "agent/hostinfo.h"
#include "agent/pump.h"
#include "agent/reader.h"
#include "agent/session.h"
#include "agent/ship.h"
#include "agent/tracing.h"
#include "agent/ubuf.h"
#include "proto/tls.h"

#define PROG			"traceagent"
#define DEF_CONNECT		"127.0.0.1:7000"
#define DEF_EVENT		"sched"
#define DEF_CERT		"/etc/tracecollect/agent.crt"
#define DEF_KEY			"/etc/tracecollect/agent.key"
#define DEF_CA			"/etc/tracecollect/ca.crt"
#define DEF_FLUSH_MS		1000
#define DEF_SUBBUF_KB		64	/* see --subbuf-kb in help() */
#define DEF_SPOOL_DIR		"/var/lib/tracecollect/spool"
#define DEF_SPOOL_MEM_MB	64
#define DEF_SPOOL_DISK_MB	1024
#define DEF_ACK_TIMEOUT_MS	30000
#define DEF_DRAIN_S		30
#define TSC_CALIBRATE_US	100000	/* TSC against CLOCK_MONOTONIC: 100 ms */
#define EXIT_RUNTIME		1
#define EXIT_USAGE		2

struct opts {
	struct session_conf session;	/* --connect, --cert, --key, --ca,
					 * --ack-timeout-ms, --connections,
					 * --insecure-plain, --no-pushdown */
	struct pump_conf pump;		/* --flush-ms, --read-mode, --spool-*,
					 * --user-dir, --no-user */
	const char **events;
	size_t nevents;
	long duration_s;		/* 0: until a signal */
	char instance[128];
	const char *name;		/* NULL: the certificate's CN (or gethostname()) */
	size_t buffer_kb;		/* 0: the kernel's default */
	size_t subbuf_kb;		/* 0: the kernel's default */
	bool subbuf_set;		/* given: failing to set it fails */
	enum log_level level;
	long drain_s;
	const char *tracer;		/* -p: kernel function tracer */
	bool no_kernel_symbols;		/* --no-kernel-symbols */
	bool no_comm_events;		/* --no-comm-events */
	const char **ffilters;		/* --ftrace-filter globs */
	size_t nffilters;
	char **exec_argv;		/* --exec: the program to trace */
	const char *trace_clock;	/* --trace-clock: "auto", "mono", "x86-tsc" */
	struct config_list conf;	/* -C FILE: owns the values above point to */
	char **conf_exec;		/* exec = ...: its words, NULL-terminated */
	bool events_from_conf;		/* a command-line -e replaces them */
	bool ffilters_from_conf;	/* the same for --ftrace-filter */
};

/*
 * One run, owned by main(): the options, the host facts, the instance,
 * the --exec program. The connections are the session's, the pages the
 * pump's; both borrow the instance.
 */
struct agent {
	struct opts o;
	struct hostinfo hi;
	struct tracing *t;
	struct ring_clock_conv tsc;	/* the instance's TSC in ns ("x86-tsc") */
	bool tsc_clock;			/* the instance runs on "x86-tsc" */
	bool ftrace_on;
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

static void help(void)
{
	printf(
"Usage: " PROG " [OPTION]... [--exec [--] PROGRAM [ARG]...]\n"
"Trace this host's kernel in a tracefs instance of its own and ship the raw\n"
"ring-buffer pages to tracecollectd over mutual TLS. Runs until SIGINT or\n"
"SIGTERM (or --duration), then drains the buffers, waits for the collector\n"
"to confirm what it stored, removes the instance and prints a summary.\n"
"\n"
"  -C, --config FILE        read settings from FILE, 'KEY = VALUE' lines whose\n"
"                           keys are the long options below (traceagent.conf(5));\n"
"                           the command line wins (its -e and --ftrace-filter\n"
"                           replace the file's)\n"
"  -s, --connect HOST:PORT  collector address; [IPV6]:PORT for IPv6\n"
"                           (default " DEF_CONNECT ")\n"
"  -e, --event SYSTEM[:EVENT]\n"
"                           enable a whole event system or one event; may be\n"
"                           repeated (default: -e " DEF_EVENT ")\n"
"      --cert FILE          this agent's certificate\n"
"                           (default " DEF_CERT ")\n"
"      --key FILE           its private key\n"
"                           (default " DEF_KEY ")\n"
"      --ca FILE            CA that signed the collector's certificate\n"
"                           (default " DEF_CA ")\n"
"  -d, --duration SECONDS   stop after SECONDS (default: run until signalled)\n"
"      --instance NAME      tracefs instance to create; it must not exist\n"
"                           yet (default tracecollect-<pid>)\n"
"      --name HOSTNAME      host name to report (default: the subject CN of\n"
"                           --cert's certificate; gethostname() with\n"
"                           --insecure-plain). The collector refuses a name\n"
"                           that is not that CN or one of the certificate's\n"
"                           DNS names, unless its host-map allows it\n"
"      --buffer-kb N        per-CPU ring buffer size in KiB (default: the\n"
"                           kernel's default for a new instance)\n"
"      --subbuf-kb N        ring-buffer page (sub-buffer) size in KiB, a\n"
"                           power of two, or 0 for the kernel's default\n"
"                           (one memory page); bigger pages cost less per\n"
"                           event to read and ship (default %d where the\n"
"                           kernel can change it, Linux >= 6.8)\n"
"      --flush-ms N         ship partly filled pages at least every N ms\n"
"                           (default %d)\n"
"      --spool-dir DIR      where pages not yet acknowledged by the collector\n"
"                           spill to once --spool-mem-mb is used up\n"
"                           (default " DEF_SPOOL_DIR ")\n"
"      --spool-mem-mb N     memory for un-acknowledged pages, and for pages\n"
"                           waiting while the collector is slower than the\n"
"                           kernel (default %d)\n"
"      --spool-disk-mb N    then disk, in unnamed files in DIR (default %d);\n"
"                           when both are full the agent stops reading and\n"
"                           the kernel overwrites/drops and counts\n"
"      --ack-timeout-ms N   reconnect when un-acknowledged pages see no\n"
"                           acknowledgement, or a write no progress, for\n"
"                           N ms (default %d)\n"
"      --drain-timeout S    at the end, keep trying S seconds (reconnecting\n"
"                           and resending as while tracing) until the\n"
"                           collector acknowledged everything; then the\n"
"                           summary says how many pages and events were\n"
"                           not delivered and the exit status is 1\n"
"                           (default %d)\n"
"      --read-mode MODE     how pages leave the kernel: read (read(2)\n"
"                           straight into the spool of pages kept until\n"
"                           acknowledged: one copy), mmap (map the ring\n"
"                           buffer, copy pages into the spool; Linux >=\n"
"                           6.10), splice (full pages\n"
"                           spliced into the socket when the kernel does\n"
"                           TLS or with --insecure-plain), or auto: splice\n"
"                           when the socket allows it, else read (default)\n"
"      --connections MODE   one (default): every CPU's pages share the\n"
"                           control connection; per-cpu: each CPU's pages\n"
"                           get a TLS connection of their own (programs'\n"
"                           rings stay on the control connection). The\n"
"                           choice and its numbers: proto/PROTOCOL.md\n"
"      --insecure-plain     TESTING ONLY: plain TCP, no TLS: nothing is\n"
"                           authenticated or encrypted; HOST must be a\n"
"                           loopback address and the collector must run\n"
"                           with --insecure-plain too (--cert/--key/--ca\n"
"                           are not used)\n"
"      --user-dir DIR       where traced programs keep their ring buffers\n"
"                           (libtracecollect: DIR/tracecollect.<pid>); the\n"
"                           agent attaches to each, which enables its writes,\n"
"                           and ships its pages and formats while connected\n"
"                           (default " UBUF_DEFAULT_DIR ")\n"
"      --no-user            do not look for traced programs\n"
"      --trace-clock auto|mono|x86-tsc\n"
"                           the instance's trace clock. x86-tsc stamps each\n"
"                           event with the TSC (cheapest for the traced CPUs);\n"
"                           the agent measures its rate against\n"
"                           CLOCK_MONOTONIC at start and the collector\n"
"                           converts. auto (default): x86-tsc where the CPU\n"
"                           has an invariant TSC (constant_tsc and\n"
"                           nonstop_tsc) and the kernel offers it, else mono\n"
"      --no-kernel-symbols  do not ship /proc/kallsyms (by default it goes once\n"
"                           per boot, 10 s into the run or at its end, so\n"
"                           that traceq names %%ps fields; without it they\n"
"                           print as addresses); with --tracer always\n"
"      --no-comm-events     do not add task:task_newtask and task:task_rename\n"
"                           to the instance (by default the agent traces them,\n"
"                           so that the collector knows each task's name at\n"
"                           each event: COMM in filters, as the kernel's;\n"
"                           without them COMM is the saved cmdlines' name)\n"
"      --no-pushdown        do not offer the collector to set its filters on\n"
"                           this agent's instance (by default the agent\n"
"                           offers it and the kernel then drops, before\n"
"                           shipping, the events the collector would drop;\n"
"                           a filter the kernel refuses is reported to the\n"
"                           collector, which filters there either way; the\n"
"                           filters are cleared when a connection ends)\n"
"  -p, --tracer TRACER      run the kernel's function or function_graph\n"
"                           tracer in the instance (a kernel that refuses\n"
"                           it, e.g. locked down, is reported in one line\n"
"                           and the events are traced without it)\n"
"      --ftrace-filter GLOB trace only kernel functions matching GLOB (with\n"
"                           -p; may be repeated)\n"
"      --exec PROGRAM [ARG]...\n"
"                           start PROGRAM (linked with libtracecollect) with\n"
"                           its function tracer on (TC_FTRACE=the -p value,\n"
"                           default function_graph) and its ring buffer in\n"
"                           --user-dir; stop when it exits and report its\n"
"                           status in the summary. Last option: the rest of\n"
"                           the command line is PROGRAM's\n"
"  -v, --verbose            log debug messages to stderr\n"
"  -q, --quiet              log only errors to stderr\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"The collector's certificate must match HOST (its IP address when HOST is\n"
"one). Needs root and a writable tracefs (/sys/kernel/tracing). The\n"
"collector must answer the first connection (HELLO: address, certificates\n"
"and protocol are right; one it closes in the handshake without a word, as\n"
"its caps do, is tried again for up to 60 s); after that a lost collector\n"
"is reconnected with\n"
"exponential backoff and jitter\n"
"and every page it has not acknowledged is sent again (it drops the ones\n"
"it already stored). Exit status: 0 success, 1 runtime failure (also when\n"
"pages could not be delivered by the end), 2 usage error. SIGUSR1 triggers\n"
"a snapshot of every flight-recorder program buffer.\n",
	DEF_SUBBUF_KB, DEF_FLUSH_MS, DEF_SPOOL_MEM_MB, DEF_SPOOL_DISK_MB,
	DEF_ACK_TIMEOUT_MS, DEF_DRAIN_S);
}

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_hint(PROG);
	return EXIT_USAGE;
}

/* A decimal number in [@min, @max]; false for anything else. */
static bool parse_num(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* SYSTEM or SYSTEM:EVENT, both parts non-empty. */
static bool event_spec_ok(const char *s)
{
	const char *c = strchr(s, ':');

	if (!*s || *s == ':')
		return false;
	return !c || (c[1] && !strchr(c + 1, ':'));
}

static bool instance_ok(const char *s)
{
	return *s && *s != '.' && !strchr(s, '/') && strlen(s) < 128;
}

static int add_event(struct opts *o, const char *spec)
{
	const char **n;

	if (!event_spec_ok(spec))
		return usage_error("bad event '%s': want SYSTEM or "
				   "SYSTEM:EVENT", spec);
	n = realloc(o->events, (o->nevents + 1) * sizeof(*n));
	if (!n) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_RUNTIME;
	}
	o->events = n;
	o->events[o->nevents++] = spec;
	return 0;
}

enum { OPT_CERT = 256, OPT_KEY, OPT_CA, OPT_INSTANCE, OPT_NAME,
       OPT_BUFFER_KB, OPT_SUBBUF_KB, OPT_FLUSH_MS, OPT_SPOOL_DIR,
       OPT_SPOOL_MEM_MB,
       OPT_SPOOL_DISK_MB, OPT_ACK_TIMEOUT_MS, OPT_DRAIN_S, OPT_READ_MODE,
       OPT_USER_DIR, OPT_NO_USER, OPT_FTRACE_FILTER, OPT_EXEC, OPT_INSECURE_PLAIN,
       OPT_NO_PUSHDOWN, OPT_CONNECTIONS, OPT_TRACE_CLOCK, OPT_NO_KERNEL_SYMBOLS,
       OPT_NO_COMM_EVENTS };

/*
 * The short options (the table in traceagent(8): one letter, one meaning in
 * all three programs; -s is the collector to talk to, as traceq's --server).
 * -c is the old spelling of -s: tracecollectd's old -c was its --config and
 * traceq's is --count, but no other letter here means either, so it still
 * works, and says so. ':' first: cli_bad_option() says what is refused.
 */
#define SHORT_OPTS	"+:C:s:c:e:d:p:vqhV"

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'C' },
	{ "connect", required_argument, NULL, 's' },
	{ "event", required_argument, NULL, 'e' },
	{ "cert", required_argument, NULL, OPT_CERT },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "ca", required_argument, NULL, OPT_CA },
	{ "duration", required_argument, NULL, 'd' },
	{ "instance", required_argument, NULL, OPT_INSTANCE },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "buffer-kb", required_argument, NULL, OPT_BUFFER_KB },
	{ "subbuf-kb", required_argument, NULL, OPT_SUBBUF_KB },
	{ "flush-ms", required_argument, NULL, OPT_FLUSH_MS },
	{ "spool-dir", required_argument, NULL, OPT_SPOOL_DIR },
	{ "spool-mem-mb", required_argument, NULL, OPT_SPOOL_MEM_MB },
	{ "spool-disk-mb", required_argument, NULL, OPT_SPOOL_DISK_MB },
	{ "ack-timeout-ms", required_argument, NULL, OPT_ACK_TIMEOUT_MS },
	{ "drain-timeout", required_argument, NULL, OPT_DRAIN_S },
	{ "read-mode", required_argument, NULL, OPT_READ_MODE },
	{ "user-dir", required_argument, NULL, OPT_USER_DIR },
	{ "no-user", no_argument, NULL, OPT_NO_USER },
	{ "no-pushdown", no_argument, NULL, OPT_NO_PUSHDOWN },
	{ "no-kernel-symbols", no_argument, NULL, OPT_NO_KERNEL_SYMBOLS },
	{ "no-comm-events", no_argument, NULL, OPT_NO_COMM_EVENTS },
	{ "tracer", required_argument, NULL, 'p' },
	{ "ftrace-filter", required_argument, NULL, OPT_FTRACE_FILTER },
	{ "exec", no_argument, NULL, OPT_EXEC },
	{ "insecure-plain", no_argument, NULL, OPT_INSECURE_PLAIN },
	{ "connections", required_argument, NULL, OPT_CONNECTIONS },
	{ "trace-clock", required_argument, NULL, OPT_TRACE_CLOCK },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The delivery options that take a number. Return: 0 or an exit status. */
static int opt_spool_number(struct opts *o, int c, const char *arg)
{
	long v;

	switch (c) {
	case OPT_SPOOL_MEM_MB:
	case OPT_SPOOL_DISK_MB:
		if (!parse_num(arg, 0, 1L << 30, &v))
			return usage_error("--spool-%s-mb wants MiB, not '%s'",
					   c == OPT_SPOOL_MEM_MB ? "mem" : "disk",
					   arg);
		*(c == OPT_SPOOL_MEM_MB ? &o->pump.spool_mem_mb :
		  &o->pump.spool_disk_mb) = (size_t)v;
		return 0;
	case OPT_ACK_TIMEOUT_MS:
		if (!parse_num(arg, 100, 3600000, &v))
			return usage_error("--ack-timeout-ms wants milliseconds "
					   "in 100..3600000, not '%s'", arg);
		o->session.ack_timeout_ms = (int)v;
		return 0;
	default:
		if (!parse_num(arg, 0, 86400, &v))
			return usage_error("--drain-timeout wants seconds in "
					   "0..86400, not '%s'", arg);
		o->drain_s = v;
		return 0;
	}
}

/* Options that take a number. Return: 0 or an exit status. */
static int opt_number(struct opts *o, int c, const char *arg)
{
	long v;

	switch (c) {
	case 'd':
		if (!parse_num(arg, 1, INT_MAX / 1000, &v))
			return usage_error("--duration wants whole seconds "
					   ">= 1, not '%s'", arg);
		o->duration_s = v;
		return 0;
	case OPT_BUFFER_KB:
		if (!parse_num(arg, 1, LONG_MAX / 1024, &v))
			return usage_error("--buffer-kb wants a size in KiB "
					   ">= 1, not '%s'", arg);
		o->buffer_kb = (size_t)v;
		return 0;
	case OPT_SUBBUF_KB:
		if (!parse_num(arg, 0, 1024, &v) || (v & (v - 1)))
			return usage_error("--subbuf-kb wants 0 or a power of "
					   "two up to 1024, not '%s'", arg);
		o->subbuf_kb = (size_t)v;
		o->subbuf_set = true;
		return 0;
	case OPT_FLUSH_MS:
		if (!parse_num(arg, 1, 3600000, &v))
			return usage_error("--flush-ms wants milliseconds in "
					   "1..3600000, not '%s'", arg);
		o->pump.flush_ms = (int)v;
		return 0;
	default:
		return opt_spool_number(o, c, arg);
	}
}

/* -p and --ftrace-filter. Return: 0 or an exit status. */
static int opt_ftrace(struct opts *o, int c, const char *arg)
{
	const char **n;

	if (c == 'p') {
		if (!ftrace_tracer_ok(arg))
			return usage_error("bad -p '%s': want function or "
					   "function_graph", arg);
		o->tracer = arg;
		return 0;
	}
	n = realloc(o->ffilters, (o->nffilters + 1) * sizeof(*n));
	if (!n) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_RUNTIME;
	}
	o->ffilters = n;
	o->ffilters[o->nffilters++] = arg;
	return 0;
}

/* Apply option @c (with @arg) to @o. Return: 0, -1 (done: --help/--version),
 * or an exit status. */
static int opt_apply(struct opts *o, int c, const char *arg)
{
	switch (c) {
	case 'c':
		fprintf(stderr, PROG ": -c is the old spelling of -s (--connect): use -s\n");
		/* fall through */
	case 's':
		if (ship_parse_hostport(arg, o->session.host,
					o->session.port) < 0)
			return usage_error("bad --connect '%s': want HOST:PORT "
					   "or [IPV6]:PORT", arg);
		return 0;
	case 'e':
		return add_event(o, arg);
	case 'p': case OPT_FTRACE_FILTER:
		return opt_ftrace(o, c, arg);
	case OPT_CERT: o->session.tls.cert = arg; return 0;
	case OPT_KEY: o->session.tls.key = arg; return 0;
	case OPT_CA: o->session.tls.ca = arg; return 0;
	case OPT_NAME: o->name = arg; return 0;
	case OPT_SPOOL_DIR: o->pump.spool_dir = arg; return 0;
	case OPT_USER_DIR: o->pump.user_dir = arg; return 0;
	case OPT_NO_USER: o->pump.no_user = true; return 0;
	case OPT_NO_PUSHDOWN: o->session.no_pushdown = true; return 0;
	case OPT_NO_KERNEL_SYMBOLS: o->no_kernel_symbols = true; return 0;
	case OPT_NO_COMM_EVENTS: o->no_comm_events = true; return 0;
	case OPT_INSECURE_PLAIN: o->session.insecure_plain = true; return 0;
	case OPT_CONNECTIONS:
		if (strcmp(arg, "one") && strcmp(arg, "per-cpu"))
			return usage_error("--connections wants one or per-cpu, "
					   "not '%s'", arg);
		o->session.per_cpu_conns = !strcmp(arg, "per-cpu");
		return 0;
	case OPT_TRACE_CLOCK:
		if (strcmp(arg, "auto") && strcmp(arg, "mono") && strcmp(arg, "x86-tsc"))
			return usage_error("--trace-clock wants auto, mono or x86-tsc, "
					   "not '%s'", arg);
		o->trace_clock = arg;
		return 0;
	case OPT_READ_MODE:
		if (!strcmp(arg, "auto"))
			o->pump.read_mode = READER_AUTO;
		else if (!strcmp(arg, "mmap"))
			o->pump.read_mode = READER_MMAP;
		else if (!strcmp(arg, "read"))
			o->pump.read_mode = READER_READ;
		else if (!strcmp(arg, "splice"))
			o->pump.read_mode = READER_SPLICE;
		else
			return usage_error("--read-mode wants auto, mmap, read "
					   "or splice, not '%s'", arg);
		return 0;
	case OPT_INSTANCE:
		if (!instance_ok(arg))
			return usage_error("bad --instance '%s': want a name "
					   "without '/' or a leading '.'", arg);
		snprintf(o->instance, sizeof(o->instance), "%s", arg);
		return 0;
	case 'C': return 0;	/* read before the other options */
	case 'v': o->level = LOGL_DEBUG; return 0;
	case 'q': o->level = LOGL_ERR; return 0;
	case 'h': help(); return -1;
	case 'V': cli_version(PROG);
		return -1;
	case 'd': case OPT_BUFFER_KB: case OPT_SUBBUF_KB: case OPT_FLUSH_MS:
	case OPT_SPOOL_MEM_MB: case OPT_SPOOL_DISK_MB: case OPT_ACK_TIMEOUT_MS:
	case OPT_DRAIN_S:
		return opt_number(o, c, arg);
	default:
		cli_hint(PROG);
		return EXIT_USAGE;
	}
}

static void opts_defaults(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	ship_parse_hostport(DEF_CONNECT, o->session.host, o->session.port);
	o->session.tls.cert = DEF_CERT;
	o->session.tls.key = DEF_KEY;
	o->session.tls.ca = DEF_CA;
	o->pump.flush_ms = DEF_FLUSH_MS;
	o->subbuf_kb = DEF_SUBBUF_KB;
	o->level = LOGL_INFO;
	o->pump.spool_dir = DEF_SPOOL_DIR;
	o->pump.spool_mem_mb = DEF_SPOOL_MEM_MB;
	o->pump.spool_disk_mb = DEF_SPOOL_DISK_MB;
	o->session.ack_timeout_ms = DEF_ACK_TIMEOUT_MS;
	o->session.stop = &stop_requested;
	o->drain_s = DEF_DRAIN_S;
	snprintf(o->instance, sizeof(o->instance), "tracecollect-%d",
		 (int)getpid());
}

/* "yes"/"true" or "no"/"false" into *@out; false for anything else. */
static bool parse_yes_no(const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false"))
		*out = false;
	else
		return false;
	return true;
}

/* exec = PROGRAM [ARG]...: the words (split at blanks, no quoting). */
static int conf_exec(struct opts *o, char *value)
{
	size_t n = 0;
	char *w, *save = NULL;

	free(o->conf_exec);
	o->conf_exec = calloc(strlen(value) / 2 + 2, sizeof(*o->conf_exec));
	if (!o->conf_exec) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_RUNTIME;
	}
	for (w = strtok_r(value, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		o->conf_exec[n++] = w;
	if (!n)
		return usage_error("exec wants a program to run");
	o->exec_argv = o->conf_exec;
	return 0;
}

/*
 * One KEY = VALUE of -C FILE: KEY is a long option's name (not config,
 * help, version, nor insecure-plain: plain TCP only when typed), VALUE its
 * argument, or yes/no for an option that takes none.
 * Return: 0 or an exit status.
 */
static int conf_apply(struct opts *o, struct config_entry *e, const char *path)
{
	static const char *const not_keys[] = { "config", "help", "version",
						"insecure-plain" };
	const struct option *lo = long_opts;
	bool yes = false;
	int ret;

	while (lo->name && strcmp(lo->name, e->key))
		lo++;
	for (size_t i = 0; lo->name && i < sizeof(not_keys) / sizeof(*not_keys); i++)
		if (!strcmp(e->key, not_keys[i]))
			lo = &long_opts[sizeof(long_opts) / sizeof(*long_opts) - 1];
	if (!lo->name)
		return usage_error("%s:%u: unknown key '%s'", path, e->line, e->key);
	if (lo->val == OPT_EXEC)
		ret = conf_exec(o, e->value);
	else if (lo->has_arg == no_argument && !parse_yes_no(e->value, &yes))
		ret = usage_error("%s:%u: %s wants yes or no, not '%s'", path,
				  e->line, e->key, e->value);
	else
		ret = lo->has_arg == no_argument && !yes ? 0 :
		      opt_apply(o, lo->val, e->value);
	if (ret > 0 && lo->has_arg != no_argument)
		fprintf(stderr, PROG ": (%s:%u: %s = %s)\n", path, e->line, e->key, e->value);
	return ret;
}

/* -C FILE: the settings of FILE, in order. Return: 0 or an exit status. */
static int conf_load(struct opts *o, const char *path)
{
	char err[512];
	int ret;

	if (o->conf.items)
		return usage_error("-C/--config given twice");
	ret = config_load_file(path, &o->conf, err, sizeof(err));
	if (ret < 0)
		return usage_error("%s", err);
	for (size_t i = 0; i < o->conf.count; i++) {
		ret = conf_apply(o, &o->conf.items[i], path);
		if (ret)
			return ret;
	}
	o->events_from_conf = o->nevents > 0;
	o->ffilters_from_conf = o->nffilters > 0;
	return 0;
}

/*
 * The command line, read twice: first only for -C (the file's settings
 * come first), then all of it, so it wins; its -e and --ftrace-filter
 * replace the file's lists.
 * Return: 0 to run, -1 to exit 0 (help/version), else an exit status.
 */
static int opts_parse(struct opts *o, int argc, char **argv)
{
	int c, ret = 0;

	opts_defaults(o);
	opterr = 0;
	while (ret == 0 && (c = getopt_long(argc, argv, SHORT_OPTS, long_opts,
					    NULL)) != -1 && c != OPT_EXEC)
		if (c == 'C')
			ret = conf_load(o, optarg);
	if (ret)
		return ret;
	optind = 0;
	while ((c = getopt_long(argc, argv, SHORT_OPTS, long_opts,
				NULL)) != -1 && c != OPT_EXEC) {
		if (c == '?' || c == ':') {
			cli_bad_option(PROG, long_opts, argv, c);
			return EXIT_USAGE;
		}
		if (c == 'e' && o->events_from_conf)
			o->nevents = 0, o->events_from_conf = false;
		if (c == OPT_FTRACE_FILTER && o->ffilters_from_conf)
			o->nffilters = 0, o->ffilters_from_conf = false;
		ret = opt_apply(o, c, optarg);
		if (ret)
			return ret;
	}
	if (c == OPT_EXEC) {
		if (optind < argc && !strcmp(argv[optind], "--"))
			optind++;
		if (optind == argc)
			return usage_error("--exec wants a program to run");
		o->exec_argv = argv + optind;
	} else if (optind < argc) {
		return usage_error("unexpected argument '%s'", argv[optind]);
	}
	if (o->exec_argv && o->pump.no_user)
		return usage_error("--exec needs the programs' buffers "
				   "(drop --no-user)");
	if (o->nffilters && !o->tracer)
		return usage_error("--ftrace-filter needs -p function or "
				   "-p function_graph");
	if (!o->nevents)
		return add_event(o, DEF_EVENT);
	return 0;
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
		    a->o.session.host, a->o.session.port, a->o.drain_s,
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
	};
	ret = session_new(&a->o.session, &h, &a->s);
	if (ret < 0)
		return fail(a, ret, "out of memory");
	a->o.pump.snapshot = &snapshot_requested;
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
	tracing_close(a->t);
	free(a->o.events);
	free(a->o.ffilters);
	free(a->o.conf_exec);
	config_list_free(&a->o.conf);
}

int main(int argc, char **argv)
{
	static struct agent a;
	int ret;

	ret = opts_parse(&a.o, argc, argv);
	if (ret)
		return ret < 0 ? 0 : ret;
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
		return EXIT_RUNTIME;
	}
	return 0;
}
