/*
 * queryd_disc.c - discovery requests of the query endpoint
 * (queryd_disc.h): hosts from the store's hosts table, with whether each
 * is connected now (the collector's connections, struct qdisc_live; an
 * import never is); event types and
 * fields from the selectors resolved as for a select (queryd_sel.h), with
 * counts and first/last times read like rows, so the asker's scope, host
 * globs, CPUs and window apply to them as to rows. A scoped asker is not
 * told of event types none of its hosts has rows of.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/queryd_disc.h"
#include "server/queryd_sel.h"

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

static int host_row(void *ctx, const struct store_host_info *h)
{
	struct hosts_ctx *hc = ctx;
	struct qmsg_writer *w = hc->w;
	/* an import's host row has machine_id "import:DIGEST" (queryd_import.c) */
	bool import = h->machine_id && !strncmp(h->machine_id, "import:", 7);
	bool live = !import && hc->live && hc->live->connected &&
		    hc->live->connected(hc->live->arg, h->id);

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
	return 0;
}

static int run_hosts(struct store *st, const struct store_query *hosts,
		     const struct qdisc_live *live, struct qmsg_writer **w)
{
	static const char *const cols[] = {
		"host", "connected", "agent", "kernel", "cpus", "trace_clock", "certificate",
		"source", "first_seen", "last_seen", "boot_id", "machine_id", "page_size",
		"clock_offset_ns",
	};
	int ret = qmsg_reply_begin(w, NULL, 14, cols);
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
static int edge_ts(struct store *st, const struct store_query *q, bool newest, int64_t *ts)
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
static int run_events(struct store *st, struct qsel *c, bool scoped, struct qmsg_writer **w)
{
	static const char *const cols[] = { "event", "count", "first", "last" };
	int ret = qmsg_reply_begin(w, NULL, 4, cols);

	for (size_t i = 0; ret == 0 && i < qsel_ntypes(c); i++) {
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

static const char *kind_name(enum decode_kind k)
{
	return k == DECODE_SIGNED ? "int" : k == DECODE_UNSIGNED ? "uint" :
	       k == DECODE_STRING ? "string" : "bytes";
}

/* One row per field of each type of @c: event, field, type. */
static int run_fields(struct store *st, struct qsel *c, bool scoped, struct qmsg_writer **w)
{
	static const char *const cols[] = { "event", "field", "type" };
	int ret = qmsg_reply_begin(w, NULL, 3, cols);

	for (size_t i = 0; ret == 0 && i < qsel_ntypes(c); i++) {
		const struct store_schema *sc = qsel_schema(c, i);
		int64_t any = 0;
		char ev[512];

		if (scoped) {	/* only types the asker has rows of */
			any = INT64_MIN;
			ret = edge_ts(st, qsel_read(c, i), true, &any);
			if (ret < 0 || any == INT64_MIN)
				continue;
		}
		snprintf(ev, sizeof(ev), "%s:%s", sc->system, sc->name);
		for (size_t k = 0; k < sc->ncols && qmsg_reply_rows(*w) < QMSG_MAX_ROWS; k++) {
			put_cstr(*w, ev);
			put_cstr(*w, sc->cols[k].name);
			put_cstr(*w, kind_name(sc->cols[k].kind));
		}
	}
	return ret;
}

static int stop_walk(void *ctx, const struct store_schema *sc)
{
	(void)sc;
	*(bool *)ctx = true;
	return 1;
}

/* Whether the store has any event type (errors count as yes: the select reports them). */
static bool any_type(struct store *st)
{
	bool any = false;
	int ret = store_schema_list(st, NULL, stop_walk, &any);

	return any || (ret < 0 && ret != TC_ERR_UNKNOWN_EVENT);
}

int qdisc_run(struct store *st, const struct qmsg_request *r, const struct store_query *hosts,
	      const struct qdisc_live *live, struct proto_buf *out, uint64_t *rows)
{
	struct qmsg_request rq = *r;
	struct qmsg_writer *w = NULL;
	struct qsel *c = NULL;
	int ret;

	if (r->op == QOP_HOSTS) {
		ret = run_hosts(st, hosts, live, &w);
	} else if (!rq.query && !any_type(st)) {	/* --events of an empty store: no rows */
		static const char *const cols[] = { "event", "count", "first", "last" };

		ret = qmsg_reply_begin(&w, NULL, 4, cols);
	} else {
		if (!rq.query)
			rq.query = (char *)"*";
		ret = qsel_compile(st, &rq, hosts->scope, &c, out);
		if (ret == 0 && r->op == QOP_EVENTS)
			ret = run_events(st, c, hosts->scope != NULL, &w);
		else if (ret == 0 && r->op == QOP_FIELDS)
			ret = run_fields(st, c, hosts->scope != NULL, &w);
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
