/*
 * main.c - traceagent: trace this host's kernel in a tracefs instance of
 * its own and ship the raw ring-buffer pages to tracecollectd over mutual
 * TLS (options, signals, the run loop and the summary; the work is done by
 * tracing.c, reader.c, ship.c and hostinfo.c).
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
#include <sys/random.h>

#define LOG_PREFIX "agent"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"
#include "agent/exec.h"
#include "agent/ftrace.h"
#include "agent/funcsyms.h"
#include "agent/hostinfo.h"
#include "agent/kfilter.h"
#include "agent/reader.h"
#include "agent/ship.h"
#include "agent/spool.h"
#include "agent/tracing.h"
#include "agent/ubuf.h"

#define PROG			"traceagent"
#define DEF_CONNECT		"127.0.0.1:7000"
#define DEF_EVENT		"sched"
#define DEF_CERT		"/etc/tracecollect/agent.crt"
#define DEF_KEY			"/etc/tracecollect/agent.key"
#define DEF_CA			"/etc/tracecollect/ca.crt"
#define DEF_FLUSH_MS		1000
#define DEF_SUBBUF_KB		64	/* see --subbuf-kb in help() */
#define PERIODIC_MS		10000	/* clock, cmdlines, cpu stats */
#define USER_SCAN_MS		250	/* look for new traced programs */
#define USER_POLL_MS		10	/* drain programs' rings while attached */
#define USER_DRAIN_TRIES	50	/* final drain: rounds until nothing is left */
#define REPLY_TIMEOUT_MS	30000	/* WELCOME and DONE */
#define DEF_SPOOL_DIR		"/var/lib/tracecollect/spool"
#define DEF_SPOOL_MEM_MB	64
#define DEF_SPOOL_DISK_MB	1024
#define DEF_ACK_TIMEOUT_MS	30000
#define DEF_DRAIN_S		30
#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		10000
#define FULL_WAIT_MS		20	/* spool full: look for ACKs this often */
#define TSC_CALIBRATE_US	100000	/* TSC against CLOCK_MONOTONIC: 100 ms */
#define EXIT_RUNTIME		1
#define EXIT_USAGE		2

struct opts {
	char host[SHIP_HOST_MAX];
	char port[SHIP_PORT_MAX];
	const char **events;
	size_t nevents;
	struct tls_files tls;
	long duration_s;		/* 0: until a signal */
	char instance[128];
	const char *name;		/* NULL: gethostname() */
	size_t buffer_kb;		/* 0: the kernel's default */
	size_t subbuf_kb;		/* 0: the kernel's default */
	bool subbuf_set;		/* given: failing to set it fails */
	int flush_ms;
	enum log_level level;
	const char *spool_dir;
	size_t spool_mem_mb;
	size_t spool_disk_mb;
	int ack_timeout_ms;
	long drain_s;
	enum reader_mode read_mode;
	const char *user_dir;		/* programs' ring buffers */
	bool no_user;
	const char *tracer;		/* -p: kernel function tracer */
	const char **ffilters;		/* --ftrace-filter globs */
	size_t nffilters;
	char **exec_argv;		/* --exec: the program to trace */
	bool insecure_plain;		/* plain TCP to a loopback collector */
	bool no_pushdown;		/* refuse the collector's filters */
	bool per_cpu_conns;		/* --connections per-cpu */
	const char *trace_clock;	/* --trace-clock: "auto", "mono", "x86-tsc" */
};

struct agent {
	struct opts o;
	struct hostinfo hi;
	struct tracing *t;
	struct ring_clock_conv tsc;	/* the instance's TSC in ns ("x86-tsc") */
	bool tsc_clock;			/* the instance runs on "x86-tsc" */
	struct reader *r;
	struct ship *s;			/* NULL while disconnected */
	struct ship **data;		/* --connections per-cpu: one per CPU,
					 * all up exactly while s is */
	struct spool *sp;		/* pages not acknowledged yet */
	uint8_t *room;			/* spool room read(2) fills */
	struct ubuf *u;			/* programs' rings; NULL with --no-user */
	struct kfilter *kf;		/* filter push-down; NULL with --no-pushdown */
	struct ubuf_ops uops;
	int64_t user_scan, user_flush;	/* next times, ms */
	uint64_t session;		/* this run's id, in every HELLO */
	int64_t next_try;		/* reconnect not before (ms) */
	int backoff_ms;
	int64_t ack_progress;		/* last ACK or first un-acked page (ms) */
	bool pending_block;		/* send_pending()/final drain: may wait */
	uint64_t reconnects;
	struct tracing_cpu_stats *kstats;	/* last read, per CPU */
	struct proto_done done;
	pid_t child;				/* --exec, until reaped */
	int child_status;
	bool child_done, ftrace_on;
	int64_t drain_ms;		/* tracing off to DONE */
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
"  -c, --connect HOST:PORT  collector address; [IPV6]:PORT for IPv6\n"
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
"      --name HOSTNAME      host name to report (default: gethostname())\n"
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
"      --drain-timeout S    at the end, keep trying S seconds to deliver\n"
"                           what is left (default %d)\n"
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
"one). Needs root and a writable tracefs (/sys/kernel/tracing). The first\n"
"connection must succeed; after\n"
"that a lost collector is reconnected with exponential backoff and jitter\n"
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
	fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
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
       OPT_NO_PUSHDOWN, OPT_CONNECTIONS, OPT_TRACE_CLOCK };

static const struct option long_opts[] = {
	{ "connect", required_argument, NULL, 'c' },
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
		*(c == OPT_SPOOL_MEM_MB ? &o->spool_mem_mb :
		  &o->spool_disk_mb) = (size_t)v;
		return 0;
	case OPT_ACK_TIMEOUT_MS:
		if (!parse_num(arg, 100, 3600000, &v))
			return usage_error("--ack-timeout-ms wants milliseconds "
					   "in 100..3600000, not '%s'", arg);
		o->ack_timeout_ms = (int)v;
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
		o->flush_ms = (int)v;
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
		if (ship_parse_hostport(arg, o->host, o->port) < 0)
			return usage_error("bad --connect '%s': want HOST:PORT "
					   "or [IPV6]:PORT", arg);
		return 0;
	case 'e':
		return add_event(o, arg);
	case 'p': case OPT_FTRACE_FILTER:
		return opt_ftrace(o, c, arg);
	case OPT_CERT: o->tls.cert = arg; return 0;
	case OPT_KEY: o->tls.key = arg; return 0;
	case OPT_CA: o->tls.ca = arg; return 0;
	case OPT_NAME: o->name = arg; return 0;
	case OPT_SPOOL_DIR: o->spool_dir = arg; return 0;
	case OPT_USER_DIR: o->user_dir = arg; return 0;
	case OPT_NO_USER: o->no_user = true; return 0;
	case OPT_NO_PUSHDOWN: o->no_pushdown = true; return 0;
	case OPT_INSECURE_PLAIN: o->insecure_plain = true; return 0;
	case OPT_CONNECTIONS:
		if (strcmp(arg, "one") && strcmp(arg, "per-cpu"))
			return usage_error("--connections wants one or per-cpu, "
					   "not '%s'", arg);
		o->per_cpu_conns = !strcmp(arg, "per-cpu");
		return 0;
	case OPT_TRACE_CLOCK:
		if (strcmp(arg, "auto") && strcmp(arg, "mono") && strcmp(arg, "x86-tsc"))
			return usage_error("--trace-clock wants auto, mono or x86-tsc, "
					   "not '%s'", arg);
		o->trace_clock = arg;
		return 0;
	case OPT_READ_MODE:
		if (!strcmp(arg, "auto"))
			o->read_mode = READER_AUTO;
		else if (!strcmp(arg, "mmap"))
			o->read_mode = READER_MMAP;
		else if (!strcmp(arg, "read"))
			o->read_mode = READER_READ;
		else if (!strcmp(arg, "splice"))
			o->read_mode = READER_SPLICE;
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
	case 'v': o->level = LOGL_DEBUG; return 0;
	case 'q': o->level = LOGL_ERR; return 0;
	case 'h': help(); return -1;
	case 'V': printf(PROG " (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
		return -1;
	case 'd': case OPT_BUFFER_KB: case OPT_SUBBUF_KB: case OPT_FLUSH_MS:
	case OPT_SPOOL_MEM_MB: case OPT_SPOOL_DISK_MB: case OPT_ACK_TIMEOUT_MS:
	case OPT_DRAIN_S:
		return opt_number(o, c, arg);
	default:
		fprintf(stderr, "Try '" PROG " --help' for more information.\n");
		return EXIT_USAGE;
	}
}

static void opts_defaults(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	ship_parse_hostport(DEF_CONNECT, o->host, o->port);
	o->tls.cert = DEF_CERT;
	o->tls.key = DEF_KEY;
	o->tls.ca = DEF_CA;
	o->flush_ms = DEF_FLUSH_MS;
	o->subbuf_kb = DEF_SUBBUF_KB;
	o->level = LOGL_INFO;
	o->spool_dir = DEF_SPOOL_DIR;
	o->spool_mem_mb = DEF_SPOOL_MEM_MB;
	o->spool_disk_mb = DEF_SPOOL_DISK_MB;
	o->ack_timeout_ms = DEF_ACK_TIMEOUT_MS;
	o->drain_s = DEF_DRAIN_S;
	snprintf(o->instance, sizeof(o->instance), "tracecollect-%d",
		 (int)getpid());
}

/* Return: 0 to run, -1 to exit 0 (help/version), else an exit status. */
static int opts_parse(struct opts *o, int argc, char **argv)
{
	int c, ret;

	opts_defaults(o);
	while ((c = getopt_long(argc, argv, "+c:e:d:p:vqhV", long_opts,
				NULL)) != -1 && c != OPT_EXEC) {
		ret = opt_apply(o, c, optarg);
		if (ret)
			return ret;
	}
	if (c == OPT_EXEC) {
		if (optind < argc && !strcmp(argv[optind], "--"))
			optind++;
		if (optind == argc)
			return usage_error("--exec wants a program to run");
		if (o->no_user)
			return usage_error("--exec needs the programs' buffers "
					   "(drop --no-user)");
		o->exec_argv = argv + optind;
	} else if (optind < argc) {
		return usage_error("unexpected argument '%s'", argv[optind]);
	}
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
		fprintf(stderr, PROG ": %s; tracing the events only\n", why);
		return 0;
	}
	if (ret < 0)
		return fail(a, ret, "%s", why);
	a->ftrace_on = true;
	for (i = 0; ret == 0 && (ev = ftrace_event(a->o.tracer, i)); i++)
		ret = tracing_track(a->t, "ftrace", ev);
	return ret < 0 ? fail(a, ret, "out of memory") : 0;
}

/* The sub-buffer size; the default only where the kernel takes it. */
static int set_subbuf(struct agent *a, char *why, size_t len)
{
	int ret = tracing_set_subbuf(a->t, a->o.subbuf_kb, why, len);

	if (ret == 0 || a->o.subbuf_set)
		return ret;
	if (ret != -EOPNOTSUPP)
		log_warn("%s; keeping the kernel's", why);
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
 * --trace-clock: "x86-tsc" (asked, or auto with an invariant TSC) when the
 * kernel takes it and the TSC's rate can be measured; else the instance
 * keeps "mono", and says why when x86-tsc was asked for.
 */
static int setup_clock(struct agent *a)
{
	const char *want = a->o.trace_clock ? a->o.trace_clock : "auto";
	char why[512];
	int ret;

	if (!strcmp(want, "mono") || (!strcmp(want, "auto") && !tsc_invariant()))
		return 0;
	ret = ring_clock_calibrate(TSC_CALIBRATE_US, &a->tsc);
	if (ret < 0)
		snprintf(why, sizeof(why), "cannot measure the TSC's rate: %s",
			 tc_strerror(ret));
	else
		ret = tracing_set_clock(a->t, "x86-tsc", why, sizeof(why));
	a->tsc_clock = ret == 0;
	if (ret < 0 && !strcmp(want, "x86-tsc"))
		return fail(a, ret, "--trace-clock x86-tsc: %s", why);
	if (ret < 0)
		log_info("trace clock mono: %s", why);
	return 0;
}

/* Create the instance and enable the requested events. */
static int setup_tracing(struct agent *a)
{
	char why[512];
	size_t i;
	int ret;

	ret = tracing_open(a->o.instance, a->o.buffer_kb, &a->t, why,
			   sizeof(why));
	if (ret == 0 && a->o.subbuf_kb)
		ret = set_subbuf(a, why, sizeof(why));
	if (ret < 0)
		return fail(a, ret, "%s", why);
	ret = setup_clock(a);
	if (ret < 0)
		return ret;
	for (i = 0; i < a->o.nevents; i++) {
		ret = tracing_enable(a->t, a->o.events[i], why, sizeof(why));
		if (ret < 0)
			return fail(a, ret, "%s", why);
	}
	a->kstats = calloc((size_t)tracing_ncpus(a->t), sizeof(*a->kstats));
	if (a->o.per_cpu_conns)
		a->data = calloc((size_t)tracing_ncpus(a->t), sizeof(*a->data));
	if (!a->kstats || (a->o.per_cpu_conns && !a->data) ||
	    (!a->o.no_pushdown && kfilter_new(a->t, &a->kf) < 0))
		return fail(a, -ENOMEM, "out of memory");
	return setup_ftrace(a);
}

static int send_hello(struct agent *a, struct ship *s)
{
	struct proto_hello h = {
		.version = PROTO_VERSION,
		.host = a->hi.host, .machine_id = a->hi.machine_id,
		.boot_id = a->hi.boot_id, .kernel = a->hi.kernel,
		.trace_clock = (char *)tracing_clock(a->t),
		.tsc0 = a->tsc.tsc0, .tsc_mono0 = a->tsc.mono0,
		.tsc_mult = a->tsc.mult, .tsc_shift = a->tsc.shift,
		.ncpus = (uint32_t)tracing_ncpus(a->t),
		.page_size = tracing_page_size(a->t),
		.long_size = a->hi.long_size, .big_endian = a->hi.big_endian,
		.session = a->session,
		.pushdown = a->kf != NULL && s == a->s,
	};
	struct proto_welcome w;
	char why[512];
	int ret;

	ret = hostinfo_clock_sample(&h.clock, a->tsc_clock ? &a->tsc : NULL);
	if (ret < 0)
		return fail(a, ret, "cannot read the clocks: %s",
			    tc_strerror(ret));
	ret = ship_hello(s, &h, REPLY_TIMEOUT_MS, &w, why, sizeof(why));
	if (ret < 0)
		return fail(a, ret, "%s", why);
	if (s == a->s)
		log_info("connected to %s port %s as %s (collector host id %"
			 PRIu64 ")", a->o.host, a->o.port, a->hi.host,
			 w.host_id);
	return 0;
}

/* MSG_HEADER_PAGE, then one MSG_FORMAT per enabled event, on @s. */
static int send_formats(struct agent *a, struct ship *s)
{
	struct proto_msg m = { .type = MSG_HEADER_PAGE };
	const char *sys, *name;
	size_t i, len;
	char *text;
	int ret;

	ret = tracing_header_page(a->t, &m.header_page.text,
				  &m.header_page.len);
	if (ret < 0)
		return fail(a, ret, "cannot read events/header_page: %s",
			    tc_strerror(ret));
	ret = ship_msg(s, &m);
	free(m.header_page.text);
	for (i = 0; ret == 0 && i < tracing_event_count(a->t); i++) {
		ret = tracing_format(a->t, i, &sys, &name, &text, &len);
		if (ret < 0)
			return fail(a, ret, "cannot read the format of event "
				    "#%zu: %s", i, tc_strerror(ret));
		m = (struct proto_msg){ .type = MSG_FORMAT, .format = {
			.system = (char *)sys, .name = (char *)name,
			.text = text, .len = len } };
		ret = ship_msg(s, &m);
		free(text);
	}
	if (ret < 0)
		return fail(a, ret, "%s", ship_last_error(s));
	return 0;
}

struct ship_relay {
	struct ship *s;
	int err;		/* the first failure to ship */
};

static int ship_relay(void *arg, const struct proto_msg *m)
{
	struct ship_relay *r = arg;
	int ret = ship_msg(r->s, m);

	if (ret < 0 && !r->err)
		r->err = ret;
	return ret;
}

/*
 * With the kernel's function tracer on: /proc/kallsyms as MSG_SYMBOLS
 * (group 0), on every connection (the collector keeps one copy per agent
 * run). Unreadable symbols cost only names: a warning.
 */
static int send_kernel_symbols(struct agent *a)
{
	struct ship_relay r = { .s = a->s };
	int n;

	if (!a->ftrace_on)
		return 0;
	n = funcsyms_send(0, 0, ship_relay, &r);
	if (r.err < 0)
		return fail(a, r.err, "%s", ship_last_error(a->s));
	if (n < 0)
		log_warn("no kernel symbols: %s", tc_strerror(n));
	else if (n == 0)
		log_warn("no kernel symbols: /proc/kallsyms hides the addresses");
	return 0;
}

static int send_cmdlines(struct agent *a, struct ship *s)
{
	struct proto_msg m = { .type = MSG_CMDLINES };
	int ret;

	ret = tracing_cmdlines(&m.cmdlines);
	if (ret < 0) {
		log_warn("cannot read saved_cmdlines: %s", tc_strerror(ret));
		return 0;
	}
	ret = ship_msg(s, &m);
	free(m.cmdlines.items);
	return ret;
}

/* One CPU's counters: the reader's, the spool's and the kernel's. */
static void cpu_stats_fill(struct agent *a, int cpu, struct proto_cpu_stats *o)
{
	struct reader_counts c;
	struct spool_counts sc;

	reader_counts(a->r, cpu, &c);
	spool_counts(a->sp, cpu, &sc);
	*o = (struct proto_cpu_stats){
		.cpu = (uint32_t)cpu, .pages = c.pages,
		.events = c.events, .bytes = c.bytes,
		.overrun = a->kstats[cpu].overrun,
		.dropped = a->kstats[cpu].dropped,
		.commit_overrun = a->kstats[cpu].commit_overrun,
		.resent_pages = sc.resent_pages,
		.lost_pages = sc.lost_pages, .lost_events = sc.lost_events,
		.pages_mmap = c.pages_mmap, .pages_splice = c.pages_splice,
		.pages_read = c.pages_read, .copied_bytes = c.copied_bytes };
}

/* MSG_CPU_STATS for every CPU: our counters and the kernel's. */
static int send_cpu_stats(struct agent *a)
{
	struct proto_msg m = { .type = MSG_CPU_STATS };
	int cpu, ret;

	for (cpu = 0; cpu < tracing_ncpus(a->t); cpu++) {
		ret = tracing_cpu_stats(a->t, cpu, &a->kstats[cpu]);
		if (ret < 0)
			log_warn("cpu%d: cannot read stats: %s", cpu,
				 tc_strerror(ret));
		cpu_stats_fill(a, cpu, &m.cpu_stats);
		ret = ship_msg(a->s, &m);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * --connections per-cpu: CPU @cpu's pages have a connection of their own;
 * else (and for the programs' streams) they go with the control messages.
 */
static struct ship *link_of(struct agent *a, int cpu)
{
	return a->data && a->s && cpu >= 0 && cpu < tracing_ncpus(a->t) ?
	       a->data[cpu] : a->s;
}

/* Why the last write or read failed, on whichever connection it was. */
static const char *links_error(struct agent *a)
{
	int cpu;

	if (!a->s || ship_last_error(a->s)[0])
		return a->s ? ship_last_error(a->s) : "not connected";
	for (cpu = 0; a->data && cpu < tracing_ncpus(a->t); cpu++)
		if (a->data[cpu] && ship_last_error(a->data[cpu])[0])
			return ship_last_error(a->data[cpu]);
	return "";
}

/*
 * Close every connection. They go and come back together: a failure of
 * one (the collector restarted, the link is cut) nearly always is a
 * failure of all, and resending after a reconnect stays one code path.
 */
static void links_close(struct agent *a)
{
	int cpu;

	for (cpu = 0; a->data && cpu < tracing_ncpus(a->t); cpu++) {
		ship_close(a->data[cpu]);
		a->data[cpu] = NULL;
	}
	ship_close(a->s);
	a->s = NULL;
}

/*
 * The connection is gone (@why): close it and schedule the next attempt
 * after an exponentially growing delay with jitter (half to all of it),
 * so that many agents losing one collector do not return in step.
 */
static void conn_lost(struct agent *a, const char *why)
{
	int delay = a->backoff_ms, half = delay / 2;

	delay = half + (int)((unsigned)random() % (unsigned)(delay - half + 1));
	log_warn("lost the collector: %s; reconnecting in %d ms", why, delay);
	a->next_try = util_now_ms() + delay;
	a->backoff_ms = delay >= BACKOFF_MAX_MS / 2 ? BACKOFF_MAX_MS : delay * 2;
	links_close(a);
	if (a->kf)	/* the next collector may filter less */
		kfilter_clear_all(a->kf);
}

/* Clock sample, cmdlines and CPU stats: every PERIODIC_MS and at the end. */
static void send_periodic(struct agent *a)
{
	struct proto_msg m = { .type = MSG_CLOCK };
	int cpu, ret;

	if (!a->s)
		return;
	ret = hostinfo_clock_sample(&m.clock, a->tsc_clock ? &a->tsc : NULL);
	if (ret == 0)
		ret = ship_msg(a->s, &m);
	if (ret == 0)
		ret = send_cmdlines(a, a->s);
	/* each connection's pages are decoded with its own clock and comms */
	for (cpu = 0; ret == 0 && a->data && cpu < tracing_ncpus(a->t); cpu++) {
		ret = ship_msg(a->data[cpu], &m);
		if (ret == 0)
			ret = send_cmdlines(a, a->data[cpu]);
	}
	if (ret == 0)
		ret = send_cpu_stats(a);
	if (ret == 0 && a->u)
		ret = ubuf_stats(a->u, &a->uops);
	if (ret < 0)
		conn_lost(a, links_error(a));
}

static void on_ack(void *arg, uint32_t stream, uint64_t seq)
{
	struct agent *a = arg;

	spool_ack(a->sp, (uint16_t)stream, seq);
	a->ack_progress = util_now_ms();
}

/* MSG_FILTER: set it on the instance; the answer goes out after ship_check(). */
static void on_filter(void *arg, const struct proto_filter *f)
{
	struct agent *a = arg;

	kfilter_apply(a->kf, f);
}

static int send_filter_status(void *arg, const struct proto_msg *m)
{
	struct agent *a = arg;

	return ship_msg(a->s, m);
}

/* Spooled pages are whole page frames (on_page()): sent as they are. */
static int resend_page(void *arg, const struct spool_page *p)
{
	struct agent *a = arg;

	return ship_frames(link_of(a, p->stream), p->data, p->len);
}

/* One connection, TLS or --insecure-plain, with ACKs going to on_ack(). */
static int link_open(struct agent *a, struct ship **out)
{
	char why[640];
	int ret;

	if (a->o.insecure_plain)
		ret = ship_connect_plain(a->o.host, a->o.port, out, why,
					 sizeof(why));
	else
		ret = ship_connect(a->o.host, a->o.port, &a->o.tls, out, why,
				   sizeof(why));
	if (ret < 0)
		return fail(a, ret, "%s", why);
	ship_set_ack_fn(*out, on_ack, a);
	ship_set_io_timeout(*out, a->o.ack_timeout_ms);
	return 0;
}

/*
 * --connections per-cpu: a data connection per CPU, each introduced like
 * the control connection (HELLO with the same session, the page header
 * and the formats its pages are decoded with), carrying that CPU's pages.
 * Filters are pushed down on the control connection only (the instance
 * is one for all CPUs): data connections do not offer push-down.
 */
static int data_open(struct agent *a)
{
	int cpu, ret = 0;

	for (cpu = 0; a->data && ret == 0 && cpu < tracing_ncpus(a->t); cpu++) {
		ret = link_open(a, &a->data[cpu]);
		if (ret == 0)
			ret = send_hello(a, a->data[cpu]);
		if (ret == 0)
			ret = send_formats(a, a->data[cpu]);
	}
	return ret;
}

/* Connect, HELLO, formats, then every page not acknowledged yet. */
static int connect_collector(struct agent *a)
{
	int ret;

	ret = link_open(a, &a->s);
	if (ret < 0)
		return ret;
	if (a->kf)
		ship_set_filter_fn(a->s, on_filter, a);
	ret = send_hello(a, a->s);
	if (ret == 0)
		ret = send_formats(a, a->s);
	if (ret == 0)
		ret = send_kernel_symbols(a);
	if (ret == 0)
		ret = data_open(a);
	if (ret == 0 && a->u)
		ret = ubuf_reannounce(a->u, &a->uops);
	if (ret == 0 && (ret = spool_resend(a->sp, resend_page, a)) < 0)
		fail(a, ret, "resending: %s", links_error(a)[0] ?
		     links_error(a) : tc_strerror(ret));
	if (ret < 0) {
		links_close(a);
		return ret;
	}
	a->backoff_ms = BACKOFF_MIN_MS;
	a->ack_progress = util_now_ms();
	return 0;
}

/* A reconnect attempt when one is due; failures schedule the next. */
static void reconnect(struct agent *a)
{
	if (a->s || util_now_ms() < a->next_try)
		return;
	a->reconnects++;
	if (connect_collector(a) < 0) {
		conn_lost(a, a->err);
		return;
	}
	send_periodic(a);
}

/* A page waiting in the spool, sent from there; while streaming only as
 * much as goes out without waiting (pending_block false). */
static int send_pending_page(void *arg, const struct spool_page *p)
{
	struct agent *a = arg;

	struct ship *s = link_of(a, p->stream);

	if (!a->pending_block && ship_would_block(s, p->len))
		return 1;
	return ship_frames(s, p->data, p->len);
}

/* Send the unsent pages of @stream (-1: all) that the socket takes. */
static void send_pending(struct agent *a, int stream)
{
	int ret;

	if (!a->s || !spool_pending(a->sp, stream))
		return;
	ret = spool_send_pending(a->sp, stream, send_pending_page, a);
	if (ret < 0)
		conn_lost(a, links_error(a)[0] ? links_error(a) :
			  tc_strerror(ret));
}

/* Whether splicing page @p must wait: older pages of its CPU wait in the
 * spool, or the collector is not taking data as fast as we read it. */
static bool must_wait(struct agent *a, const struct reader_page *p)
{
	return spool_pending(a->sp, p->cpu) ||
	       ship_would_block(link_of(a, p->cpu),
				FRAME_HDR_SIZE + p->head_len + p->len);
}

/* The frame header of @p followed by its page header, into @pre of
 * FRAME_HDR_SIZE + 64 bytes. Return: bytes written or -EINVAL. */
static int frame_prefix(const struct reader_page *p, uint8_t flags,
			uint8_t *pre)
{
	struct frame_hdr h = { .type = FRAME_PAGE, .flags = flags,
			       .stream = (uint16_t)p->cpu, .seq = p->seq,
			       .len = (uint32_t)(p->head_len + p->len) };

	if (p->head_len > 64 || p->len > FRAME_MAX_PAYLOAD - p->head_len)
		return -EINVAL;
	frame_hdr_pack(&h, pre);
	if (p->head_len)
		memcpy(pre + FRAME_HDR_SIZE, p->head, p->head_len);
	return FRAME_HDR_SIZE + (int)p->head_len;
}

/* reader_buf_fn: read(2) puts pages straight into the spool, after room
 * for their frame header (NULL: the reader's buffer, then copied). */
static uint8_t *page_room(void *arg, int cpu, size_t len)
{
	struct agent *a = arg;

	(void)cpu;
	a->room = spool_reserve(a->sp, FRAME_HDR_SIZE + len);
	return a->room ? a->room + FRAME_HDR_SIZE : NULL;
}

/*
 * A page from the kernel, kept in the spool as a whole frame until the
 * collector acknowledges it: read into it in place (page_room()) or
 * copied there (the mmap path: the page goes back to the kernel when this
 * returns). It is sent from there, one TLS write for the frame, when the
 * socket takes it. On the splice path the page may go into the socket
 * from the pipe instead; the spool copy is then only for resending.
 */
static int on_page(void *arg, const struct reader_page *p)
{
	struct agent *a = arg;
	uint8_t flags = p->missed_events ? FRAME_F_MISSED_EVENTS : 0;
	uint8_t pre[FRAME_HDR_SIZE + 64];
	bool sent = false, in_place;
	int n, ret;

	in_place = a->room && !p->head_len &&
		   p->data == a->room + FRAME_HDR_SIZE;
	n = frame_prefix(p, flags, in_place ? a->room : pre);
	if (n < 0)
		return n;
	if (a->s && p->splice_fd >= 0 && ship_can_splice(a->s) &&
	    (a->pending_block || !must_wait(a, p))) {
		ret = ship_page_splice(link_of(a, p->cpu), (uint16_t)p->cpu,
				       p->seq, flags, p->splice_fd, p->len);
		if (ret < 0)
			conn_lost(a, links_error(a));
		sent = ret == 0;
	}
	if (spool_empty(a->sp))
		a->ack_progress = util_now_ms();
	if (in_place)
		ret = spool_commit(a->sp, (uint16_t)p->cpu, p->seq, flags,
				   p->events, a->room, (size_t)n + p->len,
				   sent);
	else
		ret = spool_add_prefixed(a->sp, (uint16_t)p->cpu, p->seq,
					 flags, p->events, pre, (size_t)n,
					 p->data, p->len, sent);
	a->room = NULL;
	if (ret == 0 && !sent)
		send_pending(a, p->cpu);
	return ret;
}

/* A failed reader call: the reader's reason. */
static int read_failed(struct agent *a, int ret)
{
	return fail(a, ret, "reading the ring buffers of instance %s: %s",
		    tracing_name(a->t), tc_strerror(ret));
}

static int user_msg(void *arg, const struct proto_msg *m)
{
	struct agent *a = arg;

	return a->s ? ship_msg(a->s, m) : -ENOTCONN;
}

static int user_page(void *arg, uint16_t stream, uint64_t seq, bool missed,
		     const void *data, size_t len)
{
	struct agent *a = arg;

	return a->s ? ship_page(a->s, stream, seq, missed ? FRAME_F_MISSED_EVENTS : 0,
				NULL, 0, data, len) : -ENOTCONN;
}

/*
 * Traced programs' rings. A program's buffer fills far faster than the
 * agent's --flush-ms, so while any program is attached it is drained every
 * USER_POLL_MS; new programs are looked for every USER_SCAN_MS. Pages are
 * taken only while connected: otherwise they wait in the program's ring,
 * which drops (or overwrites) and counts, as the kernel's does. They do not
 * go through the spool; a page whose connection breaks is counted lost.
 */
static void user_step(struct agent *a, bool flush)
{
	int64_t now = util_now_ms();
	int ret = 0;

	if (!a->u || !a->s)
		return;
	if (snapshot_requested) {
		snapshot_requested = 0;
		ubuf_trigger(a->u);
	}
	if (now >= a->user_scan) {
		ret = ubuf_scan(a->u, &a->uops);
		a->user_scan = now + USER_SCAN_MS;
	}
	flush = flush || now >= a->user_flush;
	if (flush)
		a->user_flush = now + a->o.flush_ms;
	if (ret == 0)
		ret = ubuf_poll(a->u, &a->uops, flush);
	if (ret < 0)
		conn_lost(a, ship_last_error(a->s)[0] ? ship_last_error(a->s)
						       : tc_strerror(ret));
}

/* The last of the programs' rings: end partial pages, ship until a round
 * finds nothing (bounded: a program still writing is cut off). */
static void user_drain(struct agent *a)
{
	int i, ret;

	for (i = 0; a->u && a->s && i < USER_DRAIN_TRIES; i++) {
		ret = ubuf_scan(a->u, &a->uops);
		if (ret == 0)
			ret = ubuf_poll(a->u, &a->uops, true);
		if (ret < 0) {
			conn_lost(a, ship_last_error(a->s));
			return;
		}
		if (ret == 0 && i > 0)
			return;
		poll(NULL, 0, USER_POLL_MS);
	}
}

/* Open the programs' ring directory; only an explicit --user-dir must exist. */
static int user_open(struct agent *a)
{
	int ret;

	a->uops = (struct ubuf_ops){ user_msg, user_page, a };
	if (a->o.no_user)
		return 0;
	ret = ubuf_new(a->o.user_dir, &a->u);
	if (ret == 0 && a->tsc_clock)
		ubuf_set_conv(a->u, &a->tsc);
	if (ret < 0 && a->o.user_dir)
		return fail(a, ret, "--user-dir %s: %s", a->o.user_dir,
			    tc_strerror(ret));
	if (ret < 0)
		log_warn("%s: %s; not looking for traced programs",
			 UBUF_DEFAULT_DIR, tc_strerror(ret));
	return 0;
}

static int next_timeout(struct agent *a, int64_t end, int64_t periodic)
{
	int64_t now = util_now_ms(), t = a->o.flush_ms;

	if (a->u && t > (ubuf_active(a->u) ? USER_POLL_MS : USER_SCAN_MS))
		t = ubuf_active(a->u) ? USER_POLL_MS : USER_SCAN_MS;

	if (end && end - now < t)
		t = end - now;
	if (periodic - now < t)
		t = periodic - now;
	if (!a->s && a->next_try - now < t)
		t = a->next_try - now;
	if (a->s && spool_pending(a->sp, -1) && t > FULL_WAIT_MS)
		t = FULL_WAIT_MS;
	return t < 0 ? 0 : (int)t;
}

/* ACKs and errors from the collector; a connection whose ACKs stopped
 * (a silent network cut) is given up. */
static void check_collector(struct agent *a)
{
	char why[640];
	int cpu;

	if (!a->s)
		return;
	if (ship_check(a->s, why, sizeof(why)) < 0) {
		conn_lost(a, why);
		return;
	}
	if (a->kf && kfilter_send(a->kf, send_filter_status, a) < 0) {
		conn_lost(a, ship_last_error(a->s));
		return;
	}
	for (cpu = 0; a->data && cpu < tracing_ncpus(a->t); cpu++) {
		if (ship_check(a->data[cpu], why, sizeof(why)) < 0) {
			conn_lost(a, why);
			return;
		}
	}
	if (!spool_empty(a->sp) &&
	    util_now_ms() - a->ack_progress > a->o.ack_timeout_ms) {
		snprintf(why, sizeof(why), "no acknowledgement for %d ms",
			 a->o.ack_timeout_ms);
		conn_lost(a, why);
	}
}

/* Read pages unless the spool is full: then they wait in the kernel. */
static int read_some(struct agent *a, int timeout_ms)
{
	int ret;

	if (spool_full(a->sp)) {
		poll(NULL, 0, timeout_ms < FULL_WAIT_MS ? timeout_ms :
			      FULL_WAIT_MS);
		return 0;
	}
	ret = reader_poll(a->r, timeout_ms, on_page, a);
	return ret < 0 ? read_failed(a, ret) : 0;
}

/* --exec: start the program once the agent looks for its buffer. */
static int exec_open(struct agent *a)
{
	struct exec_env env = {
		.dir = a->o.user_dir ? a->o.user_dir : UBUF_DEFAULT_DIR,
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

/* Ship pages until a signal, the end of --duration or of the program. */
static int stream(struct agent *a)
{
	int64_t end = a->o.duration_s ? util_now_ms() + a->o.duration_s * 1000 : 0;
	int64_t periodic = util_now_ms() + PERIODIC_MS;
	int ret;

	while (!stop_requested && (!end || util_now_ms() < end) && !exec_ended(a)) {
		reconnect(a);
		ret = read_some(a, next_timeout(a, end, periodic));
		if (ret < 0)
			return ret;
		send_pending(a, -1);
		check_collector(a);
		user_step(a, false);
		if (util_now_ms() >= periodic) {
			send_periodic(a);
			periodic = util_now_ms() + PERIODIC_MS;
		}
	}
	return 0;
}

/*
 * BYE on @s counting @pages and @events, and its DONE added to a->done.
 * Return: 0 or negative (the connection is then given up).
 */
static int link_bye(struct agent *a, struct ship *s, uint64_t pages,
		    uint64_t events)
{
	struct proto_bye bye = { .pages = pages, .events = events };
	struct proto_done done;
	char why[640];
	int ret;

	ret = ship_bye(s, &bye, REPLY_TIMEOUT_MS, &done, why, sizeof(why));
	if (ret < 0) {
		conn_lost(a, why);
		return ret;
	}
	a->done.pages += done.pages;
	a->done.events += done.events;
	a->done.journaled |= done.journaled;
	return 0;
}

/*
 * BYE and DONE on the current connections: each CPU's own first (per-cpu
 * mode), the control connection last; a->done sums their DONEs.
 * Return: 0 or negative.
 */
static int say_bye(struct agent *a)
{
	struct reader_counts c;
	uint64_t pages = 0, events = 0;
	int cpu, ret = 0;

	send_periodic(a);
	if (!a->s)
		return -ENOTCONN;
	a->done = (struct proto_done){ 0 };
	for (cpu = 0; ret == 0 && cpu < tracing_ncpus(a->t); cpu++) {
		reader_counts(a->r, cpu, &c);
		if (a->data)
			ret = link_bye(a, a->data[cpu], c.pages, c.events);
		else {
			pages += c.pages;
			events += c.events;
		}
	}
	if (ret == 0 && a->u) {
		struct ubuf_totals ut;

		ubuf_totals(a->u, &ut);
		pages += ut.pages;
		events += ut.events;
	}
	if (ret == 0)
		ret = link_bye(a, a->s, pages, events);
	if (ret < 0)
		return ret;
	spool_ack_all(a->sp);	/* DONE: everything sent is stored */
	return 0;
}

/* Pages that could not be delivered in time: count them, report, fail. */
static int give_up(struct agent *a)
{
	struct spool_counts sc;
	uint64_t pages = 0, events = 0;
	int cpu;

	spool_give_up(a->sp);
	for (cpu = 0; cpu < tracing_ncpus(a->t); cpu++) {
		spool_counts(a->sp, cpu, &sc);
		pages += sc.lost_pages;
		events += sc.lost_events;
	}
	return fail(a, TC_ERR_PEER_CLOSED, "the collector at %s port %s "
		    "could not be reached within --drain-timeout: %" PRIu64
		    " pages (%" PRIu64 " events) were not delivered",
		    a->o.host, a->o.port, pages, events);
}

/* Tracing off, drain, then BYE/DONE, reconnecting until --drain-timeout. */
static int finish(struct agent *a)
{
	int64_t deadline, t0 = util_now_ms();
	int ret;

	tracing_stop(a->t);
	a->pending_block = true;	/* the end: nothing to read on for */
	send_pending(a, -1);
	ret = reader_drain(a->r, on_page, a);
	if (ret < 0)
		return read_failed(a, ret);
	user_drain(a);
	deadline = util_now_ms() + a->o.drain_s * 1000;
	for (;;) {
		reconnect(a);
		if (a->s && say_bye(a) == 0) {
			a->drain_ms = util_now_ms() - t0;
			return 0;
		}
		if (util_now_ms() >= deadline || stop_requested > 1)
			return give_up(a);
		poll(NULL, 0, (int)(a->next_try > util_now_ms() ?
			a->next_try - util_now_ms() : 0) + 1);
	}
}

static int start_agent(struct agent *a)
{
	int ret;

	ret = hostinfo_get(a->o.name, &a->hi);
	if (ret < 0)
		return fail(a, ret, "cannot collect host facts: %s",
			    tc_strerror(ret));
	if (getrandom(&a->session, sizeof(a->session), 0) !=
	    sizeof(a->session) || !a->session)
		a->session = ((uint64_t)getpid() << 32) ^ (uint64_t)util_now_ms();
	srandom((unsigned)a->session);
	a->backoff_ms = BACKOFF_MIN_MS;
	ret = setup_tracing(a);
	if (ret < 0)
		return ret;
	ret = spool_open(tracing_ncpus(a->t), a->o.spool_mem_mb << 20,
			 a->o.spool_dir, (uint64_t)a->o.spool_disk_mb << 20,
			 &a->sp);
	/* a page frame: frame header, page header, page, lost-events count */
	if (ret == 0)
		ret = spool_set_slot(a->sp, FRAME_HDR_SIZE + 64 +
				     tracing_page_size(a->t));
	if (ret < 0)
		return fail(a, ret, "cannot set up the spool: %s",
			    tc_strerror(ret));
	return 0;
}

static int run(struct agent *a)
{
	enum reader_mode mode;
	int ret;

	ret = start_agent(a);
	if (ret == 0)
		ret = user_open(a);
	if (ret == 0)
		ret = connect_collector(a);
	if (ret < 0)
		return ret;
	mode = a->o.read_mode;
	if (mode == READER_AUTO)
		mode = ship_can_splice(a->s) ? READER_SPLICE : READER_READ;
	ret = reader_open(tracing_instance(a->t), tracing_ncpus(a->t),
			  tracing_page_size(a->t), mode, &a->r);
	if (ret < 0)
		return fail(a, ret, "cannot open the ring buffers of instance "
			    "%s: %s", tracing_name(a->t), tc_strerror(ret));
	reader_set_buf_fn(a->r, page_room, a);
	if (mode == READER_SPLICE)
		log_info("splicing full pages from the ring buffers%s",
			 ship_can_splice(a->s) ? " into the socket" :
			 " (copied: this socket cannot take them)");
	else
		log_info("reading %d of %d CPUs through a mapped ring buffer%s",
			 reader_mapped(a->r), tracing_ncpus(a->t),
			 reader_mapped(a->r) < tracing_ncpus(a->t) ?
			 ", the others with read(2)" : "");
	ret = tracing_start(a->t);
	if (ret < 0)
		return fail(a, ret, "cannot switch tracing on in instance %s",
			    tracing_name(a->t));
	ret = exec_open(a);
	if (ret < 0)
		return ret;
	ret = stream(a);
	return ret < 0 ? ret : finish(a);
}

static void summary(struct agent *a)
{
	struct tracing_cpu_stats tot = { 0 };
	struct proto_cpu_stats c, sum = { 0 };
	int cpu;

	for (cpu = 0; cpu < tracing_ncpus(a->t); cpu++) {
		cpu_stats_fill(a, cpu, &c);
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
	       sum.resent_pages, a->reconnects,
	       /* a journaling collector answers DONE before it has decoded */
	       a->done.journaled ? "journaled_pages" : "stored_events",
	       a->done.journaled ? a->done.pages : a->done.events);
	printf(PROG ": spool: peak_mem_mb=%.1f drain_ms=%" PRId64 "\n",
	       (double)spool_mem_peak(a->sp) / (1 << 20), a->drain_ms);
	if (a->u) {
		struct ubuf_totals ut;

		ubuf_totals(a->u, &ut);
		printf(PROG ": user: programs=%" PRIu64 " pages=%" PRIu64
		       " events=%" PRIu64 " bytes=%" PRIu64 " lost=%" PRIu64 "\n",
		       ut.programs, ut.pages, ut.events, ut.bytes, ut.lost);
	}
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
	ubuf_free(a->u);
	reader_close(a->r);
	links_close(a);
	free(a->data);
	spool_close(a->sp);
	kfilter_free(a->kf);
	tracing_close(a->t);
	free(a->kstats);
	free(a->o.events);
	free(a->o.ffilters);
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
	if (ret < 0 && stop_requested && !a.r)
		snprintf(a.err, sizeof(a.err), "interrupted by a signal "
			 "before tracing started");
	if (ret == 0)
		summary(&a);
	cleanup(&a);
	if (ret < 0) {
		fprintf(stderr, PROG ": %s\n", a.err);
		return EXIT_RUNTIME;
	}
	return 0;
}
