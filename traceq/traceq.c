/*
 * traceq - query a tracecollectd over its nng query endpoint.
 *
 *   traceq [--server URL] [--format text|json] [--limit N] QUERY
 *   traceq --count QUERY
 *   traceq --stats
 *   traceq --graph QUERY
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
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/filter.h"
#include "common/query.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/qmsg.h"
#include "proto/tls.h"
#include "traceq/discover.h"
#include "traceq/graph.h"
#include "traceq/select.h"
#include "traceq/tlsconn.h"
#include "traceq/when.h"

#define TRACEQ_DEFAULT_SERVER	"ipc:///run/tracecollect/query.sock"
#define TRACEQ_PAGE_ROWS	1000

enum out_format { OUT_TEXT, OUT_JSON };

struct traceq_opts {
	const char *server;
	const char *cert, *key, *ca;	/* the TLS query port's client certificate */
	const char *query;
	const char *host;
	enum out_format format;
	uint64_t limit;		/* 0: all rows */
	struct tq_select sel;	/* --since/--until, --host, --cpu, --reverse */
	enum qmsg_op list;	/* --hosts, --events, --fields; 0: none */
	int timeout_ms;
	bool count, stats, drops, graph, sync;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: traceq [OPTIONS] QUERY\n"
"       traceq [OPTIONS] --count QUERY\n"
"       traceq [OPTIONS] --stats | --drops | --hosts\n"
"       traceq [OPTIONS] --events [SELECTOR] | --fields SELECTOR\n"
"       traceq [OPTIONS] --graph \"funcgraph [where FILTER]\"\n"
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
"  -f, --format FMT     text (default: the kernel's trace layout, wall-clock\n"
"                       seconds) or json (one object per line, every field)\n"
"                       code addresses of ftrace events (ip, parent_ip, func)\n"
"                       print as name+0xoff in text; json adds ip_sym etc.\n"
"  -n, --limit N        print at most N events (default: all)\n"
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
"                       they waited) and exit; on stderr, how much the\n"
"                       collector has received and not yet stored\n"
"      --drops          print the events the collector did not keep, per host,\n"
"                       event and reason (filter: dropped by a server-side\n"
"                       filter; retention: removed by age or size; and the\n"
"                       pages and events it received and did not store,\n"
"                       event '-', with why: malformed, quarantined...) and exit\n"
"  -g, --graph          print ftrace:funcgraph_entry/exit events like the\n"
"                       kernel's function_graph tracer (nesting by\n"
"                       indentation, duration per call, per thread, named\n"
"                       functions; entries rebuilt from the exits of\n"
"                       threads that recorded exits only); FILTER\n"
"                       selects the rows of both events (e.g. common_pid)\n"
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

static int parse_i64(const char *s, const char *what, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "traceq: %s: not a number: '%s'\n", what, s);
		return -1;
	}
	*out = v;
	return 0;
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
		{ "timeout", required_argument, NULL, 't' },
		{ "sync", no_argument, NULL, 'Y' },
		{ "cert", required_argument, NULL, 'C' },
		{ "key", required_argument, NULL, 'K' },
		{ "ca", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "s:f:n:H:rcgt:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->server = optarg; break;
		case 'f':
			if (!strcmp(optarg, "text"))
				o->format = OUT_TEXT;
			else if (!strcmp(optarg, "json"))
				o->format = OUT_JSON;
			else {
				fprintf(stderr, "traceq: --format: expected text or json, not '%s'\n", optarg);
				return -1;
			}
			break;
		case 'n':
			if (parse_i64(optarg, "--limit", &v) < 0 || v < 0)
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
			o->host = optarg;
			if (tq_select_host(&o->sel, optarg) < 0)
				return -1;
			break;
		case 'P': if (tq_select_cpus(&o->sel, optarg) < 0) return -1; break;
		case 'r': o->sel.reverse = true; break;
		case 'L': o->list = QOP_HOSTS; break;
		case 'E': o->list = QOP_EVENTS; break;
		case 'F': o->list = QOP_FIELDS; break;
		case 'c': o->count = true; break;
		case 'T': o->stats = true; break;
		case 'D': o->stats = o->drops = true; break;
		case 'g': o->graph = true; break;
		case 'Y': o->sync = true; break;
		case 'C': o->cert = optarg; break;
		case 'K': o->key = optarg; break;
		case 'A': o->ca = optarg; break;
		case 't':
			if (parse_i64(optarg, "--timeout", &v) < 0 || v <= 0 || v > INT32_MAX)
				return -1;
			o->timeout_ms = (int)v;
			break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("traceq %s\n", PACKAGE_VERSION); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (o->list)
		return tq_discover_args(o->list, argc - optind, argv + optind, &o->query);
	if (o->stats ? optind != argc : optind != argc - 1) {
		fprintf(stderr, o->stats ? "traceq: --stats and --drops take no query\n"
			: "traceq: expected one QUERY argument (quote it)\n");
		return -1;
	}
	o->query = o->stats ? NULL : argv[optind];
	return 0;
}

/* Print @msg with a caret line under bytes [pos, pos+len) of @text. */
static void print_caret(const char *text, const char *msg, int pos, int len)
{
	struct filter_error e = { .code = 0, .pos = (size_t)pos, .len = (size_t)len };
	char buf[4096];

	snprintf(e.msg, sizeof(e.msg), "%s", msg);
	if (pos >= 0 && (size_t)pos <= strlen(text) &&
	    filter_error_format(text, &e, buf, sizeof(buf)) >= 0)
		fprintf(stderr, "traceq: %s", buf);
	else
		fprintf(stderr, "traceq: error: %s\n", msg);
}

/* Parse locally: a syntax error is reported without asking the server. */
static int check_query(const char *text)
{
	struct filter_error err = { 0 };
	struct query q;
	int ret;

	ret = query_parse(text, &q, &err);
	if (ret < 0) {
		print_caret(text, err.msg[0] ? err.msg : tc_strerror(ret),
			    (int)err.pos, (int)(err.len ? err.len : 1));
		return -1;
	}
	query_free(&q);
	return 0;
}

struct client {
	nng_socket sock;
	struct tlsconn *tls;	/* the TLS query port; NULL: nng */
	const struct traceq_opts *o;
	uint32_t sync_ms;	/* --sync: sent with the first request */
};

/* The TLS query port's HOST:PORT in @server (tls://HOST:PORT, HOST:PORT), or NULL: nng. */
static const char *tls_server(const char *server)
{
	if (!strncmp(server, "tls://", 6))
		return server + 6;
	return strstr(server, "://") ? NULL : server;
}

static int client_open_tls(struct client *c, const struct traceq_opts *o, const char *hp)
{
	struct tls_files f = { .cert = o->cert, .key = o->key, .ca = o->ca };
	char err[1024];

	if (!o->cert || !o->key || !o->ca) {
		fprintf(stderr, "traceq: %s is a TLS query port: give --cert, --key and --ca "
			"(or TRACEQ_CERT, TRACEQ_KEY, TRACEQ_CA)\n", o->server);
		return -2;
	}
	if (tlsconn_open(hp, &f, o->timeout_ms, &c->tls, err, sizeof(err)) < 0) {
		fprintf(stderr, "traceq: cannot reach the collector at %s: %s\n", o->server, err);
		return -1;
	}
	return 0;
}

static int client_open(struct client *c, const struct traceq_opts *o)
{
	int rv;

	c->o = o;
	c->tls = NULL;
	c->sync_ms = 0;
	/* the server gives up waiting a little before we give up on it */
	if (o->sync)
		c->sync_ms = (uint32_t)(o->timeout_ms - (o->timeout_ms / 10 < 1000 ?
							 o->timeout_ms / 10 : 1000));
	if (tls_server(o->server))
		return client_open_tls(c, o, tls_server(o->server));
	rv = nng_req0_open(&c->sock);
	if (rv == 0)
		rv = nng_socket_set_ms(c->sock, NNG_OPT_RECVTIMEO, o->timeout_ms);
	if (rv == 0)
		rv = nng_socket_set_ms(c->sock, NNG_OPT_SENDTIMEO, o->timeout_ms);
	if (rv == 0)
		rv = nng_dial(c->sock, o->server, NULL, 0);
	if (rv != 0) {
		fprintf(stderr, "traceq: cannot reach the collector at %s: %s\n",
			o->server, nng_strerror(rv));
		nng_close(c->sock);
		return -1;
	}
	return 0;
}

static int client_call_tls(struct client *c, struct proto_buf *b, struct qmsg_reply *rep,
			   const struct qmsg_request *req);
static int client_reply(struct qmsg_reply *rep, const struct qmsg_request *req, int ret);

/* One request/reply exchange. Return 0, 1 (server/transport), 2 (query). */
static int client_call(struct client *c, const struct qmsg_request *req,
		       struct qmsg_reply *rep)
{
	struct qmsg_request r = *req;
	struct proto_buf b;
	void *msg = NULL;
	size_t len = 0;
	int rv, ret;

	r.sync_ms = c->sync_ms;
	c->sync_ms = 0;
	proto_buf_init(&b);
	ret = qmsg_request_encode(&r, &b);
	if (ret < 0) {
		fprintf(stderr, "traceq: %s\n", tc_strerror(ret));
		proto_buf_free(&b);
		return 1;
	}
	/* the collector would drop it without a reply; a smaller one it answers */
	if (b.len > QMSG_MAX_WIRE) {
		fprintf(stderr, "traceq: error: request of %zu bytes: over the limit of %u bytes\n",
			b.len, QMSG_MAX_WIRE);
		proto_buf_free(&b);
		return 2;
	}
	if (c->tls)
		return client_call_tls(c, &b, rep, req);
	rv = nng_send(c->sock, b.data, b.len, 0);
	proto_buf_free(&b);
	if (rv == 0)
		rv = nng_recv(c->sock, &msg, &len, NNG_FLAG_ALLOC);
	if (rv != 0) {
		fprintf(stderr, "traceq: no answer from the collector at %s: %s\n",
			c->o->server, nng_strerror(rv));
		return 1;
	}
	ret = qmsg_reply_decode(msg, len, rep);
	nng_free(msg, len);
	return client_reply(rep, req, ret);
}

/* client_call() over the TLS query port; @b (the request) is freed. */
static int client_call_tls(struct client *c, struct proto_buf *b, struct qmsg_reply *rep,
			   const struct qmsg_request *req)
{
	struct proto_buf in;
	char err[1024];
	int ret;

	proto_buf_init(&in);
	ret = tlsconn_call(c->tls, b->data, b->len, &in, err, sizeof(err));
	proto_buf_free(b);
	if (ret < 0) {
		fprintf(stderr, "traceq: no answer from the collector at %s: %s\n",
			c->o->server, err);
		proto_buf_free(&in);
		return 1;
	}
	ret = qmsg_reply_decode(in.data, in.len, rep);
	proto_buf_free(&in);
	return client_reply(rep, req, ret);
}

/* The decoded reply @rep (@ret: the decoding's result) to @req: 0, 1 or 2 as client_call(). */
static int client_reply(struct qmsg_reply *rep, const struct qmsg_request *req, int ret)
{
	if (ret < 0) {
		fprintf(stderr, "traceq: bad reply from the collector: %s\n", tc_strerror(ret));
		return 1;
	}
	if (rep->ok)
		return 0;
	if (rep->code == TC_ERR_DB || rep->code > TC_ERR_END || rep->code <= TC_ERR_START)
		fprintf(stderr, "traceq: collector: %s\n", rep->error);
	else if (req->query)
		print_caret(req->query, rep->error, rep->pos, rep->len);
	else
		fprintf(stderr, "traceq: error: %s\n", rep->error);
	ret = (rep->code == TC_ERR_DB || rep->code > TC_ERR_END ||
	       rep->code <= TC_ERR_START) ? 1 : 2;
	qmsg_reply_free(rep);
	return ret;
}

/* ---- output ---- */

static void json_string(FILE *f, const char *s, size_t len)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void print_value(FILE *f, const struct qmsg_value *v, bool json)
{
	size_t i;

	switch (v->kind) {
	case QV_NIL: fputs(json ? "null" : "(null)", f); break;
	case QV_INT: fprintf(f, "%" PRId64, v->i); break;
	case QV_UINT: fprintf(f, "%" PRIu64, v->u); break;
	case QV_STR:
		if (json)
			json_string(f, v->s.p, v->s.len);
		else
			fputs(v->s.p, f);
		break;
	case QV_BIN:
		fputs(json ? "\"" : "", f);
		for (i = 0; i < v->s.len; i++)
			fprintf(f, "%02x", (unsigned char)v->s.p[i]);
		fputs(json ? "\"" : "", f);
		break;
	}
}

static int64_t value_int(const struct qmsg_value *v)
{
	return v->kind == QV_UINT ? (int64_t)v->u : v->kind == QV_INT ? v->i : 0;
}

static const char *event_short(const char *event)
{
	const char *colon = event ? strchr(event, ':') : NULL;

	return colon ? colon + 1 : event ? event : "?";
}

/* Column @i's "<name>_sym" companion (a code address named), or -1. */
static int sym_col(const struct qmsg_reply *r, uint32_t i)
{
	size_t n = strlen(r->cols[i]);

	for (uint32_t k = QMSG_META_COLS; k < r->ncols; k++)
		if (!strncmp(r->cols[k], r->cols[i], n) && !strcmp(r->cols[k] + n, "_sym"))
			return (int)k;
	return -1;
}

static bool is_sym_col(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && !strcmp(name + n - 4, "_sym");
}

/*
 * The kernel's trace layout: comm-pid [cpu] secs.usecs: event: f=v ...;
 * a code address the collector could name prints as its name.
 */
static void print_text_row(const struct qmsg_reply *r, const struct qmsg_value *row)
{
	const struct qmsg_value *comm = &row[5];
	int64_t ts = value_int(&row[2]), pid = value_int(&row[4]);
	uint32_t i;
	int k;

	printf("%16s-%-7" PRId64 " [%03" PRId64 "] %" PRId64 ".%06" PRId64 ": %s:",
	       comm->kind == QV_STR ? comm->s.p : pid == 0 ? "<idle>" : "<...>", pid,
	       value_int(&row[1]), ts / 1000000000, (ts % 1000000000) / 1000,
	       event_short(r->event));
	for (i = QMSG_META_COLS; i < r->ncols; i++) {
		if (!strncmp(r->cols[i], "common_", 7) || is_sym_col(r->cols[i]))
			continue;
		printf(" %s=", r->cols[i]);
		k = sym_col(r, i);
		print_value(stdout, k >= 0 && row[k].kind == QV_STR ? &row[k] : &row[i], false);
	}
	putchar('\n');
}

static void print_json_row(const struct qmsg_reply *r, const struct qmsg_value *row)
{
	uint32_t i;

	fputs("{\"event\":", stdout);
	json_string(stdout, r->event ? r->event : "", r->event ? strlen(r->event) : 0);
	for (i = 0; i < r->ncols; i++) {
		putchar(',');
		json_string(stdout, r->cols[i], strlen(r->cols[i]));
		putchar(':');
		print_value(stdout, &row[i], true);
	}
	fputs("}\n", stdout);
}

static int run_select(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = {
		.op = QOP_SELECT, .query = (char *)o->query,
	};
	uint64_t printed = 0;
	struct qmsg_reply rep;
	uint32_t i;
	int ret;

	tq_select_apply(&o->sel, &req);
	do {
		req.limit = TRACEQ_PAGE_ROWS;
		if (o->limit && o->limit - printed < req.limit)
			req.limit = (uint32_t)(o->limit - printed);
		ret = client_call(c, &req, &rep);
		if (ret)
			return ret;
		if (!rep.types && rep.ncols < QMSG_META_COLS && rep.nrows) {
			fprintf(stderr, "traceq: bad reply from the collector: too few columns\n");
			qmsg_reply_free(&rep);
			return 1;
		}
		for (i = 0; i < rep.nrows; i++) {
			struct qmsg_reply view;
			const struct qmsg_value *row = qmsg_reply_row(&rep, i, &view);

			if (view.ncols < QMSG_META_COLS)
				continue;
			if (o->format == OUT_JSON)
				print_json_row(&view, row);
			else
				print_text_row(&view, row);
		}
		printed += rep.nrows;
		req.after_ts = rep.last_ts;
		req.after_id = rep.last_id;
		req.after_type = rep.last_type;
		ret = rep.more && rep.nrows && (!o->limit || printed < o->limit);
		qmsg_reply_free(&rep);
	} while (ret);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int run_count(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = {
		.op = QOP_COUNT, .query = (char *)o->query,
	};
	struct qmsg_reply rep;
	int ret;

	tq_select_apply(&o->sel, &req);
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	printf("%" PRIu64 "\n", rep.count);
	qmsg_reply_free(&rep);
	return 0;
}

static int run_stats(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = { .op = o->drops ? QOP_DROPS : QOP_STATS };
	struct qmsg_reply rep;
	uint32_t r, i;
	int ret;

	tq_select_apply(&o->sel, &req);
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	for (r = 0; r < rep.nrows; r++) {
		const struct qmsg_value *row = &rep.vals[r * rep.ncols];

		for (i = 0; i < rep.ncols; i++) {
			printf(i ? " %s=" : "%s=", rep.cols[i]);
			print_value(stdout, &row[i], false);
		}
		putchar('\n');
	}
	if (rep.unstored)	/* stderr: the rows above stay the same shape */
		fprintf(stderr, "traceq: the collector is still storing: %" PRIu64 " batches "
			"received and not yet stored, receive journal %.1f MB (--sync waits "
			"for them)\n", rep.unstored, (double)rep.journal_bytes / (1 << 20));
	qmsg_reply_free(&rep);
	return 0;
}

/* --hosts, --events, --fields: one request, the table it answers (discover.c). */
static int run_discover(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_request req = { .op = o->list, .query = (char *)o->query };
	struct qmsg_reply rep;
	int ret;

	tq_select_apply(&o->sel, &req);
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	tq_discover_print(stdout, &rep, o->format == OUT_JSON);
	qmsg_reply_free(&rep);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- the function_graph view ---- */

static int col_index(const struct qmsg_reply *r, const char *name)
{
	uint32_t i;

	for (i = QMSG_META_COLS; i < r->ncols; i++)
		if (!strcmp(r->cols[i], name))
			return (int)i;
	return -1;
}

static uint64_t col_u64(const struct qmsg_value *row, int i)
{
	return i < 0 ? 0 : (uint64_t)value_int(&row[i]);
}

/* One page of funcgraph rows into @g. Return: 0, or 1 when out of memory. */
static int graph_page(struct graph *g, const struct qmsg_reply *r, bool exit)
{
	int func = col_index(r, "func"), depth = col_index(r, "depth");
	int call = col_index(r, "calltime"), ret = col_index(r, "rettime");
	int sym = col_index(r, "func_sym");
	struct graph_row gr;
	uint32_t i;

	for (i = 0; i < r->nrows; i++) {
		const struct qmsg_value *row = &r->vals[i * r->ncols];

		memset(&gr, 0, sizeof(gr));
		gr.ts = value_int(&row[2]);
		gr.cpu = (uint32_t)value_int(&row[1]);
		gr.pid = (int32_t)value_int(&row[4]);
		if (row[5].kind == QV_STR)
			snprintf(gr.comm, sizeof(gr.comm), "%s", row[5].s.p);
		gr.exit = exit;
		gr.func = col_u64(row, func);
		gr.depth = (int32_t)col_u64(row, depth);
		gr.calltime = col_u64(row, call);
		gr.rettime = col_u64(row, ret);
		/* the function, not the hook's call site in it: no +0xoff */
		if (sym >= 0 && row[sym].kind == QV_STR)
			snprintf(gr.name, sizeof(gr.name), "%.*s",
				 (int)strcspn(row[sym].s.p, "+"), row[sym].s.p);
		if (graph_add(g, &gr) < 0)
			return 1;
	}
	return 0;
}

/* Every row of @event matching @where (may be "") into @g. */
static int graph_fetch(struct client *c, const struct traceq_opts *o,
		       const char *event, const char *where, struct graph *g)
{
	char query[4096];
	struct qmsg_request req = {
		.op = QOP_SELECT, .query = query,
	};
	struct qmsg_reply rep;
	int ret;

	tq_select_apply(&o->sel, &req);
	req.reverse = false;	/* the graph is built oldest first */
	snprintf(query, sizeof(query), "ftrace:%s%s", event, where);
	do {
		req.limit = TRACEQ_PAGE_ROWS;
		ret = client_call(c, &req, &rep);
		if (ret)
			return ret;
		ret = rep.ncols < QMSG_META_COLS && rep.nrows;
		if (ret)
			fprintf(stderr, "traceq: bad reply from the collector\n");
		else
			ret = graph_page(g, &rep, strstr(event, "exit") != NULL);
		req.after_ts = rep.last_ts;
		req.after_id = rep.last_id;
		if (ret == 0 && !(rep.more && rep.nrows))
			ret = -1;
		qmsg_reply_free(&rep);
	} while (ret == 0);
	return ret < 0 ? 0 : ret;
}

/*
 * --graph: QUERY's event part must name the function_graph events
 * (funcgraph, funcgraph_entry, ..., with or without "ftrace:"); its where
 * part, if any, is applied to both.
 */
static int run_graph(struct client *c, const struct traceq_opts *o)
{
	const char *where = strstr(o->query, " where ");
	struct graph *g;
	int ret;

	if (strncmp(o->query + (strncmp(o->query, "ftrace:", 7) ? 0 : 7),
		    "funcgraph", 9)) {
		fprintf(stderr, "traceq: --graph wants \"funcgraph [where "
			"FILTER]\", not '%s'\n", o->query);
		return 2;
	}
	if (graph_new(stdout, &g) < 0) {
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	ret = graph_fetch(c, o, "funcgraph_entry", where ? where : "", g);
	if (ret == 0)
		ret = graph_fetch(c, o, "funcgraph_exit", where ? where : "", g);
	if (ret == 0)
		graph_print(g);
	graph_free(g);
	return ret ? ret : fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct traceq_opts o = {
		.server = getenv("TRACEQ_SERVER") && *getenv("TRACEQ_SERVER") ?
			  getenv("TRACEQ_SERVER") : TRACEQ_DEFAULT_SERVER,
		.format = OUT_TEXT, .timeout_ms = 10000,
		.cert = getenv("TRACEQ_CERT"), .key = getenv("TRACEQ_KEY"), .ca = getenv("TRACEQ_CA"),
	};
	struct client c = { 0 };
	int ret;

	signal(SIGPIPE, SIG_IGN);	/* a collector that closed the TLS port: an error, not death */
	if (parse_args(argc, argv, &o) < 0)
		return 2;
	if (o.query && check_query(o.query) < 0)
		return 2;
	if (o.list && !o.query)
		o.query = NULL;
	ret = client_open(&c, &o);
	if (ret < 0)
		return ret == -2 ? 2 : 1;
	if (o.list)
		ret = run_discover(&c, &o);
	else if (o.stats)
		ret = run_stats(&c, &o);
	else if (o.count)
		ret = run_count(&c, &o);
	else if (o.graph)
		ret = run_graph(&c, &o);
	else
		ret = run_select(&c, &o);
	if (c.tls)
		tlsconn_close(c.tls);
	else
		nng_close(c.sock);
	return ret;
}
