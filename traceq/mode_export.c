/*
 * mode_export.c - traceq --export PATH -f tracedat|perfetto [QUERY]: the
 * rows QUERY selects (without one: every stored event) within --since,
 * --until, --host and --cpu, handed to a writer (export.h) host by host.
 *
 * The hosts come first (the hosts op, narrowed by --host: the collector
 * applies the caller's scope), then one select per host, page by page as
 * mode_select.c reads them (the next page asked for before this one is
 * written: at most two pages held), so memory stays bounded whatever the
 * window holds. A host without rows in the window gets no begin/end.
 * On a terminal, a progress line on stderr.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "proto/msg.h"
#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/export.h"
#include "traceq/hostcache.h"
#include "traceq/hostmeta.h"
#include "traceq/losses.h"
#include "traceq/modes.h"
#include "traceq/select.h"
#include "traceq/traceq.h"

/* The writers -f picks from. */
static const struct export_writer_ops *const writers[] = {
	&export_tracedat_ops,
	&export_perfetto_ops,
};

#define EXPORT_ALL	"*"	/* the query without one: every stored event type */
#define EXPORT_MAX_HOSTS	4096

/* A host of the export, as the hosts op describes it (one row each). */
struct ehost {
	char *name, *kernel, *clock, *clock_source;
	uint32_t ncpus, page_size;
	int64_t clock_offset_ns;
	bool clock_measured;
	int64_t clock_uncertainty_ns, clock_drift_ppb, clock_disagree_ns;
};

struct export_run {
	struct client *c;
	const struct traceq_opts *o;
	struct export_writer *w;
	struct hostcache *hc;
	struct ehost *hosts;
	size_t nhosts;
	/* the host's programs' rings (hostmeta.h): their streams' buffers */
	struct hostmeta_program *progs;
	size_t nprogs;
	uint64_t rows;		/* written so far, all hosts */
	uint64_t page;		/* replies read so far (export_row.page) */
	bool progress;		/* stderr is a terminal */
	char err[EXPORT_ERR_LEN];	/* the writer's error sentence */
};

static const struct export_writer_ops *writer_of(const char *format)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (!strcmp(writers[i]->format, format ? format : "tracedat"))
			return writers[i];
	return NULL;
}

/* Column @name of @rep, or -1. */
static int col_of(const struct qmsg_reply *rep, const char *name)
{
	for (uint32_t i = 0; i < rep->ncols; i++)
		if (!strcmp(rep->cols[i], name))
			return (int)i;
	return -1;
}

static char *cell_str(const struct qmsg_value *row, int col)
{
	return strdup(col >= 0 && row[col].kind == QV_STR ? row[col].s.p : "");
}

static int64_t cell_int(const struct qmsg_value *row, int col)
{
	return col >= 0 ? qmsg_value_int(&row[col]) : 0;
}

static void hosts_free(struct export_run *x)
{
	for (size_t i = 0; i < x->nhosts; i++) {
		free(x->hosts[i].name);
		free(x->hosts[i].kernel);
		free(x->hosts[i].clock);
		free(x->hosts[i].clock_source);
	}
	free(x->hosts);
	x->hosts = NULL;
	x->nhosts = 0;
}

/*
 * The hosts --host matches (the hosts op: the caller's scope applied by
 * the collector), one entry per name: two hosts of one name (an import
 * beside a live host) are exported as one, their rows merged in time.
 */
static int hosts_take(struct export_run *x, const struct qmsg_reply *rep)
{
	int name = col_of(rep, "host"), kernel = col_of(rep, "kernel"),
	    cpus = col_of(rep, "cpus"), clock = col_of(rep, "trace_clock"),
	    page = col_of(rep, "page_size"), off = col_of(rep, "clock_offset_ns"),
	    src = col_of(rep, "clock_source"), meas = col_of(rep, "clock_measured_ns"),
	    unc = col_of(rep, "clock_uncertainty_ns"), drift = col_of(rep, "clock_drift_ppb"),
	    dis = col_of(rep, "clock_disagree_ns");

	if (name < 0)
		return -EPROTO;
	if (rep->nrows && !(x->hosts = calloc(rep->nrows, sizeof(*x->hosts))))
		return -ENOMEM;
	for (uint32_t i = 0; i < rep->nrows && i < EXPORT_MAX_HOSTS; i++) {
		const struct qmsg_value *row = &rep->vals[(size_t)i * rep->ncols];
		struct ehost *h = &x->hosts[x->nhosts];
		bool seen = false;

		if (row[name].kind != QV_STR)
			continue;
		for (size_t j = 0; j < x->nhosts && !seen; j++)
			seen = !strcmp(x->hosts[j].name, row[name].s.p);
		if (seen)
			continue;
		h->name = cell_str(row, name);
		h->kernel = cell_str(row, kernel);
		h->clock = cell_str(row, clock);
		h->clock_source = cell_str(row, src);
		if (!h->name || !h->kernel || !h->clock || !h->clock_source)
			return -ENOMEM;
		h->ncpus = (uint32_t)cell_int(row, cpus);
		h->page_size = (uint32_t)cell_int(row, page);
		/*
		 * The offset that places the host's events (issue 36): the
		 * collector's measurement where the host's realtime lied, else
		 * the host's own sample, as the stored times were placed.
		 */
		h->clock_offset_ns = cell_int(row, off);
		if (src >= 0 && meas >= 0 && row[src].kind == QV_STR && row[meas].kind != QV_NIL &&
		    row[src].s.len == 8 && !memcmp(row[src].s.p, "measured", 8))
			h->clock_offset_ns = cell_int(row, meas);
		/* the latest measurement, for the Perfetto manifest (nil: none) */
		h->clock_measured = unc >= 0 && row[unc].kind != QV_NIL;
		h->clock_uncertainty_ns = cell_int(row, unc);
		h->clock_drift_ppb = cell_int(row, drift);
		h->clock_disagree_ns = cell_int(row, dis);
		x->nhosts++;
	}
	return 0;
}

static int hosts_fetch(struct export_run *x)
{
	struct qmsg_reply rep;
	int ret = client_ask(x->c, QOP_HOSTS, NULL, &x->o->sel, &rep);

	if (ret)
		return ret;
	ret = hosts_take(x, &rep);
	qmsg_reply_free(&rep);
	if (ret < 0) {
		fprintf(stderr, "traceq: --export: %s\n", ret == -ENOMEM ? "out of memory" :
			"bad reply from the collector: its hosts have no host column");
		return 1;
	}
	if (x->nhosts == 0) {
		fprintf(stderr, "traceq: --export: no host matches%s\n",
			x->o->sel.nhosts ? " --host" : ": the collector stores none");
		return 2;
	}
	return 0;
}

/*
 * @name as a glob that matches only itself: each of fnmatch's and
 * SQLite GLOB's special characters in brackets. @buf has 3 bytes per byte.
 */
static const char *glob_exact(const char *name, char *buf)
{
	char *p = buf;

	for (; *name; name++) {
		if (strchr("*?[]\\", *name)) {
			*p++ = '[';
			*p++ = *name;
			*p++ = ']';
		} else {
			*p++ = *name;
		}
	}
	*p = 0;
	return buf;
}

static void progress(struct export_run *x, const char *host, bool done)
{
	char h[LOG_ESC_LEN];

	if (!x->progress)
		return;
	fprintf(stderr, "\r\033[Ktraceq: --export: %s: %" PRIu64 " events%s",
		log_escape(host, h, sizeof(h)), x->rows, done ? "\n" : "");
}

/*
 * Whether @cpu (a row's or a loss's) is a program's: a stream
 * (>= PROTO_USER_STREAM_BASE: the collector stores a program's rows and
 * losses on their stream), or for rows stored before it did (they
 * carry their buffer), a CPU none the host declared. (Such an old row
 * of a buffer below the host's CPU count reads as the kernel's CPU.)
 */
static bool cpu_is_program(const struct ehost *e, uint32_t cpu)
{
	return cpu >= PROTO_USER_STREAM_BASE || (e->ncpus && cpu >= e->ncpus);
}

/* Whether @p is a better guess than @g for a stream at @ts: see stream_buffer(). */
static bool group_before(const struct hostmeta_program *p, const struct hostmeta_program *g,
			 int64_t ts)
{
	bool p_up = p->since_ns <= ts, g_up = g->since_ns <= ts;

	if (p_up != g_up)
		return p_up;
	return p_up ? p->since_ns >= g->since_ns : p->since_ns < g->since_ns;
}

/*
 * The buffer of a program's stream @stream at wall-clock @ts: the stream
 * less the first stream of the group that holds it, announced last at
 * or before @ts (agent runs number their groups' streams anew), else
 * the first that holds it. UINT32_MAX: no group holds it.
 */
static uint32_t stream_buffer(const struct export_run *x, uint32_t stream, int64_t ts)
{
	const struct hostmeta_program *g = NULL;

	for (size_t i = 0; i < x->nprogs; i++) {
		const struct hostmeta_program *p = &x->progs[i];

		if (stream < p->first_stream || stream - p->first_stream >= p->nstreams)
			continue;
		if (!g || group_before(p, g, ts))
			g = p;
	}
	return g ? stream - g->first_stream : UINT32_MAX;
}

/*
 * Where the rows and losses of @cpu at wall-clock @ts go (export_row.cpu,
 * export_loss.row_cpu): a program's stream its buffer (stream_buffer()),
 * so that rows stored with their buffer and with their stream go
 * together, and the stream itself when the collector named no group of
 * it; any other CPU as it is.
 */
static uint32_t row_cpu(const struct export_run *x, uint32_t cpu, int64_t ts)
{
	uint32_t b = cpu >= PROTO_USER_STREAM_BASE ? stream_buffer(x, cpu, ts) : UINT32_MAX;

	return b != UINT32_MAX ? b : cpu;
}

/*
 * Row @i of @rep as the writers take it (export_row.program:
 * cpu_is_program(); its .cpu is row_cpu()'s once the host's programs are known).
 */
static void row_of(const struct ehost *e, const struct qmsg_reply *rep, uint32_t i,
		   struct qmsg_reply *view, struct export_row *r)
{
	const struct qmsg_value *v = qmsg_reply_row(rep, i, view);

	*r = (struct export_row){
		.host = v[0].kind == QV_STR ? v[0].s.p : "",
		.cpu = (uint32_t)qmsg_value_int(&v[1]),
		.ts = qmsg_value_int(&v[2]),
		.trace_ts = qmsg_value_int(&v[3]),
		.pid = (int32_t)qmsg_value_int(&v[4]),
		.comm = v[5].kind == QV_STR ? v[5].s.p : NULL,
		.view = view,
		.vals = v,
	};
	r->program = cpu_is_program(e, r->cpu);
}

/*
 * The host's info for host_begin(), as of its first row at @wall (the
 * boot then: its printk formats; its headers, long size, byte order and
 * clock as the collector keeps them (hostmeta.h), else the hosts op's).
 */
static void host_info(struct export_run *x, const struct ehost *e, int64_t wall,
		      struct export_host *h, char **printk, struct hostmeta *m)
{
	const uint64_t *addr = NULL;
	char *const *fmt = NULL;
	size_t n = hostcache_printk(x->hc, e->name, wall, &addr, &fmt), len = 0;
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);

	/* the kernel's printk_formats lines back from the table */
	for (size_t i = 0; f && i < n; i++)
		if (fmt[i])
			fprintf(f, "0x%" PRIx64 " : %s\n", addr[i], fmt[i]);
	if (f)
		fclose(f);
	*printk = text;
	*h = (struct export_host){
		.name = e->name, .kernel = e->kernel, .ncpus = e->ncpus,
		.page_size = e->page_size, .clock = e->clock,
		.clock_offset_ns = e->clock_offset_ns, .clock_source = e->clock_source,
		.clock_measured = e->clock_measured,
		.clock_uncertainty_ns = e->clock_uncertainty_ns,
		.clock_drift_ppb = e->clock_drift_ppb, .clock_disagree_ns = e->clock_disagree_ns,
		.header_page = "", .header_event = "",
		.printk = text ? text : "", .printk_len = text ? len : 0,
	};
	if (hostmeta_get(x->c, e->name, wall, m) != 0)
		return;
	if (m->kernel && *m->kernel)
		h->kernel = m->kernel;
	if (m->trace_clock && *m->trace_clock)
		h->clock = m->trace_clock;
	if (m->page_size)
		h->page_size = m->page_size;
	h->long_size = m->long_size;
	h->big_endian = m->big_endian;
	h->header_page = m->header_page ? m->header_page : "";
	h->header_event = m->header_event ? m->header_event : "";
}

/* A loss of the cursor as the writers take it. */
static int loss_write(struct export_run *x, const struct ehost *e, const struct loss *l)
{
	struct export_loss el = {
		.host = l->host, .cpu = l->cpu, .ts = l->ts, .trace_ts = l->trace_ts,
		.count = l->count > 0 ? (uint64_t)l->count : 0,
	};

	el.program = cpu_is_program(e, l->cpu);
	el.row_cpu = row_cpu(x, l->cpu, l->ts);
	return x->w->ops->loss(x->w, &el);
}

/*
 * The losses due before a row of wall-clock @ts (at or before it, as
 * the printer puts them); with a window relative to the end (the
 * cursor's is open), only those from the first row on.
 */
static int losses_before(struct export_run *x, const struct ehost *e, struct losses *ls,
			 int64_t ts, bool first)
{
	bool bounded = x->o->sel.from_end || x->o->sel.to_end;
	const struct loss *l;
	int ret = 0;

	while (ret == 0 && ls && (l = losses_peek(ls)) && l->ts <= ts) {
		if (!bounded || !first || l->ts == ts)
			ret = loss_write(x, e, l);
		losses_pop(ls);
	}
	return ret;
}

/* Hand @rep's rows (and the losses before them) to the writer; the host begins at its first row. */
static int page_write(struct export_run *x, const struct ehost *e, const struct qmsg_reply *rep,
		      struct losses *ls, bool *begun)
{
	int ret = 0;

	x->page++;
	for (uint32_t i = 0; i < rep->nrows && ret == 0; i++) {
		struct qmsg_reply view;
		struct export_row r;

		row_of(e, rep, i, &view, &r);
		r.page = x->page;
		if (view.ncols < QMSG_META_COLS)
			continue;
		if (!*begun) {
			struct hostmeta m = { 0 };
			struct export_host h;
			char *printk = NULL;

			host_info(x, e, r.ts, &h, &printk, &m);
			ret = x->w->ops->host_begin(x->w, &h);
			free(printk);
			free(x->progs);	/* the host's programs: its rows' and losses' buffers */
			x->progs = m.programs;
			x->nprogs = m.nprograms;
			m.programs = NULL;
			hostmeta_free(&m);
			if (ret < 0)
				break;
			ret = losses_before(x, e, ls, r.ts, true);
			*begun = true;
		} else {
			ret = losses_before(x, e, ls, r.ts, false);
		}
		r.cpu = row_cpu(x, r.cpu, r.ts);
		if (ret == 0)
			ret = x->w->ops->row(x->w, &r);
		x->rows++;
	}
	return ret;
}

/*
 * One host's rows, page by page (mode_select.c's loop: the next page is
 * asked for before this one is written). Return: 0; 1 (the collector
 * failed, or the writer: said); 2 (the query is wrong: said).
 */
static int host_export(struct export_run *x, const struct ehost *e)
{
	char *glob = malloc(3 * strlen(e->name) + 1);
	struct qmsg_request req = {
		.op = QOP_SELECT, .query = (char *)(x->o->query ? x->o->query : EXPORT_ALL),
		.limit = TRACEQ_PAGE_ROWS,
	};
	struct qmsg_reply rep;
	struct tq_select sel = x->o->sel;
	struct losses *ls = NULL;
	bool more = true, begun = false;
	uint64_t sent = 0;
	int ret, wret = 0;

	if (!glob || losses_open(x->c, &sel, &ls) < 0) {
		free(glob);
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	/* this host alone: its rows, and the losses (@sel must outlive the cursor) */
	sel.hosts[0] = glob_exact(e->name, glob);
	sel.nhosts = 1;
	sel.reverse = false;
	tq_select_apply(&sel, &req);
	ret = client_send(x->c, &req);
	while (ret == 0 && more) {
		if ((ret = client_next(x->c, &rep)))
			break;
		sent += rep.nrows;
		more = rep.more && rep.nrows;
		if (more) {
			req.sent = sent;
			req.after_ts = rep.last_ts;
			req.after_id = rep.last_id;
			req.after_type = rep.last_type;
			ret = client_send(x->c, &req);
		}
		wret = page_write(x, e, &rep, ls, &begun);
		qmsg_reply_free(&rep);
		progress(x, e->name, false);
		if (wret < 0)
			break;
	}
	/* the losses after the last row, as the printer ends (none with an end-relative window) */
	if (ret == 0 && wret == 0 && begun && !x->o->sel.from_end && !x->o->sel.to_end)
		wret = losses_before(x, e, ls, INT64_MAX, false);
	if (ret == 0 && wret == 0 && begun)
		wret = x->w->ops->host_end(x->w);
	if (ret == 0 && wret < 0) {
		char err[LOG_ESC_LEN];

		fprintf(stderr, "%straceq: --export: %s\n", x->progress ? "\n" : "",
			x->err[0] ? log_escape(x->err, err, sizeof(err)) : strerror(-wret));
		ret = 1;
	}
	if (wret < 0 && more && client_next(x->c, &rep) == 0)
		qmsg_reply_free(&rep);
	losses_close(ls);
	free(glob);
	return ret;
}

int mode_export_run(struct client *c, const struct traceq_opts *o)
{
	struct export_run x = { .c = c, .o = o, .progress = isatty(STDERR_FILENO) };
	const struct export_writer_ops *ops = writer_of(o->export_format);
	struct export_opts eo = { .path = o->export, .tracedat_version = o->tracedat_version,
				  .err = x.err };
	struct export_stats st = { 0 };
	char err[LOG_ESC_LEN];
	int ret;

	if (o->limit) {
		fprintf(stderr, "traceq: --export takes no --limit: it writes the window whole "
			"(narrow it with --since, --until, --host, --cpu or QUERY)\n");
		return 2;
	}
	if (!ops) {
		fprintf(stderr, "traceq: --export: -f %s: this traceq writes -f tracedat%s\n",
			o->export_format, sizeof(writers) / sizeof(writers[0]) > 1 ? " or perfetto" : "");
		return 2;
	}
	if ((ret = hosts_fetch(&x)))
		goto out;
	if (!(x.hc = hostcache_new(c))) {
		fprintf(stderr, "traceq: out of memory\n");
		ret = 1;
		goto out;
	}
	eo.nhosts = (unsigned)x.nhosts;
	eo.time_wall = o->time_given ? !o->time_raw : x.nhosts > 1;
	eo.time_raw = o->time_given && o->time_raw;
	eo.hc = x.hc;
	eo.sym = hostcache_sym;
	eo.sym_fetch = hostcache_sym_fetch;
	if (!eo.tracedat_version)
		eo.tracedat_version = 7;
	if ((ret = ops->open(&eo, &x.w)) < 0) {
		fprintf(stderr, "traceq: --export: %s\n", x.err[0] ?
			log_escape(x.err, err, sizeof(err)) : strerror(-ret));
		ret = 1;
		goto out;
	}
	for (size_t i = 0; i < x.nhosts && ret == 0; i++)
		ret = host_export(&x, &x.hosts[i]);
	{
		int cret = ops->close(x.w, ret == 0, &st);

		if (cret < 0 && ret == 0) {
			fprintf(stderr, "traceq: --export: %s\n", x.err[0] ?
				log_escape(x.err, err, sizeof(err)) : strerror(-cret));
			ret = 1;
		}
	}
	if (ret == 0 && st.skipped)
		fprintf(stderr, "traceq: --export: %" PRIu64 " events not written: their format "
			"could not be parsed, clashed with another's id, or the record did not "
			"fit a page\n", st.skipped);
	if (ret == 0 && x.progress)
		fprintf(stderr, "\r\033[Ktraceq: --export: %" PRIu64 " events, %u file%s, %" PRIu64
			" bytes\n", st.rows, st.files, st.files == 1 ? "" : "s", st.bytes);
out:
	hostcache_free(x.hc);
	hosts_free(&x);
	free(x.progs);
	return ret;
}
