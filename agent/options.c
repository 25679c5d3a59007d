/*
 * options.c - traceagent's options (options.h): the getopt table, the
 * defaults, --help, -C FILE's keys, and the checks that make a usage
 * error. Nothing here touches the kernel or the network.
 */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/config_file.h"
#include "common/log.h"
#include "agent/freezewatch.h"
#include "agent/ftrace.h"
#include "agent/options.h"
#include "agent/stacks.h"
#include "agent/reader.h"
#include "agent/ship.h"
#include "agent/ubuf.h"

#define PROG			OPTIONS_PROG
#define EXIT_RUNTIME		OPTIONS_EXIT_RUNTIME
#define EXIT_USAGE		OPTIONS_EXIT_USAGE
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
"  -s, --connect HOST:PORT[,HOST:PORT...]\n"
"                           collector address; [IPV6]:PORT for IPv6\n"
"                           (default " DEF_CONNECT "). Several: tried in\n"
"                           order, and a lost collector's pages fail over to\n"
"                           the next (repeat connect = in -C FILE to add)\n"
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
"      --stacktrace[=EVENT[,EVENT]...]\n"
"      --stacktrace 'EVENT[,EVENT]... where FILTER'\n"
"                           a kernel stack after each event (the instance's\n"
"                           options/stacktrace), or after each of the events\n"
"                           named (a stacktrace trigger on each, removed at\n"
"                           exit), or of those matching FILTER (the kernel's\n"
"                           filter language: 'stacktrace if FILTER'). EVENT\n"
"                           as traceq's queries name one, among the -e\n"
"                           events; may be repeated. A kernel without them\n"
"                           is said in one line and tracing goes on\n"
"      --flight-recorder MB keep the instance as a flight recorder: MB MiB per\n"
"                           CPU in overwrite mode, no page shipped (only\n"
"                           heartbeats, stats, formats, symbols) until the\n"
"                           collector says freeze (traceq --snapshot, or a\n"
"                           --freeze-on trigger in its freeze group): the whole\n"
"                           buffer is shipped and it is armed again\n"
"      --freeze-on 'EVENT [where FILTER]'\n"
"                           freeze when EVENT (one event, NAME or\n"
"                           SYSTEM:NAME) matches FILTER (the kernel's filter\n"
"                           language): the kernel's traceoff trigger stops\n"
"                           the instance at the event, a watch instance\n"
"                           wakes the agent, and the collector freezes the\n"
"                           other recorders of this host's freeze groups (its\n"
"                           freeze-group lines say which; with\n"
"                           --flight-recorder)\n"
"      --group NAME         ask that this host's triggers freeze group NAME\n"
"                           only: the collector takes it only where its\n"
"                           freeze-group lines put this host in NAME, else\n"
"                           ignores and logs it (with --flight-recorder)\n"
"      --user-stacktrace    the user-space stack after every event too (the\n"
"                           instance's options/userstacktrace: addresses,\n"
"                           ftrace:user_stack records), where the kernel has it\n"

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

/* The one line for memory that ran out. Return: the exit status. */
static int out_of_memory(void)
{
	fprintf(stderr, PROG ": out of memory\n");
	return EXIT_RUNTIME;
}

/* @s at the end of the list *@list of *@n. Return: 0 or an exit status. */
static int list_add(const char ***list, size_t *n, const char *s)
{
	const char **l = realloc(*list, (*n + 1) * sizeof(*l));

	if (!l)
		return out_of_memory();
	l[(*n)++] = s;
	*list = l;
	return 0;
}

static int add_event(struct options *o, const char *spec)
{
	if (!event_spec_ok(spec))
		return usage_error("bad event '%s': want SYSTEM or "
				   "SYSTEM:EVENT", spec);
	return list_add(&o->events, &o->nevents, spec);
}

enum { OPT_CERT = 256, OPT_KEY, OPT_CA, OPT_INSTANCE, OPT_NAME,
       OPT_BUFFER_KB, OPT_SUBBUF_KB, OPT_FLUSH_MS, OPT_SPOOL_DIR,
       OPT_SPOOL_MEM_MB,
       OPT_SPOOL_DISK_MB, OPT_ACK_TIMEOUT_MS, OPT_DRAIN_S, OPT_READ_MODE,
       OPT_USER_DIR, OPT_NO_USER, OPT_FTRACE_FILTER, OPT_EXEC, OPT_INSECURE_PLAIN,
       OPT_NO_PUSHDOWN, OPT_CONNECTIONS, OPT_TRACE_CLOCK, OPT_NO_KERNEL_SYMBOLS,
       OPT_NO_COMM_EVENTS, OPT_STACKTRACE, OPT_USER_STACKTRACE, OPT_FLIGHT_RECORDER,
       OPT_FREEZE_ON, OPT_GROUP };

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
	{ "stacktrace", optional_argument, NULL, OPT_STACKTRACE },
	{ "user-stacktrace", no_argument, NULL, OPT_USER_STACKTRACE },
	{ "flight-recorder", required_argument, NULL, OPT_FLIGHT_RECORDER },
	{ "freeze-on", required_argument, NULL, OPT_FREEZE_ON },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "tracer", required_argument, NULL, 'p' },
	{ "ftrace-filter", required_argument, NULL, OPT_FTRACE_FILTER },
	{ "exec", no_argument, NULL, OPT_EXEC },
	{ "insecure-plain", no_argument, NULL, OPT_INSECURE_PLAIN },
	{ "connections", required_argument, NULL, OPT_CONNECTIONS },
	{ "trace-clock", required_argument, NULL, OPT_TRACE_CLOCK },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	CLI_OPTIONS_END,
};

/*
 * The options that take a number: the range it must be in, and what a
 * usage error says the option wants ("WANTS, not 'ARG'").
 */
static const struct num_opt {
	int c;
	long min, max;
	const char *wants;
} num_opts[] = {
	{ 'd', 1, INT_MAX / 1000, "--duration wants whole seconds >= 1" },
	{ OPT_BUFFER_KB, 1, LONG_MAX / 1024, "--buffer-kb wants a size in KiB >= 1" },
	{ OPT_SUBBUF_KB, 0, 1024,	/* and a power of two */
	  "--subbuf-kb wants 0 or a power of two up to 1024" },
	{ OPT_FLUSH_MS, 1, 3600000, "--flush-ms wants milliseconds in 1..3600000" },
	{ OPT_SPOOL_MEM_MB, 0, 1L << 30, "--spool-mem-mb wants MiB" },
	{ OPT_SPOOL_DISK_MB, 0, 1L << 30, "--spool-disk-mb wants MiB" },
	{ OPT_ACK_TIMEOUT_MS, 100, 3600000,
	  "--ack-timeout-ms wants milliseconds in 100..3600000" },
	{ OPT_DRAIN_S, 0, 86400, "--drain-timeout wants seconds in 0..86400" },
	{ OPT_FLIGHT_RECORDER, 1, RECORDER_MB_MAX,
	  "--flight-recorder wants MiB per CPU in 1..4096" },
};

/* The num_opts row of option @c; NULL if it takes no number. */
static const struct num_opt *num_opt_of(int c)
{
	for (size_t i = 0; i < sizeof(num_opts) / sizeof(num_opts[0]); i++)
		if (num_opts[i].c == c)
			return &num_opts[i];
	return NULL;
}

/* Option @n's number @arg into @o. Return: 0 or an exit status. */
static int opt_number(struct options *o, const struct num_opt *n, const char *arg)
{
	long v;

	if (!cli_parse_num(arg, n->min, n->max, &v) ||
	    (n->c == OPT_SUBBUF_KB && (v & (v - 1))))
		return usage_error("%s, not '%s'", n->wants, arg);
	switch (n->c) {
	case 'd': o->duration_s = v; break;
	case OPT_BUFFER_KB: o->buffer_kb = (size_t)v; o->buffer_set = true; break;
	case OPT_FLIGHT_RECORDER: o->rec.mb = (size_t)v; break;
	case OPT_SUBBUF_KB: o->subbuf_kb = (size_t)v; o->subbuf_set = true; break;
	case OPT_FLUSH_MS: o->pump.flush_ms = (int)v; break;
	case OPT_SPOOL_MEM_MB: o->pump.spool_mem_mb = (size_t)v; break;
	case OPT_SPOOL_DISK_MB: o->pump.spool_disk_mb = (size_t)v; break;
	case OPT_ACK_TIMEOUT_MS: o->session.ack_timeout_ms = (int)v; break;
	default: o->drain_s = v; break;		/* OPT_DRAIN_S */
	}
	return 0;
}

/* -p and --ftrace-filter. Return: 0 or an exit status. */
static int opt_ftrace(struct options *o, int c, const char *arg)
{
	if (c == 'p') {
		if (!ftrace_tracer_ok(arg))
			return usage_error("bad -p '%s': want function or "
					   "function_graph", arg);
		o->tracer = arg;
		return 0;
	}
	return list_add(&o->ffilters, &o->nffilters, arg);
}

/* --stacktrace[=SPEC]: every event, or SPEC's (agent/stacks.h). */
static int opt_stacktrace(struct options *o, const char *arg)
{
	char why[1024];

	if (!arg) {
		o->stack_all = true;
		return 0;
	}
	if (stacks_check(arg, why, sizeof(why)) < 0)
		return usage_error("%s", why);
	return list_add(&o->stacks, &o->nstacks, arg);
}

/* --freeze-on 'EVENT [where FILTER]': one event, by the freeze watch's rules. */
static int opt_freeze_on(struct options *o, const char *arg)
{
	char why[1024];

	if (freezewatch_parse(arg, NULL, NULL, why, sizeof(why)) < 0)
		return usage_error("%s", why);
	o->rec.freeze_on = arg;
	return 0;
}

/*
 * --connect A,B,C: add each address to the list, in order. The default is
 * replaced by the first address given; on the command line each --connect
 * replaces the list (options_parse()), in -C FILE each `connect =` line adds.
 */
static int add_connect(struct options *o, const char *arg)
{
	struct session_conf *c = &o->session;
	const char *p = arg, *end;
	char one[SHIP_HOST_MAX + SHIP_PORT_MAX + 4];

	if (o->connect_default)
		c->naddrs = 0, o->connect_default = false;
	do {
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		if (c->naddrs == SESSION_ADDRS_MAX)
			return usage_error("--connect: more than %d collectors", SESSION_ADDRS_MAX);
		if ((size_t)(end - p) >= sizeof(one))
			return usage_error("bad --connect '%s': an address is too long", arg);
		memcpy(one, p, (size_t)(end - p));
		one[end - p] = '\0';
		if (ship_parse_hostport(one, c->addrs[c->naddrs].host, c->addrs[c->naddrs].port) < 0)
			return usage_error("bad --connect '%s': want HOST:PORT or [IPV6]:PORT, "
					   "several separated by commas", arg);
		c->naddrs++;
		p = *end ? end + 1 : end;
	} while (*end);
	return 0;
}

/* Apply option @c (with @arg) to @o. Return: 0, -1 (done: --help/--version),
 * or an exit status. */
static int opt_apply(struct options *o, int c, const char *arg)
{
	const struct num_opt *n = num_opt_of(c);

	if (n)
		return opt_number(o, n, arg);
	switch (c) {
	case 'c':
		fprintf(stderr, PROG ": -c is the old spelling of -s (--connect): use -s\n");
		/* fall through */
	case 's':
		return add_connect(o, arg);
	case 'e':
		return add_event(o, arg);
	case OPT_STACKTRACE:
		return opt_stacktrace(o, arg);
	case OPT_USER_STACKTRACE: o->user_stack = true; return 0;
	case OPT_FREEZE_ON:
		return opt_freeze_on(o, arg);
	case OPT_GROUP:
		if (!*arg || strlen(arg) > PROTO_MAX_GROUP)
			return usage_error("--group wants a name of 1..%d bytes", PROTO_MAX_GROUP);
		o->rec.group = arg;
		return 0;
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
	default:
		cli_hint(PROG);
		return EXIT_USAGE;
	}
}

static void options_defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	ship_parse_hostport(DEF_CONNECT, o->session.addrs[0].host, o->session.addrs[0].port);
	o->session.naddrs = 1;
	o->connect_default = true;
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
static int conf_exec(struct options *o, char *value)
{
	size_t n = 0;
	char *w, *save = NULL;

	free(o->conf_exec);
	o->conf_exec = calloc(strlen(value) / 2 + 2, sizeof(*o->conf_exec));
	if (!o->conf_exec)
		return out_of_memory();
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
static int conf_apply(struct options *o, struct config_entry *e, const char *path)
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
	else if (lo->has_arg == optional_argument && parse_yes_no(e->value, &yes))
		ret = yes ? opt_apply(o, lo->val, NULL) : 0;	/* stacktrace = yes */
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
static int conf_load(struct options *o, const char *path)
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
int options_parse(struct options *o, int argc, char **argv)
{
	int c, ret = 0;

	options_defaults(o);
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
		if (c == 's' || c == 'c')	/* each --connect replaces the list */
			o->connect_default = true;
		if (c == OPT_FTRACE_FILTER && o->ffilters_from_conf)
			o->nffilters = 0, o->ffilters_from_conf = false;
		/* --stacktrace 'EVENT where FILTER': its argument may follow */
		if (c == OPT_STACKTRACE && !optarg && optind < argc && argv[optind][0] != '-')
			optarg = argv[optind++];
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
	if ((o->rec.freeze_on || o->rec.group) && !o->rec.mb)
		return usage_error("%s needs --flight-recorder MB",
				   o->rec.freeze_on ? "--freeze-on" : "--group");
	if (o->rec.mb && o->buffer_set)
		return usage_error("--flight-recorder MB sets the buffer size: drop --buffer-kb");
	if (o->rec.mb)
		o->buffer_kb = o->rec.mb * 1024;
	if (!o->nevents)
		return add_event(o, DEF_EVENT);
	return 0;
}

void options_free(struct options *o)
{
	free(o->events);
	free(o->ffilters);
	free(o->stacks);
	free(o->conf_exec);
	config_list_free(&o->conf);
}
