/*
 * sink.c - what the ingest worker does with one connection's messages and
 * pages (see sink.h): decode each page with the connection's decoder, run
 * each event through its event's server-side filter (filter_table.h), insert the
 * events that pass, and count the ones that do not, per host and event.
 *
 * Filters are resolved per event type when its format arrives and again
 * whenever the collector's filter table changes (SIGHUP), before the next
 * page. Everything per event avoids allocation and name lookups: the type
 * found by the decoder carries its store statement and bound filter.
 */
#include "config.h"

#define LOG_PREFIX "ingest"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/ring.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/printk.h"
#include "proto/symbols.h"
#include "server/ingest/journal.h"
#include "server/ingest/sink.h"

/*
 * Why something received was not stored: short fixed sentences, so that
 * each names one counter in drops (with page.h's and decode.h's reasons
 * for malformed pages) and one log line per connection.
 */
const char sink_why_crash[] = "the collector died decoding it";
const char sink_why_failed[] = "its connection had failed";
static const char sink_why_cpu[] = "CPU or stream the agent did not announce";
static const char sink_why_unknown[] = "event id with no FORMAT";
static const char sink_why_field[] = "event field outside its record";
static const char sink_why_clock[] = "wall-clock time past the 64-bit range";
static const char sink_why_meta_held[] = "metadata of this boot already stored (WELCOME said so)";
static const char sink_why_ksyms_max[] = "more kernel symbol lines than one connection may store";
static const char sink_why_cap[] = "schema-cap";
static const char sink_why_format[] = "FORMAT refused (its events count as no FORMAT)";

bool sink_logged_first(struct sink *s, const char *why)
{
	for (unsigned i = 0; i < s->nlogged; i++)
		if (s->logged[i] == why || !strcmp(s->logged[i], why))
			return false;
	if (s->nlogged == SINK_MAX_LOGGED)
		return false;	/* (more reasons than there are) */
	s->logged[s->nlogged++] = why;
	return true;
}

const char *sink_clean(char *buf, size_t size, const char *text)
{
	return log_escape(text, buf, size);
}

/* The agent's host name, fit for a log line. */
static const char *sink_host(const struct sink *s, char *buf, size_t size)
{
	return s->host ? sink_clean(buf, size, s->host) : "?";
}

/* One event type as this connection's agent described it. */
/*
 * Names are learned, like trace-cmd's sched_switch plugin learns them, from
 * the events' own fields (sched_switch's prev/next, sched_wakeup's comm and
 * pid, sched_process_fork's parent and child): the kernel's saved_cmdlines
 * misses tasks whose name it could not save (its lock is only tried) or
 * that it turned over before the agent read it. A learned name never
 * replaces one the agent sent; the agent's later ones replace it.
 */
#define SINK_COMM_PAIRS	2

/* Events that tell a task's new name (sink_type_track()). */
enum sink_track {
	TRACK_NONE,
	TRACK_NEW,			/* task_newtask, sched_process_fork: a new task */
	TRACK_RENAME,			/* task_rename: exec, prctl(PR_SET_NAME), /proc */
};

struct sink_type {
	struct sink_type *next;
	const struct decode_type *t;
	struct store_type *st;
	struct filter_field *ffields;	/* the filter's view of t->fields */
	struct store_field *sfields;	/* the store's (store_type()) */
	struct filter *f;		/* NULL: keep every event */
	uint64_t dropped;		/* by the filter, not yet in the store */
	uint64_t capped;		/* over a schema cap (no store type), not yet counted */
	bool kernel;			/* an event of the agent's instance */
	char *pushed;			/* filter set in the agent's instance; NULL: none */
	/* fields "comm"/"X_comm" (char[16]) and their "pid"/"X_pid": names to learn */
	unsigned ncomm;
	unsigned comm_field[SINK_COMM_PAIRS], pid_field[SINK_COMM_PAIRS];
	/* a task's new name (not in imports): its pid (-1: common_pid), old, new */
	enum sink_track track;
	int track_pid;
	unsigned track_old, track_new;
};

/* ---- pid -> comm ---- */

/* The pairs of @cl (the agent's; learned at trace-clock @learned_ts when not 0). */
static int comms_put_at(struct sink *s, const struct proto_cmdlines *cl, uint64_t learned_ts)
{
	struct pidname *slot;

	for (uint32_t i = 0; i < cl->count; i++) {
		if (cl->items[i].pid == 0)
			continue;
		slot = pidnames_slot(&s->names, cl->items[i].pid);
		if (!slot)
			return -ENOMEM;
		memcpy(slot->comm, cl->items[i].comm, sizeof(slot->comm));
		slot->learned_ts = learned_ts;
	}
	return 0;
}

static int comms_put(struct sink *s, const struct proto_cmdlines *cl)
{
	return comms_put_at(s, cl, 0);
}

/*
 * Whether a name learned at @ts may be kept for @pid: the pid has none, or
 * one learned from a later event (an import: the earliest wins, as in
 * trace-cmd report, whose sched plugin registers a pid's first name in
 * time order and never replaces it) or from an earlier one (a live host:
 * the latest wins, the name after an exec); never over the agent's.
 */
static bool comms_learnable(const struct sink *s, int32_t pid, uint64_t ts)
{
	const struct pidname *slot = pidnames_find(&s->names, pid);

	if (!slot || !slot->comm[0])
		return true;
	return slot->learned_ts && (s->import ? ts < slot->learned_ts : slot->learned_ts < ts);
}

static const char *comms_get(const struct sink *s, int pid)
{
	const struct pidname *slot = pidnames_find(&s->names, pid);

	if (pid == 0)
		return "<idle>";
	return slot ? slot->comm : "";
}

/*
 * The filters' COMM of an event of @pid on @cpu at trace ns @ts, as the
 * store's reads give it (sqlite_read.c, sq_comm_expr()) but from what this
 * connection decoded so far: the name the task took last at or before @ts,
 * or the one it had before; else the saved cmdlines' (an import's only);
 * "<...>" for none. pid 0: trace-cmd's "<idle>" in an import, the kernel's
 * swapper/CPU for an agent. @buf (16 bytes) may hold the answer.
 */
static const char *comms_at(const struct sink *s, int pid, uint32_t cpu, uint64_t ts, char *buf)
{
	const struct pidname *slot;

	if (pid == 0 && !s->import) {
		snprintf(buf, 16, "swapper/%u", cpu % 100000u);
		return buf;
	}
	if (pid == 0)
		return "<idle>";
	slot = pidnames_find(&s->names, pid);
	if (!slot)
		return "<...>";
	if (slot->since && ts >= slot->since)
		return slot->now;
	if (slot->since && slot->before[0])
		return slot->before;
	return slot->comm[0] ? slot->comm : "<...>";
}

/* ---- filters ---- */

static enum filter_kind sink_filter_kind(enum store_kind k)
{
	return k == STORE_SIGNED ? FILTER_SIGNED :
	       k == STORE_UNSIGNED ? FILTER_UNSIGNED : FILTER_STRING;
}

static int sink_type_schema(struct sink_type *ty)
{
	const struct decode_type *t = ty->t;
	size_t n = t->nfields ? t->nfields : 1;

	ty->ffields = calloc(n, sizeof(*ty->ffields));
	ty->sfields = calloc(n, sizeof(*ty->sfields));
	if (!ty->ffields || !ty->sfields)
		return -ENOMEM;
	for (unsigned i = 0; i < t->nfields; i++) {
		const struct decode_field *f = &t->fields[i];

		/* a blob is not filterable: an empty name no filter can name */
		ty->ffields[i].name = f->kind == STORE_BLOB ? "" : f->name;
		ty->ffields[i].kind = sink_filter_kind(f->kind);
		ty->ffields[i].size = f->size;
		ty->sfields[i] = (struct store_field){ f->name, f->kind, f->size, f->type };
	}
	return 0;
}

static void sink_report(void *ctx, const char *system, const char *name, const char *rule,
			const char *why)
{
	const struct sink *s = ctx;
	char h[LOG_ESC_LEN], sys[LOG_ESC_LEN], ev[LOG_ESC_LEN];

	log_warn("host %s: filter '%s' not applied to %s:%s, which keeps its previous filter:\n%s",
		 sink_host(s, h, sizeof(h)), rule, sink_clean(sys, sizeof(sys), system),
		 sink_clean(ev, sizeof(ev), name), why);
}

/* Push-down: tell the agent when the filter its kernel should apply changed. */
static int sink_type_push(struct sink *s, struct sink_type *ty)
{
	const char *why = NULL, *want = ty->f ? pushdown_text(ty->f, ty->t, &why) : NULL;
	char *copy = NULL;

	if (!s->pushdown || !ty->kernel)
		return 0;
	if (why) {
		char h[LOG_ESC_LEN], sys[LOG_ESC_LEN], ev[LOG_ESC_LEN];

		log_info("host %s: %s:%s: filter '%s' is not pushed down: %s",
			 sink_host(s, h, sizeof(h)), sink_clean(sys, sizeof(sys), ty->t->system),
			 sink_clean(ev, sizeof(ev), ty->t->name), filter_text(ty->f), why);
	}
	if (want == ty->pushed || (want && ty->pushed && !strcmp(want, ty->pushed)))
		return 0;
	if (want && !(copy = strdup(want)))
		return -ENOMEM;
	if (pushdown_queue(&s->pushq, ty->t->system, ty->t->name, want) < 0) {
		free(copy);
		return -ENOMEM;
	}
	free(ty->pushed);
	ty->pushed = copy;
	return 0;
}

static int sink_type_resolve(struct sink *s, const struct sink_env *env, struct sink_type *ty)
{
	struct filter_schema schema = { ty->ffields, ty->t->nfields };
	struct filter *f = NULL;
	int ret;

	ret = filter_table_resolve(env->filters, s->host, ty->t->system, ty->t->name,
				   &schema, &f, sink_report, s);
	if (ret < 0)
		return ret;
	filter_free(ty->f);
	ty->f = f;
	if (f) {
		char h[LOG_ESC_LEN], sys[LOG_ESC_LEN], ev[LOG_ESC_LEN];

		log_info("host %s: %s:%s filtered by '%s'", sink_host(s, h, sizeof(h)),
			 sink_clean(sys, sizeof(sys), ty->t->system),
			 sink_clean(ev, sizeof(ev), ty->t->name), filter_text(f));
	}
	return sink_type_push(s, ty);
}

static int sink_resolve_all(struct sink *s, const struct sink_env *env)
{
	int ret = 0;

	for (struct sink_type *ty = s->types; ty && ret == 0; ty = ty->next)
		ret = sink_type_resolve(s, env, ty);
	if (ret == 0)
		s->filters_gen = env->filters_gen;
	return ret;
}

int sink_refilter(struct sink *s, const struct sink_env *env)
{
	if (!s->dec || s->failed || s->filters_gen == env->filters_gen)
		return 0;
	return sink_resolve_all(s, env);
}

struct sink_eval {
	const struct sink *s;
	const struct decode_event *ev;
	uint64_t trace_ns;		/* ev's time in the host's trace clock */
	char comm[16];			/* COMM, when made up (swapper/N) */
};

static int sink_get(void *ctx, int idx, struct filter_value *out)
{
	struct sink_eval *e = ctx;
	struct store_value v;
	int ret;

	if (idx == FILTER_FIELD_CPU) {
		*out = (struct filter_value){ .kind = FILTER_UNSIGNED, .u = e->ev->cpu };
		return 0;
	}
	if (idx == FILTER_FIELD_COMM) {
		out->kind = FILTER_STRING;
		out->str.s = comms_at(e->s, e->ev->pid, e->ev->cpu, e->trace_ns, e->comm);
		out->str.len = strnlen(out->str.s, 16);
		return 0;
	}
	ret = decode_field_value(e->ev, (unsigned)idx, &v);
	if (ret < 0)
		return ret;
	out->kind = sink_filter_kind(v.kind);
	if (v.kind == STORE_SIGNED)
		out->i = v.i;
	else if (v.kind == STORE_UNSIGNED)
		out->u = v.u;
	else {
		out->str.s = v.kind == STORE_STRING ? v.str.s : v.blob.p;
		out->str.len = v.kind == STORE_STRING ? v.str.len : v.blob.len;
	}
	return 0;
}

/* ---- traced programs' rings (MSG_GROUP) ---- */

/*
 * A program's ring: its own decoder (its event ids are its own), its
 * streams' counters, and how its timestamps become trace-clock ns.
 */
struct sink_group {
	uint32_t group;
	uint32_t first, n;		/* streams [first, first + n) */
	bool tsc;
	struct ring_clock_conv conv;
	struct decoder *dec;
	struct sink_cpu *streams;
	uint64_t program;		/* its programs row (symbols) */
};

#define SINK_MAX_GROUPS	1024

static struct sink_group *group_by_id(struct sink *s, uint32_t id)
{
	for (size_t i = 0; i < s->ngroups; i++)
		if (s->groups[i].group == id)
			return &s->groups[i];
	return NULL;
}

static struct sink_group *group_by_stream(struct sink *s, uint32_t stream)
{
	for (size_t i = 0; i < s->ngroups; i++)
		if (stream - s->groups[i].first < s->groups[i].n)
			return &s->groups[i];
	return NULL;
}

static int sink_header_page(struct sink *s, const struct sink_env *env,
			    const struct proto_text *t)
{
	char *copy = malloc(t->len + 1);
	struct store_boot b = {
		.boot_id = s->boot_id, .since = s->hello_realtime,
		.header_page = t->text, .header_page_len = t->len,
		.header_event = t->event, .header_event_len = t->event ? t->event_len : 0,
	};
	int ret;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, t->text, t->len + 1);
	ret = decoder_header_page(s->dec, t->text, t->len);
	if (ret < 0) {
		free(copy);
		return ret;
	}
	free(s->header_page);
	s->header_page = copy;
	s->header_len = t->len;
	/* kept for exports (trace.dat's header); it shaped decoding already */
	return store_boot(env->store, s->host_id, &b);
}

/* Whether @g is well formed and overlaps no group already announced. */
static bool group_valid(struct sink *s, const struct proto_group *g)
{
	if (g->group == 0 || group_by_id(s, g->group) || s->ngroups >= SINK_MAX_GROUPS ||
	    g->first_stream < PROTO_USER_STREAM_BASE || g->nstreams == 0 ||
	    g->first_stream + (uint64_t)g->nstreams > 65536 || g->shift > 63 ||
	    (strcmp(g->clock, "tsc") && strcmp(g->clock, "mono")) || !s->header_page)
		return false;
	for (size_t i = 0; i < s->ngroups; i++)
		if (g->first_stream < s->groups[i].first + s->groups[i].n &&
		    s->groups[i].first < g->first_stream + g->nstreams)
			return false;
	return true;
}

/* The programs row of @g (or of the kernel, @g NULL) for its symbols. */
static int sink_program(struct sink *s, const struct sink_env *env,
			const struct proto_group *g, uint64_t *id)
{
	struct store_program p = {
		.boot_id = s->boot_id, .session = s->session, .since_ns = s->hello_realtime,
		.group = g ? g->group : 0, .pid = g ? g->pid : 0,
		.comm = g ? g->comm : "kernel",
		.first_stream = g ? g->first_stream : 0,
		.nstreams = g ? g->nstreams : PROTO_USER_STREAM_BASE,
	};

	return store_program(env->store, s->host_id, &p, id);
}

static int sink_group_add(struct sink *s, const struct sink_env *env,
			  const struct proto_group *g)
{
	struct proto_hello layout = s->layout;
	struct sink_group *n, ng = { .group = g->group, .first = g->first_stream,
				     .n = g->nstreams, .tsc = !strcmp(g->clock, "tsc"),
				     .conv = { g->tsc0, g->mono0, g->mult, g->shift } };
	int ret;

	if (!group_valid(s, g))
		return TC_ERR_MSG_MALFORMED;
	layout.page_size = g->page_size;
	ret = sink_program(s, env, g, &ng.program);
	if (ret == 0)
		ret = decoder_new(&layout, &ng.dec);
	if (ret == 0)
		ret = decoder_header_page(ng.dec, s->header_page, s->header_len);
	ng.streams = calloc(g->nstreams, sizeof(*ng.streams));
	n = realloc(s->groups, (s->ngroups + 1) * sizeof(*n));
	if (n)
		s->groups = n;
	if (ret == 0 && (!ng.streams || !n))
		ret = -ENOMEM;
	if (ret < 0) {
		decoder_free(ng.dec);
		free(ng.streams);
		return ret;
	}
	s->groups[s->ngroups++] = ng;
	{
		char h[LOG_ESC_LEN], comm[LOG_ESC_LEN], clock[LOG_ESC_LEN];

		log_info("host %s: program %s (pid %d) with %u buffers, %s clock",
			 sink_host(s, h, sizeof(h)), sink_clean(comm, sizeof(comm), g->comm),
			 g->pid, g->nstreams, sink_clean(clock, sizeof(clock), g->clock));
	}
	return 0;
}

struct sym_ctx {
	struct store_writer *store;
	uint64_t program;
};

static int sym_store(void *arg, const struct proto_sym *sym)
{
	struct sym_ctx *c = arg;

	return store_symbol(c->store, c->program, sym->addr, sym->size, sym->name, sym->module);
}

/*
 * Kernel symbol lines one connection may store: /proc/kallsyms has a few
 * hundred thousand (with modules); more is an agent filling the database.
 */
#define SINK_KSYMS_MAX	(1u << 21)

static int ksyms_count(void *arg, const struct proto_sym *sym)
{
	(*(uint64_t *)arg)++;
	return 0;
}

/*
 * MSG_SYMBOLS: the lines go to the group's program (group 0: the kernel).
 * Kernel symbols of a boot whose symbols were stored before this
 * connection (WELCOME said so), and those past SINK_KSYMS_MAX lines on
 * one connection, are dropped and counted (traceq --drops).
 */
static int sink_symbols(struct sink *s, const struct sink_env *env,
			const struct proto_symbols *m)
{
	struct sym_ctx c = { .store = env->store };
	struct sink_group *g = m->group ? group_by_id(s, m->group) : NULL;
	uint64_t lines = 0;
	size_t line = 0;
	int ret = 0;

	if (m->group && !g)
		return TC_ERR_MSG_MALFORMED;
	if (!g && s->kallsyms_held)
		return sink_msg_dropped(s, env, NULL, NULL, sink_why_meta_held);
	if (!g && proto_sym_parse(m->text, m->len, ksyms_count, &lines, &line) == 0 &&
	    (s->ksyms_lines += lines) > SINK_KSYMS_MAX)
		return sink_msg_dropped(s, env, NULL, NULL, sink_why_ksyms_max);
	if (!g && !s->kernel_program)
		ret = sink_program(s, env, NULL, &s->kernel_program);
	c.program = g ? g->program : s->kernel_program;
	if (ret == 0)
		ret = proto_sym_parse(m->text, m->len, sym_store, &c, &line);
	if (ret == TC_ERR_MSG_MALFORMED) {
		char h[LOG_ESC_LEN];

		log_warn("host %s: bad symbol line %zu of group %u", sink_host(s, h, sizeof(h)),
			 line, m->group);
	}
	return ret;
}

/*
 * printk_formats lines one connection may store: a kernel has a few
 * thousand (128 on our 6.18 without modules' trace_printk); more is an
 * agent filling the database.
 */
#define SINK_PRINTK_MAX	(1u << 18)

struct printk_ctx {
	struct sink *s;
	struct store_writer *store;
	uint64_t host_id;
	const char *boot_id;
	int64_t since;
	size_t lines;
};

static int printk_store(void *arg, uint64_t addr, const char *fmt, size_t len)
{
	struct printk_ctx *c = arg;

	if (c->s->printk_lines >= SINK_PRINTK_MAX)
		return 0;	/* said once, below */
	c->s->printk_lines++;
	c->lines++;
	return store_printk_put(c->store, c->host_id, c->boot_id, c->since, addr, fmt, len);
}

/*
 * MSG_PRINTK: lines of the kernel's printk_formats, kept per host and
 * boot. Accepted from any agent (a journal replay does not know what
 * WELCOME asked); a line already stored is left as it is.
 */
static int sink_printk(struct sink *s, const struct sink_env *env, const struct proto_printk *m)
{
	struct printk_ctx c = { s, env->store, s->host_id, s->boot_id, s->hello_realtime, 0 };
	bool full = s->printk_lines >= SINK_PRINTK_MAX;
	size_t line = 0;
	char h[LOG_ESC_LEN];
	int ret;

	if (s->printk_held)	/* WELCOME said this boot's are stored */
		return sink_msg_dropped(s, env, NULL, NULL, sink_why_meta_held);
	ret = proto_printk_parse(m->text, m->len, printk_store, &c, &line);

	if (ret == TC_ERR_MSG_MALFORMED)
		log_warn("host %s: bad printk_formats line %zu", sink_host(s, h, sizeof(h)), line);
	else if (ret == 0 && !full && s->printk_lines >= SINK_PRINTK_MAX)
		log_warn("host %s: more than %u printk formats on one connection: the rest "
			 "is not stored", sink_host(s, h, sizeof(h)), SINK_PRINTK_MAX);
	else if (ret == 0 && !full)
		log_info("host %s: %zu printk formats of this boot", sink_host(s, h, sizeof(h)),
			 c.lines);
	return ret;
}

static int flush_group_counters(struct sink *s, struct store_writer *store)
{
	int ret = 0;

	for (size_t i = 0; i < s->ngroups; i++)
		for (uint32_t b = 0; b < s->groups[i].n && ret == 0; b++) {
			struct sink_cpu *c = &s->groups[i].streams[b];

			if (c->pages)
				ret = store_cpu_received(store, s->host_id, s->groups[i].first + b,
							 c->pages, c->events, c->bytes);
			if (ret == 0 && (c->bad_pages || c->bad_events))
				ret = store_cpu_not_stored(store, s->host_id,
							   s->groups[i].first + b,
							   c->bad_pages, c->bad_events);
			if (ret == 0)
				c->pages = c->events = c->bytes = c->bad_pages = c->bad_events = 0;
		}
	return ret;
}

/* ---- the clock ---- */

/*
 * The offset (realtime - trace clock) of the sample @c into *@off, checked:
 * a sample whose difference does not fit 64 bits (a realtime near
 * INT64_MAX, a trace clock past INT64_MAX) is refused, with a log line
 * that says so. Return: 0; TC_ERR_MSG_MALFORMED.
 */
static int sink_offset_of(const struct sink *s, const char *what, const struct proto_clock *c,
			  int64_t *off)
{
	char h[LOG_ESC_LEN];

	if (c->trace_ns <= INT64_MAX &&
	    !__builtin_sub_overflow(c->realtime_ns, (int64_t)c->trace_ns, off))
		return 0;
	log_warn("host %s: %s refused: realtime %lld ns - trace clock %llu ns is past the"
		 " 64-bit range", sink_host(s, h, sizeof(h)), what,
		 (long long)c->realtime_ns, (unsigned long long)c->trace_ns);
	return TC_ERR_MSG_MALFORMED;
}

/*
 * The wall-clock ns of trace-clock @trace_ns: trace_ns + clock_offset,
 * checked. A sum past the 64-bit range (an offset near INT64_MAX) is
 * clamped to INT64_MAX or INT64_MIN, and said once per connection; the
 * event keeps its trace_ts.
 */
static int64_t sink_wall_ns(struct sink *s, uint64_t trace_ns)
{
	int64_t off = clockmap_offset(&s->clk.map, trace_ns, s->clock_offset), t;
	char h[LOG_ESC_LEN];
	uint64_t u;

	if (trace_ns <= INT64_MAX) {
		if (!__builtin_add_overflow((int64_t)trace_ns, off, &t))
			return t;
		t = INT64_MAX;		/* only a positive offset overflows it */
	} else if (off >= 0) {
		t = INT64_MAX;
	} else {
		u = trace_ns - ((uint64_t)-(off + 1) + 1);	/* -off without overflow */
		if (u <= INT64_MAX)
			return (int64_t)u;
		t = INT64_MAX;
	}
	if (sink_logged_first(s, sink_why_clock))
		log_warn("host %s: trace clock %llu ns + offset %lld ns is %s: stored as %lld"
			 " (said once per connection)", sink_host(s, h, sizeof(h)),
			 (unsigned long long)trace_ns, (long long)off, sink_why_clock, (long long)t);
	return t;
}

/*
 * What clockmap.h's source did (@flags, CLOCKSRC_*), in the log: once when
 * the host's events start being placed by the measurement, once when they
 * stop; a step (a correction too large to slew) too.
 */
static void sink_clock_log(struct sink *s, int flags)
{
	const struct clocksrc *c = &s->clk;
	char h[LOG_ESC_LEN];

	if (flags & CLOCKSRC_SWITCHED && c->measured)
		log_warn("host %s: its realtime disagrees with the collector's measurement of "
			 "its clock by %+.6f s (uncertainty %.6f s, clock-tolerance %.6f s): "
			 "placing its events by the measurement", sink_host(s, h, sizeof(h)),
			 (double)c->disagree / 1e9, (double)c->unc / 1e9,
			 (double)c->tol_ns / 1e9);
	else if (flags & CLOCKSRC_SWITCHED)
		log_info("host %s: its realtime agrees with the collector's measurement again "
			 "(%+.6f s, uncertainty %.6f s): placing its events by its own clock",
			 sink_host(s, h, sizeof(h)), (double)c->disagree / 1e9,
			 (double)c->unc / 1e9);
	if (flags & CLOCKSRC_STEPPED)
		log_warn("host %s: its clock's placement stepped (a correction over %.0f s "
			 "is not slewed)", sink_host(s, h, sizeof(h)),
			 (double)CLOCKMAP_STEP_NS / 1e9);
}

/* MSG_CLOCK: the host's own sample. */
static int sink_clock(struct sink *s, const struct sink_env *env, const struct proto_clock *c)
{
	int ret = sink_offset_of(s, "CLOCK", c, &s->clock_offset);

	if (ret < 0)
		return ret;
	sink_clock_log(s, clocksrc_host(&s->clk, c->trace_ns, s->clock_offset));
	return store_host_clock(env->store, s->host_id, s->clock_offset);
}

/*
 * MSG_CLOCK_MEASURE (journaled by conn.c, never from a peer): the
 * collector's measurement of the host's trace clock; kept in the store's
 * history (a backend without one says so once and the measurement still
 * places the events).
 */
static int sink_measure(struct sink *s, const struct sink_env *env,
			const struct proto_clock_measure *cm)
{
	struct proto_clock c = { .trace_ns = cm->trace_ns, .realtime_ns = cm->realtime_ns };
	struct store_clock_point p;
	int64_t off;
	int ret = sink_offset_of(s, "clock measurement", &c, &off);

	if (ret < 0)
		return ret;
	sink_clock_log(s, clocksrc_measure(&s->clk, cm->trace_ns, off, cm->uncertainty_ns));
	p = (struct store_clock_point){
		.boot_id = s->boot_id, .trace_ns = cm->trace_ns, .realtime_ns = cm->realtime_ns,
		.uncertainty_ns = cm->uncertainty_ns, .drift_ppb = clocksrc_drift_ppb(s->clk.meas),
		.have_disagree = s->clk.host[0].have, .disagree_ns = s->clk.disagree,
		.measured = s->clk.measured };
	return store_clock_point(env->store, s->host_id, &p);
}

/* ---- a page's events' time ---- */

struct page_ctx {
	struct sink *s;
	const struct sink_env *env;
	const struct sink_group *g;	/* NULL for kernel pages */
	uint32_t cpu;			/* the CPU or stream, for the log */
	uint64_t stored;
	uint64_t unknown;		/* events with no type here: not stored */
	uint64_t bad;			/* events with a field outside the record */
};

/* The event's time in the host's trace clock (ns). */
static uint64_t event_trace_ns(const struct page_ctx *p, uint64_t ts)
{
	if (p->g)
		return p->g->tsc ? ring_clock_to_ns(&p->g->conv, ts) : ts;
	return p->s->tsc ? ring_clock_to_ns(&p->s->tsc_conv, ts) : ts;
}

/* ---- flight-recorder snapshots ---- */

/* A trace-clock time of the host's kernel pages as its events are stored. */
static int64_t sink_kernel_wall_ns(struct sink *s, uint64_t ts)
{
	const struct page_ctx kernel = { .s = s };	/* no group: a kernel page */

	return sink_wall_ns(s, event_trace_ns(&kernel, ts));
}

/*
 * MSG_FREEZE (journaled by conn.c when it told this host to freeze, never
 * from a peer): the snapshot's record and this host's part in it.
 */
static int sink_freeze(struct sink *s, const struct sink_env *env,
		       const struct proto_freeze *f)
{
	const struct store_snapshot sn = { .id = f->id, .asked_ns = f->asked_ns,
					   .reason = f->reason, .who = f->who,
					   .host_id = s->host_id };

	return store_snapshot_asked(env->store, &sn);
}

/* MSG_SNAP_BEGIN and MSG_SNAP_END: the agent's account of its frozen buffer. */
static int sink_snap(struct sink *s, const struct sink_env *env, const struct proto_msg *m)
{
	const struct proto_snap_end *e = &m->snap_end;
	struct store_snapshot sn;
	char h[LOG_ESC_LEN];

	if (m->type == MSG_SNAP_BEGIN) {
		log_info("host %s: snapshot %llu: frozen, its buffer follows",
			 sink_host(s, h, sizeof(h)), (unsigned long long)m->snap_begin.id);
		return 0;
	}
	sn = (struct store_snapshot){ .id = e->id, .host_id = s->host_id, .done = true,
				      .pages = e->pages, .events = e->events, .lost = e->lost,
				      .window = e->events != 0 };
	if (sn.window) {
		sn.first_ts = sink_kernel_wall_ns(s, e->first_ns);
		sn.last_ts = sink_kernel_wall_ns(s, e->last_ns);
		sn.first_trace = e->first_ns;
		sn.last_trace = e->last_ns;
	}
	log_info("host %s: snapshot %llu: %llu pages, %llu events, %llu lost before it",
		 sink_host(s, h, sizeof(h)), (unsigned long long)e->id,
		 (unsigned long long)e->pages, (unsigned long long)e->events,
		 (unsigned long long)e->lost);
	if (e->off_ns)	/* its measured freeze: the wall clock as its events' */
		log_info("host %s: snapshot %llu: tracing off by %lld (trace_ns %llu)", h,
			 (unsigned long long)e->id, (long long)sink_kernel_wall_ns(s, e->off_ns),
			 (unsigned long long)e->off_ns);
	return store_snapshot_done(env->store, &sn);
}

/* ---- messages ---- */

static int sink_hello(struct sink *s, const struct sink_env *env, struct proto_hello *h,
		      struct sink_reply *reply)
{
	int ret;

	if (h->ncpus == 0 || h->ncpus > 65536)
		return TC_ERR_MSG_MALFORMED;
	s->tsc = !strcmp(h->trace_clock, "x86-tsc");
	if (s->tsc && (!h->tsc_mult || h->tsc_shift > 63))
		return TC_ERR_MSG_MALFORMED;	/* the TSC with no way to ns */
	s->tsc_conv = (struct ring_clock_conv){ h->tsc0, h->tsc_mono0, h->tsc_mult,
						h->tsc_shift };
	s->tick_ns = s->tsc ? (double)h->tsc_mult / (double)(UINT64_C(1) << h->tsc_shift) : 1.0;
	cpuslots_init(&s->cpus, sizeof(struct sink_cpu));
	cpuslots_init(&s->committed, sizeof(uint64_t));
	s->host = strdup(h->host);
	if (!s->host)
		return -ENOMEM;
	s->ncpus = h->ncpus;
	ret = sink_offset_of(s, "HELLO", &h->clock, &s->clock_offset);
	clocksrc_init(&s->clk, env->clock_tol_ns);
	if (ret == 0)
		clocksrc_host(&s->clk, h->clock.trace_ns, s->clock_offset);
	if (ret == 0)
		ret = decoder_new(h, &s->dec);
	if (ret == 0)
		ret = store_host(env->store, h, s->subject, &s->host_id);
	if (ret == 0 && h->session) {
		ret = dedup_get(env->sessions, env->store, s->host_id, h->boot_id,
				h->session, h->ncpus, &s->sess);
		s->sessions = env->sessions;
	}
	if (ret < 0)
		return ret;
	s->boot_id = strdup(h->boot_id);
	if (!s->boot_id)
		return -ENOMEM;
	s->session = h->session;
	/* queryd_import.c sets it; conn.c refuses it from agents */
	s->import = !strncmp(h->machine_id, "import:", 7);
	s->hello_realtime = h->clock.realtime_ns;
	s->layout.long_size = h->long_size;
	s->layout.big_endian = h->big_endian;
	ret = store_boot(env->store, s->host_id, &(struct store_boot){
		.boot_id = h->boot_id, .since = h->clock.realtime_ns, .kernel = h->kernel,
		.trace_clock = h->trace_clock, .long_size = h->long_size,
		.big_endian = h->big_endian, .page_size = h->page_size });
	if (ret < 0)
		return ret;
	s->filters_gen = env->filters_gen;
	s->pushdown = env->pushdown && h->pushdown;
	reply->kind = SINK_REPLY_WELCOME;
	reply->host_id = s->host_id;
	ret = store_kallsyms_held(env->store, s->host_id, h->boot_id, &reply->kallsyms) ?:
	      store_printk_held(env->store, s->host_id, h->boot_id, &reply->printk_held);
	/* the agent was told not to send them again: what it sends anyway is dropped */
	s->kallsyms_held = ret == 0 && reply->kallsyms && !s->import;
	s->printk_held = ret == 0 && reply->printk_held && !s->import;
	return ret;
}

/* The field named @prefix + @suffix in @t, or -1. */
static int field_named(const struct decode_type *t, const char *prefix, size_t plen,
		       const char *suffix)
{
	for (unsigned i = 0; i < t->nfields; i++)
		if (!strncmp(t->fields[i].name, prefix, plen) &&
		    !strcmp(t->fields[i].name + plen, suffix))
			return (int)i;
	return -1;
}

/* Which fields of a kernel event name a pid: "comm" + "pid", "X_comm" + "X_pid". */
static void sink_type_comm_pairs(struct sink_type *ty)
{
	const struct decode_type *t = ty->t;

	for (unsigned i = 0; ty->kernel && i < t->nfields && ty->ncomm < SINK_COMM_PAIRS; i++) {
		const char *n = t->fields[i].name;
		size_t len = strlen(n);
		int pid;

		if (t->fields[i].kind != STORE_STRING || t->fields[i].size != 16 || len < 4 ||
		    strcmp(n + len - 4, "comm") || (len > 4 && n[len - 5] != '_'))
			continue;
		pid = field_named(t, n, len - 4, "pid");
		if (pid < 0 || (t->fields[pid].kind != STORE_SIGNED &&
				t->fields[pid].kind != STORE_UNSIGNED))
			continue;
		ty->comm_field[ty->ncomm] = i;
		ty->pid_field[ty->ncomm++] = (unsigned)pid;
	}
}

static bool field_is(const struct decode_type *t, int i, bool number)
{
	enum store_kind k = i >= 0 ? t->fields[i].kind : STORE_BLOB;

	return number ? k == STORE_SIGNED || k == STORE_UNSIGNED : k == STORE_STRING;
}

/*
 * Whether @ty tells a task's new name, and in which fields: task_newtask
 * (pid, comm) and sched_process_fork (child_pid, child_comm) name a new
 * task; task_rename (pid, oldcomm, newcomm) a rename, by exec, prctl or
 * /proc/PID/comm (kernels whose task_rename has no pid field rename
 * current, common_pid). Only a live agent's: an import's COMM is its
 * saved cmdlines', as trace-cmd reads it.
 */
static void sink_type_track(const struct sink *s, struct sink_type *ty)
{
	const struct decode_type *t = ty->t;
	int pid, old = -1, name;

	if (!ty->kernel || s->import)
		return;
	if (!strcmp(t->system, "task") && !strcmp(t->name, "task_newtask")) {
		pid = field_named(t, "pid", 3, "");
		name = field_named(t, "comm", 4, "");
	} else if (!strcmp(t->system, "task") && !strcmp(t->name, "task_rename")) {
		pid = field_named(t, "pid", 3, "");
		old = field_named(t, "oldcomm", 7, "");
		name = field_named(t, "newcomm", 7, "");
		if (!field_is(t, old, false))
			return;
	} else if (!strcmp(t->system, "sched") && !strcmp(t->name, "sched_process_fork")) {
		pid = field_named(t, "child_pid", 9, "");
		name = field_named(t, "child_comm", 10, "");
	} else {
		return;
	}
	if (!field_is(t, name, false) || (pid >= 0 && !field_is(t, pid, true)) ||
	    (pid < 0 && old < 0))
		return;
	ty->track = old >= 0 ? TRACK_RENAME : TRACK_NEW;
	ty->track_pid = pid;
	ty->track_old = (unsigned)old;
	ty->track_new = (unsigned)name;
}

/* String field @i of @ev as a task name (15 bytes and a NUL); false: none. */
static bool event_comm(const struct decode_event *ev, unsigned i, char out[16])
{
	struct store_value v;
	size_t n;

	if (decode_field_value(ev, i, &v) < 0 || v.kind != STORE_STRING || !v.str.len)
		return false;
	n = strnlen(v.str.s, v.str.len < 15 ? v.str.len : 15);
	memset(out, 0, 16);
	memcpy(out, v.str.s, n);
	return n > 0;
}

/*
 * Task names over time: @ev (of a type sink_type_track() chose) says that
 * a task is named anew from just after @trace_ns. Kept in the pid's slot,
 * for the ingest filters', and (with an @env: not a walk) in the store, for
 * the queries' COMM.
 */
static int sink_track_event(struct sink *s, const struct sink_env *env,
			    const struct sink_type *ty, const struct decode_event *ev,
			    uint64_t trace_ns)
{
	char old[16] = "", now[16];
	struct store_comm_change c = { .pid = ev->pid };
	struct store_value v;
	struct pidname *slot;

	if (ty->track_pid >= 0) {
		if (decode_field_value(ev, (unsigned)ty->track_pid, &v) < 0)
			return 0;
		c.pid = v.kind == STORE_SIGNED ? (int32_t)v.i : (int32_t)v.u;
	}
	if (c.pid <= 0 || !event_comm(ev, ty->track_new, now) ||
	    (ty->track == TRACK_RENAME && !event_comm(ev, ty->track_old, old)))
		return 0;
	slot = pidnames_slot(&s->names, c.pid);
	if (!slot)
		return -ENOMEM;
	if (slot->since <= trace_ns + 1) {	/* pages of CPUs come in any order */
		slot->since = trace_ns + 1;
		memcpy(slot->now, now, sizeof(slot->now));
		memcpy(slot->before, old, sizeof(slot->before));
	}
	if (!env)
		return 0;
	/* as the events' rows: trace_ts in the trace clock's own units */
	c.trace_ts = (int64_t)ev->ts + 1;
	c.tick_ns = s->tick_ns;
	c.ts = sink_wall_ns(s, trace_ns);
	c.ts += c.ts < INT64_MAX;
	c.old = ty->track == TRACK_RENAME ? old : NULL;
	c.comm = now;
	return store_comm_change(env->store, s->host_id, &c);
}

/*
 * Store the names learned since the last call, in the order learned, with
 * one store_cmdlines() (it was one per name, and each waits for the
 * store's writer thread to finish every batch it holds: 0.64 a page in
 * bench/run ingest). Called before the sink's next message (so an agent's
 * CMDLINES still comes after the names learned before it), before each
 * commit (sink_flush()) and when SINK_LEARNED_MAX wait. Return: as
 * store_cmdlines().
 */
static int sink_learned_flush(struct sink *s, struct store_writer *store)
{
	struct proto_cmdlines all = { .count = s->nlearned, .items = s->learned };
	int ret;

	if (!s->nlearned)
		return 0;
	ret = store_cmdlines(store, s->host_id, &all);
	s->nlearned = 0;
	return ret;
}

/* Keep @cl to be stored by sink_learned_flush(). Return: 0; -ENOMEM; as
 * store_cmdlines(). */
static int sink_learned_add(struct sink *s, const struct sink_env *env,
			    const struct proto_cmdline *cl)
{
	int ret = 0;

	if (!s->learned &&
	    !(s->learned = malloc(SINK_LEARNED_MAX * sizeof(*s->learned))))
		return -ENOMEM;
	if (s->nlearned == SINK_LEARNED_MAX)
		ret = sink_learned_flush(s, env->store);
	if (ret == 0)
		s->learned[s->nlearned++] = *cl;
	return ret;
}

/*
 * Learn the names @ev carries for pids no CMDLINES named on this
 * connection; a newer event's name replaces an older learned one (an exec).
 * Stored with an @env; a walk (none) only learns.
 */
static int sink_learn_comms(struct sink *s, const struct sink_env *env,
			    const struct sink_type *ty, const struct decode_event *ev)
{
	struct proto_cmdline cl;
	struct proto_cmdlines one = { .count = 1, .items = &cl };
	struct store_value c, p;
	int ret = 0;

	for (unsigned i = 0; i < ty->ncomm && ret == 0; i++) {
		if (decode_field_value(ev, ty->comm_field[i], &c) < 0 ||
		    decode_field_value(ev, ty->pid_field[i], &p) < 0 || c.kind != STORE_STRING)
			continue;
		cl.pid = p.kind == STORE_SIGNED ? (int32_t)p.i : (int32_t)p.u;
		if (cl.pid <= 0 || !c.str.len || !comms_learnable(s, cl.pid, ev->ts + 1))
			continue;
		memset(cl.comm, 0, sizeof(cl.comm));
		memcpy(cl.comm, c.str.s, c.str.len < 15 ? c.str.len : 15);
		if (strlen(cl.comm) != (c.str.len < 15 ? c.str.len : 15) ||
		    !strcmp(comms_get(s, cl.pid), cl.comm))
			continue;
		ret = comms_put_at(s, &one, ev->ts + 1);
		if (ret == 0 && env)
			ret = sink_learned_add(s, env, &cl);
	}
	return ret;
}

/*
 * The store's type of @ty, for this host and boot. Over a schema cap
 * (max-event-types, max-event-fields, ...) the type has none: its events
 * are counted in drops as "schema-cap" and not stored. Said once per
 * connection, and at most once a second by all of them.
 */
static int sink_store_type(struct sink *s, const struct sink_env *env, struct sink_type *ty,
			   const char *text)
{
	static uint64_t last_ms;
	const struct store_origin o = {
		.host_id = s->host_id, .boot_id = s->boot_id, .since = s->hello_realtime,
		.max_types = env->max_types, .max_fields = env->max_fields,
	};
	const struct store_type_desc d = {
		.system = ty->t->system, .name = ty->t->name, .format = text,
		.nfields = ty->t->nfields, .fields = ty->sfields,
	};
	char h[LOG_ESC_LEN], why[LOG_ESC_LEN];
	int ret = store_type(env->store, &d, &o, &ty->st);
	uint64_t now;

	if (ret != TC_ERR_FORMAT_LIMIT)
		return ret;
	ty->st = NULL;
	now = util_now_ms();
	if (sink_logged_first(s, sink_why_cap) && now - last_ms >= 1000) {
		last_ms = now;
		log_warn("host %s: %s; its events are not stored (counted in traceq --drops as"
			 " schema-cap; said once per connection)", sink_host(s, h, sizeof(h)),
			 sink_clean(why, sizeof(why), store_errmsg(env->store)));
	}
	return 0;
}

static int sink_format(struct sink *s, const struct sink_env *env, const struct proto_format *f)
{
	const struct decode_type *t;
	struct decoder *dec = s->dec;
	struct sink_type *ty;
	int ret;

	if (f->group) {
		struct sink_group *g = group_by_id(s, f->group);

		if (!g)
			return TC_ERR_MSG_MALFORMED;
		dec = g->dec;
	}
#ifdef TC_TEST_AIDS
	if (env->test_abort_format && !strcmp(f->name, env->test_abort_format)) {
		log_err("TRACECOLLECTD_TEST_ABORT_ON: aborting on FORMAT %s (a test aid)",
			env->test_abort_format);
		abort();
	}
#endif
	ret = decoder_format(dec, f->system, f->name, f->text, f->len, &t);
	if (ret < 0) {
		char h[LOG_ESC_LEN], sys[LOG_ESC_LEN], ev[LOG_ESC_LEN], why[LOG_ESC_LEN];

		log_warn("host %s: format of %s:%s rejected: %s%s%s", sink_host(s, h, sizeof(h)),
			 sink_clean(sys, sizeof(sys), f->system), sink_clean(ev, sizeof(ev), f->name),
			 tc_strerror(ret), *decoder_error(dec) ? ": " : "",
			 sink_clean(why, sizeof(why), decoder_error(dec)));
		/*
		 * The text was refused, not the connection: failing it would
		 * have the agent reconnect and send the same text again, for
		 * as long as it runs. The event's records are then of no
		 * known type, counted as such (sink_unknown()).
		 */
		if (ret == TC_ERR_FORMAT_PARSE || ret == TC_ERR_FORMAT_LIMIT)
			return sink_msg_dropped(s, env, f->system, f->name, sink_why_format);
		return ret;
	}
	if (t->user)
		return 0;	/* the same event again */
	ty = calloc(1, sizeof(*ty));
	if (!ty)
		return -ENOMEM;
	ty->t = t;
	ty->kernel = f->group == 0;
	sink_type_comm_pairs(ty);
	sink_type_track(s, ty);
	s->names_taught |= ty->ncomm || ty->track;
	ty->next = s->types;
	s->types = ty;
	/* decode_type.user is the caller's slot: the event's sink type */
	((struct decode_type *)t)->user = ty;
	ret = sink_type_schema(ty);
	if (ret == 0)
		ret = sink_store_type(s, env, ty, f->text);
	if (ret == 0)
		ret = sink_type_resolve(s, env, ty);
	return ret;
}

int sink_msg(struct sink *s, const struct sink_env *env, struct proto_msg *m,
	     struct sink_reply *reply, bool *commit)
{
	char h[LOG_ESC_LEN];
	int ret;

	if (m->type != MSG_HELLO && !s->dec)
		return TC_ERR_PROTO_STATE;
	ret = sink_learned_flush(s, env->store);
	if (ret < 0)
		return ret;
	switch (m->type) {
	case MSG_HELLO:
		return sink_hello(s, env, &m->hello, reply);
	case MSG_HEADER_PAGE:
		return sink_header_page(s, env, &m->header_page);
	case MSG_GROUP:
		return sink_group_add(s, env, &m->group);
	case MSG_SYMBOLS:
		return sink_symbols(s, env, &m->symbols);
	case MSG_PRINTK:
		return sink_printk(s, env, &m->printk);
	case MSG_FORMAT:
		return sink_format(s, env, &m->format);
	case MSG_CMDLINES:
		return comms_put(s, &m->cmdlines) ?: store_cmdlines(env->store, s->host_id,
								    &m->cmdlines);
	case MSG_CLOCK:
		return sink_clock(s, env, &m->clock);
	case MSG_CLOCK_MEASURE:
		return sink_measure(s, env, &m->clock_measure);
	case MSG_CPU_STATS:
		return store_cpu_stats(env->store, s->host_id, &m->cpu_stats);
	case MSG_FREEZE:
		return sink_freeze(s, env, &m->freeze);
	case MSG_SNAP_BEGIN:
	case MSG_SNAP_END:
		return sink_snap(s, env, m);
	case MSG_BYE:
		*commit = true;
		reply->kind = SINK_REPLY_DONE;
		reply->pages = s->pages;
		reply->events = s->events;
		log_info("host %s: done: %llu pages, %llu events stored, %llu resent pages"
			 " dropped (agent shipped %llu pages, %llu events)",
			 sink_host(s, h, sizeof(h)), (unsigned long long)s->pages, (unsigned long long)s->events,
			 (unsigned long long)s->dups, (unsigned long long)m->bye.pages,
			 (unsigned long long)m->bye.events);
		return sink_flush(s, env->store);
	default:
		return TC_ERR_PROTO_STATE;
	}
}

/* ---- pages ---- */

/* struct store_event's value: field @i of the decode_event @src, as the store asks for it. */
static int sink_value(const void *src, unsigned i, struct store_value *out)
{
	return decode_field_value(src, i, out);
}

/*
 * Store @ev as a row of @ty; the store decodes the fields it keeps
 * (sink_value()). Return: as store_insert(); TC_ERR_PAGE_MALFORMED when a
 * field lies outside the record.
 */
static int sink_insert(const struct page_ctx *p, const struct sink_type *ty,
		       const struct decode_event *ev, uint64_t trace_ns)
{
	const struct store_event row = {
		.host_id = p->s->host_id, .cpu = ev->cpu, .trace_ts = ev->ts,
		.ts = sink_wall_ns(p->s, trace_ns), .nvals = ev->type->nfields,
		.value = sink_value, .src = ev,
	};

	return store_insert(p->env->store, ty->st, &row);
}

/* What @ev (of @ty, at trace ns @trace_ns) tells of task names; a walk (no p->env) stores none. */
static int sink_names(const struct page_ctx *p, const struct sink_type *ty,
		      const struct decode_event *ev, uint64_t trace_ns)
{
	int ret = 0;

	if (ty->ncomm)
		ret = sink_learn_comms(p->s, p->env, ty, ev);
	if (ret == 0 && ty->track)
		ret = sink_track_event(p->s, p->env, ty, ev, trace_ns);
	return ret;
}

/* decode_event_fn of a walk (sink_walk()): the names of the events sink_event() learns from. */
static int sink_event_walk(void *arg, const struct decode_event *ev)
{
	const struct page_ctx *p = arg;
	const struct sink_type *ty = ev->type->user;

	return ty && ty->st ? sink_names(p, ty, ev, event_trace_ns(p, ev->ts)) : 0;
}

static int sink_event(void *arg, const struct decode_event *ev)
{
	struct page_ctx *p = arg;
	struct sink_type *ty = ev->type->user;
	struct sink_eval e = { p->s, ev, 0, "" };
	int ret;

	if (ty && !ty->st) {
		ty->capped++;
		p->s->counters_dirty = true;
		return 0;
	}
	if (!ty) {
		p->s->unknown++;
		p->unknown++;
		return 0;
	}
	e.trace_ns = event_trace_ns(p, ev->ts);
	if ((ret = sink_names(p, ty, ev, e.trace_ns)) < 0)
		return ret;
	ret = ty->f ? filter_eval(ty->f, sink_get, &e) : 1;
	if (ret == 0) {
		ty->dropped++;
		p->s->counters_dirty = true;
		return 0;
	}
	if (ret > 0)
		ret = sink_insert(p, ty, ev, e.trace_ns);
	if (ret == 0)
		p->stored++;
	if (ret != TC_ERR_PAGE_MALFORMED)
		return ret;
	/* a field outside the record: this event only (the filter's or the insert's) */
	p->bad++;
	if (sink_logged_first(p->s, sink_why_field)) {
		char h[LOG_ESC_LEN], sys[LOG_ESC_LEN], name[LOG_ESC_LEN];

		log_warn("host %s: CPU %u: an event of %s:%s was not stored: %s (counted in "
			 "traceq --drops and --stats; said once per connection)",
			 sink_host(p->s, h, sizeof(h)), p->cpu,
			 sink_clean(sys, sizeof(sys), ty->t->system),
			 sink_clean(name, sizeof(name), ty->t->name), sink_why_field);
	}
	return store_dropped(p->env->store, p->s->host_id, ty->t->system, ty->t->name,
			     sink_why_field, 1);
}

/*
 * The counters of CPU or stream @cpu (a CPU's made at its first page);
 * NULL for one the agent did not announce, or out of memory.
 */
static struct sink_cpu *sink_cpu_of(struct sink *s, uint32_t cpu)
{
	struct sink_group *g;
	void *c;

	if (cpu < s->ncpus)
		return cpuslots_get(&s->cpus, cpu, &c) == 0 ? c : NULL;
	if (cpu >= PROTO_USER_STREAM_BASE && (g = group_by_stream(s, cpu)))
		return &g->streams[cpu - g->first];
	return NULL;
}

int sink_page_dropped(struct sink *s, const struct sink_env *env, uint32_t cpu, uint64_t seq,
		      const char *why)
{
	struct sink_cpu *c = sink_cpu_of(s, cpu);
	int ret = store_dropped(env->store, s->host_id, "-", "-", why, 1);

	if (c) {
		c->bad_pages++;
		c->seen_seq = seq;	/* processed: acknowledged */
		s->counters_dirty = true;
	}
	if (ret == 0 && c && s->sess && cpu < s->ncpus)
		ret = dedup_stored(s->sess, cpu, seq);
	if (sink_logged_first(s, why)) {
		char h[LOG_ESC_LEN];

		log_warn("host %s: CPU %u: a page was not stored: %s (counted in traceq "
			 "--drops and --stats; said once per connection)",
			 sink_host(s, h, sizeof(h)), cpu, why);
	}
	return ret;
}

int sink_msg_dropped(struct sink *s, const struct sink_env *env, const char *system,
		     const char *name, const char *why)
{
	if (sink_logged_first(s, why)) {
		char h[LOG_ESC_LEN], sys[LOG_ESC_LEN], ev[LOG_ESC_LEN];

		log_warn("host %s: a message%s%s%s%s%s was not applied: %s (counted in traceq "
			 "--drops; said once per connection)", sink_host(s, h, sizeof(h)),
			 system ? " (FORMAT " : "", system ? sink_clean(sys, sizeof(sys), system) : "",
			 system ? ":" : "", system ? sink_clean(ev, sizeof(ev), name) : "",
			 system ? ")" : "", why);
	}
	return store_dropped(env->store, s->host_id, system ? system : "-", name ? name : "-",
			     why, 1);
}

/* @p's events of no known type (not stored): counted for the page's CPU. */
static int sink_unknown(struct sink *s, const struct sink_env *env, struct sink_cpu *c,
			const struct page_ctx *p, uint64_t n)
{
	c->bad_events += n + p->bad;
	s->counters_dirty = true;
	if (!n)
		return 0;
	if (sink_logged_first(s, sink_why_unknown)) {
		char h[LOG_ESC_LEN];

		log_warn("host %s: CPU %u: %llu events were not stored: %s (counted in traceq "
			 "--drops and --stats; said once per connection)",
			 sink_host(s, h, sizeof(h)), p->cpu, (unsigned long long)n,
			 sink_why_unknown);
	}
	return store_dropped(env->store, s->host_id, "-", "-", sink_why_unknown, n);
}

/* At most this many losses wait for sink_flush(); more are stored at once. */
#define SINK_LOSSES_MAX	1024

/* Write the losses waiting in @s (in the open transaction, with their pages). */
static int sink_flush_losses(struct sink *s, struct store_writer *store)
{
	int ret = store_losses_put(store, s->host_id, s->boot_id, s->losses, s->nlosses);

	if (ret == 0)
		s->nlosses = 0;
	return ret;
}

/*
 * The page of @p said the kernel lost events before it (@st): where, to
 * be stored with the page's events, so as exactly once as they are (the
 * page's dedup mark and the journal mark go in the same transaction).
 */
static int sink_loss(const struct page_ctx *p, const struct sink_env *env,
		     const struct decode_page_stats *st)
{
	struct sink *s = p->s;
	struct store_loss *l;

	if (s->nlosses >= SINK_LOSSES_MAX) {
		int ret = sink_flush_losses(s, env->store);

		if (ret < 0)
			return ret;
	}
	l = util_grow(s->losses, &s->losses_cap, s->nlosses, sizeof(*s->losses), 16);
	if (!l)
		return -ENOMEM;
	s->losses = l;
	s->losses[s->nlosses++] = (struct store_loss){
		.cpu = p->cpu, .trace_ts = st->page_ts,
		.ts = sink_wall_ns(s, event_trace_ns(p, st->page_ts)),
		.count = st->missed_known && st->missed <= INT64_MAX ? (int64_t)st->missed : -1,
	};
	s->counters_dirty = true;
	return 0;
}

/*
 * The clock map learns how far page @st of @g (NULL: a kernel page) goes
 * in trace time: from the page's bytes alone, whatever is stored of it,
 * so that a replay notes what the first pass did (clockmap.h).
 */
static void sink_note_span(struct sink *s, const struct sink_group *g,
			   const struct decode_page_stats *st)
{
	struct page_ctx p = { .s = s, .g = g };
	uint64_t lo = event_trace_ns(&p, st->ts_lo), hi = event_trace_ns(&p, st->ts_hi);

	clockmap_note(&s->clk.map, lo > hi ? lo : hi);
}

/* The decoder of @cpu's pages, with its group in *@g (NULL: a kernel CPU); NULL: none. */
static struct decoder *sink_dec_of(struct sink *s, uint32_t cpu, struct sink_group **g)
{
	*g = NULL;
	if (cpu >= PROTO_USER_STREAM_BASE)
		return (*g = group_by_stream(s, cpu)) ? (*g)->dec : NULL;
	return cpu < s->ncpus ? s->dec : NULL;
}

/*
 * Walk page @page of CPU @cpu, decoder @dec (of group @g, NULL: a kernel
 * CPU), for what a page tells that is not stored: how far it goes (the
 * clock map notes it) and the task names its events carry (learned as
 * sink_event() learns them, none stored). A page stored before (a replay
 * up to the store's mark) and a resend stored already are walked so, so
 * that a replay knows at each page the names the first pass knew
 * (pidnames.h). Return: 0; -ENOMEM.
 */
static int sink_walk(struct sink *s, struct decoder *dec, struct sink_group *g, uint32_t cpu,
		     const uint8_t *page, size_t len)
{
	struct page_ctx p = { .s = s, .g = g, .cpu = cpu };
	struct decode_page_stats st;
	int ret;

	if (s->names_taught)
		ret = decoder_page(dec, cpu, page, len, sink_event_walk, &p, &st);
	else
		ret = decoder_page_span(dec, page, len, &st);
	if (st.spanned)
		sink_note_span(s, g, &st);
	return ret == TC_ERR_PAGE_MALFORMED ? 0 : ret;
}

int sink_page_seen(struct sink *s, uint32_t cpu, const uint8_t *page, size_t len)
{
	struct sink_group *g;
	struct decoder *dec = s->dec ? sink_dec_of(s, cpu, &g) : NULL;

	return dec ? sink_walk(s, dec, g, cpu, page, len) : 0;
}

int sink_clock_restore(struct sink *s, const uint8_t *data, size_t len)
{
	return s->dec ? clocksrc_load(&s->clk, data, len) : TC_ERR_PROTO_STATE;
}

int sink_names_restore(struct sink *s, const uint8_t *data, size_t len)
{
	return s->dec ? pidnames_load(&s->names, data, len) : TC_ERR_PROTO_STATE;
}

int sink_page(struct sink *s, const struct sink_env *env, uint32_t cpu, uint64_t seq,
	      const uint8_t *page, size_t len, uint64_t *stored)
{
	struct page_ctx p = { .s = s, .env = env, .cpu = cpu };
	struct decode_page_stats st = { 0 };
	struct decoder *dec = s->dec;
	struct sink_cpu *c;
	int ret = 0;

	*stored = 0;
	if (!s->dec)
		return TC_ERR_PROTO_STATE;
	if (cpu >= PROTO_USER_STREAM_BASE) {
		struct sink_group *g = group_by_stream(s, cpu);

		if (!g)
			return sink_page_dropped(s, env, cpu, seq, sink_why_cpu);
		p.g = g;
		dec = g->dec;
		c = &g->streams[cpu - g->first];
	} else if (cpu < s->ncpus) {
		c = sink_cpu_of(s, cpu);
		if (!c)
			return -ENOMEM;
		if (s->sess && dedup_seen(s->sess, cpu, seq)) {	/* a resend: stored already */
			ret = sink_walk(s, dec, NULL, cpu, page, len);
			if (ret < 0)
				return ret;
			c->seen_seq = seq;
			s->dups++;
			*stored = 0;
			return store_cpu_duplicates(env->store, s->host_id, cpu, 1);
		}
	} else {
		return sink_page_dropped(s, env, cpu, seq, sink_why_cpu);
	}
	if (s->filters_gen != env->filters_gen)
		ret = sink_resolve_all(s, env);
	/*
	 * A program's rows carry their stream (>= PROTO_USER_STREAM_BASE),
	 * as its losses do, not the buffer: a buffer number below the
	 * host's CPU count would read as that kernel CPU's (traceq --export).
	 */
	if (ret == 0)
		ret = decoder_page(dec, cpu, page, len, sink_event, &p, &st);
	if (ret == TC_ERR_PAGE_MALFORMED && st.malformed)	/* rejected whole: no event in */
		return sink_page_dropped(s, env, cpu, seq, st.malformed);
	if (st.spanned)
		sink_note_span(s, p.g, &st);
	if (ret == 0 && s->sess && !p.g)	/* the mark goes in with the events */
		ret = dedup_stored(s->sess, cpu, seq);
	if (ret == 0 && st.missed_events)
		ret = sink_loss(&p, env, &st);
	if (ret == 0 && (st.unknown || p.unknown || p.bad))
		ret = sink_unknown(s, env, c, &p, st.unknown + p.unknown);
	if (ret < 0)
		return ret;
	c->seen_seq = seq;
	c->pages++;
	c->events += p.stored;
	c->bytes += len;
	s->counters_dirty = true;
	s->pages++;
	s->events += p.stored;
	*stored = p.stored;
	return 0;
}

int sink_flush(struct sink *s, struct store_writer *store)
{
	int ret = sink_learned_flush(s, store) ?: dedup_flush(s->sess, store);

	if (ret < 0 || !s->counters_dirty)
		return ret;
	ret = sink_flush_losses(s, store);
	for (uint32_t i = 0; i < s->cpus.n && ret == 0; i++) {
		struct sink_cpu *c = cpuslots_at(&s->cpus, i);
		uint32_t cpu = s->cpus.cpu[i];

		if (c->pages)
			ret = store_cpu_received(store, s->host_id, cpu, c->pages, c->events,
						 c->bytes);
		if (ret == 0 && (c->bad_pages || c->bad_events))
			ret = store_cpu_not_stored(store, s->host_id, cpu, c->bad_pages,
						   c->bad_events);
		if (ret == 0)
			c->pages = c->events = c->bytes = c->bad_pages = c->bad_events = 0;
	}
	if (ret == 0)
		ret = flush_group_counters(s, store);
	for (struct sink_type *ty = s->types; ty && ret == 0; ty = ty->next) {
		if (ty->dropped)
			ret = store_dropped(store, s->host_id, ty->t->system, ty->t->name,
					    "filter", ty->dropped);
		if (ret == 0 && ty->capped)
			ret = store_dropped(store, s->host_id, ty->t->system, ty->t->name,
					    sink_why_cap, ty->capped);
		if (ret == 0)
			ty->dropped = ty->capped = 0;
	}
	if (ret == 0)
		s->counters_dirty = false;
	return ret;
}

void sink_mark_committed(struct sink *s)
{
	uint64_t *mark;

	for (uint32_t i = 0; i < s->cpus.n; i++) {
		if (cpuslots_get(&s->committed, s->cpus.cpu[i], (void **)&mark) < 0)
			return;		/* acknowledged at the next commit */
		*mark = ((struct sink_cpu *)cpuslots_at(&s->cpus, i))->seen_seq;
	}
}

void sink_free(struct sink *s)
{
	if (!s)
		return;
	while (s->types) {
		struct sink_type *ty = s->types;

		s->types = ty->next;
		filter_free(ty->f);
		free(ty->ffields);
		free(ty->sfields);
		free(ty->pushed);
		free(ty);
	}
	pidnames_free(&s->names);
	free(s->learned);
	decoder_free(s->dec);
	for (size_t i = 0; i < s->ngroups; i++) {
		decoder_free(s->groups[i].dec);
		free(s->groups[i].streams);
	}
	free(s->groups);
	pushdown_q_free(&s->pushq);
	free(s->header_page);
	free(s->losses);
	free(s->jctx);
	jfile_put(s->jf, false);
	if (s->sess)
		dedup_put(s->sessions, s->sess);
	cpuslots_free(&s->committed);
	cpuslots_free(&s->cpus);
	free(s->host);
	free(s->boot_id);
	free(s);
}
