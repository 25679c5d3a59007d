/*
 * queryd_disc.c - discovery requests of the query endpoint
 * (queryd_disc.h): hosts from the store's hosts table, with whether each
 * is connected now (the collector's connections, struct qdisc_live; an
 * import never is) and, on a store several collectors share, to which
 * collector (store_host_info .collector, the store's live set); event
 * types and
 * fields from the selectors resolved as for a select (queryd_sel.h), with
 * counts and first/last times read like rows, so the asker's scope, host
 * globs, CPUs and window apply to them as to rows. A scoped asker is not
 * told of event types none of its hosts has (queryd_sel.h: for it they are
 * not stored), nor, in --events and --fields, of those it has no rows of.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/query/queryd_disc.h"
#include "server/query/queryd_sel.h"

static void put_cstr(struct qmsg_writer *w, const char *s)
{
	if (s)
		qmsg_put_str(w, s, strlen(s));
	else
		qmsg_put_nil(w);
}

struct hosts_ctx {
	struct qmsg_writer *w;
	const struct qdisc_live *live;
};

/*
 * The clock columns (issue 36): what places the host's events ("host" its
 * own clock samples, "measured" the collector's measurement, "file" an
 * import's recording) and the latest measurement; nil where none.
 */
static void host_clock_cols(struct qmsg_writer *w, const struct store_host_info *h, bool import)
{
	bool m = !import && h->clock_source;

	put_cstr(w, import ? "file" : m ? h->clock_source : "host");
	if (!m) {
		for (int i = 0; i < 4; i++)
			qmsg_put_nil(w);
		return;
	}
	qmsg_put_int(w, h->clock_measured_ns);
	qmsg_put_int(w, h->clock_uncertainty_ns);
	qmsg_put_int(w, h->clock_drift_ppb);
	qmsg_put_int(w, h->clock_disagree_ns);
}

static int host_row(void *ctx, const struct store_host_info *h)
{
	struct hosts_ctx *hc = ctx;
	struct qmsg_writer *w = hc->w;
	/* an import's host row has machine_id "import:DIGEST" (queryd_import.c) */
	bool import = h->machine_id && !strncmp(h->machine_id, "import:", 7);
	/* here, or (a store collectors share) to the collector its live set names */
	bool live = !import && ((hc->live && hc->live->connected &&
				 hc->live->connected(hc->live->arg, h->id)) || h->collector);

	if (qmsg_reply_rows(w) >= QMSG_MAX_ROWS)
		return 1;
	put_cstr(w, h->name);
	put_cstr(w, live ? "yes" : "no");
	put_cstr(w, import || !h->agent || !h->agent[0] ? NULL : h->agent);
	put_cstr(w, h->kernel);
	qmsg_put_int(w, h->ncpus);
	put_cstr(w, h->trace_clock);
	put_cstr(w, h->peer_subject);
	put_cstr(w, import ? "import" : "agent");
	qmsg_put_int(w, h->first_seen);
	qmsg_put_int(w, h->last_seen);
	put_cstr(w, h->boot_id);
	put_cstr(w, h->machine_id);
	qmsg_put_int(w, h->page_size);
	qmsg_put_int(w, h->clock_offset_ns);
	host_clock_cols(w, h, import);
	put_cstr(w, import ? NULL : h->collector);
	return 0;
}

static int run_hosts(struct store_reader *st, const struct store_query *hosts,
		     const struct qdisc_live *live, struct qmsg_writer **w)
{
	static const char *const cols[] = {
		"host", "connected", "agent", "kernel", "cpus", "trace_clock", "certificate",
		"source", "first_seen", "last_seen", "boot_id", "machine_id", "page_size",
		"clock_offset_ns", "clock_source", "clock_measured_ns", "clock_uncertainty_ns",
		"clock_drift_ppb", "clock_disagree_ns", "collector",
	};
	int ret = qmsg_reply_begin(w, NULL, 20, cols);
	struct hosts_ctx hc = { *w, live };

	if (ret == 0)
		ret = store_hosts(st, hosts, host_row, &hc);
	return ret < 0 ? ret : 0;
}

static int keep_ts(void *ctx, const struct store_row *row)
{
	*(int64_t *)ctx = row->ts;
	return 1;
}

/* The oldest (@newest false) or newest ts of @q's rows into *@ts (unchanged: none). */
static int edge_ts(struct store_reader *st, const struct store_query *q, bool newest, int64_t *ts)
{
	struct store_query e = *q;
	int ret;

	e.reverse = newest;
	e.limit = 1;
	e.after_rowid = 0;
	ret = store_select(st, &e, keep_ts, ts);
	return ret < 0 ? ret : 0;
}

/* One row per type of @c: event, count, first, last. */
static int run_events(struct store_reader *st, struct qsel *c, bool scoped, struct qmsg_writer **w)
{
	static const char *const cols[] = { "event", "count", "first", "last" };
	int ret = qmsg_reply_begin(w, NULL, 4, cols);

	for (size_t i = 0; ret == 0 && i < qsel_ntypes(c) && qmsg_reply_rows(*w) < QMSG_MAX_ROWS;
	     i++) {
		const struct store_schema *sc = qsel_schema(c, i);
		int64_t first = 0, last = 0;
		uint64_t n = 0;
		char ev[512];

		ret = store_count(st, qsel_read(c, i), &n);
		if (ret == 0 && n)
			ret = edge_ts(st, qsel_read(c, i), false, &first) ?:
			      edge_ts(st, qsel_read(c, i), true, &last);
		if (ret < 0 || (scoped && !n) || qmsg_reply_rows(*w) >= QMSG_MAX_ROWS)
			continue;
		snprintf(ev, sizeof(ev), "%s:%s", sc->system, sc->name);
		put_cstr(*w, ev);
		qmsg_put_uint(*w, n);
		if (n) {
			qmsg_put_int(*w, first);
			qmsg_put_int(*w, last);
		} else {
			qmsg_put_nil(*w);
			qmsg_put_nil(*w);
		}
	}
	return ret;
}

static const char *kind_name(enum store_kind k)
{
	return k == STORE_SIGNED ? "int" : k == STORE_UNSIGNED ? "uint" :
	       k == STORE_STRING ? "string" : "bytes";
}

/* The hosts the asker may see, by id (for the per-host types of --fields). */
struct disc_names {
	uint64_t *id;
	char **name;
	size_t n, cap;
	bool loaded;
};

static int names_add(void *ctx, const struct store_host_info *h)
{
	struct disc_names *nm = ctx;

	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 16;
		uint64_t *id = realloc(nm->id, cap * sizeof(*id));
		char **name = id ? realloc(nm->name, cap * sizeof(*name)) : NULL;

		if (id)
			nm->id = id;
		if (!name)
			return -ENOMEM;
		nm->name = name;
		nm->cap = cap;
	}
	nm->id[nm->n] = h->id;
	nm->name[nm->n] = strdup(h->name);
	return nm->name[nm->n++] ? 0 : -ENOMEM;
}

static const char *names_get(const struct disc_names *nm, uint64_t id)
{
	for (size_t i = 0; i < nm->n; i++)
		if (nm->id[i] == id)
			return nm->name[i];
	return NULL;	/* out of the asker's scope */
}

static void names_free(struct disc_names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->name[i]);
	free(nm->name);
	free(nm->id);
}

/* The C type field @name has in format @f ("" when it has none; its kind when not known). */
static const char *fmt_type(const struct store_schema *sc, const struct store_fmt *f,
			    const char *name)
{
	for (size_t k = 0; k < f->ncols; k++)
		if (!strcmp(sc->cols[f->cols[k]].name, name))
			return f->types[k][0] ? f->types[k] : kind_name(sc->cols[f->cols[k]].kind);
	return "";
}

/*
 * "TYPE (hosts a,b); TYPE2 (host c)": the C types field @name has in the
 * formats of @sc, with the hosts (the asker may see) that sent each;
 * "absent" for formats without it. Into @b (truncated at its size).
 */
static void per_host_type(const struct store_schema *sc, const char *name,
			  const struct disc_names *nm, char *b, size_t size)
{
	size_t len = 0;

	b[0] = 0;
	for (size_t i = 0; i < sc->nfmts && len + 1 < size; i++) {
		const char *ty = fmt_type(sc, &sc->fmts[i], name);
		size_t hosts = 0;
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = !strcmp(fmt_type(sc, &sc->fmts[j], name), ty);
		if (dup)
			continue;
		len += (size_t)snprintf(b + len, size - len, "%s%s (", len ? "; " : "",
					*ty ? ty : "absent");
		for (size_t j = i; j < sc->nfmts && len + 1 < size; j++) {
			const struct store_fmt *f = &sc->fmts[j];

			if (strcmp(fmt_type(sc, f, name), ty))
				continue;
			for (size_t h = 0; h < f->nhosts && len + 1 < size; h++) {
				const char *hn = names_get(nm, f->host_ids[h]);

				if (hn)
					len += (size_t)snprintf(b + len, size - len, "%s%s",
								hosts++ ? "," : "host ", hn);
			}
		}
		if (len + 1 < size)
			len += (size_t)snprintf(b + len, size - len, "%s)",
						hosts ? "" : "hosts not recorded");
	}
	if (len >= size && size > 4)
		memcpy(b + size - 4, "...", 4);
}

/*
 * One row per field of each type of @c: event, field, type. A type whose
 * hosts sent different formats has one row per field name, its type
 * saying which host has which ("pid_t (host web1); char[4] (host vm)").
 */
static int run_fields(struct store_reader *st, struct qsel *c, const struct store_query *hq,
		      struct qmsg_writer **w)
{
	static const char *const cols[] = { "event", "field", "type" };
	struct disc_names nm = { 0 };
	int ret = qmsg_reply_begin(w, NULL, 3, cols);

	for (size_t i = 0; ret == 0 && i < qsel_ntypes(c); i++) {
		const struct store_schema *sc = qsel_schema(c, i);
		int64_t any = 0;
		char ev[512], ty[1024];

		if (hq->scope) {	/* only types the asker has rows of */
			any = INT64_MIN;
			ret = edge_ts(st, qsel_read(c, i), true, &any);
			if (ret < 0 || any == INT64_MIN)
				continue;
		}
		if (sc->nfmts > 1 && !nm.loaded) {
			nm.loaded = true;
			ret = store_hosts(st, hq, names_add, &nm);
		}
		snprintf(ev, sizeof(ev), "%s:%s", sc->system, sc->name);
		for (size_t k = 0; ret == 0 && k < sc->ncols &&
				   qmsg_reply_rows(*w) < QMSG_MAX_ROWS; k++) {
			bool dup = false;

			for (size_t j = 0; j < k && !dup; j++)
				dup = !strcmp(sc->cols[j].name, sc->cols[k].name);
			if (dup && sc->nfmts > 1)
				continue;
			if (sc->nfmts > 1)
				per_host_type(sc, sc->cols[k].name, &nm, ty, sizeof(ty));
			put_cstr(*w, ev);
			put_cstr(*w, sc->cols[k].name);
			put_cstr(*w, sc->nfmts > 1 ? ty : kind_name(sc->cols[k].kind));
		}
	}
	names_free(&nm);
	return ret;
}

struct any_ctx {
	struct store_reader *st;
	const struct store_scope *scope;
	bool any;
};

static int stop_walk(void *ctx, const struct store_schema *sc)
{
	struct any_ctx *x = ctx;
	int ret = store_type_seen(x->st, sc, x->scope, &x->any);

	return ret < 0 ? ret : x->any;
}

/*
 * Whether the store has an event type @scope's asker may know of (errors
 * count as yes: the select reports them).
 */
static bool any_type(struct store_reader *st, const struct store_scope *scope)
{
	struct any_ctx x = { st, scope, false };
	int ret = store_schema_list(st, NULL, stop_walk, &x);

	return x.any || (ret < 0 && ret != TC_ERR_UNKNOWN_EVENT);
}

int qdisc_run(struct store_reader *st, const struct qmsg_request *r,
	      const struct store_query *hosts, const struct qdisc_live *live,
	      struct proto_buf *out, uint64_t *rows)
{
	struct qmsg_request rq = *r;
	struct qmsg_writer *w = NULL;
	struct qsel *c = NULL;
	int ret;

	if (r->op == QOP_HOSTS) {
		ret = run_hosts(st, hosts, live, &w);
	} else if (!rq.query && !any_type(st, hosts->scope)) {	/* --events of an empty store: no rows */
		static const char *const cols[] = { "event", "count", "first", "last" };

		ret = qmsg_reply_begin(&w, NULL, 4, cols);
	} else {
		if (!rq.query)
			rq.query = (char *)"*";
		ret = qsel_compile(st, &rq, hosts->scope, &c, out);
		if (ret == 0 && r->op == QOP_EVENTS)
			ret = run_events(st, c, hosts->scope != NULL, &w);
		else if (ret == 0 && r->op == QOP_FIELDS)
			ret = run_fields(st, c, hosts, &w);
		else if (ret == 0)
			ret = -EINVAL;
	}
	qsel_free(c);
	if (ret) {	/* 1: the error reply is in @out */
		qmsg_writer_free(w);
		return ret;
	}
	*rows = qmsg_reply_rows(w);
	return qmsg_reply_end(w, qmsg_reply_rows(w) >= QMSG_MAX_ROWS, 0, 0, 0, out);
}
