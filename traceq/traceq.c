/*
 * traceq - query a tracecollectd over its nng query endpoint.
 *
 *   traceq [--server URL] [--format text|kernel|fields|csv|json] [--time wall|raw]
 *          [--limit N] QUERY
 *   traceq --count QUERY
 *   traceq --stats
 *   traceq --graph QUERY
 *   traceq --hist SPEC QUERY
 *   traceq --follow QUERY
 *
 * QUERY is `EVENT [where FILTER]` in the kernel's event-filter language. The
 * query is parsed here first so that a typo is shown with a caret without a
 * round trip; the server parses it again (it trusts no client) and its
 * errors are shown the same way. Exit status: 0 ok, 1 the server could not
 * be reached or failed, 2 the query or the command line is wrong.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/filter.h"
#include "common/hist.h"
#include "common/query.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/discover.h"
#include "traceq/modes.h"
#include "traceq/select.h"
#include "traceq/traceq.h"
#include "traceq/when.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: traceq [OPTIONS] QUERY\n"
"       traceq [OPTIONS] --count QUERY\n"
"       traceq [OPTIONS] --follow QUERY\n"
"       traceq [OPTIONS] --stats | --drops | --hosts\n"
"       traceq [OPTIONS] --events [SELECTOR] | --fields SELECTOR\n"
"       traceq [OPTIONS] --graph \"funcgraph [where FILTER]\"\n"
"       traceq [OPTIONS] --sql \"SELECT ...\"\n"
"       traceq [OPTIONS] --hist SPEC QUERY\n"
"       traceq [OPTIONS] --import FILE --name HOST [--force]\n"
"\n"
"Query the events a tracecollectd stored. QUERY is\n"
"  SELECTOR[,SELECTOR...] [where FILTER]\n"
"                           e.g.  \"sched_switch where prev_pid == 0\"\n"
"SELECTOR is an event (sched_switch), a subsystem (sched), system:event\n"
"(sched:sched_switch), or a glob of them (sched:sched_*, sched:*, irq:*, *);\n"
"a bare word names the events of that name, else the subsystem. Rows of\n"
"several events come merged in time order.\n"
"FILTER is the kernel's event-filter language: field OP value with\n"
"== != < <= > >= & on numbers, == != ~ (glob) on strings, && || ! and ().\n"
"Over several events it works as the kernel's subsystem filter: it applies\n"
"to each event that has every field it names (and takes it); the other\n"
"events keep no filter, so all their rows come (an error if none takes it).\n"
"\n"
"Options:\n"
"  -s, --server URL     query endpoint (default $TRACEQ_SERVER, else\n"
"                       default %s).\n"
"                       HOST:PORT or tls://HOST:PORT: the collector's TLS\n"
"                       query port (its --query-tls), with a client\n"
"                       certificate; ipc://PATH or tcp://HOST:PORT: nng\n"
"      --cert FILE      client certificate for TLS (default $TRACEQ_CERT)\n"
"      --key FILE       its key (default $TRACEQ_KEY)\n"
"      --ca FILE        CA that signed the collector's certificate\n"
"                       (default $TRACEQ_CA). The collector shows the hosts\n"
"                       the certificate's scope allows (none without one)\n"
"  -f, --format FMT     text (default): what `trace-cmd report` prints for the\n"
"                       event (libtraceevent's print formats with the plugins\n"
"                       trace-cmd loads, its columns); with --time raw and one\n"
"                       host each line is trace-cmd's for the same event\n"
"                       kernel: what the kernel's trace file prints (the\n"
"                       print fmt without plugins, latency flags; as\n"
"                       libtraceevent renders it: %%p as 0x..., never hashed,\n"
"                       enum names in __print_symbolic as numbers)\n"
"                       fields: COMM-PID [CPU] TIME: EVENT: field=value ...\n"
"                       (every field; code addresses of ftrace events (ip,\n"
"                       parent_ip, func) as name+0xoff)\n"
"                       json: one object per line; csv (one event type): a\n"
"                       header line, then one line per event. Keys: event,\n"
"                       host, cpu, ts, trace_ts, comm (ours), common_* and\n"
"                       the event's fields as the format names them, ip_sym\n"
"                       etc. (ours). A key\n"
"                       is never repeated: where the event has a field named\n"
"                       like one of ours (cpuhp_enter's cpu, sched_wakeup's\n"
"                       comm), the field keeps the name and ours gets a\n"
"                       leading '_' (_cpu, _comm). The pid is common_pid.\n"
"                       The printed name is the one the saved cmdlines give\n"
"                       the event's pid (the latest the agent read), as the\n"
"                       kernel's trace file prints it; a filter's COMM is the\n"
"                       task's name when the event ran (man traceq, COMM);\n"
"                       pid 0 is swapper/N, the CPU's idle task\n"
"      --time CLOCK     wall (default): wall-clock seconds; raw: the host's\n"
"                       trace clock as trace-cmd prints it (ns clocks)\n"
"      --no-host        no leading host column (text, kernel, fields print one\n"
"                       when more than one host matches --host)\n"
"      --tgid           text, kernel: the thread group (process) of the pid\n"
"                       after COMM-PID, as the kernel's trace file prints it\n"
"                       with options/record-tgid: (TGID), (-------) when the\n"
"                       host's saved tgids do not know the pid\n"
"  -n, --limit N        print at most N events (default: all)\n"
"      --follow         print the matching events as the collector stores\n"
"                       them, in the order it stores them (not time order:\n"
"                       pages an agent resends after a reconnect come late),\n"
"                       until SIGINT or SIGTERM (exit 0) or --limit; the\n"
"                       filter runs on the collector. With --since, first\n"
"                       the events of the window stored so far; without,\n"
"                       from now on. Rides\n"
"                       out a collector restart or a lost connection,\n"
"                       resuming where it was; says on stderr how many\n"
"                       events it missed when it fell so far behind that\n"
"                       the collector's retention removed them first; waits\n"
"                       for events not stored yet (as tail -F for a file)\n"
"  -r, --reverse        newest first\n"
"      --since TIME     only events at or after TIME\n"
"      --until TIME     only events before TIME; TIME is one of\n",
		TRACEQ_DEFAULT_SERVER);
	/* the forms indented past the option column (completion reads "  -" lines) */
	for (const char *l = when_forms; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
		fprintf(f, "%21s%.*s\n", "", (int)strcspn(l, "\n"), l);
	fprintf(f,
"                       (end: the newest stored event of those selected)\n"
"  -H, --host GLOB      only events from hosts whose name matches GLOB\n"
"                       (repeatable: any of them)\n"
"      --cpu LIST       only events of these CPUs, e.g. 0,2-3\n"
"      --hosts          list every host the collector has seen and exit\n"
"      --events [SEL]   list the stored events (all, or those SEL selects)\n"
"                       with their counts and first and last times, and exit\n"
"      --fields SEL     list the fields of the events SEL selects and exit\n"
"  -c, --count          print the number of matching events\n"
"      --stats          print per host and CPU counters (pages, events,\n"
"                       kernel overruns, bad_pages and bad_events received\n"
"                       and not stored, rate_held_* and quota_held_*: pages\n"
"                       the collector's host limits held back and the ms\n"
"                       they waited), then a total line per host (cpu=all),\n"
"                       and exit; --host and --cpu narrow it, --format json\n"
"                       gives one object per line. On stderr, how much the\n"
"                       collector has received and not yet stored\n"
"      --drops          print the events the collector did not keep, per host,\n"
"                       event and reason (filter: dropped by a server-side\n"
"                       filter; retention: removed by age or size;\n"
"                       schema-cap: of a type past the collector's\n"
"                       max-event-types or max-event-fields; and the\n"
"                       pages and events it received and did not store,\n"
"                       event '-', with why: malformed, quarantined...) and exit\n"
"  -g, --graph          print ftrace:funcgraph_entry/exit events like the\n"
"                       kernel's function_graph tracer (nesting by\n"
"                       indentation, duration per call, per thread, named\n"
"                       functions; entries rebuilt from the exits of\n"
"                       threads that recorded exits only); FILTER\n"
"                       selects the rows of both events (e.g. common_pid);\n"
"                       at most 1048576 rows (held to nest the calls)\n"
"      --sql TEXT       run one read-only SQL SELECT on the collector over its\n"
"                       views and print the result as columns (--format csv\n"
"                       or json too): one view per stored event, named\n"
"                       SYSTEM__NAME (sched__sched_switch) and NAME alone\n"
"                       (sched_switch) when no other system has that name,\n"
"                       with host, cpu, ts (wall-clock ns), trace_ts and every\n"
"                       field; hosts, stats (per host and CPU counters) and\n"
"                       drops. Anything but reading them (writes, ATTACH,\n"
"                       PRAGMA, other tables, a second statement) is refused,\n"
"                       as is an identity with a scope. At most 10000 rows\n"
"                       (--limit fewer) and 8 s on the collector\n"
"      --hist SPEC      print a histogram of the matching events as the kernel\n"
"                       prints an event's hist file; SPEC is a hist trigger:\n"
"                       keys=F[,F,F][:vals=V[,V]][:sort=S[,S]][:size=N]\n"
"                       (modifiers .hex .sym .execname .log2 .buckets=N;\n"
"                       sort S[.descending]; the key `host` is the host's\n"
"                       name). The collector computes it. QUERY names one\n"
"                       event, e.g.\n"
"                       --hist keys=next_comm:sort=hitcount.descending\n"
"                       \"sched_switch where CPU == 1\"\n"
"      --import FILE    store the trace-cmd recording FILE (trace.dat version 6\n"
"                       or 7, zstd-compressed or not; one instance's buffer)\n"
"                       in the collector as host --name, through the same\n"
"                       decoder and store as an agent's pages, with its\n"
"                       formats, cmdlines, kernel symbols, printk formats\n"
"                       and trace clock; its wall clock puts the\n"
"                       last page at the file's modification time. The file\n"
"                       is read whole first: a truncated or corrupt one is\n"
"                       refused before anything is sent. A file stored\n"
"                       already is not stored again (exit 0). Needs the\n"
"                       import right (root or the collector's user over its\n"
"                       ipc socket, or an `import` line of its config).\n"
"                       Exit 0 stored, 1 the collector failed, 2 refused\n"
"      --name HOST      the host name an --import is stored as\n"
"      --force          --import under the name of a host an agent sends\n"
"                       (stored beside it, as a host of its own)\n"
"  -t, --timeout MS     give up on the server after MS milliseconds (default 10000)\n"
"      --sync           first wait until the collector has stored everything\n"
"                       it had received (it acknowledges pages to agents once\n"
"                       they are in its receive journal, and decodes and\n"
"                       stores them behind), at most --timeout (the\n"
"                       collector cuts it to its query-sync-max)\n"
"  -h, --help           this text\n"
"  -V, --version        print the version\n"
"\n"
"Exit status: 0 success, 1 server unreachable or failed, 2 bad query or usage.\n");
}

/* A whole number in [@min, @max]; else says "@what: expected @form, not 'S'". */
static int parse_i64(const char *s, const char *what, int64_t min, int64_t max,
		     const char *form, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "traceq: %s: expected %s, not '%s'\n", what, form, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_format(const char *s, enum out_format *f)
{
	static const char *const names[] = {
		[OUT_TEXT] = "text", [OUT_KERNEL] = "kernel", [OUT_FIELDS] = "fields",
		[OUT_CSV] = "csv", [OUT_JSON] = "json",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*f = (enum out_format)i;
			return 0;
		}
	fprintf(stderr, "traceq: --format: expected text, kernel, fields, csv or json, not '%s'\n",
		s);
	return -1;
}

static int64_t now_ns(void)
{
	return util_now_ms() * 1000000;	/* ms: the finest a person types */
}

static int parse_args(int argc, char **argv, struct traceq_opts *o)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "format", required_argument, NULL, 'f' },
		{ "time", required_argument, NULL, 'M' },
		{ "no-host", no_argument, NULL, 'N' },
		{ "tgid", no_argument, NULL, 'J' },
		{ "limit", required_argument, NULL, 'n' },
		{ "since", required_argument, NULL, 'S' },
		{ "until", required_argument, NULL, 'U' },
		{ "host", required_argument, NULL, 'H' },
		{ "cpu", required_argument, NULL, 'P' },
		{ "reverse", no_argument, NULL, 'r' },
		{ "hosts", no_argument, NULL, 'L' },
		{ "events", no_argument, NULL, 'E' },
		{ "fields", no_argument, NULL, 'F' },
		{ "count", no_argument, NULL, 'c' },
		{ "stats", no_argument, NULL, 'T' },
		{ "drops", no_argument, NULL, 'D' },
		{ "graph", no_argument, NULL, 'g' },
		{ "follow", no_argument, NULL, 'W' },
		{ "sql", required_argument, NULL, 'Q' },
		{ "hist", required_argument, NULL, 'G' },
		{ "timeout", required_argument, NULL, 't' },
		{ "sync", no_argument, NULL, 'Y' },
		{ "cert", required_argument, NULL, 'C' },
		{ "key", required_argument, NULL, 'K' },
		{ "ca", required_argument, NULL, 'A' },
		{ "import", required_argument, NULL, 'I' },
		{ "name", required_argument, NULL, 'a' },
		{ "force", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int64_t v;
	int c;

	opterr = 0;	/* cli_bad_option() says it in one line */
	while ((c = getopt_long(argc, argv, ":s:f:n:H:rcgt:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->server = optarg; break;
		case 'f':
			if (parse_format(optarg, &o->format) < 0)
				return -1;
			break;
		case 'M':
			if (strcmp(optarg, "wall") && strcmp(optarg, "raw")) {
				fprintf(stderr, "traceq: --time: expected wall or raw, not '%s'\n",
					optarg);
				return -1;
			}
			o->time_raw = !strcmp(optarg, "raw");
			break;
		case 'N': o->no_host = true; break;
		case 'J': o->tgid = true; break;
		case 'n':
			if (parse_i64(optarg, "--limit", 0, INT64_MAX,
				      "a whole number of events (0: all)", &v) < 0)
				return -1;
			o->limit = (uint64_t)v;
			break;
		case 'S':
			if (tq_select_time(&o->sel, optarg, false, now_ns()) < 0)
				return -1;
			break;
		case 'U':
			if (tq_select_time(&o->sel, optarg, true, now_ns()) < 0)
				return -1;
			break;
		case 'H':
			if (tq_select_host(&o->sel, optarg) < 0)
				return -1;
			break;
		case 'P': if (tq_select_cpus(&o->sel, optarg) < 0) return -1; break;
		case 'r': o->sel.reverse = true; break;
		case 'L': o->list = QOP_HOSTS; break;
		case 'E': o->list = QOP_EVENTS; break;
		case 'F': o->list = QOP_FIELDS; break;
		case 'c': o->modes |= TQ_M_COUNT; break;
		case 'T': o->modes |= TQ_M_STATS; break;
		case 'D': o->modes |= TQ_M_STATS; o->drops = true; break;
		case 'g': o->modes |= TQ_M_GRAPH; break;
		case 'W': o->modes |= TQ_M_FOLLOW; break;
		case 'Q': o->sql = optarg; break;
		case 'G': o->hist = optarg; break;
		case 'Y': o->sync = true; break;
		case 'I': o->import = optarg; break;
		case 'a': o->name = optarg; break;
		case 'O': o->force = true; break;
		case 'C': o->cert = optarg; break;
		case 'K': o->key = optarg; break;
		case 'A': o->ca = optarg; break;
		case 't':
			if (parse_i64(optarg, "--timeout", 1, INT32_MAX,
				      "milliseconds, a whole number in 1..2147483647", &v) < 0)
				return -1;
			o->timeout_ms = (int)v;
			break;
		case 'h': usage(stdout); exit(0);
		case 'V': cli_version("traceq"); exit(0);
		default: cli_bad_option("traceq", longopts, argv, c); return -1;
		}
	}
	if (o->sql && ((o->modes & TQ_M_STATS) || (o->modes & TQ_M_COUNT) || (o->modes & TQ_M_GRAPH) || o->list || o->hist || (o->modes & TQ_M_FOLLOW) ||
		       optind != argc)) {
		fprintf(stderr, "traceq: --sql takes no QUERY, --stats, --drops, --count,"
			" --graph, --follow, --hist, --hosts, --events or --fields\n");
		return -1;
	}
	if (o->sql)
		return 0;
	if (o->hist && ((o->modes & TQ_M_STATS) || (o->modes & TQ_M_COUNT) || (o->modes & TQ_M_GRAPH) || o->list)) {
		fprintf(stderr, "traceq: --hist does not go with --count, --graph, --stats, "
			"--drops, --hosts, --events or --fields\n");
		return -1;
	}
	if ((o->modes & TQ_M_FOLLOW) && ((o->modes & TQ_M_STATS) || (o->modes & TQ_M_COUNT) || (o->modes & TQ_M_GRAPH) || o->list || o->hist ||
			  o->sel.reverse)) {
		fprintf(stderr, "traceq: --follow takes no --stats, --drops, --count, --graph,"
			" --hist, --reverse, --hosts, --events or --fields\n");
		return -1;
	}
	if (o->list)
		return tq_discover_args(o->list, argc - optind, argv + optind, &o->query);
	if (o->import && ((o->modes & TQ_M_STATS) || (o->modes & TQ_M_COUNT) || (o->modes & TQ_M_GRAPH) || o->list || o->hist || o->sql ||
			  (o->modes & TQ_M_FOLLOW))) {
		fprintf(stderr, "traceq: --import goes with no other request\n");
		return -1;
	}
	if (((o->modes & TQ_M_STATS) || o->import) ? optind != argc : optind != argc - 1) {
		fprintf(stderr, o->import ? "traceq: --import takes no query\n" :
			(o->modes & TQ_M_STATS) ? "traceq: --stats and --drops take no query\n"
			: "traceq: expected one QUERY argument (quote it)\n");
		return -1;
	}
	o->query = (o->modes & TQ_M_STATS) || o->import ? NULL : argv[optind];
	return 0;
}

/* Parse locally: a syntax error is reported without asking the server. */
static int check_query(const char *text)
{
	struct filter_error err = { 0 };
	struct query q;
	int ret;

	ret = query_parse(text, &q, &err);
	if (ret < 0) {
		client_caret(text, err.msg[0] ? err.msg : tc_strerror(ret),
			    (int)err.pos, (int)(err.len ? err.len : 1));
		return -1;
	}
	query_free(&q);
	return 0;
}

/* The --hist spec, checked locally too: a caret under the mistake. */
static int check_hist(const char *spec)
{
	struct filter_error err = { 0 };
	struct hist_spec sp;

	if (hist_parse(spec, &sp, &err) < 0) {
		client_caret(spec, err.msg, (int)err.pos, (int)(err.len ? err.len : 1));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct traceq_opts o = {
		.server = getenv("TRACEQ_SERVER") && *getenv("TRACEQ_SERVER") ?
			  getenv("TRACEQ_SERVER") : TRACEQ_DEFAULT_SERVER,
		.format = OUT_TEXT, .timeout_ms = 10000,
		.cert = getenv("TRACEQ_CERT"), .key = getenv("TRACEQ_KEY"), .ca = getenv("TRACEQ_CA"),
	};
	struct client *c;
	int ret;

	signal(SIGPIPE, SIG_IGN);	/* a collector that closed the TLS port: an error, not death */
	/*
	 * A page of an answer is a few MiB of blocks, freed and made again for
	 * the next: kept in the heap, not mapped and unmapped (and faulted in)
	 * each time. Two pages at most are held, so the heap stays bounded.
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	if (parse_args(argc, argv, &o) < 0)
		return 2;
	if (o.query && check_query(o.query) < 0)
		return 2;
	if (o.list && !o.query)
		o.query = NULL;
	if (o.hist && check_hist(o.hist) < 0)
		return 2;
	if (o.import && (!o.name || !*o.name)) {
		fprintf(stderr, "traceq: --import FILE wants --name HOST: the host the "
			"recording is stored as\n");
		return 2;
	}
	ret = client_open(&o, &c);
	if (ret < 0)
		return ret == -2 ? 2 : 1;
	if (o.import)
		ret = mode_import_run(c, &o);
	else if (o.sql)
		ret = mode_sql_run(c, &o);
	else if (o.list)
		ret = mode_discover_run(c, &o);
	else if ((o.modes & TQ_M_STATS))
		ret = mode_stats_run(c, &o);
	else if ((o.modes & TQ_M_COUNT))
		ret = mode_count_run(c, &o);
	else if ((o.modes & TQ_M_GRAPH))
		ret = mode_graph_run(c, &o);
	else if (o.hist)
		ret = mode_hist_run(c, &o);
	else if ((o.modes & TQ_M_FOLLOW))
		ret = mode_follow_run(c, &o);
	else
		ret = mode_select_run(c, &o);
	client_close(c);
	return ret;
}
