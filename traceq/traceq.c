/*
 * traceq - query a tracecollectd over its query endpoint (nng, or its
 * TLS port).
 *
 *   traceq [--server URL] [--format text|kernel|fields|csv|json] [--time wall|raw]
 *          [--limit N] QUERY
 *   traceq --count QUERY
 *   traceq --stats
 *   traceq --graph QUERY
 *   traceq --hist SPEC QUERY
 *   traceq --follow QUERY
 *
 * This file holds main, the options and the table of modes (modes.h: one
 * file each, as trace-cmd's commands[]): main parses the options, checks
 * which go together, parses the query and the --hist spec once, opens the
 * connection (client.h) and runs the mode the options pick. The --help
 * text is usage.c's.
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
#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/discover.h"
#include "traceq/modes.h"
#include "traceq/snapshot.h"
#include "traceq/select.h"
#include "traceq/traceq.h"
#include "traceq/usage.h"
#include "traceq/when.h"

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
	if (out_format_parse(s, f) == 0)
		return 0;
	fprintf(stderr, "traceq: --format: expected text, kernel, fields, csv or json, not '%s'\n",
		s);
	return -1;
}

/* Long options without a letter take codes no other option uses (HACKING). */
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
	{ "buffer", required_argument, NULL, 'B' },
	{ "export", required_argument, NULL, 'X' },
	{ "tracedat-version", required_argument, NULL, 'R' },
	{ "serve", required_argument, NULL, 'w' },
	{ "snapshot", no_argument, NULL, 'z' },
	{ "snapshots", no_argument, NULL, 'Z' },
	{ "reason", required_argument, NULL, 'y' },
	{ "snapshot-id", required_argument, NULL, 'j' },
	CLI_OPTIONS_END
};

/* The options that pick a mode (TQ_M_*), with their arguments. False: @c is none. */
static bool parse_mode(int c, struct traceq_opts *o)
{
	switch (c) {
	case 'L': o->modes |= TQ_M_LIST; o->list = QOP_HOSTS; break;
	case 'E': o->modes |= TQ_M_LIST; o->list = QOP_EVENTS; break;
	case 'F': o->modes |= TQ_M_LIST; o->list = QOP_FIELDS; break;
	case 'c': o->modes |= TQ_M_COUNT; break;
	case 'T': o->modes |= TQ_M_STATS; break;
	case 'D': o->modes |= TQ_M_STATS; o->drops = true; break;
	case 'g': o->modes |= TQ_M_GRAPH; break;
	case 'W': o->modes |= TQ_M_FOLLOW; break;
	case 'Q': o->modes |= TQ_M_SQL; o->sql = optarg; break;
	case 'G': o->modes |= TQ_M_HIST; o->hist = optarg; break;
	case 'I': o->modes |= TQ_M_IMPORT; o->import = optarg; break;
	case 'X': o->modes |= TQ_M_EXPORT; o->export = optarg; break;
	case 'w': o->modes |= TQ_M_SERVE; o->serve = optarg; break;
	case 'z': o->modes |= TQ_M_SNAPSHOT; break;
	case 'Z': o->modes |= TQ_M_SNAPSHOTS; break;
	default: return false;
	}
	return true;
}

/* One option @c (its argument in optarg) into @o. Return: 0; -1 (said). */
static int parse_option(int c, char **argv, struct traceq_opts *o)
{
	int64_t v = 0;
	int ret;

	switch (c) {
	case 's': o->server = optarg; break;
	case 'f': o->export_format = optarg; break;	/* parse_args() reads it */
	case 'M':
		if (strcmp(optarg, "wall") && strcmp(optarg, "raw")) {
			fprintf(stderr, "traceq: --time: expected wall or raw, not '%s'\n", optarg);
			return -1;
		}
		o->time_raw = !strcmp(optarg, "raw");
		o->time_given = true;
		break;
	case 'N': o->no_host = true; break;
	case 'J': o->tgid = true; break;
	case 'n':	/* on an error (said) v stays 0: the options are not used */
		ret = parse_i64(optarg, "--limit", 0, INT64_MAX,
				"a whole number of events (0: all)", &v);
		o->limit = (uint64_t)v;
		return ret;
	case 't':
		ret = parse_i64(optarg, "--timeout", 1, INT32_MAX,
				"milliseconds, a whole number in 1..2147483647", &v);
		o->timeout_ms = (int)v;
		return ret;
	case 'S': return tq_select_time(&o->sel, optarg, false, when_now_ns());
	case 'U': return tq_select_time(&o->sel, optarg, true, when_now_ns());
	case 'H': return tq_select_host(&o->sel, optarg);
	case 'P': return tq_select_cpus(&o->sel, optarg);
	case 'r': o->sel.reverse = true; break;
	case 'Y': o->sync = true; break;
	case 'a': o->name = optarg; break;
	case 'O': o->force = true; break;
	case 'B': o->buffer = optarg; break;
	case 'y': o->reason = optarg; break;
	case 'j':
		ret = parse_i64(optarg, "--snapshot-id", 1, INT64_MAX,
				"a snapshot's id (traceq --snapshots)", &v);
		o->snapshot_id = (uint64_t)v;
		return ret;
	case 'R':
		if (strcmp(optarg, "6") && strcmp(optarg, "7")) {
			fprintf(stderr, "traceq: --tracedat-version: expected 6 or 7, not '%s'\n",
				optarg);
			return -1;
		}
		o->tracedat_version = (unsigned)(optarg[0] - '0');
		break;
	case 'C': o->cert = optarg; break;
	case 'K': o->key = optarg; break;
	case 'A': o->ca = optarg; break;
	case 'h': tq_usage(stdout); exit(0);
	case 'V': cli_version("traceq"); exit(0);
	default:
		if (parse_mode(c, o))
			break;
		cli_bad_option("traceq", longopts, argv, c);
		return -1;
	}
	return 0;
}

#define TQ_X_REVERSE	(1u << 16)	/* --reverse, for conflicts[] */
#define TQ_X_ARGS	(1u << 17)	/* words after the options */

/*
 * The options a mode does not go with, checked in this order: the first
 * rule that applies says why. A rule applies when its @mode was given,
 * none of @unless (modes that decide alone) was, and one of @with was.
 */
static const struct conflict {
	unsigned mode, unless, with;
	const char *why;
} conflicts[] = {
	{ TQ_M_SQL, 0, TQ_M_STATS | TQ_M_COUNT | TQ_M_GRAPH | TQ_M_LIST | TQ_M_HIST |
		       TQ_M_FOLLOW | TQ_X_ARGS,
	  "--sql takes no QUERY, --stats, --drops, --count, --graph, --follow, --hist, "
	  "--hosts, --events or --fields" },
	{ TQ_M_HIST, TQ_M_SQL, TQ_M_STATS | TQ_M_COUNT | TQ_M_GRAPH | TQ_M_LIST,
	  "--hist does not go with --count, --graph, --stats, --drops, --hosts, --events "
	  "or --fields" },
	{ TQ_M_FOLLOW, TQ_M_SQL, TQ_M_STATS | TQ_M_COUNT | TQ_M_GRAPH | TQ_M_LIST | TQ_M_HIST |
				 TQ_X_REVERSE,
	  "--follow takes no --stats, --drops, --count, --graph, --hist, --reverse, --hosts, "
	  "--events or --fields" },
	{ TQ_M_IMPORT, TQ_M_SQL | TQ_M_LIST, TQ_M_STATS | TQ_M_COUNT | TQ_M_GRAPH | TQ_M_HIST |
					     TQ_M_FOLLOW,
	  "--import goes with no other request" },
	{ TQ_M_EXPORT, TQ_M_SQL | TQ_M_LIST, TQ_M_STATS | TQ_M_COUNT | TQ_M_GRAPH | TQ_M_HIST |
					     TQ_M_FOLLOW | TQ_M_IMPORT | TQ_X_REVERSE,
	  "--export takes no --import, --stats, --drops, --count, --graph, --hist, --follow "
	  "or --reverse" },
	{ TQ_M_SERVE, 0, ~(unsigned)TQ_M_SERVE & ~TQ_X_REVERSE,
	  "--serve takes no QUERY and goes with no other mode: the page asks for those" },
	{ TQ_M_SNAPSHOT, 0, ~(unsigned)TQ_M_SNAPSHOT,
	  "--snapshot takes no QUERY and goes with no other mode" },
	{ TQ_M_SNAPSHOTS, 0, ~(unsigned)TQ_M_SNAPSHOTS & ~TQ_X_REVERSE,
	  "--snapshots takes no QUERY and goes with no other mode" },
};

/*
 * The words after the options: none for --sql, --stats, --drops and
 * --import, discover.h's for --hosts, --events and --fields, else one
 * QUERY. Return: 0; -1 (said).
 */
static int take_query(int argc, char **argv, struct traceq_opts *o)
{
	unsigned given = o->modes | (o->sel.reverse ? TQ_X_REVERSE : 0) |
			 (optind != argc ? TQ_X_ARGS : 0);
	bool none = o->modes & (TQ_M_STATS | TQ_M_IMPORT | TQ_M_SERVE | TQ_M_SNAPSHOT |
				TQ_M_SNAPSHOTS);
	bool optional = o->modes & TQ_M_EXPORT;	/* without one: every stored event */

	for (size_t i = 0; i < sizeof(conflicts) / sizeof(conflicts[0]); i++) {
		const struct conflict *r = &conflicts[i];

		if ((given & r->mode) && !(given & r->unless) && (given & r->with)) {
			fprintf(stderr, "traceq: %s\n", r->why);
			return -1;
		}
	}
	if (o->modes & TQ_M_SQL)
		return 0;
	if (o->modes & TQ_M_LIST)
		return tq_discover_args(o->list, argc - optind, argv + optind, &o->query);
	if (optional && optind == argc)
		return 0;
	if (none ? optind != argc : optind != argc - 1) {
		fprintf(stderr, o->import ? "traceq: --import takes no query\n" :
			o->modes & TQ_M_STATS ? "traceq: --stats and --drops take no query\n"
			: "traceq: expected one QUERY argument (quote it)\n");
		return -1;
	}
	o->query = none ? NULL : argv[optind];
	return 0;
}

static int parse_args(int argc, char **argv, struct traceq_opts *o)
{
	int c;

	opterr = 0;	/* cli_bad_option() says it in one line */
	while ((c = getopt_long(argc, argv, ":s:f:n:H:rcgt:hV", longopts, NULL)) != -1)
		if (parse_option(c, argv, o) < 0)
			return -1;
	/* -f names --export's file format (mode_export.c checks it), else the layout */
	if (o->export_format && !(o->modes & TQ_M_EXPORT) &&
	    parse_format(o->export_format, &o->format) < 0)
		return -1;
	return take_query(argc, argv, o);
}

/*
 * The query parsed here, once, into @o->q (the modes read it there): a
 * syntax error is said with a caret without asking the collector, which
 * parses it again (it trusts no client). Return: 0; -1 (said).
 */
static int parse_query(struct traceq_opts *o)
{
	struct filter_error err = { 0 };
	int ret;

	ret = query_parse(o->query, &o->q, &err);
	if (ret < 0) {
		client_caret(o->query, err.msg[0] ? err.msg : tc_strerror(ret),
			     (int)err.pos, (int)(err.len ? err.len : 1));
		return -1;
	}
	return 0;
}

/* The --hist spec into @o->hist_spec, checked here too: a caret under the mistake. */
static int parse_hist(struct traceq_opts *o)
{
	struct filter_error err = { 0 };

	if (hist_parse(o->hist, &o->hist_spec, &err) < 0) {
		client_caret(o->hist, err.msg, (int)err.pos, (int)(err.len ? err.len : 1));
		return -1;
	}
	return 0;
}

/*
 * The modes (modes.h), the first whose option was given runs; the last
 * is the select, which needs none. Of the options that go together, this
 * order decides: --import before --sql and the lists, --stats before
 * --count before --graph.
 */
static const struct mode {
	unsigned option;	/* TQ_M_*; 0: always */
	int (*run)(struct client *c, const struct traceq_opts *o);
} modes[] = {
	{ TQ_M_SNAPSHOT, mode_snapshot_run },
	{ TQ_M_SNAPSHOTS, mode_snapshots_run },
	{ TQ_M_SERVE, mode_serve_run },
	{ TQ_M_IMPORT, mode_import_run },
	{ TQ_M_EXPORT, mode_export_run },
	{ TQ_M_SQL, mode_sql_run },
	{ TQ_M_LIST, mode_discover_run },
	{ TQ_M_STATS, mode_stats_run },
	{ TQ_M_COUNT, mode_count_run },
	{ TQ_M_GRAPH, mode_graph_run },
	{ TQ_M_HIST, mode_hist_run },
	{ TQ_M_FOLLOW, mode_follow_run },
	{ 0, mode_select_run },
};

static const struct mode *mode_of(const struct traceq_opts *o)
{
	size_t i = 0;

	while (modes[i].option && !(o->modes & modes[i].option))
		i++;
	return &modes[i];
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
	if (o.query && parse_query(&o) < 0)
		return 2;
	if (o.hist && parse_hist(&o) < 0)
		ret = 2;
	else if (o.import && (!o.name || !*o.name)) {
		fprintf(stderr, "traceq: --import FILE wants --name HOST: the host the "
			"recording is stored as\n");
		ret = 2;
	} else if (o.buffer && !o.import) {
		fprintf(stderr, "traceq: --buffer names the instance of an --import FILE\n");
		ret = 2;
	} else if (o.reason && !(o.modes & TQ_M_SNAPSHOT)) {
		fprintf(stderr, "traceq: --reason is a --snapshot's\n");
		ret = 2;
	} else if ((ret = client_open(&o, &c)) < 0) {
		ret = ret == -2 ? 2 : 1;
	} else {
		/* --snapshot-id: the snapshot's hosts and window, for the modes that read events */
		if (o.snapshot_id && !(o.modes & (TQ_M_SNAPSHOTS | TQ_M_SNAPSHOT)))
			ret = tq_snapshot_narrow(c, &o);
		if (ret == 0)
			ret = mode_of(&o)->run(c, &o);
		client_close(c);
	}
	tq_snapshot_free(&o);
	query_free(&o.q);
	return ret;
}
