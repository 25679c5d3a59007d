/*
 * queryd_sel.c - select and count requests of the query endpoint (see
 * queryd_sel.h): selectors resolved to event types, a filter bound per
 * type with the kernel's subsystem-filter semantics, and several types'
 * rows merged in time order.
 *
 * Selectors. Each of the query's selectors (common/query.h) names the
 * stored types it matches: SYSTEM:EVENT globs as written; a bare word the
 * events of that name (glob), or, when no event has such a name, every
 * event of the subsystems so named. A selector that names no stored type
 * is an error pointing at it. For a scoped asker, a type none of its hosts
 * has (store_type_seen()) is not stored: it is neither selected nor
 * suggested, so its name, fields and format text stay out of every answer.
 *
 * Filters over several types: the kernel's subsystem filter
 * (Documentation/trace/events.rst, "Subsystem filters"; kernel
 * process_system_preds()) is set on each event of the subsystem it can be
 * applied to; an event that lacks a field it names, or where it cannot
 * apply for any other reason (a type mismatch), keeps its previous filter,
 * which for a query is none: its rows all pass. When no selected event
 * takes it, the write fails; so does the query, with the first type's
 * error. One selected type: its error, as ever.
 *
 * Merge. Rows of several types are answered in (ts, type key, rowid)
 * order, the type key being the store's type_id; a page ends with that
 * triple (last_ts, last_type, last_id) and the next request resumes after
 * it. Each type has a keyset cursor and a buffer of at most QSEL_CHUNK
 * rows at first (fewer when many types are selected), already encoded;
 * the page is a k-way merge of the buffers, refilling one when it empties
 * (a type refilled again and again reads more at a time, all buffers
 * together at most QSEL_BUFFERED_MAX rows, and none more than the page
 * still needs). A type's
 * cursor for a resumed page follows from the triple: types before the
 * last one resume after all rows of last_ts, the last one after its row,
 * the later ones at last_ts itself. --reverse walks the same order
 * backwards, with "before" cursors.
 *
 * Resumed pages. A merge's state at the end of a page (each type's cursor
 * and the rows it read and did not send) is what the next page would
 * read again; the endpoint may keep it (queryd_ahead.h, parked) and hand
 * it to that page's request (qsel_resume()), which then sends those rows
 * and reads on from the cursors, without compiling the query again. Its
 * fills then take whole windows of the store (store_query.limit_soft)
 * and are not cut to the page: nothing read is read twice.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/query.h"
#include "common/suggest.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/symbols.h"
#include "server/query/queryd_sel.h"

#define QSEL_CHUNK		512	/* rows a type's buffer holds at first, at most */
#define QSEL_BUFFERED		8192	/* rows all buffers hold at first, about */
#define QSEL_CHUNK_MAX		4096	/* a type read fill after fill grows to this */
#define QSEL_BUFFERED_MAX	16384	/* while all buffers' room stays below this */
#define QSEL_KEEP_CHUNK_MAX	16384	/* the same two when what is read is kept */
#define QSEL_KEEP_BUFFERED_MAX	65536
#define QSEL_MAX_SYMCOLS	4
#define QSEL_SYM_MAX		(PROTO_SYM_MAX_NAME + 24)
#define QSEL_MAX_DISC		(1u << 20)	/* types --events and --fields go through */

static const char *const meta_cols[QMSG_META_COLS] = {
	"host", "cpu", "ts", "trace_ts", "pid", "comm"
};

/* One row buffered for the merge: its key and its encoded values. */
struct qsel_brow {
	int64_t ts;
	uint64_t rowid;
	size_t off, len;
	uint32_t nvals;
};

/*
 * One selected event type, or one format of it: its schema, bound filter,
 * store query, cursor. A type stored with several formats (hosts with
 * different kernels, or one that sent another format) is one qsel_type
 * per format, each with its own columns, filter and format text, so that
 * every row is bound, sent and rendered as its own host's format says;
 * they share the schema (the first one frees it).
 */
struct qsel_type {
	struct store_schema *schema;
	const struct store_fmt *fmt;	/* NULL: every column (hist, discovery) */
	bool *mine;			/* per schema column: fmt has it; NULL: all */
	bool shared;			/* schema is an earlier entry's */
	struct filter *filter;		/* bound to this type; NULL: every row */
	struct filter_field *fields;	/* the schema seen by the filter */
	size_t *col;			/* fields[i] is schema->cols[col[i]] */
	size_t nfields;
	struct store_query read;
	char event[512];		/* "system:name" */
	size_t ncols;			/* in a reply row */
	const char **cols;
	bool *skip;			/* per schema column: not sent (the request's omit) */
	size_t nsym;
	size_t symcol[QSEL_MAX_SYMCOLS];	/* schema columns to name */
	char symname[QSEL_MAX_SYMCOLS][32];	/* their "<field>_sym" */
	/* the merge */
	struct qmsg_writer *buf;
	struct qsel_brow *rows;
	size_t nrows, next;
	size_t chunk;			/* rows its next fill asks for at most */
	size_t cap;			/* rows @rows has room for */
	bool exhausted;
};

struct qsel {
	struct query q;
	bool per_fmt;			/* one qsel_type per format (select, count, tail) */
	bool names_only;		/* --events: schemas without columns */
	struct qsel_type *t;
	size_t n;
	struct store_window win;
	struct store_scope hosts;	/* the request's host list */
	struct store_hostspan *spans;	/* a snapshot's hosts and windows; NULL: none */
	size_t nspans;
	struct store_reader *st;		/* during a select: for symbol names */
	bool merging;			/* the merge's buffers and cursors are set */
	size_t room;			/* all buffers' chunks (fill_size()) */
	size_t *active;			/* the types not yet drained (select_merge()'s heap) */
	size_t nactive;
};

/* ---- resolving the selectors ---- */

struct resolve {
	struct qsel *c;
	struct store_reader *st;
	const struct store_scope *scope;	/* the asker's; NULL: every host */
	bool *bare_event;	/* per selector: a bare word that names events */
	bool *used;		/* per selector: it named a type */
	int ret;
};

static bool sel_names(const struct resolve *rs, size_t i, const struct store_schema *sc)
{
	const struct query_sel *s = &rs->c->q.sel[i];

	if (s->system || rs->bare_event[i])
		return query_sel_matches(s, sc->system, sc->name);
	return !fnmatch(s->event, sc->system, 0);	/* a subsystem by its name */
}

/*
 * Whether the asker may know of @sc: for a scoped one, a type none of its
 * hosts has is not stored (store_type_seen()). Return: 1 yes, 0 no, or a
 * negative code.
 */
static int type_seen(struct store_reader *st, const struct store_scope *scope,
		     const struct store_schema *sc)
{
	bool seen = true;
	int ret = scope ? store_type_seen(st, sc, scope, &seen) : 0;

	return ret < 0 ? ret : seen;
}

/* first pass: which bare words name events (the asker may know of) */
static int resolve_bare(void *ctx, const struct store_schema *sc)
{
	struct resolve *rs = ctx;
	int seen = -1;

	for (size_t i = 0; i < rs->c->q.nsel; i++) {
		if (rs->c->q.sel[i].system || rs->bare_event[i] ||
		    fnmatch(rs->c->q.sel[i].event, sc->name, 0))
			continue;
		if (seen < 0 && (seen = type_seen(rs->st, rs->scope, sc)) < 0)
			return seen;
		rs->bare_event[i] = seen;
	}
	return 0;
}

/* A copy of @sc's names, table, format and type id (store_schema_free() frees it). */
static int schema_dup(const struct store_schema *sc, struct store_schema **out)
{
	struct store_schema *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->system = strdup(sc->system);
	d->name = strdup(sc->name);
	d->table = strdup(sc->table);
	d->format = strdup(sc->format ? sc->format : "");
	d->type_id = sc->type_id;
	if (!d->system || !d->name || !d->table || !d->format) {
		store_schema_free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

/* second pass: the types the selectors name, each once */
static int resolve_add(void *ctx, const struct store_schema *sc)
{
	struct resolve *rs = ctx;
	struct qsel *c = rs->c;
	struct qsel_type *t;
	bool hit = false;
	int ret = 0;

	for (size_t i = 0; i < c->q.nsel && !hit; i++)
		hit = sel_names(rs, i, sc);
	if (!hit || (ret = type_seen(rs->st, rs->scope, sc)) <= 0)
		return ret;
	for (size_t i = 0; i < c->q.nsel; i++)
		if (sel_names(rs, i, sc))
			rs->used[i] = true;
	/* a reply's types; discovery answers rows (QMSG_MAX_ROWS), not types */
	if (c->n == (c->per_fmt ? QMSG_MAX_TYPES : QSEL_MAX_DISC))
		return TC_ERR_TOO_LONG;
	t = realloc(c->t, (c->n + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	c->t = t;
	t = &c->t[c->n];
	memset(t, 0, sizeof(*t));
	ret = c->names_only ? schema_dup(sc, &t->schema) :
			      store_schema_get(rs->st, sc->system, sc->name, &t->schema);
	if (ret == 0)
		c->n++;
	return ret;
}

struct suggest_ctx {
	struct suggest sg;
	struct store_reader *st;
	const struct store_scope *scope;
};

/* Whether @name is close to the word (suggest_add() would keep it alone). */
static bool suggest_close(const struct suggest *sg, const char *name)
{
	struct suggest one;

	suggest_init(&one, sg->word, sg->wlen);
	suggest_add(&one, name);
	return one.n > 0;
}

/*
 * store_schema_list() callback: offer a stored type's names to the
 * suggestion, if the asker may know of the type (asked only of close ones).
 */
static int suggest_type(void *ctx, const struct store_schema *sc)
{
	struct suggest_ctx *x = ctx;
	const char *names[2] = { sc->name, sc->system };
	char full[SUGGEST_NAME_MAX];
	size_t n = 2;
	int seen;

	if (memchr(x->sg.word, ':', x->sg.wlen)) {	/* SYSTEM:EVENT: the same form */
		if (snprintf(full, sizeof(full), "%s:%s", sc->system, sc->name) >=
		    (int)sizeof(full))
			return 0;
		names[0] = full;
		n = 1;
	}
	if (!suggest_close(&x->sg, names[0]) && (n == 1 || !suggest_close(&x->sg, names[1])))
		return 0;
	seen = type_seen(x->st, x->scope, sc);
	for (size_t i = 0; seen > 0 && i < n; i++)
		suggest_add(&x->sg, names[i]);
	return seen < 0 ? seen : 0;
}

/*
 * An unknown selector's error reply, with the closest stored names the
 * asker (@scope) may know of; 1.
 */
static int unknown_sel(struct store_reader *st, const struct store_scope *scope,
		       const struct query *q, size_t i, const char *text, struct proto_buf *out)
{
	char hint[SUGGEST_MAX * (SUGGEST_NAME_MAX + 4) + 32];
	char msg[300 + sizeof(hint)];
	struct suggest_ctx x = { .st = st, .scope = scope };

	suggest_init(&x.sg, text + q->sel[i].pos, q->sel[i].len);
	hint[0] = 0;
	if (q->sel[i].len < SUGGEST_NAME_MAX && !strpbrk(x.sg.word, "*?[") &&
	    store_schema_list(st, NULL, suggest_type, &x) == 0)
		suggest_format(&x.sg, hint, sizeof(hint));
	snprintf(msg, sizeof(msg), "%s: %.*s%s", tc_strerror(TC_ERR_UNKNOWN_EVENT),
		 (int)(q->sel[i].len < 200 ? q->sel[i].len : 200), text + q->sel[i].pos, hint);
	qmsg_reply_error(TC_ERR_UNKNOWN_EVENT, msg, (int)q->sel[i].pos, (int)q->sel[i].len, out);
	return 1;
}

/*
 * The types @c's selectors name, of those the asker (@scope) may know of:
 * 0; 1 with the error reply in @out; a negative code.
 */
static int resolve(struct store_reader *st, struct qsel *c, const struct store_scope *scope,
		   const char *text, struct proto_buf *out)
{
	struct resolve rs = { .c = c, .st = st, .scope = scope };
	int ret = -ENOMEM;

	rs.bare_event = calloc(c->q.nsel, sizeof(bool));
	rs.used = calloc(c->q.nsel, sizeof(bool));
	if (rs.bare_event && rs.used)
		ret = store_schema_list(st, NULL, resolve_bare, &rs);
	if (ret == 0)
		ret = store_schema_list(st, NULL, resolve_add, &rs);
	if (ret == TC_ERR_UNKNOWN_EVENT)	/* nothing stored at all */
		ret = 0;
	for (size_t i = 0; ret == 0 && i < c->q.nsel; i++)
		if (!rs.used[i])
			ret = unknown_sel(st, scope, &c->q, i, text, out);
	if (ret == TC_ERR_TOO_LONG) {
		qmsg_reply_error(ret, "the query selects more than " "4096 event types", 0,
				 (int)strcspn(text, " \t"), out);
		ret = 1;
	}
	free(rs.bare_event);
	free(rs.used);
	return ret;
}

/* ---- binding ---- */

static enum filter_kind kind_of(enum store_kind k)
{
	return k == STORE_SIGNED ? FILTER_SIGNED :
	       k == STORE_UNSIGNED ? FILTER_UNSIGNED : FILTER_STRING;
}

static bool is_int(enum store_kind k)
{
	return k == STORE_SIGNED || k == STORE_UNSIGNED;
}

/*
 * Blob fields cannot be filtered on; everything else can. A format's
 * fields are its own columns; without one (every column), a name with
 * columns of several kinds is its integer column, else its first.
 */
static int make_schema(struct qsel_type *t, struct filter_schema *fs)
{
	const struct store_schema *sc = t->schema;
	size_t i, n = 0;

	t->fields = calloc(sc->ncols + 1, sizeof(*t->fields));
	t->col = calloc(sc->ncols + 1, sizeof(*t->col));
	if (!t->fields || !t->col)
		return -ENOMEM;
	for (i = 0; i < sc->ncols; i++) {
		size_t k;

		if (sc->cols[i].kind == STORE_BLOB || (t->mine && !t->mine[i]))
			continue;
		for (k = 0; k < n && strcmp(t->fields[k].name, sc->cols[i].name); k++)
			;
		if (k < n && (is_int(sc->cols[t->col[k]].kind) || !is_int(sc->cols[i].kind)))
			continue;
		t->col[k] = i;
		t->fields[k].name = sc->cols[i].name;
		t->fields[k].kind = kind_of(sc->cols[i].kind);
		t->fields[k].size = 8;
		if (k == n)
			n++;
	}
	fs->fields = t->fields;
	fs->count = t->nfields = n;
	return 0;
}

/* The columns of format @t->fmt, as t->mine (none when it has every column). */
static int make_mine(struct qsel_type *t)
{
	const struct store_fmt *f = t->fmt;

	if (!f || t->schema->nfmts < 2)
		return 0;
	t->mine = calloc(t->schema->ncols + 1, sizeof(*t->mine));
	if (!t->mine)
		return -ENOMEM;
	for (size_t k = 0; k < f->ncols; k++)
		t->mine[f->cols[k]] = true;
	return 0;
}

/*
 * One entry per format of each type that has several (see struct
 * qsel_type). At most QMSG_MAX_TYPES entries in all.
 */
static int expand_fmts(struct qsel *c)
{
	size_t n = 0, k = 0;
	struct qsel_type *t;

	for (size_t i = 0; i < c->n; i++)
		n += c->t[i].schema->nfmts > 1 ? c->t[i].schema->nfmts : 1;
	if (n == c->n) {
		for (size_t i = 0; i < c->n; i++)
			c->t[i].fmt = c->t[i].schema->nfmts ? &c->t[i].schema->fmts[0] : NULL;
		return 0;
	}
	if (n > QMSG_MAX_TYPES)
		return TC_ERR_TOO_LONG;
	t = calloc(n, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		struct store_schema *sc = c->t[i].schema;

		for (size_t f = 0; f < (sc->nfmts > 1 ? sc->nfmts : 1); f++, k++) {
			t[k].schema = sc;
			t[k].fmt = sc->nfmts ? &sc->fmts[f] : NULL;
			t[k].shared = f > 0;
		}
	}
	free(c->t);
	c->t = t;
	c->n = n;
	for (size_t i = 0; i < c->n; i++)
		if (make_mine(&c->t[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* The hosts a query may read (its host globs and the scope), by id. */
struct seen_hosts {
	uint64_t *id;
	size_t n, cap;
};

static int seen_host(void *ctx, const struct store_host_info *h)
{
	struct seen_hosts *sh = ctx;
	uint64_t *id = util_grow(sh->id, &sh->cap, sh->n, sizeof(*id), 16);

	if (!id)
		return -ENOMEM;
	sh->id = id;
	sh->id[sh->n++] = h->id;
	return 0;
}

/* Whether a host @sh holds sent format @f (one sent before 0013: maybe). */
static bool fmt_seen(const struct store_fmt *f, const struct seen_hosts *sh)
{
	if (!f->nhosts)
		return true;
	for (size_t i = 0; i < f->nhosts; i++)
		for (size_t k = 0; k < sh->n; k++)
			if (f->host_ids[i] == sh->id[k])
				return true;
	return false;
}

static void type_free(struct qsel_type *t);

/*
 * With a host selection or a scope, the formats no host it allows sent
 * are left out: they have no rows to give, and their text is another
 * host's (one such answer is of one format again, in the one-type shape).
 */
static int drop_unseen(struct store_reader *st, struct qsel *c, const struct qmsg_request *r,
		       const struct store_scope *scope)
{
	struct store_scope hosts = { .globs = (const char *const *)r->hosts, .n = r->nhosts };
	struct store_query q = { .host_glob = r->host, .hosts = r->nhosts ? &hosts : NULL,
				 .scope = scope };
	struct seen_hosts sh = { 0 };
	bool any = false;
	size_t k = 0;
	int ret;

	for (size_t i = 0; i < c->n && !any; i++)
		any = c->t[i].mine != NULL;
	if (!any || (!r->host && !r->nhosts && !scope))
		return 0;
	ret = store_hosts(st, &q, seen_host, &sh);
	for (size_t i = 0; ret == 0 && i < c->n; i++) {
		struct qsel_type *t = &c->t[i];

		if (!t->mine || fmt_seen(t->fmt, &sh)) {
			c->t[k++] = *t;
			continue;
		}
		for (size_t j = i + 1; !t->shared && j < c->n; j++)
			if (c->t[j].schema == t->schema) {	/* hand the schema on */
				c->t[j].shared = false;
				t->shared = true;
			}
		type_free(t);	/* (the last entry of a schema frees it) */
	}
	if (ret == 0)
		c->n = k;
	free(sh.id);
	return ret;
}

static void type_free(struct qsel_type *t)
{
	filter_free(t->filter);
	free(t->fields);
	free(t->col);
	free(t->cols);
	free(t->skip);
	free(t->mine);
	free(t->rows);
	qmsg_writer_free(t->buf);
	if (!t->shared)
		store_schema_free(t->schema);
}

/*
 * The formats of a type the filter cannot be bound to (a field it lacks,
 * or of another kind) match no row when another format of the type takes
 * it: each host's rows are filtered as that host's kernel would. Only
 * when no format of the type takes it does the type follow the
 * subsystem-filter rule above. Drops those entries (@failed per entry).
 */
static void drop_unbound(struct qsel *c, unsigned char *failed)
{
	size_t k = 0;

	for (size_t i = 0; i < c->n; i++)	/* bit 1: failed, and a sibling took it */
		for (size_t j = 0; j < c->n && failed[i]; j++)
			if (c->t[j].schema == c->t[i].schema && !failed[j])
				failed[i] |= 2;
	for (size_t i = 0; i < c->n; i++)
		failed[i] = failed[i] & 2;
	for (size_t i = 0; i < c->n; i++) {
		if (!failed[i] || c->t[i].shared)
			continue;
		for (size_t j = i + 1; j < c->n; j++)	/* hand the schema on */
			if (c->t[j].schema == c->t[i].schema && !failed[j]) {
				c->t[j].shared = false;
				break;
			}
		c->t[i].shared = true;
	}
	for (size_t i = 0; i < c->n; i++) {
		if (failed[i])
			type_free(&c->t[i]);
		else
			c->t[k++] = c->t[i];
	}
	c->n = k;
}

/*
 * Bind a copy of the filter to each type (see the header comment for the
 * types it cannot be bound to). Return: 0; 1 with the error reply in @out;
 * a negative code.
 */
static int bind_all(struct qsel *c, struct proto_buf *out)
{
	struct filter_error err = { 0 }, first = { 0 };
	unsigned char *failed = calloc(c->n + 1, sizeof(*failed));
	size_t bound = 0;
	int ret = failed ? 0 : -ENOMEM;

	for (size_t i = 0; ret == 0 && i < c->n; i++) {
		struct qsel_type *t = &c->t[i];
		struct filter_schema fs;
		struct filter_error e = { 0 };

		ret = make_schema(t, &fs);
		if (ret < 0 || !c->q.filter)
			continue;
		ret = filter_dup(c->q.filter, &t->filter);
		if (ret < 0)
			break;
		ret = filter_bind(t->filter, &fs, &e);
		if (ret == -ENOMEM)
			break;
		if (ret < 0) {
			if (!first.code)
				first = e;
			filter_free(t->filter);
			t->filter = NULL;
			failed[i] = true;
			ret = 0;
		} else {
			bound++;
		}
	}
	if (ret == 0 && c->q.filter && !bound) {
		err = first;
		qmsg_reply_error(err.code, err.msg[0] ? err.msg : tc_strerror(err.code),
				 (int)(err.pos + c->q.filter_offset), (int)err.len, out);
		ret = 1;
	}
	if (ret == 0 && c->q.filter)
		drop_unbound(c, failed);
	free(failed);
	return ret;
}

/* ---- the store queries ---- */

/* What the types' store queries take from @r and @scope (pointers into them). */
static void set_refs(struct qsel *c, const struct qmsg_request *r,
		     const struct store_scope *scope)
{
	c->win.from_ts = r->from_ts || r->from_end ? r->from_ts : INT64_MIN;
	c->win.to_ts = r->to_ts || r->to_end ? r->to_ts : INT64_MAX;
	c->hosts = (struct store_scope){ .globs = (const char *const *)r->hosts, .n = r->nhosts };
	for (size_t i = 0; i < c->n; i++) {
		struct store_query *q = &c->t[i].read;

		q->host_glob = r->host;
		q->hosts = r->nhosts ? &c->hosts : NULL;
		q->scope = scope;
		q->cpus = r->cpus;
		q->ncpus = r->ncpus;
		q->win = r->from_ts || r->to_ts || r->from_end || r->to_end ? &c->win : NULL;
		q->spans = c->spans;
		q->nspans = c->nspans;
	}
}

#define QSEL_SPANS_MAX	4096	/* hosts of one snapshot a query reads */
/*
 * A snapshot's host is read by its events' trace_ts, exact; the wall-clock
 * window only finds them through the time index, so it is this much wider
 * (a clock measurement may move the wall-clock times the end was given).
 */
#define QSEL_SPAN_SLACK_NS	1000000000LL

static int span_add(void *ctx, const struct store_snapshot *sn)
{
	struct qsel *c = ctx;

	if (!sn->window)
		return 0;	/* asked, not done, or it held no event */
	if (c->nspans == QSEL_SPANS_MAX)
		return TC_ERR_TOO_LONG;
	c->spans[c->nspans++] = (struct store_hostspan){
		.host_id = sn->host_id, .trace_from = sn->first_trace, .trace_to = sn->last_trace,
		.from_ts = sn->first_ts > INT64_MIN + QSEL_SPAN_SLACK_NS ?
			   sn->first_ts - QSEL_SPAN_SLACK_NS : INT64_MIN,
		.to_ts = sn->last_ts < INT64_MAX - QSEL_SPAN_SLACK_NS ?
			 sn->last_ts + QSEL_SPAN_SLACK_NS : INT64_MAX };
	return 0;
}

/*
 * The request's "snapshot": its hosts (within @scope) and their windows,
 * the only rows the query reads; a snapshot unknown or without a window
 * reads none.
 */
static int load_spans(struct store_reader *st, struct qsel *c, const struct qmsg_request *r,
		      const struct store_scope *scope)
{
	const struct store_query q = { .scope = scope };

	if (!r->snapshot_id)
		return 0;
	c->spans = calloc(QSEL_SPANS_MAX, sizeof(*c->spans));
	if (!c->spans)
		return -ENOMEM;
	return store_snapshots(st, &q, r->snapshot_id, span_add, c);
}

static void set_queries(struct qsel *c, const struct qmsg_request *r,
			const struct store_scope *scope)
{
	for (size_t i = 0; i < c->n; i++) {
		struct qsel_type *t = &c->t[i];

		t->read = (struct store_query){
			.schema = t->schema, .filter = t->filter, .field_col = t->col,
			.nfields = t->nfields, .reverse = r->reverse,
			.fmt = t->mine ? t->fmt->id : 0,
		};
		snprintf(t->event, sizeof(t->event), "%s:%s", t->schema->system, t->schema->name);
	}
	set_refs(c, r, scope);
}

/*
 * Address fields named at query time: in ftrace events (the kernel's
 * function tracers and our programs' fgraph runtime), "ip", "parent_ip"
 * and "func" are code addresses; each gets a column "<field>_sym" after
 * the fields, with "name" or "name+0xoff" (store_symbol_name()), nil when
 * no symbol covers it.
 */
static const char *const sym_fields[] = { "ip", "parent_ip", "func" };

static void find_symcols(struct qsel_type *t)
{
	const struct store_schema *sc = t->schema;

	if (strcmp(sc->system, "ftrace"))
		return;
	for (size_t i = 0; i < sc->ncols && t->nsym < QSEL_MAX_SYMCOLS; i++)
		for (size_t k = 0; k < sizeof(sym_fields) / sizeof(sym_fields[0]); k++)
			if (!strcmp(sc->cols[i].name, sym_fields[k]) && (!t->mine || t->mine[i]) &&
			    sc->cols[i].kind != STORE_STRING && sc->cols[i].kind != STORE_BLOB) {
				snprintf(t->symname[t->nsym], sizeof(t->symname[0]), "%s_sym",
					 sym_fields[k]);
				t->symcol[t->nsym++] = i;
			}
}

/*
 * Each type's symbol columns, and which of its columns the request's omit
 * list leaves out (none when it is empty; never a field a symbol column
 * names).
 */
static int set_skips(struct qsel *c, const struct qmsg_request *r)
{
	for (size_t i = 0; i < c->n; i++) {
		struct qsel_type *t = &c->t[i];

		find_symcols(t);
		if (!r->nomit && !t->mine)
			continue;
		t->skip = calloc(t->schema->ncols + 1, sizeof(*t->skip));
		if (!t->skip)
			return -ENOMEM;
		for (size_t k = 0; k < t->schema->ncols; k++) {
			t->skip[k] = t->mine && !t->mine[k];	/* another format's column */
			for (uint32_t o = 0; o < r->nomit && !t->skip[k]; o++)
				t->skip[k] = !strcmp(t->schema->cols[k].name, r->omit[o]);
		}
		for (size_t k = 0; k < t->nsym; k++)
			t->skip[t->symcol[k]] = false;
		t->read.skip = t->skip;
	}
	return 0;
}

static int newest_row(void *ctx, const struct store_row *row)
{
	int64_t *newest = ctx;

	if (row->ts > *newest)
		*newest = row->ts;
	return 0;
}

/* @a + @b, held at the int64 limits */
static int64_t add_sat(int64_t a, int64_t b)
{
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	return a + b;
}

/*
 * Make the end-relative sides of the window absolute: "end" is the ts of
 * the newest row of the selected types the asker may see (hosts, CPUs,
 * scope; not the filter). No such row: an empty window.
 */
static int resolve_end(struct store_reader *st, struct qsel *c, const struct qmsg_request *r)
{
	int64_t newest = INT64_MIN;
	int ret = 0;

	if (!r->from_end && !r->to_end)
		return 0;
	for (size_t i = 0; ret >= 0 && i < c->n; i++) {
		struct store_query q = c->t[i].read;

		q.filter = NULL;
		q.win = NULL;
		q.reverse = true;
		q.limit = 1;
		q.after_rowid = 0;
		ret = store_select(st, &q, newest_row, &newest);
	}
	if (ret < 0)
		return ret;
	if (newest == INT64_MIN) {
		c->win.from_ts = INT64_MAX;
		c->win.to_ts = INT64_MIN;
		return 0;
	}
	if (r->from_end)
		c->win.from_ts = add_sat(newest, r->from_ts);
	if (r->to_end)
		c->win.to_ts = add_sat(newest, r->to_ts);
	return 0;
}

/* ---- compile ---- */

int qsel_compile(struct store_reader *st, const struct qmsg_request *r,
		 const struct store_scope *scope, struct qsel **out, struct proto_buf *reply)
{
	struct filter_error err = { 0 };
	struct qsel *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = query_parse(r->query, &c->q, &err);
	if (ret < 0) {
		qmsg_reply_error(ret, err.msg[0] ? err.msg : tc_strerror(ret),
				 (int)err.pos, (int)err.len, reply);
		ret = 1;
	}
	c->per_fmt = r->op == QOP_SELECT || r->op == QOP_COUNT || qmsg_op_is_tail(r->op);
	c->names_only = r->op == QOP_EVENTS && !c->q.filter;
	if (ret == 0)
		ret = resolve(st, c, scope, r->query, reply);
	if (ret == 0 && c->per_fmt && (ret = expand_fmts(c)) == TC_ERR_TOO_LONG) {
		qmsg_reply_error(ret, "the query selects more than 4096 event formats", 0,
				 (int)strcspn(r->query, " \t"), reply);
		ret = 1;
	}
	if (ret == 0 && c->per_fmt)
		ret = drop_unseen(st, c, r, scope);
	if (ret == 0)
		ret = bind_all(c, reply);
	if (ret == 0 && (ret = load_spans(st, c, r, scope)) > 0)
		ret = -EIO;	/* (span_add() returns no positive value) */
	if (ret == 0) {
		set_queries(c, r, scope);
		ret = set_skips(c, r) ?: resolve_end(st, c, r);
	}
	if (ret) {
		qsel_free(c);
		return ret;
	}
	*out = c;
	return 0;
}

void qsel_free(struct qsel *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		type_free(&c->t[i]);
	free(c->t);
	free(c->active);
	free(c->spans);
	query_free(&c->q);
	free(c);
}

const char *qsel_event(const struct qsel *c)
{
	for (size_t i = 1; i < c->n; i++)
		if (c->t[i].schema != c->t[0].schema)
			return NULL;	/* several types (formats of one type are one) */
	return c->n ? c->t[0].event : NULL;
}

size_t qsel_ntypes(const struct qsel *c)
{
	return c->n;
}

const struct store_schema *qsel_schema(const struct qsel *c, size_t i)
{
	return c->t[i].schema;
}

const struct store_query *qsel_read(const struct qsel *c, size_t i)
{
	return &c->t[i].read;
}

int qsel_count(struct store_reader *st, struct qsel *c, uint64_t *n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < c->n; i++) {
		uint64_t k = 0;
		int ret = store_count(st, &c->t[i].read, &k);

		if (ret < 0)
			return ret;
		sum += k;
	}
	*n = sum;
	return 0;
}

/* ---- rows ---- */

/*
 * The reply columns of @t: the meta columns, its fields but those skipped,
 * its symbol columns (set_skips() found them).
 */
static int make_cols(struct qsel_type *t)
{
	size_t i, n = 0, ncols = t->schema->ncols;

	if (t->cols)
		return 0;	/* a resumed page's (qsel_resume()) */
	if (ncols > QMSG_MAX_COLS - QMSG_META_COLS - QSEL_MAX_SYMCOLS)
		return TC_ERR_TOO_LONG;
	t->cols = calloc(QMSG_META_COLS + ncols + t->nsym, sizeof(*t->cols));
	if (!t->cols)
		return -ENOMEM;
	memcpy(t->cols, meta_cols, sizeof(meta_cols));
	for (i = 0; i < ncols; i++)
		if (!t->skip || !t->skip[i])
			t->cols[QMSG_META_COLS + n++] = t->schema->cols[i].name;
	for (i = 0; i < t->nsym; i++)
		t->cols[QMSG_META_COLS + n++] = t->symname[i];
	t->ncols = QMSG_META_COLS + n;
	return 0;
}

/* The format text @t's rows are sent with: its own, else the type's latest. */
static const char *fmt_text(const struct qsel_type *t)
{
	return t->mine ? t->fmt->text : t->schema->format;
}

static void put_value(struct qmsg_writer *w, const struct store_value *v)
{
	switch (v->kind) {
	case STORE_SIGNED: qmsg_put_int(w, v->i); break;
	case STORE_UNSIGNED: qmsg_put_uint(w, v->u); break;
	case STORE_STRING: qmsg_put_str(w, v->str.s, v->str.len); break;
	case STORE_BLOB: qmsg_put_bin(w, v->blob.p, v->blob.len); break;
	default: qmsg_put_nil(w); break;
	}
}

static void put_symbol(struct store_reader *st, struct qmsg_writer *w, const struct store_row *row,
		       size_t col)
{
	const struct store_value *v = &row->vals[col];
	char name[QSEL_SYM_MAX];
	uint64_t addr = v->kind == STORE_SIGNED ? (uint64_t)v->i : v->u;

	if ((row->null && row->null[col]) ||
	    (v->kind != STORE_SIGNED && v->kind != STORE_UNSIGNED) ||
	    store_symbol_name(st, row->host_id, row->pid, row->ts, addr, name,
			      sizeof(name)) < 0)
		qmsg_put_nil(w);
	else
		qmsg_put_str(w, name, strlen(name));
}

/* @row of @t as reply values into @w. */
static void put_row(struct store_reader *st, const struct qsel_type *t, struct qmsg_writer *w,
		    const struct store_row *row)
{
	size_t i;

	qmsg_put_str(w, row->host, strlen(row->host));
	qmsg_put_uint(w, row->cpu);
	qmsg_put_int(w, row->ts);
	qmsg_put_uint(w, row->trace_ts);
	qmsg_put_int(w, row->pid);
	if (row->comm)
		qmsg_put_str(w, row->comm, strlen(row->comm));
	else
		qmsg_put_nil(w);
	for (i = 0; i < row->nvals; i++) {
		if (t->skip && t->skip[i])
			continue;
		if (row->null && row->null[i])
			qmsg_put_nil(w);
		else
			put_value(w, &row->vals[i]);
	}
	for (i = 0; i < t->nsym; i++)
		put_symbol(st, w, row, t->symcol[i]);
}

/* one type: rows straight into the reply */
struct one_ctx {
	struct store_reader *st;
	const struct qsel_type *t;
	struct qmsg_writer *w;
	uint32_t limit;
	struct qsel_page *pg;
};

static int one_row(void *arg, const struct store_row *row)
{
	struct one_ctx *o = arg;

	if (qmsg_reply_rows(o->w) == o->limit) {
		o->pg->more = true;
		return 1;
	}
	put_row(o->st, o->t, o->w, row);
	o->pg->last_ts = row->ts;
	o->pg->last_id = row->rowid;
	return 0;
}

static int select_one(struct store_reader *st, const struct qmsg_request *r, struct qsel *c,
		      uint32_t limit, struct qmsg_writer **w, struct qsel_page *pg)
{
	struct qsel_type *t = &c->t[0];
	struct one_ctx o = { .st = st, .t = t, .limit = limit, .pg = pg };
	int ret = qmsg_reply_begin(&o.w, t->event, (uint32_t)t->ncols, t->cols);

	if (ret < 0)
		return ret;
	qmsg_reply_format(o.w, fmt_text(t));
	t->read.after_ts = r->after_ts;
	t->read.after_rowid = r->after_id;
	t->read.limit = limit + 1;
	ret = store_select(st, &t->read, one_row, &o);
	if (ret < 0) {
		qmsg_writer_free(o.w);
		return ret;
	}
	pg->rows = qmsg_reply_rows(o.w);
	*w = o.w;
	return 0;
}

/* several types: the merge */

struct fill_ctx {
	struct store_reader *st;
	struct qsel_type *t;
};

static int fill_row(void *arg, const struct store_row *row)
{
	struct fill_ctx *f = arg;
	struct qsel_type *t = f->t;
	struct qsel_brow *b;

	if (t->nrows == t->cap) {	/* a whole window past the chunk (limit_soft) */
		struct qsel_brow *rows = realloc(t->rows, 2 * t->cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		t->cap *= 2;
	}
	b = &t->rows[t->nrows++];

	b->ts = row->ts;
	b->rowid = row->rowid;
	b->off = qmsg_body_len(t->buf);
	put_row(f->st, t, t->buf, row);
	b->len = qmsg_body_len(t->buf) - b->off;
	b->nvals = (uint32_t)t->ncols;
	return 0;
}

/* Refill @t's empty buffer from its cursor with up to @chunk rows. */
static int fill(struct store_reader *st, struct qsel_type *t, size_t chunk)
{
	struct fill_ctx f = { .st = st, .t = t };
	int ret;

	if (chunk > t->cap) {
		struct qsel_brow *rows = realloc(t->rows, chunk * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		t->cap = chunk;
	}
	qmsg_body_reset(t->buf);
	t->nrows = t->next = 0;
	t->read.limit = chunk;
	t->read.limit_soft = true;	/* fill_row() keeps what comes past it */
	ret = store_select(st, &t->read, fill_row, &f);
	if (ret < 0)
		return ret;
	if (t->nrows < chunk)
		t->exhausted = true;
	if (t->nrows) {	/* the cursor moves past what was read */
		t->read.after_ts = t->rows[t->nrows - 1].ts;
		t->read.after_rowid = t->rows[t->nrows - 1].rowid;
	}
	return 0;
}

/* @v - 1, held at INT64_MIN (no row has that ts) */
static int64_t sub1(int64_t v)
{
	return v == INT64_MIN ? v : v - 1;
}

/* The cursor of @t for a page resuming after (@r's after_ts, after_type, after_id). */
static void cursor_init(struct qsel_type *t, const struct qmsg_request *r)
{
	int64_t type = t->schema->type_id;

	t->read.after_ts = 0;
	t->read.after_rowid = 0;
	if (!r->after_id)
		return;
	if (type == r->after_type) {
		t->read.after_ts = r->after_ts;
		t->read.after_rowid = r->after_id;
	} else if ((type < r->after_type) == !r->reverse) {
		/*
		 * before the last type in the walk: past every row of after_ts,
		 * (ts, id) > (after_ts, MAX) forwards, (ts, id) < (after_ts - 1,
		 * MAX) backwards
		 */
		t->read.after_ts = r->reverse ? sub1(r->after_ts) : r->after_ts;
		t->read.after_rowid = INT64_MAX;
	} else {
		/*
		 * after it: from after_ts itself on, (ts, id) > (after_ts - 1,
		 * MAX) forwards, (ts, id) < (after_ts, MAX) backwards
		 */
		t->read.after_ts = r->reverse ? r->after_ts : sub1(r->after_ts);
		t->read.after_rowid = INT64_MAX;
	}
}

/* Whether the head of @a comes before the head of @b in the walk. */
static bool before(const struct qsel_type *a, const struct qsel_type *b, bool reverse)
{
	const struct qsel_brow *x = &a->rows[a->next], *y = &b->rows[b->next];
	int cmp = x->ts != y->ts ? (x->ts < y->ts ? -1 : 1) :
		  a->schema->type_id != b->schema->type_id ?
		  (a->schema->type_id < b->schema->type_id ? -1 : 1) :
		  (x->rowid < y->rowid ? -1 : x->rowid > y->rowid);

	return reverse ? cmp > 0 : cmp < 0;
}

/*
 * Begin reply *@w with @c's types (their events, columns and formats, as
 * make_cols() left them) through @begin: qmsg_reply_begin_types() for a
 * page of several, qmsg_reply_begin_tail() for the tail.
 */
static int begin_types(struct qsel *c,
		       int (*begin)(struct qmsg_writer **w, uint32_t ntypes,
				    const char *const *events, const uint32_t *ncols,
				    const char *const *const *cols),
		       struct qmsg_writer **w)
{
	const char **events = calloc(c->n + 1, sizeof(*events));
	const char *const **cols = calloc(c->n + 1, sizeof(*cols));
	uint32_t *ncols = calloc(c->n + 1, sizeof(*ncols));
	int ret = events && cols && ncols ? 0 : -ENOMEM;

	for (size_t i = 0; ret == 0 && i < c->n; i++) {
		events[i] = c->t[i].event;
		cols[i] = c->t[i].cols;
		ncols[i] = (uint32_t)c->t[i].ncols;
	}
	if (ret == 0)
		ret = begin(w, (uint32_t)c->n, events, ncols, cols);
	for (size_t i = 0; ret == 0 && i < c->n; i++)
		qmsg_reply_type_format(*w, (uint32_t)i, fmt_text(&c->t[i]));
	free(events);
	free(cols);
	free(ncols);
	return ret;
}

/*
 * The merge's buffers and cursors for @r (none to set on a resumed page),
 * and the page's reply begun in *@w.
 */
static int merge_init(struct qsel *c, const struct qmsg_request *r, size_t chunk,
		      struct qmsg_writer **w)
{
	int ret = 0;

	if (c->merging)
		return begin_types(c, qmsg_reply_begin_types, w);
	c->active = calloc(c->n, sizeof(*c->active));
	if (!c->active)
		return -ENOMEM;
	for (size_t i = 0; ret == 0 && i < c->n; i++) {
		struct qsel_type *t = &c->t[i];

		cursor_init(t, r);
		t->chunk = t->cap = chunk;
		t->rows = calloc(chunk, sizeof(*t->rows));
		ret = t->rows ? qmsg_reply_begin(&t->buf, NULL, (uint32_t)t->ncols, t->cols) :
				-ENOMEM;
		c->active[c->nactive++] = i;
	}
	c->room = chunk * c->n;
	c->merging = ret == 0;
	return ret ? ret : begin_types(c, qmsg_reply_begin_types, w);
}

/*
 * The rows @t's next fill asks for: its chunk, doubled when its last fill
 * came full and was all taken (a type read fill after fill: fewer, larger
 * reads) while the room of all buffers (*@room) stays below
 * QSEL_BUFFERED_MAX (QSEL_KEEP_* with @keep); never more than the page still needs, one more to
 * tell whether more follow (what a page leaves unsent is read again),
 * unless the page's state may be kept for the next (@keep: qsel_keepable()).
 */
static size_t fill_size(struct qsel_type *t, size_t *room, uint32_t limit, uint32_t sent,
			bool keep)
{
	size_t max = keep ? QSEL_KEEP_CHUNK_MAX : QSEL_CHUNK_MAX,
	       grow = t->chunk * 2 > max ? max : t->chunk * 2;

	/* (a fill may bring more than its chunk: limit_soft) */
	if (t->nrows >= t->chunk && grow > t->chunk &&
	    *room - t->chunk + grow <= (keep ? QSEL_KEEP_BUFFERED_MAX : QSEL_BUFFERED_MAX)) {
		*room = *room - t->chunk + grow;
		t->chunk = grow;
	}
	if (keep)
		return t->chunk;
	return (size_t)(limit - sent) + 1 < t->chunk ? (size_t)(limit - sent) + 1 : t->chunk;
}

/* Whether active type @a comes out before active type @b (the merge's order, before()). */
static bool heap_before(const struct qsel *c, size_t a, size_t b, bool reverse)
{
	return before(&c->t[c->active[a]], &c->t[c->active[b]], reverse);
}

/* The active type at @i moved down the heap to its place. */
static void heap_down(struct qsel *c, size_t i, bool reverse)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, tmp;

		if (l < c->nactive && heap_before(c, l, m, reverse))
			m = l;
		if (l + 1 < c->nactive && heap_before(c, l + 1, m, reverse))
			m = l + 1;
		if (m == i)
			return;
		tmp = c->active[i];
		c->active[i] = c->active[m];
		c->active[m] = tmp;
		i = m;
	}
}

/*
 * The types still to drain, each with a row in hand (an empty one
 * filled; a drained one leaves the list), made a heap by before().
 */
static int heap_make(struct store_reader *st, struct qsel *c, uint32_t limit, uint32_t sent,
		     bool keep, bool reverse)
{
	size_t kept = 0;
	int ret = 0;

	for (size_t a = 0; ret == 0 && a < c->nactive; a++) {
		struct qsel_type *t = &c->t[c->active[a]];

		if (t->next == t->nrows && !t->exhausted)
			ret = fill(st, t, fill_size(t, &c->room, limit, sent, keep));
		if (ret == 0 && t->next == t->nrows && t->exhausted)
			continue;
		c->active[kept++] = c->active[a];
	}
	if (ret < 0)
		return ret;
	c->nactive = kept;
	for (size_t i = kept / 2; i-- > 0;)
		heap_down(c, i, reverse);
	return 0;
}

/*
 * A page of the types' rows merged in before()'s order: the heap's top
 * gives the next row (log n comparisons a row, not one per type: an
 * export of every type ("*") passes millions), refilled when its
 * buffer is empty, out of the heap when it is drained.
 */
static int select_merge(struct store_reader *st, const struct qmsg_request *r, struct qsel *c,
			uint32_t limit, struct qmsg_writer **out, struct qsel_page *pg)
{
	size_t chunk = QSEL_BUFFERED / c->n;
	struct qmsg_writer *w = NULL;
	bool keep = qsel_keepable(c, r);
	int ret;

	chunk = chunk < 16 ? 16 : chunk > QSEL_CHUNK ? QSEL_CHUNK : chunk;
	if (chunk > (size_t)limit + 1)
		chunk = (size_t)limit + 1;
	ret = merge_init(c, r, chunk, &w);
	if (ret == 0)
		ret = heap_make(st, c, limit, 0, keep, r->reverse);
	while (ret == 0 && c->nactive) {
		struct qsel_type *best = &c->t[c->active[0]];
		const struct qsel_brow *b;

		if (qmsg_reply_rows(w) == limit) {
			pg->more = true;
			break;
		}
		b = &best->rows[best->next++];
		qmsg_put_type(w, (uint32_t)(best - c->t));
		qmsg_put_raw(w, (const char *)qmsg_body(best->buf) + b->off, b->len, b->nvals);
		pg->last_ts = b->ts;
		pg->last_id = b->rowid;
		pg->last_type = best->schema->type_id;
		if (best->next == best->nrows && !best->exhausted)
			ret = fill(st, best, fill_size(best, &c->room, limit, qmsg_reply_rows(w),
							keep));
		if (ret == 0 && best->next == best->nrows)	/* drained: out of the heap */
			c->active[0] = c->active[--c->nactive];
		if (ret == 0)
			heap_down(c, 0, r->reverse);
	}
	if (ret < 0) {
		qmsg_writer_free(w);
		return ret;
	}
	pg->rows = qmsg_reply_rows(w);
	*out = w;
	return 0;
}

bool qsel_keepable(const struct qsel *c, const struct qmsg_request *r)
{
	return r->op == QOP_SELECT && c->n > 1 && !r->from_end && !r->to_end;
}

int qsel_resume(struct qsel *c, const struct qmsg_request *r, const struct store_scope *scope)
{
	if (!c->merging || !qsel_keepable(c, r) || c->t[0].read.reverse != r->reverse)
		return -EINVAL;
	set_refs(c, r, scope);	/* the cursors and buffers stay */
	return 0;
}

int qsel_begin_tail(struct qsel *c, struct qmsg_writer **w)
{
	int ret = 0;

	for (size_t i = 0; ret == 0 && i < c->n; i++)
		ret = make_cols(&c->t[i]);
	return ret ? ret : begin_types(c, qmsg_reply_begin_tail, w);
}

void qsel_put_row(struct store_reader *st, const struct qsel *c, size_t i, struct qmsg_writer *w,
		  const struct store_row *row)
{
	qmsg_put_type(w, (uint32_t)i);
	put_row(st, &c->t[i], w, row);
}

int qsel_select(struct store_reader *st, const struct qmsg_request *r, struct qsel *c,
		struct qmsg_writer **w, struct qsel_page *pg)
{
	uint32_t limit = r->limit ? r->limit : QMSG_MAX_ROWS;
	int ret = 0;

	memset(pg, 0, sizeof(*pg));
	for (size_t i = 0; ret == 0 && i < c->n; i++)
		ret = make_cols(&c->t[i]);
	if (ret < 0)
		return ret;
	if (c->n == 1)
		return select_one(st, r, c, limit, w, pg);
	if (c->n == 0) {
		*w = NULL;
		return qmsg_reply_begin_types(w, 0, NULL, NULL, NULL);
	}
	return select_merge(st, r, c, limit, w, pg);
}
