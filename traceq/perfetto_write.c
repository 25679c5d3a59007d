/*
 * perfetto_write.c - traceq --export PATH -f perfetto: the writer of
 * export.h that the Perfetto UI opens as a CPU timeline. Chrome's JSON
 * trace format, one object per host:
 *
 *   {"traceEvents": [ ... ],
 *    "systemTraceEvents": "<the kernel's trace file, lines ending in \n>",
 *    "metadata": {"tracecollect_host": NAME, "tracecollect_base_ns": N}}
 *
 * What Perfetto reads, as of google/perfetto ec5d16b14b74 (2026-08-22):
 *
 *   - systemTraceEvents (src/trace_processor/importers/json/
 *     json_trace_tokenizer.cc) is cut into lines at the escape "\n" only
 *     (a "\u000a" would not end one), lines starting with '#' and empty
 *     ones are skipped, and every other line goes to the systrace
 *     tokenizer (importers/systrace/systrace_line_tokenizer.cc), whose
 *     one pattern is
 *       -(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):
 *     (pid, tgid or dashes, CPU, latency flags, seconds, event). A line
 *     it refuses fails the whole import (RETURN_IF_ERROR), so each is the
 *     kernel's trace layout with tgids (render.h: RENDER_KERNEL and the
 *     (TGID) column), log_escape()d so that no peer's byte cuts it, and
 *     never stamped before 0 (no '-' in the seconds).
 *   - systrace_line_parser.cc splits a line's text on spaces into
 *     key=value: sched_switch takes prev_comm, prev_pid, prev_prio,
 *     prev_state, next_comm, next_pid, next_prio (the kernel's print fmt
 *     writes all seven); sched_waking takes comm and pid; the tgid column
 *     ("-----" or dashes: unknown) makes each pid a thread of its process.
 *   - traceEvents: function-graph calls (funcgraph_exit: our programs',
 *     and the kernel's where it has the tracer) as complete events
 *     ("X": ts and dur in microseconds, with three decimals: ns exact;
 *     pid the tgid, tid the thread), the threads named by "M" thread_name
 *     events, other events of programs as thread instants ("i", "s":"t"),
 *     and where the ring buffer lost events, a global instant ("s":"g")
 *     named as trace-cmd report says it, "CPU:N [N EVENTS DROPPED]"; the
 *     same text is a '#' line of the systrace text at that place.
 *
 * Time. Perfetto reads both times as doubles (seconds, microseconds): a
 * wall-clock time in ns (1.8e18) would lose its last 8 bits. Each host's
 * file counts from its base, the whole second at or before its first
 * row (metadata's tracecollect_base_ns); a time before it (a call that
 * began earlier) is cut at 0. The times are the collector's wall clock,
 * or with --time raw given (export_opts.time_raw) each host's trace
 * clock (the manifest then still places the hosts by their bases).
 *
 * Names. The systrace text names threads (its comms); processes get an
 * "M" process_name event from their main thread's comm (pid == tgid),
 * and every task a thread_name one, the first time a row shows it.
 *
 * Several hosts (export_opts.nhosts > 1): PATH is a zip archive (libzip)
 * of one file per host, HOST.json (the name made safe: [A-Za-z0-9._-],
 * other bytes '_', "-N" where two names meet), and perfetto_manifest.json
 * (docs/reference/perfetto-manifest.md): each file a machine named after
 * its host, placed on the timeline of the host with the earliest base
 * ("clocks": {"sync_to": {"file": ...}, "offset_ns": base - that base};
 * no "clock": Chrome JSON is clockless, the file is pinned), so that the
 * hosts line up on the collector's wall clock and none lands before the
 * merged timeline's start. Each file's entry also says how the collector
 * placed that host's events ("tracecollect_clock": source, offset_ns, and
 * when it measured the host, uncertainty_ns, drift_ppb, disagree_ns; the
 * columns of traceq --hosts), which Perfetto's reader passes over.
 *
 * Memory stays bounded: traceEvents go straight into the host's file, the
 * systrace text into an unlinked file beside PATH, copied after the array
 * at host_end(). What is kept per host: a renderer per event type, the
 * threads already named (PF_NAMED_MAX), the exits waiting for the ring
 * clock's scale (PF_PENDING_MAX), the host's tgids. The archive's
 * members stay as unlinked files, one descriptor each, until close(),
 * where libzip compresses them into PATH (written to a temporary name,
 * then renamed). A single host's file is also written under a temporary
 * name and renamed at close(): an export that fails leaves nothing.
 *
 * Function-graph durations. Our runtime writes one funcgraph_exit per
 * call, calltime and rettime in the ring's clock (TSC ticks on x86_64),
 * its row's ts being rettime on the wall clock. The ns per tick are
 * fitted as graph.c fits them, from the host's exits (the first against
 * the first one PF_FIT_SPAN_NS later, then kept: one scale for all, so
 * that calls nest as they did); exits before that wait (at most
 * PF_PENDING_MAX, then the estimate so far is kept). Each call ends at
 * its exit row's time, on the wall clock the kernel's text has.
 * funcgraph_entry rows add nothing the exits lack and are not written.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zip.h>

#include "common/log.h"
#include "common/util.h"
#include "traceq/export.h"
#include "traceq/hostcache.h"
#include "traceq/output.h"
#include "traceq/render.h"

#define PF_LINE_MAX	8192		/* a systrace line is cut there */
#define PF_COMM_MAX	64		/* a comm in a systrace line is cut there */
#define PF_TYPES_MAX	512		/* event types with a renderer at once, per host */
#define PF_PENDING_MAX	4096		/* exits waiting for the clock's scale */
#define PF_FIT_SPAN_NS	10000000	/* 10 ms of exits fix the scale */
#define PF_NAMED_MAX	(1u << 16)	/* threads named per host */
#define PF_NAME_MAX	200		/* an archive member's name, ".json" excluded */
#define PF_MANIFEST	"perfetto_manifest.json"

/* What a type's rows become. */
enum pf_kind {
	PF_TEXT,		/* a line of the kernel's text (the renderer) */
	PF_CALL,		/* funcgraph_exit: a complete event */
	PF_ENTRY,		/* funcgraph_entry: nothing (its exit carries the call) */
	PF_INSTANT,		/* any other event of a program: an instant */
};

/* One event type of a host: its renderer or its funcgraph columns. */
struct pf_type {
	char *event;
	char *format;			/* the text it was made from */
	const char *last;		/* the reply's text it was last matched with, */
	uint64_t page;			/* in this page (export_row.page) */
	enum pf_kind kind;
	bool program;			/* a program's stream (our ring) */
	struct render *render;		/* PF_TEXT's */
	bool refused;			/* the renderer refused its format: skipped */
	int func, depth, calltime, rettime, sym;	/* funcgraph columns, -1: none */
};

/* A function call waiting for the scale of the ring's clock. */
struct pf_exit {
	int64_t ts;			/* wall-clock ns of the return */
	uint64_t ret, ticks;		/* rettime, rettime - calltime */
	int32_t pid, tgid;
	uint32_t cpu;
	int32_t depth;
	char name[128];
};

/* How a host's events were placed (export_host's clock fields), for the manifest. */
struct pf_clock {
	char source[16];		/* "" not said */
	int64_t offset_ns;
	bool measured;			/* the three below */
	int64_t uncertainty_ns, drift_ppb, disagree_ns;
};

/* An archive member done: its file (unlinked), its host. */
struct pf_member {
	char *path;			/* its name in the archive */
	char *machine;			/* the host's name, escaped */
	int64_t base_ns;
	bool has_base;
	struct pf_clock clock;		/* how its events were placed */
};

struct pf_writer {
	struct export_writer w;		/* first: export.h */
	struct hostcache *hc;
	char *path, *tmp;		/* PATH; a single file's temporary name */
	char *dir;			/* PATH's folder: the spools go there */
	zip_t *zip;			/* several hosts */
	struct pf_member *members;
	size_t nmembers, members_cap;
	bool wrote;			/* a host's file was finished */
	bool time_raw;		/* --time raw: each host's trace clock */
	/* the host being written */
	char *host;
	struct pf_clock clock;
	FILE *json;			/* its file */
	FILE *sys;			/* its systrace text, spooled */
	bool has_base;
	int64_t base_ns;
	uint64_t nevents;		/* traceEvents so far (the commas) */
	struct pf_type *types;
	size_t ntypes;
	int32_t (*tgids)[2];
	size_t ntgids;
	bool fit0, fitted;		/* the ring clock's fit: anchor taken, scale known */
	int64_t fit_ts;
	uint64_t fit_ret;
	double scale;			/* ns per tick */
	struct pf_exit *pending;
	size_t npending;
	int32_t *named;			/* open addressing, pid + 1 (a process: -tgid - 1); 0: empty */
	size_t named_cap, nnamed;
	struct export_stats st;
	struct qmsg_value *vals;	/* a row with its comm cut (pf_vals()) */
	char comm[PF_COMM_MAX];
	char line[PF_LINE_MAX + 1], raw[PF_LINE_MAX + 1];
};

static struct pf_writer *pf_of(struct export_writer *w)
{
	return (struct pf_writer *)w;
}

/* ---- files ---- */

/*
 * An unlinked file for writing and reading back in @dir (a /tmp file
 * where the filesystem has no O_TMPFILE). NULL: errno says why.
 */
static FILE *pf_spool(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	FILE *f;

	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
		return tmpfile();
	if (fd < 0 || !(f = fdopen(fd, "w+"))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		errno = e;
		return NULL;
	}
	return f;
}

static char *pf_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* ---- JSON ---- */

/* A peer's string as a JSON string: escaped for people first (valid UTF-8, no control byte). */
static void pf_str(struct pf_writer *p, FILE *f, const char *s)
{
	size_t n = log_escape_mem(s ? s : "", s ? strlen(s) : 0, p->raw, sizeof(p->raw));

	fputc('"', f);
	out_json_text(f, p->raw, n);
	fputc('"', f);
}

/* @ns as JSON's microseconds, ns exact ("12.345"). */
static void pf_us(FILE *f, int64_t ns)
{
	fprintf(f, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

/* The host's time of wall-clock @ts: ns since its base, 0 before it. */
static int64_t pf_time(struct pf_writer *p, int64_t ts)
{
	if (!p->has_base) {
		p->base_ns = ts - (ts % 1000000000 + 1000000000) % 1000000000;
		p->has_base = true;
	}
	return ts > p->base_ns ? ts - p->base_ns : 0;
}

/* The start of the next traceEvents entry: "{" after a comma when not the first. */
static FILE *pf_event(struct pf_writer *p)
{
	fputs(p->nevents++ ? ",\n{" : "\n{", p->json);
	return p->json;
}

/* ---- threads ---- */

/* The slot of @key in @tab (@cap a power of 2): where it is, or the empty one to put it. */
static size_t pf_slot(const int32_t *tab, size_t cap, int32_t key)
{
	size_t i = (uint32_t)key * 2654435761u & (cap - 1);

	while (tab[i] && tab[i] != key)
		i = (i + 1) & (cap - 1);
	return i;
}

/* p->named twice as large. Return: 0; -ENOMEM. */
static int pf_named_grow(struct pf_writer *p)
{
	size_t cap = p->named_cap ? p->named_cap * 2 : 256;
	int32_t *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t j = 0; j < p->named_cap; j++)
		if (p->named[j])
			n[pf_slot(n, cap, p->named[j])] = p->named[j];
	free(p->named);
	p->named = n;
	p->named_cap = cap;
	return 0;
}

/*
 * Whether @pid was named already; remembers it. Past PF_NAMED_MAX
 * threads (or without memory) it says yes: the rest keep their pids.
 */
static bool pf_named(struct pf_writer *p, int32_t pid)
{
	size_t i;

	if (p->nnamed * 2 >= p->named_cap &&
	    (p->nnamed >= PF_NAMED_MAX || pf_named_grow(p) < 0))
		return true;
	i = pf_slot(p->named, p->named_cap, pid + 1);
	if (p->named[i])
		return true;
	p->named[i] = pid + 1;
	p->nnamed++;
	return false;
}

static int pf_tgid_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = ((const int32_t *)b)[0];

	return (x > y) - (x < y);
}

/* A render_tgid_fn: the host's saved tgids, else the collector's (hostcache). */
static int32_t pf_tgid(void *ctx, const char *host, int32_t pid)
{
	struct pf_writer *p = ctx;
	const int32_t *e = p->ntgids ? bsearch(&pid, p->tgids, p->ntgids, sizeof(*p->tgids),
					       pf_tgid_cmp) : NULL;

	if (e)
		return e[1];
	return p->hc ? hostcache_tgid(p->hc, host, pid) : 0;
}

/* A "thread_name" metadata event the first time @pid shows up. */
static void pf_name_thread(struct pf_writer *p, int32_t pid, int32_t tgid, const char *comm)
{
	FILE *f;

	if (!comm || pf_named(p, pid))
		return;
	f = pf_event(p);
	fprintf(f, "\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId32 ",\"tid\":%" PRId32
		",\"args\":{\"name\":", tgid, pid);
	pf_str(p, f, comm);
	fputs("}}", f);
}

/*
 * The task of a kernel row named: its thread (as the text's comm names
 * it too) and, when it is its process's main thread (pid == tgid, whose
 * comm is the process's, as /proc/PID/comm), its process ("M"
 * process_name: the systrace text names threads only, so Perfetto would
 * show the process by its number).
 */
static void pf_name_task(struct pf_writer *p, const struct export_row *r)
{
	int32_t tgid = r->pid > 0 ? pf_tgid(p, r->host, r->pid) : 0;
	FILE *f;

	if (tgid <= 0 || !r->comm)
		return;
	pf_name_thread(p, r->pid, tgid, r->comm);
	if (r->pid != tgid || pf_named(p, -tgid - 2))	/* (kept as -tgid - 1: no pid's key) */
		return;
	f = pf_event(p);
	fprintf(f, "\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId32
		",\"args\":{\"name\":", tgid);
	pf_str(p, f, r->comm);
	fputs("}}", f);
}

/* The time of @r this file uses: the wall clock's, the host's trace clock with --time raw. */
static int64_t pf_row_ts(const struct pf_writer *p, const struct export_row *r)
{
	return p->time_raw ? r->trace_ts : r->ts;
}

/* ---- types ---- */

static int pf_col(const struct qmsg_reply *view, const char *name)
{
	for (uint32_t i = QMSG_META_COLS; i < view->ncols; i++)
		if (!strcmp(view->cols[i], name))
			return (int)i;
	return -1;
}

static void pf_type_free(struct pf_type *t)
{
	free(t->event);
	free(t->format);
	render_free(t->render);
	memset(t, 0, sizeof(*t));
}

static void pf_types_free(struct pf_writer *p)
{
	for (size_t i = 0; i < p->ntypes; i++)
		pf_type_free(&p->types[i]);
	p->ntypes = 0;
}

/* A kernel type's renderer: the kernel's layout, the tgid column. Return: 0; -ENOMEM. */
static int pf_type_render(struct pf_writer *p, struct pf_type *t, const struct qmsg_reply *view)
{
	char why[256] = "", e[LOG_ESC_LEN], w[LOG_ESC_LEN];
	int ret;

	if (render_new(RENDER_KERNEL, p->hc ? hostcache_sym : NULL, p->hc, &t->render) < 0)
		return -ENOMEM;
	if (p->hc)
		render_set_printk(t->render, hostcache_printk, p->hc);
	render_set_tgid(t->render, pf_tgid, p);
	ret = render_prepare(t->render, view, why, sizeof(why));
	if (ret == -ENOMEM)
		return -ENOMEM;
	if (ret < 0) {
		fprintf(stderr, "traceq: --export: %s: cannot render its format (%s): "
			"left out of the Perfetto file\n", log_escape(t->event, e, sizeof(e)),
			log_escape(why, w, sizeof(w)));
		t->refused = true;
	}
	return 0;
}

static struct pf_type *pf_type_find(struct pf_writer *p, const struct export_row *r,
				    const char *event, const char *format)
{
	for (size_t i = p->ntypes; i-- > 0;) {
		struct pf_type *t = &p->types[i];

		if (t->program != r->program || strcmp(t->event, event))
			continue;
		if ((t->last == r->view->format && t->page == r->page) ||
		    !strcmp(t->format, format)) {
			t->last = r->view->format;
			t->page = r->page;
			return t;
		}
	}
	return NULL;
}

/* What @r's rows become (@t's columns found). */
static enum pf_kind pf_kind_of(const struct export_row *r, const struct pf_type *t)
{
	if (!strcmp(t->event, "ftrace:funcgraph_exit") && t->calltime >= 0 && t->rettime >= 0)
		return PF_CALL;
	if (!strcmp(t->event, "ftrace:funcgraph_entry"))
		return PF_ENTRY;
	return r->program ? PF_INSTANT : PF_TEXT;
}

/*
 * The type of @r (its event and format text; a program's or the
 * kernel's), made on first sight. Past PF_TYPES_MAX the last is reused.
 * NULL: no memory.
 */
static struct pf_type *pf_type_of(struct pf_writer *p, const struct export_row *r)
{
	const char *event = r->view->event ? r->view->event : "?";
	const char *format = r->view->format ? r->view->format : "";
	struct pf_type *t = pf_type_find(p, r, event, format);

	if (t)
		return t;
	if (!p->types && !(p->types = calloc(PF_TYPES_MAX, sizeof(*p->types))))
		return NULL;
	if (p->ntypes == PF_TYPES_MAX)
		pf_type_free(&p->types[--p->ntypes]);
	t = &p->types[p->ntypes];
	t->last = r->view->format;
	t->page = r->page;
	t->program = r->program;
	if (!(t->event = strdup(event)) || !(t->format = strdup(format)))
		goto nomem;
	t->func = pf_col(r->view, "func");
	t->depth = pf_col(r->view, "depth");
	t->calltime = pf_col(r->view, "calltime");
	t->rettime = pf_col(r->view, "rettime");
	t->sym = pf_col(r->view, "func_sym");
	t->kind = pf_kind_of(r, t);
	if (t->kind == PF_TEXT && pf_type_render(p, t, r->view) < 0)
		goto nomem;
	p->ntypes++;
	return t;
nomem:
	pf_type_free(t);
	return NULL;
}

/* ---- kernel rows: the systrace text ---- */

/* One line (@n bytes, no control byte) and its "\n" into the spooled text. */
static void pf_sys_line(struct pf_writer *p, const char *s, size_t n)
{
	out_json_text(p->sys, s, n);
	fputs("\\n", p->sys);
}

/*
 * The kernel's trace file's head: '#' lines, which the importer skips
 * (and the record-tgid column's heading, as the kernel writes it).
 */
static void pf_sys_head(struct pf_writer *p)
{
	static const char *const head[] = {
		"# tracer: nop",
		"#",
		"#                                      _-----=> irqs-off/BH-disabled",
		"#                                     / _----=> need-resched",
		"#                                    | / _---=> hardirq/softirq",
		"#                                    || / _--=> preempt-depth",
		"#                                    ||| / _-=> migrate-disable",
		"#                                    |||| /     delay",
		"#           TASK-PID     TGID  CPU#  |||||  TIMESTAMP  FUNCTION",
		"#              | |         |     |   |||||     |         |",
	};

	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		pf_sys_line(p, head[i], strlen(head[i]));
}

/* @r's line in the kernel's layout into p->line, escaped. Return: its length. */
/*
 * @r's values, its comm cut at PF_COMM_MAX bytes: a peer's longer comm
 * (the kernel's have 15) would push the line's columns past PF_LINE_MAX,
 * and a line without them fails Perfetto's import. NULL: no memory.
 */
static const struct qmsg_value *pf_vals(struct pf_writer *p, const struct export_row *r)
{
	const struct qmsg_value *c = &r->vals[5];

	if (c->kind != QV_STR || c->s.len < PF_COMM_MAX)
		return r->vals;
	if (!p->vals && !(p->vals = malloc(QMSG_MAX_COLS * sizeof(*p->vals))))
		return NULL;
	memcpy(p->vals, r->vals, (r->view->ncols < QMSG_MAX_COLS ? r->view->ncols :
				  QMSG_MAX_COLS) * sizeof(*p->vals));
	memcpy(p->comm, c->s.p, PF_COMM_MAX - 1);
	p->comm[PF_COMM_MAX - 1] = 0;
	p->vals[5].s.p = p->comm;
	p->vals[5].s.len = PF_COMM_MAX - 1;
	return p->vals;
}

static size_t pf_render(struct pf_writer *p, struct pf_type *t, const struct export_row *r,
			const struct qmsg_value *vals)
{
	int64_t ts = pf_time(p, pf_row_ts(p, r));
	size_t n = render_row(t->render, r->view, vals, ts, p->line, PF_LINE_MAX);

	/* a code address not named yet: ask for the names, then print again */
	if (p->hc && hostcache_sym_pending(p->hc) && hostcache_sym_fetch(p->hc, r->ts) == 0)
		n = render_row(t->render, r->view, vals, ts, p->line, PF_LINE_MAX);
	if (!log_escape_needed(p->line, n))
		return n;
	memcpy(p->raw, p->line, n);
	return log_escape_mem(p->raw, n, p->line, PF_LINE_MAX);
}

static int pf_kernel_row(struct pf_writer *p, struct pf_type *t, const struct export_row *r)
{
	const struct qmsg_value *vals = pf_vals(p, r);
	size_t n;

	if (!vals)
		return export_seterr(&p->w, -ENOMEM, "out of memory");
	if (t->refused) {
		p->st.skipped++;
		return 0;
	}
	n = pf_render(p, t, r, vals);
	if (n && p->line[0] == '#')	/* a comm of 16 or more: not a line the importer skips */
		fputc(' ', p->sys);
	pf_sys_line(p, p->line, n);
	pf_name_task(p, r);
	p->st.rows++;
	return 0;
}

/* ---- calls and programs' events: traceEvents ---- */

static uint64_t pf_u64(const struct export_row *r, int col)
{
	return col < 0 ? 0 : (uint64_t)qmsg_value_int(&r->vals[col]);
}

/* A complete event ("X") for @e, its duration @e->ticks at @scale ns each. */
static void pf_slice(struct pf_writer *p, const struct pf_exit *e, double scale)
{
	int64_t dur = (int64_t)((double)e->ticks * scale + 0.5);
	int64_t end = pf_time(p, e->ts), start = end - dur;
	FILE *f = pf_event(p);

	if (start < 0) {	/* begun before the base: cut there */
		start = 0;
		dur = end;
	}
	fputs("\"ph\":\"X\",\"cat\":\"function\",\"name\":", f);
	pf_str(p, f, e->name);
	fputs(",\"ts\":", f);
	pf_us(f, start);
	fputs(",\"dur\":", f);
	pf_us(f, dur);
	fprintf(f, ",\"pid\":%" PRId32 ",\"tid\":%" PRId32 ",\"args\":{\"cpu\":%" PRIu32
		",\"depth\":%" PRId32 "}}", e->tgid, e->pid, e->cpu, e->depth);
	p->st.rows++;
}

/* The ns per tick the fit gives with @last (NULL: none) : 1 until two exits differ. */
static double pf_scale(const struct pf_writer *p, const struct pf_exit *last)
{
	if (p->fitted)
		return p->scale;
	if (last && last->ret > p->fit_ret && last->ts > p->fit_ts)
		return (double)(last->ts - p->fit_ts) / (double)(last->ret - p->fit_ret);
	return 1.0;
}

static void pf_flush_pending(struct pf_writer *p, double scale)
{
	for (size_t i = 0; i < p->npending; i++)
		pf_slice(p, &p->pending[i], scale);
	p->npending = 0;
}

/*
 * Fit the ring's clock with exit @e: the first is the anchor, the first
 * PF_FIT_SPAN_NS later fixes the scale (one scale for all of the host's
 * calls: a parent and its children keep their nesting).
 */
static void pf_fit(struct pf_writer *p, const struct pf_exit *e)
{
	if (p->fitted)
		return;
	if (!p->fit0) {
		p->fit0 = true;
		p->fit_ts = e->ts;
		p->fit_ret = e->ret;
		return;
	}
	if (e->ret > p->fit_ret && e->ts - p->fit_ts >= PF_FIT_SPAN_NS) {
		p->scale = pf_scale(p, e);
		p->fitted = true;
	}
}

/* A funcgraph_exit: a call, written once the clock's scale is known. */
static int pf_exit_row(struct pf_writer *p, struct pf_type *t, const struct export_row *r)
{
	uint64_t call = pf_u64(r, t->calltime), ret = pf_u64(r, t->rettime);
	struct pf_exit e = {
		.ts = pf_row_ts(p, r), .ret = ret, .ticks = ret >= call ? ret - call : 0, .pid = r->pid,
		.cpu = r->cpu, .depth = (int32_t)pf_u64(r, t->depth),
	};
	const struct qmsg_value *sym = t->sym >= 0 ? &r->vals[t->sym] : NULL;
	size_t k = sym && sym->kind == QV_STR ? strcspn(sym->s.p, "+") : 0;

	e.tgid = pf_tgid(p, r->host, r->pid);
	e.tgid = e.tgid > 0 ? e.tgid : r->pid;
	/* the function, not the hook's call site in it: no +0xoff */
	if (k)
		snprintf(e.name, sizeof(e.name), "%.*s", (int)k, sym->s.p);
	else
		snprintf(e.name, sizeof(e.name), "0x%" PRIx64, pf_u64(r, t->func));
	pf_name_thread(p, e.pid, e.tgid, r->comm);
	pf_fit(p, &e);
	if (p->fitted) {
		pf_flush_pending(p, p->scale);
		pf_slice(p, &e, p->scale);
		return 0;
	}
	if (p->npending == PF_PENDING_MAX) {	/* no more waiting: the estimate so far */
		p->scale = pf_scale(p, &e);
		p->fitted = true;
		pf_flush_pending(p, p->scale);
		pf_slice(p, &e, p->scale);
		return 0;
	}
	if (!p->pending && !(p->pending = malloc(PF_PENDING_MAX * sizeof(*p->pending))))
		return export_seterr(&p->w, -ENOMEM, "out of memory");
	p->pending[p->npending++] = e;
	return 0;
}

/* Any other event of a program: an instant on its thread. */
static void pf_instant_row(struct pf_writer *p, const struct export_row *r)
{
	int32_t tgid = pf_tgid(p, r->host, r->pid);
	FILE *f;

	tgid = tgid > 0 ? tgid : r->pid;
	pf_name_thread(p, r->pid, tgid, r->comm);
	f = pf_event(p);
	fputs("\"ph\":\"i\",\"s\":\"t\",\"cat\":\"event\",\"name\":", f);
	pf_str(p, f, r->view->event);
	fputs(",\"ts\":", f);
	pf_us(f, pf_time(p, pf_row_ts(p, r)));
	fprintf(f, ",\"pid\":%" PRId32 ",\"tid\":%" PRId32 ",\"args\":{\"cpu\":%" PRIu32 "}}",
		tgid, r->pid, r->cpu);
	p->st.rows++;
}

/* ---- the ops ---- */

static int pf_io_error(struct pf_writer *p, int e, const char *what)
{
	char esc[LOG_ESC_LEN];

	return export_seterr(&p->w, -e, "%s: %s: %s", log_escape(p->path, esc, sizeof(esc)),
			     what, strerror(e));
}

static void pf_host_drop(struct pf_writer *p)
{
	if (p->json)
		fclose(p->json);
	if (p->sys)
		fclose(p->sys);
	p->json = p->sys = NULL;
	free(p->host);
	p->host = NULL;
	pf_types_free(p);
	free(p->tgids);
	p->tgids = NULL;
	p->ntgids = 0;
	free(p->named);
	p->named = NULL;
	p->named_cap = p->nnamed = 0;
	p->npending = 0;
	p->fit0 = p->fitted = p->has_base = false;
	p->nevents = 0;
}

/* The file a single host's JSON goes to: PATH's temporary name. */
static FILE *pf_single_file(struct pf_writer *p)
{
	size_t n = strlen(p->path) + 16;
	int fd;
	FILE *f;

	if (!p->tmp && !(p->tmp = malloc(n)))
		return NULL;
	snprintf(p->tmp, n, "%s.tmpXXXXXX", p->path);
	if ((fd = mkostemp(p->tmp, O_CLOEXEC)) < 0) {
		free(p->tmp);
		p->tmp = NULL;
		return NULL;
	}
	if (!(f = fdopen(fd, "w"))) {
		close(fd);
		unlink(p->tmp);
		free(p->tmp);
		p->tmp = NULL;
	}
	return f;
}

static int pf_host_begin(struct export_writer *w, const struct export_host *h)
{
	struct pf_writer *p = pf_of(w);

	pf_host_drop(p);
	if (!p->zip && p->wrote)
		return export_seterr(w, -EINVAL, "a second host for one Perfetto file");
	if (!(p->host = strdup(h->name)))
		return export_seterr(w, -ENOMEM, "out of memory");
	p->clock = (struct pf_clock){
		.offset_ns = h->clock_offset_ns, .measured = h->clock_measured,
		.uncertainty_ns = h->clock_uncertainty_ns, .drift_ppb = h->clock_drift_ppb,
		.disagree_ns = h->clock_disagree_ns };
	snprintf(p->clock.source, sizeof(p->clock.source), "%s",
		 h->clock_source ? h->clock_source : "");
	if (h->ntgids) {
		if (!(p->tgids = malloc(h->ntgids * sizeof(*p->tgids))))
			return export_seterr(w, -ENOMEM, "out of memory");
		memcpy(p->tgids, h->tgids, h->ntgids * sizeof(*p->tgids));
		p->ntgids = h->ntgids;
	}
	p->json = p->zip ? pf_spool(p->dir) : pf_single_file(p);
	if (!p->json)
		return pf_io_error(p, errno ? errno : ENOMEM, "cannot create");
	if (!(p->sys = pf_spool(p->dir)))
		return pf_io_error(p, errno, "cannot create its spool");
	fputs("{\"traceEvents\":[", p->json);
	pf_sys_head(p);
	return 0;
}

static int pf_row(struct export_writer *w, const struct export_row *r)
{
	struct pf_writer *p = pf_of(w);
	struct pf_type *t = pf_type_of(p, r);

	if (!t)
		return export_seterr(w, -ENOMEM, "out of memory");
	switch (t->kind) {
	case PF_CALL:
		return pf_exit_row(p, t, r);
	case PF_INSTANT:
		pf_instant_row(p, r);
		return 0;
	case PF_TEXT:
		return pf_kernel_row(p, t, r);
	case PF_ENTRY:
		break;
	}
	return 0;
}

static int pf_loss(struct export_writer *w, const struct export_loss *l)
{
	struct pf_writer *p = pf_of(w);
	char name[64];
	int n;
	FILE *f;

	if (l->count)
		n = snprintf(name, sizeof(name), "CPU:%" PRIu32 " [%" PRIu64 " EVENTS DROPPED]",
			     l->cpu, l->count);
	else
		n = snprintf(name, sizeof(name), "CPU:%" PRIu32 " [EVENTS DROPPED]", l->cpu);
	f = pf_event(p);
	fprintf(f, "\"ph\":\"i\",\"s\":\"g\",\"cat\":\"loss\",\"name\":\"%s\",\"ts\":", name);
	pf_us(f, pf_time(p, p->time_raw ? l->trace_ts : l->ts));
	fprintf(f, ",\"pid\":0,\"tid\":0,\"args\":{\"cpu\":%" PRIu32 ",\"count\":%" PRIu64 "}}",
		l->cpu, l->count);
	fputs("# ", p->sys);	/* the same place in the text: a line the importer skips */
	pf_sys_line(p, name, (size_t)n);
	p->st.losses++;
	return 0;
}

/* The spooled systrace text after the array, then the metadata. */
static int pf_finish_json(struct pf_writer *p)
{
	char buf[1 << 16];
	size_t n;

	pf_flush_pending(p, pf_scale(p, p->npending ? &p->pending[p->npending - 1] : NULL));
	fputs("\n],\n\"systemTraceEvents\":\"", p->json);
	if (fflush(p->sys) || fseek(p->sys, 0, SEEK_SET))
		return pf_io_error(p, errno, "its spool");
	while ((n = fread(buf, 1, sizeof(buf), p->sys)) > 0)
		fwrite(buf, 1, n, p->json);
	if (ferror(p->sys))
		return pf_io_error(p, errno ? errno : EIO, "its spool");
	fputs("\",\n\"metadata\":{\"tracecollect_host\":", p->json);
	pf_str(p, p->json, p->host ? p->host : "");
	fprintf(p->json, ",\"tracecollect_base_ns\":%" PRId64 "}}\n", p->base_ns);
	if (fflush(p->json) || ferror(p->json))
		return pf_io_error(p, errno ? errno : EIO, "cannot write");
	return 0;
}

/* A host's name as an archive member: safe bytes, unique, ".json". NULL: no memory. */
static char *pf_member_name(struct pf_writer *p, const char *host)
{
	char base[PF_NAME_MAX + 1], *name = malloc(PF_NAME_MAX + 32);
	size_t n = 0;
	bool taken = true;

	if (!name)
		return NULL;
	for (; host[n] && n < PF_NAME_MAX; n++)
		base[n] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
				 host[n]) ? host[n] : '_';
	base[n] = 0;
	if (!n || base[0] == '.')
		base[0] = '_', base[n ? n : 1] = 0;
	for (unsigned k = 1; taken; k++) {
		if (k == 1)
			snprintf(name, PF_NAME_MAX + 32, "%s.json", base);
		else
			snprintf(name, PF_NAME_MAX + 32, "%s-%u.json", base, k);
		taken = !strcmp(name, PF_MANIFEST);
		for (size_t i = 0; i < p->nmembers && !taken; i++)
			taken = !strcmp(p->members[i].path, name);
	}
	return name;
}

/* The host's file into the archive (libzip reads it at close()). */
static int pf_add_member(struct pf_writer *p)
{
	struct pf_member *m;
	zip_source_t *src;
	char esc[LOG_ESC_LEN];

	m = util_grow(p->members, &p->members_cap, p->nmembers, sizeof(*m), 16);
	if (!m)
		return export_seterr(&p->w, -ENOMEM, "out of memory");
	p->members = m;
	m = &p->members[p->nmembers];
	memset(m, 0, sizeof(*m));
	if (!(m->path = pf_member_name(p, p->host)) ||
	    !(m->machine = strdup(log_escape(p->host, esc, sizeof(esc))))) {
		free(m->path);
		return export_seterr(&p->w, -ENOMEM, "out of memory");
	}
	m->base_ns = p->base_ns;
	m->has_base = p->has_base;
	m->clock = p->clock;
	p->nmembers++;
	rewind(p->json);	/* libzip reads on from where the file stands */
	if (!(src = zip_source_filep(p->zip, p->json, 0, -1)))
		return export_seterr(&p->w, -EIO, "zip: %s", zip_strerror(p->zip));
	p->json = NULL;		/* the source's now */
	if (zip_file_add(p->zip, m->path, src, ZIP_FL_ENC_UTF_8) < 0) {
		zip_source_free(src);
		return export_seterr(&p->w, -EIO, "zip: %s", zip_strerror(p->zip));
	}
	return 0;
}

static int pf_host_end(struct export_writer *w)
{
	struct pf_writer *p = pf_of(w);
	int ret = p->json ? pf_finish_json(p) : 0;

	if (ret == 0 && p->zip)
		ret = pf_add_member(p);
	if (ret == 0 && !p->zip) {
		ret = fclose(p->json) ? pf_io_error(p, errno, "cannot write") : 0;
		p->json = NULL;
		p->wrote = ret == 0;
	}
	pf_host_drop(p);
	return ret;
}

/* ---- open and close ---- */

static void pf_free(struct pf_writer *p)
{
	for (size_t i = 0; i < p->nmembers; i++) {
		free(p->members[i].path);
		free(p->members[i].machine);
	}
	free(p->members);
	free(p->pending);
	free(p->vals);
	free(p->types);
	free(p->tmp);
	free(p->path);
	free(p->dir);
	free(p);
}

/* export.h's open(): nothing is made on failure (said in @o->err). */
static int pf_open(const struct export_opts *o, struct export_writer **out)
{
	struct pf_writer *p = calloc(1, sizeof(*p));
	char esc[LOG_ESC_LEN];
	zip_error_t ze;
	int err, ret = 0;

	if (!p)
		return -ENOMEM;
	p->w.ops = &export_perfetto_ops;
	p->w.err = o->err;
	p->hc = o->hc;
	p->time_raw = o->time_raw;
	if (!(p->path = strdup(o->path)) || !(p->dir = pf_dirname(o->path)))
		ret = export_seterr(&p->w, -ENOMEM, "out of memory");
	else if (o->nhosts > 1 && !(p->zip = zip_open(o->path, ZIP_CREATE | ZIP_TRUNCATE, &err))) {
		zip_error_init_with_code(&ze, err);
		ret = export_seterr(&p->w, -EIO, "%s: %s", log_escape(o->path, esc, sizeof(esc)),
				    zip_error_strerror(&ze));
		zip_error_fini(&ze);
	}
	if (ret < 0) {
		pf_free(p);
		return ret;
	}
	*out = &p->w;
	return 0;
}

/*
 * A member's "tracecollect_clock": how the collector placed its host's
 * events on the wall clock (issue 36), the figures traceq --hosts shows.
 * Perfetto's reader takes only a file's path, clocks and machine
 * (src/trace_processor/plugins/perfetto_manifest/perfetto_manifest_reader.cc,
 * ParseFileEntry()) and passes over the rest.
 */
static void pf_manifest_clock(struct pf_writer *p, FILE *f, const struct pf_clock *c)
{
	fputs(",\"tracecollect_clock\":{\"source\":", f);
	pf_str(p, f, c->source);
	fprintf(f, ",\"offset_ns\":%" PRId64, c->offset_ns);
	if (c->measured)
		fprintf(f, ",\"uncertainty_ns\":%" PRId64 ",\"drift_ppb\":%" PRId64
			",\"disagree_ns\":%" PRId64, c->uncertainty_ns, c->drift_ppb,
			c->disagree_ns);
	fputc('}', f);
}

/* The manifest: each member a machine, pinned to the member of the earliest base. */
static void pf_manifest(struct pf_writer *p, FILE *f)
{
	const struct pf_member *ref = NULL;

	for (size_t i = 0; i < p->nmembers; i++)
		if (p->members[i].has_base && (!ref || p->members[i].base_ns < ref->base_ns))
			ref = &p->members[i];
	fputs("{\"perfetto_manifest\":{\"version\":1,\"files\":[", f);
	for (size_t i = 0; i < p->nmembers; i++) {
		const struct pf_member *m = &p->members[i];

		fputs(i ? ",\n{\"path\":" : "\n{\"path\":", f);
		pf_str(p, f, m->path);
		fputs(",\"machine\":{\"name\":", f);
		pf_str(p, f, m->machine);
		fputc('}', f);
		if (ref && m != ref && m->has_base) {
			fputs(",\"clocks\":{\"sync_to\":{\"file\":", f);
			pf_str(p, f, ref->path);
			fprintf(f, "},\"offset_ns\":%" PRId64 "}", m->base_ns - ref->base_ns);
		}
		pf_manifest_clock(p, f, &m->clock);
		fputc('}', f);
	}
	fputs("\n]}}\n", f);
}

/* The manifest into the archive, then the archive written. Return: 0 or -EIO (said). */
static int pf_zip_close(struct pf_writer *p)
{
	FILE *f = pf_spool(p->dir);
	zip_source_t *src;

	if (!f)
		return pf_io_error(p, errno, "cannot create the manifest");
	pf_manifest(p, f);
	if (fflush(f) || ferror(f)) {
		fclose(f);
		return pf_io_error(p, errno ? errno : EIO, "cannot write the manifest");
	}
	rewind(f);
	if (!(src = zip_source_filep(p->zip, f, 0, -1))) {
		fclose(f);
		return export_seterr(&p->w, -EIO, "zip: %s", zip_strerror(p->zip));
	}
	if (zip_file_add(p->zip, PF_MANIFEST, src, ZIP_FL_ENC_UTF_8) < 0) {
		zip_source_free(src);
		return export_seterr(&p->w, -EIO, "zip: %s", zip_strerror(p->zip));
	}
	if (zip_close(p->zip) < 0)
		return export_seterr(&p->w, -EIO, "zip: %s", zip_strerror(p->zip));
	p->zip = NULL;
	chmod(p->path, 0600);	/* as our other files: the user's alone */
	return 0;
}

/* A single host's file in place; an export without rows gets an empty trace. */
static int pf_single_close(struct pf_writer *p)
{
	FILE *f;

	if (!p->wrote) {
		if (!(f = pf_single_file(p)))
			return pf_io_error(p, errno ? errno : ENOMEM, "cannot create");
		fputs("{\"traceEvents\":[],\"systemTraceEvents\":\"\"}\n", f);
		if (fclose(f))
			return pf_io_error(p, errno, "cannot write");
	}
	if (rename(p->tmp, p->path) < 0)
		return pf_io_error(p, errno, "cannot rename");
	free(p->tmp);
	p->tmp = NULL;
	return 0;
}

static int pf_close(struct export_writer *w, bool ok, struct export_stats *st)
{
	struct pf_writer *p = pf_of(w);
	struct stat sb;
	int ret = 0;

	if (ok && p->json)
		ret = pf_host_end(w);
	pf_host_drop(p);
	if (ok && ret == 0 && p->path)
		ret = p->zip ? pf_zip_close(p) : pf_single_close(p);
	if (p->zip)
		zip_discard(p->zip);
	if (p->tmp)
		unlink(p->tmp);
	if (ret == 0 && ok && p->path && stat(p->path, &sb) == 0) {
		p->st.bytes = (uint64_t)sb.st_size;
		p->st.files = 1;
	}
	if (st)
		*st = p->st;
	pf_free(p);
	return ret;
}

const struct export_writer_ops export_perfetto_ops = {
	.format = "perfetto",
	.open = pf_open,
	.host_begin = pf_host_begin,
	.row = pf_row,
	.loss = pf_loss,
	.host_end = pf_host_end,
	.close = pf_close,
};
