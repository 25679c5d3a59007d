/*
 * queryd.c - the query endpoint (see queryd.h and proto/PROTOCOL.md,
 * "Query endpoint").
 *
 * Each request is parsed again here (a client is never trusted), the
 * filter is bound to the event's stored fields, and the store is asked
 * for the rows it matches (struct store_query: the bound filter, host,
 * time range and keyset position on (ts, rowid)); the store compiles it.
 */
#include "config.h"

#define LOG_PREFIX "query"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/transport/tcp/tcp.h>

#include "common/filter.h"
#include "common/log.h"
#include "common/query.h"
#include "common/tc_error.h"
#include "proto/symbols.h"
#include "proto/qmsg.h"
#include "server/queryd.h"
#include "server/store/store.h"

#define QUERYD_POLL_MS		200

struct queryd {
	nng_socket sock;
	pthread_t thread;
	atomic_bool stop;
	struct store *store;
	pthread_mutex_t ingest_lock;
	struct queryd_ingest ingest;	/* --sync, backlog; zeroed: none */
};

void queryd_set_ingest(struct queryd *qd, const struct queryd_ingest *in)
{
	pthread_mutex_lock(&qd->ingest_lock);
	qd->ingest = in ? *in : (struct queryd_ingest){ 0 };
	pthread_mutex_unlock(&qd->ingest_lock);
}

static struct queryd_ingest queryd_ingest(struct queryd *qd)
{
	struct queryd_ingest in;

	pthread_mutex_lock(&qd->ingest_lock);
	in = qd->ingest;
	pthread_mutex_unlock(&qd->ingest_lock);
	return in;
}

/* sync_ms: wait until everything received is stored. Return: 0; -ETIMEDOUT. */
static int queryd_sync(struct queryd *qd, uint32_t ms)
{
	struct queryd_ingest in = queryd_ingest(qd);

	return in.wait_stored ? in.wait_stored(in.arg, ms > INT32_MAX ? INT32_MAX : (int)ms) : 0;
}

/* qmsg_reply_end(), with what the collector has received but not stored. */
static int reply_end(struct queryd *qd, struct qmsg_writer *w, bool more, int64_t last_ts,
		     uint64_t last_id, uint64_t count, struct proto_buf *out)
{
	struct queryd_ingest in = queryd_ingest(qd);
	uint64_t unstored = 0, bytes = 0;

	if (in.backlog)
		in.backlog(in.arg, &unstored, &bytes);
	qmsg_reply_backlog(w, unstored, bytes);
	return qmsg_reply_end(w, more, last_ts, last_id, count, out);
}

static const char *const meta_cols[QMSG_META_COLS] = {
	"host", "cpu", "ts", "trace_ts", "pid", "comm"
};

/* A compiled request: the event, its bound filter, what the store is asked. */
struct compiled {
	struct query q;			/* the parsed text; its filter is bound to fields */
	struct store_schema *schema;
	struct filter_field *fields;	/* the schema seen by the filter */
	size_t *col;			/* fields[i] is schema->cols[col[i]] */
	struct store_window win;	/* the request's time range */
	struct store_query read;	/* points into all of the above */
};

static void compiled_free(struct compiled *c)
{
	query_free(&c->q);
	free(c->col);
	store_schema_free(c->schema);
	free(c->fields);
}

static enum filter_kind kind_of(enum decode_kind k)
{
	return k == DECODE_SIGNED ? FILTER_SIGNED :
	       k == DECODE_UNSIGNED ? FILTER_UNSIGNED : FILTER_STRING;
}

/* Blob fields cannot be filtered on; everything else can. */
static int make_schema(struct compiled *c, struct filter_schema *fs)
{
	size_t i, n = 0;

	c->fields = calloc(c->schema->ncols + 1, sizeof(*c->fields));
	c->col = calloc(c->schema->ncols + 1, sizeof(*c->col));
	if (!c->fields || !c->col)
		return -ENOMEM;
	for (i = 0; i < c->schema->ncols; i++) {
		if (c->schema->cols[i].kind == DECODE_BLOB)
			continue;
		c->col[n] = i;
		c->fields[n].name = c->schema->cols[i].name;
		c->fields[n].kind = kind_of(c->schema->cols[i].kind);
		c->fields[n].size = 8;
		n++;
	}
	fs->fields = c->fields;
	fs->count = n;
	return 0;
}

/*
 * The store query of @c for @r: the bound filter over @fs, the host; the
 * time limits go to the store as a window (its time index finds the
 * range, which a filter could not name).
 */
static void set_query(struct compiled *c, const struct filter_schema *fs,
		      const struct qmsg_request *r)
{
	c->win.from_ts = r->from_ts ? r->from_ts : INT64_MIN;
	c->win.to_ts = r->to_ts ? r->to_ts : INT64_MAX;
	c->read = (struct store_query){
		.schema = c->schema, .filter = c->q.filter, .field_col = c->col,
		.nfields = fs->count, .host_glob = r->host,
		.win = r->from_ts || r->to_ts ? &c->win : NULL,
	};
}

/*
 * Parse, resolve and compile @r. On a query error the reply (with the
 * caret position) is already in @out and 1 is returned; other failures
 * return a negative code and leave the reply to the caller.
 */
static int compile(struct queryd *qd, const struct qmsg_request *r,
		   struct compiled *c, struct proto_buf *out)
{
	struct filter_error err = { 0 };
	struct filter_schema fs;
	char msg[512];
	int ret;

	ret = query_parse(r->query, &c->q, &err);
	if (ret < 0) {
		qmsg_reply_error(ret, err.msg[0] ? err.msg : tc_strerror(ret),
				 (int)err.pos, (int)err.len, out);
		return 1;
	}
	ret = store_schema_get(qd->store, c->q.system, c->q.event, &c->schema);
	if (ret == TC_ERR_UNKNOWN_EVENT || ret == TC_ERR_AMBIGUOUS) {
		snprintf(msg, sizeof(msg), "%s: %s", tc_strerror(ret),
			 ret == TC_ERR_AMBIGUOUS ? store_errmsg(qd->store) : r->query);
		if (ret == TC_ERR_UNKNOWN_EVENT)
			msg[strlen(tc_strerror(ret)) + 2 + strcspn(r->query, " \t")] = 0;
		qmsg_reply_error(ret, msg, 0, (int)strcspn(r->query, " \t"), out);
		return 1;
	}
	if (ret == 0)
		ret = make_schema(c, &fs);
	if (ret == 0 && c->q.filter) {
		ret = filter_bind(c->q.filter, &fs, &err);
		if (ret < 0) {
			qmsg_reply_error(ret, err.msg[0] ? err.msg : tc_strerror(ret),
					 (int)(err.pos + c->q.filter_offset), (int)err.len, out);
			return 1;
		}
	}
	if (ret == 0)
		set_query(c, &fs, r);
	return ret;
}

#define QUERYD_MAX_SYMCOLS	4
#define QUERYD_SYM_MAX		(PROTO_SYM_MAX_NAME + 24)

/*
 * Address fields named at query time: in ftrace events (the kernel's
 * function tracers and our programs' fgraph runtime), "ip", "parent_ip"
 * and "func" are code addresses; each gets a column "<field>_sym" after
 * the fields, with "name" or "name+0xoff" (store_symbol_name()), nil when
 * no symbol covers it.
 */
static const char *const sym_fields[] = { "ip", "parent_ip", "func" };

struct select_ctx {
	struct store *store;
	size_t nsym;
	size_t symcol[QUERYD_MAX_SYMCOLS];	/* schema columns to name */
	char symname[QUERYD_MAX_SYMCOLS][32];	/* their "<field>_sym" */
	struct qmsg_writer *w;
	uint32_t limit;
	bool more;
	int64_t last_ts;
	uint64_t last_id;
};

static void put_value(struct qmsg_writer *w, const struct decode_value *v)
{
	switch (v->kind) {
	case DECODE_SIGNED: qmsg_put_int(w, v->i); break;
	case DECODE_UNSIGNED: qmsg_put_uint(w, v->u); break;
	case DECODE_STRING: qmsg_put_str(w, v->str.s, v->str.len); break;
	case DECODE_BLOB: qmsg_put_bin(w, v->blob.p, v->blob.len); break;
	default: qmsg_put_nil(w); break;
	}
}

/* Which columns of @sc hold code addresses to name (see sym_fields). */
static void find_symcols(const struct store_schema *sc, struct select_ctx *s)
{
	if (strcmp(sc->system, "ftrace"))
		return;
	for (size_t i = 0; i < sc->ncols && s->nsym < QUERYD_MAX_SYMCOLS; i++)
		for (size_t k = 0; k < sizeof(sym_fields) / sizeof(sym_fields[0]); k++)
			if (!strcmp(sc->cols[i].name, sym_fields[k]) &&
			    sc->cols[i].kind != DECODE_STRING && sc->cols[i].kind != DECODE_BLOB) {
				snprintf(s->symname[s->nsym], sizeof(s->symname[0]), "%s_sym",
					 sym_fields[k]);
				s->symcol[s->nsym++] = i;
			}
}

static void put_symbol(struct select_ctx *s, const struct store_row *row, size_t col)
{
	const struct decode_value *v = &row->vals[col];
	char name[QUERYD_SYM_MAX];
	uint64_t addr = v->kind == DECODE_SIGNED ? (uint64_t)v->i : v->u;

	if ((row->null && row->null[col]) ||
	    (v->kind != DECODE_SIGNED && v->kind != DECODE_UNSIGNED) ||
	    store_symbol_name(s->store, row->host_id, row->pid, row->ts, addr, name,
			      sizeof(name)) < 0)
		qmsg_put_nil(s->w);
	else
		qmsg_put_str(s->w, name, strlen(name));
}

static int select_row(void *arg, const struct store_row *row)
{
	struct select_ctx *s = arg;
	size_t i;

	if (qmsg_reply_rows(s->w) == s->limit) {
		s->more = true;
		return 1;
	}
	qmsg_put_str(s->w, row->host, strlen(row->host));
	qmsg_put_uint(s->w, row->cpu);
	qmsg_put_int(s->w, row->ts);
	qmsg_put_uint(s->w, row->trace_ts);
	qmsg_put_int(s->w, row->pid);
	if (row->comm)
		qmsg_put_str(s->w, row->comm, strlen(row->comm));
	else
		qmsg_put_nil(s->w);
	for (i = 0; i < row->nvals; i++) {
		if (row->null && row->null[i])
			qmsg_put_nil(s->w);
		else
			put_value(s->w, &row->vals[i]);
	}
	for (i = 0; i < s->nsym; i++)
		put_symbol(s, row, s->symcol[i]);
	s->last_ts = row->ts;
	s->last_id = row->rowid;
	return 0;
}

static int run_select(struct queryd *qd, const struct qmsg_request *r,
		      struct compiled *c, struct proto_buf *out)
{
	const char *cols[QMSG_META_COLS + QMSG_MAX_COLS];
	struct select_ctx s = { .store = qd->store,
				.limit = r->limit ? r->limit : QMSG_MAX_ROWS };
	char event[512];
	size_t i, ncols = c->schema->ncols;
	int ret;

	if (ncols > QMSG_MAX_COLS - QMSG_META_COLS - QUERYD_MAX_SYMCOLS)
		return TC_ERR_TOO_LONG;
	find_symcols(c->schema, &s);
	memcpy(cols, meta_cols, sizeof(meta_cols));
	for (i = 0; i < ncols; i++)
		cols[QMSG_META_COLS + i] = c->schema->cols[i].name;
	for (i = 0; i < s.nsym; i++)
		cols[QMSG_META_COLS + ncols + i] = s.symname[i];
	snprintf(event, sizeof(event), "%s:%s", c->schema->system, c->schema->name);
	ret = qmsg_reply_begin(&s.w, event, (uint32_t)(QMSG_META_COLS + ncols + s.nsym), cols);
	if (ret < 0)
		return ret;
	c->read.after_ts = r->after_ts;
	c->read.after_rowid = r->after_id;
	c->read.limit = s.limit + 1;
	ret = store_select(qd->store, &c->read, select_row, &s);
	if (ret < 0) {
		qmsg_reply_end(s.w, false, 0, 0, 0, &(struct proto_buf){ 0 });
		return ret;
	}
	return reply_end(qd, s.w, s.more, s.last_ts, s.last_id, 0, out);
}

static int run_count(struct queryd *qd, struct compiled *c, struct proto_buf *out)
{
	struct qmsg_writer *w;
	char event[512];
	uint64_t n = 0;
	int ret;

	ret = store_count(qd->store, &c->read, &n);
	if (ret < 0)
		return ret;
	snprintf(event, sizeof(event), "%s:%s", c->schema->system, c->schema->name);
	ret = qmsg_reply_begin(&w, event, 0, NULL);
	return ret ? ret : reply_end(qd, w, false, 0, 0, n, out);
}

/*
 * The store reports stats as (host, cpu, key, value); the reply has one row
 * per (host, cpu) with a column per key, in the order the store gives them.
 */
#define STATS_MAX_KEYS	32

struct stats_ctx {
	char host[256];
	uint32_t cpu;
	bool have_row;
	size_t nkeys;			/* keys of the current row so far */
	const char *keys[STATS_MAX_KEYS];
	uint64_t vals[STATS_MAX_KEYS];
	size_t ncols;			/* keys per row, fixed by the first row */
	struct proto_buf rows;		/* finished rows: host, cpu, values */
	size_t nrows;
};

static int stats_flush(struct stats_ctx *s)
{
	uint64_t cpu = s->cpu;
	size_t hlen = strlen(s->host) + 1;

	if (!s->have_row)
		return 0;
	if (!s->nrows)
		s->ncols = s->nkeys;
	if (s->nkeys != s->ncols)
		return TC_ERR_DB;
	if (proto_buf_append(&s->rows, s->host, hlen) < 0 ||
	    proto_buf_append(&s->rows, &cpu, sizeof(cpu)) < 0 ||
	    proto_buf_append(&s->rows, s->vals, s->nkeys * sizeof(uint64_t)) < 0)
		return -ENOMEM;
	s->nrows++;
	s->have_row = false;
	s->nkeys = 0;
	return 0;
}

static int stats_cb(void *arg, const char *host, uint32_t cpu, const char *key,
		    uint64_t value)
{
	struct stats_ctx *s = arg;
	int ret = 0;

	if (s->have_row && (strcmp(host, s->host) || cpu != s->cpu))
		ret = stats_flush(s);
	if (ret < 0)
		return ret;
	if (s->nkeys == STATS_MAX_KEYS)
		return TC_ERR_DB;
	snprintf(s->host, sizeof(s->host), "%s", host);
	s->cpu = cpu;
	s->have_row = true;
	s->keys[s->nkeys] = key;	/* static strings of the store */
	s->vals[s->nkeys++] = value;
	return 0;
}

static int run_stats(struct queryd *qd, struct proto_buf *out)
{
	const char *cols[2 + STATS_MAX_KEYS] = { "host", "cpu" };
	struct stats_ctx s = { 0 };
	struct qmsg_writer *w;
	const uint8_t *p;
	size_t i, r;
	int ret;

	proto_buf_init(&s.rows);
	ret = store_stats(qd->store, stats_cb, &s);
	if (ret == 0)
		ret = stats_flush(&s);
	for (i = 0; i < s.ncols; i++)
		cols[2 + i] = s.keys[i];
	if (ret == 0)
		ret = qmsg_reply_begin(&w, NULL, (uint32_t)(2 + s.ncols), cols);
	if (ret < 0)
		goto out;
	for (r = 0, p = s.rows.data; r < s.nrows; r++) {
		uint64_t v;

		qmsg_put_str(w, (const char *)p, strlen((const char *)p));
		p += strlen((const char *)p) + 1;
		for (i = 0; i < 1 + s.ncols; i++, p += sizeof(v)) {
			memcpy(&v, p, sizeof(v));
			qmsg_put_uint(w, v);
		}
	}
	ret = reply_end(qd, w, false, 0, 0, 0, out);
out:
	proto_buf_free(&s.rows);
	return ret;
}

/* The drop counters: one row per (host, system, event, reason). */
static int drops_cb(void *ctx, const char *host, const char *system, const char *name,
		    const char *reason, uint64_t count)
{
	struct qmsg_writer *w = ctx;

	if (qmsg_reply_rows(w) >= QMSG_MAX_ROWS)
		return 1;
	qmsg_put_str(w, host, strlen(host));
	qmsg_put_str(w, system, strlen(system));
	qmsg_put_str(w, name, strlen(name));
	qmsg_put_str(w, reason, strlen(reason));
	qmsg_put_uint(w, count);
	return 0;
}

static int run_drops(struct queryd *qd, struct proto_buf *out)
{
	static const char *const cols[] = { "host", "system", "event", "reason", "count" };
	struct qmsg_writer *w;
	int ret = qmsg_reply_begin(&w, NULL, 5, cols);

	if (ret < 0)
		return ret;
	ret = store_drops(qd->store, drops_cb, w);
	if (ret < 0) {
		qmsg_reply_end(w, false, 0, 0, 0, out);
		return ret;
	}
	return reply_end(qd, w, ret > 0, 0, 0, 0, out);
}

static void handle(struct queryd *qd, const void *req, size_t len, struct proto_buf *out)
{
	struct compiled c = { 0 };
	struct qmsg_request r;
	size_t mark;
	int ret;

	ret = qmsg_request_decode(req, len, &r);
	if (ret < 0) {
		qmsg_reply_error(ret, tc_strerror(ret), -1, -1, out);
		return;
	}
	mark = out->len;
	if (r.sync_ms && queryd_sync(qd, r.sync_ms) < 0) {
		qmsg_reply_error(TC_ERR_TIMEOUT, "the collector has not stored everything "
				 "it received yet (its receive journal); try a longer --timeout",
				 -1, -1, out);
		qmsg_request_free(&r);
		return;
	}
	if (r.op == QOP_STATS)
		ret = run_stats(qd, out);
	else if (r.op == QOP_DROPS)
		ret = run_drops(qd, out);
	else if ((ret = compile(qd, &r, &c, out)) == 0)
		ret = r.op == QOP_COUNT ? run_count(qd, &c, out) : run_select(qd, &r, &c, out);
	if (ret < 0) {
		const char *why = ret == TC_ERR_DB ? store_errmsg(qd->store) : tc_strerror(ret);

		log_warn("query '%s' failed: %s", r.query ? r.query : "(stats)", why);
		out->len = mark;
		qmsg_reply_error(TC_ERR_DB, why, -1, -1, out);
	}
	compiled_free(&c);
	qmsg_request_free(&r);
}

static void *queryd_thread(void *arg)
{
	struct queryd *qd = arg;
	struct proto_buf out;
	void *req;
	size_t len;
	int rv;

	while (!atomic_load(&qd->stop)) {
		rv = nng_recv(qd->sock, &req, &len, NNG_FLAG_ALLOC);
		if (rv == NNG_ETIMEDOUT)
			continue;
		if (rv != 0) {
			if (rv != NNG_ECLOSED)
				log_err("receive: %s", nng_strerror(rv));
			break;
		}
		proto_buf_init(&out);
		handle(qd, req, len, &out);
		nng_free(req, len);
		rv = nng_send(qd->sock, out.data, out.len, 0);
		if (rv != 0)
			log_warn("reply: %s", nng_strerror(rv));
		proto_buf_free(&out);
	}
	return NULL;
}

static int queryd_listen(struct queryd *qd, const char *url, char *bound, size_t blen)
{
	nng_listener l;
	int port = 0, rv;

	rv = nng_listen(qd->sock, url, &l, 0);
	if (rv != 0) {
		log_err("cannot listen for queries on %s: %s", url, nng_strerror(rv));
		return TC_ERR_CONFIG;
	}
	snprintf(bound, blen, "%s", url);
	if (!strncmp(url, "tcp://", 6) &&
	    nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port) == 0) {
		const char *colon = strrchr(url, ':');

		snprintf(bound, blen, "%.*s:%d", (int)(colon - url), url, port);
	}
	return 0;
}

int queryd_start(const char *url, const char *db_path, struct queryd **out,
		 char *bound, size_t blen)
{
	struct queryd *qd = calloc(1, sizeof(*qd));
	int ret, rv;

	if (!qd)
		return -ENOMEM;
	pthread_mutex_init(&qd->ingest_lock, NULL);
	ret = store_open_readonly(db_path, &qd->store);
	if (ret < 0) {
		log_err("query endpoint: database %s: %s", db_path, tc_strerror(ret));
		pthread_mutex_destroy(&qd->ingest_lock);
		free(qd);
		return ret;
	}
	rv = nng_rep0_open(&qd->sock);
	if (rv == 0)
		rv = nng_socket_set_ms(qd->sock, NNG_OPT_RECVTIMEO, QUERYD_POLL_MS);
	if (rv == 0)
		rv = nng_socket_set_size(qd->sock, NNG_OPT_RECVMAXSZ, 1 << 20);
	ret = rv ? TC_ERR_CONFIG : queryd_listen(qd, url, bound, blen);
	if (ret == 0 && pthread_create(&qd->thread, NULL, queryd_thread, qd) != 0)
		ret = -EAGAIN;
	if (ret < 0) {
		if (rv == 0)
			nng_close(qd->sock);
		store_close(qd->store);
		pthread_mutex_destroy(&qd->ingest_lock);
		free(qd);
		return ret;
	}
	*out = qd;
	return 0;
}

void queryd_stop(struct queryd *qd)
{
	if (!qd)
		return;
	atomic_store(&qd->stop, true);
	pthread_join(qd->thread, NULL);
	nng_close(qd->sock);
	store_close(qd->store);
	pthread_mutex_destroy(&qd->ingest_lock);
	free(qd);
}
