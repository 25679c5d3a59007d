/*
 * queryd.c - the query endpoint (see queryd.h and proto/PROTOCOL.md,
 * "Query endpoint").
 *
 * Concurrency. The REP socket has one nng context per request in flight:
 * a struct qslot, QUERYD_SYNC_WAITERS + QFAIR_HELD_MAX more of them than
 * the pool has threads (so one identity never holds them all). A slot is a small state machine run by its aio's callback
 * (nng's threads, which never block here): receive -> check the size and
 * decode -> [wait for `sync`] -> run -> send -> receive again.
 *  - Requests ready to run go on the run queue, taken by the pool's
 *    threads (struct qworker), each with its own read-only store handle:
 *    SQLite readers in WAL run beside each other and beside the writer.
 *    The queue is fair between identities (queryd_fair.h): a queue per
 *    identity served round-robin, one identity holding at most 3 of 4
 *    workers and QFAIR_HELD_MAX requests in flight, so one user's heavy
 *    requests cannot hold back another's.
 *  - A request with `sync` first goes on the sync list, served by one
 *    thread that holds no store handle and no worker: it waits on ingest
 *    for the oldest waiter's mark (taken as the request arrived), in
 *    slices of at most QUERYD_SYNC_SLICE_MS, then moves every waiter whose
 *    mark is stored to the run queue and answers those past their
 *    deadline (`sync`, cut to query-sync-max) with TC_ERR_TIMEOUT. At most
 *    QUERYD_SYNC_WAITERS wait at once, more are refused (-EBUSY), so a
 *    slot per worker is always left for requests that do not wait.
 * A slot is owned by one party at a time (the callback, the queue, the
 * sync thread, a worker); only the queues are shared, under qd->lock.
 * A front of the endpoint (the TLS query port, queryd_tls.c) gives each of
 * its connections a slot of its own (queryd_slot_new()), whose requests
 * come through queryd_submit() and whose replies go to the front's
 * callback instead of an nng context. The front calls this file; this
 * file never calls the front.
 *
 * Who asks: each slot carries its request's identity (struct qauth_who:
 * the ipc peer's uid, a client certificate's CN); a worker turns it into
 * the hosts that identity may read (server/query/qauth.h) and logs the query.
 * The scope rules are a counted set (struct qscopes): a worker holds a
 * reference for the whole request, since the store reads with globs that
 * point into it, and queryd_set_scopes() swaps in a new set for the
 * requests after it (a SIGHUP), the old one freed by its last reader.
 *
 * Each request is parsed again here (a client is never trusted), the
 * filter is bound to the event's stored fields, and the store is asked
 * for the rows it matches (struct store_query: the bound filter, host,
 * scope, time range and keyset position on (ts, rowid)); the store
 * compiles it.
 */
#include "config.h"

#define LOG_PREFIX "query"

#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/transport/tcp/tcp.h>

#include "common/filter.h"
#include "common/lathist.h"
#include "common/log.h"
#include "common/query.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/symbols.h"
#include "proto/qimport.h"
#include "proto/qmsg.h"
#include "server/query/qauth.h"
#include "server/query/queryd.h"
#include "server/query/queryd_ahead.h"
#include "server/query/queryd_boots.h"
#include "server/query/queryd_snap.h"
#include "server/query/queryd_disc.h"
#include "server/query/queryd_fair.h"
#include "server/query/queryd_hist.h"
#include "server/query/queryd_import.h"
#include "server/query/queryd_sel.h"
#include "server/query/queryd_tail.h"
#include "server/store/store.h"

#define TC_STR_(x)	#x
#define TC_STR(x)	TC_STR_(x)

#define QUERYD_SYNC_SLICE_MS	100	/* longest single wait on ingest */
#define QUERYD_SEND_MS		30000	/* a client that does not read its reply */
#define QUERYD_STALL_WHY	256	/* why storing is held up, in a reply */

enum slot_state { SLOT_IDLE, SLOT_RECV, SLOT_BUSY, SLOT_SEND };

/* One request in flight on its own REP context. */
struct qslot {
	struct queryd *qd;
	nng_ctx ctx;
	nng_aio *aio;
	enum slot_state state;
	struct qmsg_request req;	/* decoded; freed once the reply is sent */
	struct qimport_request imp;	/* an import request instead (imp.op != 0) */
	uint64_t mark;			/* sync: what had been received on arrival */
	int64_t deadline;		/* sync: util_now_ms() when it gives up */
	uint32_t wait_ms;		/* sync: the wait, cut to sync_max_ms */
	struct qauth_who who;		/* who sent it */
	int64_t t0;			/* util_now_ms() as it came */
	uint64_t t0_us;			/* lathist_now_us() as it came (o.latency) */
	queryd_reply_fn reply;		/* a front's slot: replies go there; NULL: nng */
	void *reply_ctx;		/* ... with this */
	atomic_uint pipe;		/* nng: the pipe its request came on */
	volatile bool cancel;		/* the asker went away: the store stops (store_stop) */
	struct qfair_item fair;		/* its identity's, in flight; on the run queue */
	struct qslot *next;		/* on the sync list */
};

/* A thread of the pool: its own store handle. */
struct qworker {
	struct queryd *qd;
	struct store_reader *store;
	struct qsel_page page;		/* where the select just answered ended */
	bool paged;			/* handle() answered a select with rows: page */
	pthread_t thread;
	bool started;
};

struct qlist {
	struct qslot *head, **tail;
	size_t n;
};

/* The scope rules requests read under; freed with its last reference. */
struct qscopes {
	const struct qauth_scopes *sc;	/* the rules: the caller's o->scopes, or &own */
	struct qauth_scopes own;	/* from queryd_set_scopes() */
	unsigned refs;			/* under queryd.scope_lock: the endpoint's, requests' */
};

struct queryd {
	nng_socket sock;
	bool sock_open;
	struct queryd_opts o;
	atomic_bool stop;
	pthread_mutex_t lock;		/* the run queue, the sync list, stop for the waits */
	pthread_cond_t work;		/* run queue: a request, or stop */
	pthread_cond_t sync_wake;	/* sync list: a waiter, or stop */
	struct qfair run;		/* the run queue, per identity (queryd_fair.h) */
	struct qlist sync;
	struct qslot *slots;
	size_t nslots;
	struct qworker *workers;
	pthread_t sync_thread;
	bool sync_started;
	pthread_mutex_t ingest_lock;
	pthread_cond_t ingest_idle;	/* ingest_users dropped to 0 */
	unsigned ingest_users;		/* threads inside the hooks of @ingest */
	struct queryd_ingest ingest;	/* --sync, backlog; zeroed: none */
	pthread_mutex_t scope_lock;	/* scopes, and every qscopes' refs */
	struct qscopes *scopes;		/* the rules new requests read under */
	atomic_uint_fast64_t scope_gen;	/* bumped under scope_lock as they change */
	struct qahead *ahead;		/* pages read ahead; NULL: none */
	atomic_uint in_flight;		/* requests taken, not yet answered (/metrics) */
};

/* ---- the scope rules, counted ---- */

/* The rules in effect; the caller reads under them until scopes_put(). */
static struct qscopes *scopes_get(struct queryd *qd)
{
	struct qscopes *s;

	pthread_mutex_lock(&qd->scope_lock);
	s = qd->scopes;
	s->refs++;
	pthread_mutex_unlock(&qd->scope_lock);
	return s;
}

static void scopes_put(struct queryd *qd, struct qscopes *s)
{
	bool last;

	if (!s)
		return;
	pthread_mutex_lock(&qd->scope_lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&qd->scope_lock);
	if (last) {
		qauth_scopes_free(&s->own);
		free(s);
	}
}

int queryd_set_scopes(struct queryd *qd, struct qauth_scopes *sc)
{
	struct qscopes *n = calloc(1, sizeof(*n)), *old;

	if (!n)
		return -ENOMEM;
	n->own = *sc;
	*sc = (struct qauth_scopes){ 0 };
	n->sc = &n->own;
	n->refs = 1;
	pthread_mutex_lock(&qd->scope_lock);
	old = qd->scopes;
	qd->scopes = n;
	/* pages read ahead under the old rules are not given out */
	atomic_fetch_add(&qd->scope_gen, 1);
	pthread_mutex_unlock(&qd->scope_lock);
	scopes_put(qd, old);
	return 0;
}

/* ---- the collector's ingest, held while in use ---- */

void queryd_set_ingest(struct queryd *qd, const struct queryd_ingest *in)
{
	pthread_mutex_lock(&qd->ingest_lock);
	qd->ingest = in ? *in : (struct queryd_ingest){ 0 };
	while (qd->ingest_users)
		pthread_cond_wait(&qd->ingest_idle, &qd->ingest_lock);
	pthread_mutex_unlock(&qd->ingest_lock);
}

/* The hooks as they are now; the caller may call them until ingest_put(). */
static struct queryd_ingest ingest_get(struct queryd *qd)
{
	struct queryd_ingest in;

	pthread_mutex_lock(&qd->ingest_lock);
	in = qd->ingest;
	qd->ingest_users++;
	pthread_mutex_unlock(&qd->ingest_lock);
	return in;
}

static void ingest_put(struct queryd *qd)
{
	pthread_mutex_lock(&qd->ingest_lock);
	if (--qd->ingest_users == 0)
		pthread_cond_broadcast(&qd->ingest_idle);
	pthread_mutex_unlock(&qd->ingest_lock);
}

/* Whether what was received up to @mark is stored, waiting at most @ms; no ingest: yes. */
static bool ingest_stored(struct queryd *qd, uint64_t mark, int ms)
{
	struct queryd_ingest in = ingest_get(qd);
	bool done = !in.wait_stored || in.wait_stored(in.arg, mark, ms) == 0;

	ingest_put(qd);
	return done;
}

/* qmsg_reply_end(), with what the collector has received but not stored. */
static int reply_end(struct queryd *qd, struct qmsg_writer *w, bool more, int64_t last_ts,
		     uint64_t last_id, uint64_t count, struct proto_buf *out)
{
	struct queryd_ingest in = ingest_get(qd);
	uint64_t unstored = 0, bytes = 0;
	char why[QUERYD_STALL_WHY] = "";
	int64_t since = 0;

	if (in.backlog)
		in.backlog(in.arg, &unstored, &bytes);
	if (in.stalled)
		in.stalled(in.arg, &since, why, sizeof(why));
	ingest_put(qd);
	qmsg_reply_backlog(w, unstored, bytes);
	qmsg_reply_stall(w, since, why);
	return qmsg_reply_end(w, more, last_ts, last_id, count, out);
}

/*
 * The store failed @why: the error reply, which says too whether storing
 * is held up (a store that is down fails reads and writes alike), so that
 * traceq says why nothing answers and what waits meanwhile.
 */
static int reply_store_error(struct queryd *qd, const char *why, struct proto_buf *out)
{
	struct queryd_ingest in = ingest_get(qd);
	uint64_t unstored = 0, bytes = 0;
	char swhy[QUERYD_STALL_WHY] = "";
	int64_t since = 0;

	if (in.stalled)
		in.stalled(in.arg, &since, swhy, sizeof(swhy));
	if (since && in.backlog)
		in.backlog(in.arg, &unstored, &bytes);
	ingest_put(qd);
	if (!since)
		return qmsg_reply_error(TC_ERR_DB, why, -1, -1, out);
	return qmsg_reply_error_stall(TC_ERR_DB, why, unstored, bytes, since, swhy, out);
}

/*
 * A page of select @r (queryd_sel.c), or with @tail of the live tail
 * (queryd_tail.c: its cursor goes back in last_id). A select's page says
 * where it ended (wk->page), for the page read ahead.
 */
static int run_page(struct qworker *wk, const struct qmsg_request *r, struct qsel *c, bool tail,
		    struct proto_buf *out, uint64_t *rows)
{
	struct qmsg_writer *w;
	struct qsel_page pg;
	int ret = tail ? qtail_page(wk->store, r, c, &w, &pg) : qsel_select(wk->store, r, c, &w, &pg);

	if (ret < 0)
		return ret;
	*rows = pg.rows;
	if (!tail) {
		wk->page = pg;
		wk->paged = true;
		qmsg_reply_last_type(w, pg.last_type);
	}
	return reply_end(wk->qd, w, pg.more, pg.last_ts, pg.last_id, 0, out);
}

#define QUERYD_SYM_MAX		(PROTO_SYM_MAX_NAME + 24)	/* "name+0xoff" */

/*
 * Symbols: name the addresses of @r's query text (hex, blank-separated,
 * at most QMSG_MAX_ROWS) as host @r->host saw them at wall-clock
 * @r->to_ts (0: now). One row per address: addr, name (nil: no symbol),
 * start (the symbol's address). traceq asks for the addresses its
 * formats print as functions (%ps, plugins' function fields). A host
 * outside the asker's @scope (NULL: all) answers as an unknown one.
 * @r->host is set: handle() answers a request without one (as it does
 * for printk and tgids).
 */
static int run_symbols(struct qworker *wk, const struct qmsg_request *r,
		       const struct store_scope *scope, struct proto_buf *out)
{
	static const char *const cols[] = { "addr", "name", "start" };
	int64_t at = r->to_ts ? r->to_ts : INT64_MAX;
	char name[QUERYD_SYM_MAX], *end;
	const char *p = r->query;
	struct qmsg_writer *w;
	uint64_t host_id = 0, addr, off;
	int ret, found;

	found = store_host_find(wk->store, r->host, scope, &host_id);
	if (found < 0 && found != -ENOENT)
		return found;
	ret = qmsg_reply_begin(&w, NULL, 3, cols);
	while (ret == 0 && *p && qmsg_reply_rows(w) < QMSG_MAX_ROWS) {
		errno = 0;
		addr = strtoull(p, &end, 16);
		if (end == p || errno)
			break;
		p = end + strspn(end, " ");
		qmsg_put_uint(w, addr);
		if (found == 0 && store_symbol_name(wk->store, host_id, -1, at, addr, name,
						    sizeof(name)) == 0) {
			end = strstr(name, "+0x");
			off = end ? strtoull(end + 3, NULL, 16) : 0;
			qmsg_put_str(w, name, end ? (size_t)(end - name) : strlen(name));
			qmsg_put_uint(w, addr - off);
		} else {
			qmsg_put_nil(w);
			qmsg_put_uint(w, addr);
		}
	}
	return ret ? ret : reply_end(wk->qd, w, false, 0, 0, 0, out);
}

/* --hist: over one event type (the kernel's hist triggers are per event). */
static int run_hist(struct qworker *wk, const struct qmsg_request *r, struct qsel *c,
		    struct proto_buf *out, uint64_t *rows)
{
	char msg[256];

	if (qsel_ntypes(c) != 1) {
		snprintf(msg, sizeof(msg), "--hist takes one event type, as a hist trigger "
			 "does; the query selects %zu", qsel_ntypes(c));
		qmsg_reply_error(TC_ERR_SYNTAX, msg, -1, -1, out);
		return 1;
	}
	return queryd_hist_run(wk->store, r, qsel_read(c, 0), out, rows);
}

/* At most this much printk_formats text in one reply (QMSG_MAX_WIRE is 4 MiB). */
#define QUERYD_PRINTK_BYTES	(2u << 20)

struct printk_rows {
	struct qmsg_writer *w;
	size_t bytes;
};

static int printk_row(void *ctx, uint64_t addr, const char *fmt)
{
	struct printk_rows *p = ctx;
	size_t len = strlen(fmt);

	if (p->bytes + len > QUERYD_PRINTK_BYTES)
		return 1;	/* enough: the rest is left out */
	p->bytes += len + 16;
	qmsg_put_uint(p->w, addr);
	qmsg_put_str(p->w, fmt, len);
	return 0;
}

/*
 * Printk formats: the kernel's printk_formats of host @r->host (exact
 * name) as of wall-clock @r->to_ts (0: now), for traceq to hand to
 * libtraceevent. Rows: addr, fmt (the kernel's text, quotes included), in
 * address order, at most QMSG_MAX_ROWS and QUERYD_PRINTK_BYTES of text. A
 * host outside the asker's @scope (NULL: all) answers as an unknown one:
 * no rows.
 */
static int run_printk(struct qworker *wk, const struct qmsg_request *r,
		      const struct store_scope *scope, struct proto_buf *out, uint64_t *rows)
{
	static const char *const cols[] = { "addr", "fmt" };
	struct printk_rows p = { 0 };
	uint64_t host_id = 0;
	int ret, found;

	found = store_host_find(wk->store, r->host, scope, &host_id);
	if (found < 0 && found != -ENOENT)
		return found;
	ret = qmsg_reply_begin(&p.w, NULL, 2, cols);
	if (ret == 0 && found == 0) {
		ret = store_printk_list(wk->store, host_id, r->to_ts ? r->to_ts : INT64_MAX,
					QMSG_MAX_ROWS, printk_row, &p);
		ret = ret > 0 ? 0 : ret;
	}
	if (ret < 0 && p.w) {	/* qmsg_reply_end() frees the writer */
		struct proto_buf junk;

		proto_buf_init(&junk);
		qmsg_reply_end(p.w, false, 0, 0, 0, &junk);
		proto_buf_free(&junk);
	}
	if (ret < 0)
		return ret;
	*rows = qmsg_reply_rows(p.w);
	return reply_end(wk->qd, p.w, false, 0, 0, 0, out);
}

/* Losses (op 9) and headers (op 10): queryd_boots.c builds the page. */
static int run_boots(struct qworker *wk, const struct qmsg_request *r,
		     const struct store_query *hosts, struct proto_buf *out, uint64_t *rows)
{
	struct qboots_page pg;
	struct qmsg_writer *w = NULL;
	int ret = r->op == QOP_LOSSES ? qboots_losses(wk->store, r, hosts, &w, &pg) :
		  qboots_headers(wk->store, r, hosts->scope, &w, &pg);

	if (ret < 0)
		return ret;
	*rows = qmsg_reply_rows(w);
	return reply_end(wk->qd, w, pg.more, pg.last_ts, pg.last_id, 0, out);
}

/* Snapshots (op 32): queryd_snap.c builds the page. */
static int run_snapshots(struct qworker *wk, const struct qmsg_request *r,
			 const struct store_query *hosts, struct proto_buf *out, uint64_t *rows)
{
	struct qmsg_writer *w = NULL;
	int ret = qsnap_list(wk->store, r, hosts, &w);

	if (ret < 0)
		return ret;
	*rows = qmsg_reply_rows(w);
	return reply_end(wk->qd, w, false, 0, 0, 0, out);
}

static int tgid_row(void *ctx, int32_t pid, int32_t tgid)
{
	struct qmsg_writer *w = ctx;

	qmsg_put_int(w, pid);
	qmsg_put_int(w, tgid);
	return 0;
}

/*
 * Tgids: host @r->host's pid -> tgid pairs (the kernel's saved_tgids, as
 * its agents sent them), pid after @r->after_id (as a pid), at most
 * @r->limit (0: QMSG_MAX_ROWS); `more` and last_id when there may be
 * more. Rows: pid, tgid. A host outside @scope answers as an unknown
 * one: no rows.
 */
static int run_tgids(struct qworker *wk, const struct qmsg_request *r,
		     const struct store_scope *scope, struct proto_buf *out, uint64_t *rows)
{
	static const char *const cols[] = { "pid", "tgid" };
	uint32_t max = r->limit ? r->limit : QMSG_MAX_ROWS;
	struct qmsg_writer *w;
	uint64_t host_id = 0;
	int ret, found;

	if (r->after_id > INT32_MAX)
		return qmsg_reply_error(TC_ERR_MSG_MALFORMED, "tgids: after_id is a pid", -1, -1,
					out);
	found = store_host_find(wk->store, r->host, scope, &host_id);
	if (found < 0 && found != -ENOENT)
		return found;
	ret = qmsg_reply_begin(&w, NULL, 2, cols);
	if (ret == 0 && found == 0)
		ret = store_tgids_list(wk->store, host_id, (int32_t)r->after_id, max, tgid_row, w);
	if (ret < 0 && w) {	/* qmsg_reply_end() frees the writer */
		struct proto_buf junk;

		proto_buf_init(&junk);
		qmsg_reply_end(w, false, 0, 0, 0, &junk);
		proto_buf_free(&junk);
	}
	if (ret < 0)
		return ret;
	*rows = qmsg_reply_rows(w);
	return reply_end(wk->qd, w, *rows == max, 0, 0, 0, out);
}

static int run_count(struct qworker *wk, struct qsel *c, struct proto_buf *out,
		     uint64_t *rows)
{
	struct qmsg_writer *w;
	uint64_t n = 0;
	int ret;

	ret = qsel_count(wk->store, c, &n);
	if (ret < 0)
		return ret;
	*rows = n;
	ret = qmsg_reply_begin(&w, qsel_event(c), 0, NULL);
	return ret ? ret : reply_end(wk->qd, w, false, 0, 0, n, out);
}

/*
 * The store reports stats as (host, cpu, key, value); the reply has one row
 * per (host, cpu) with a column per key, in the order the store gives them,
 * and the host's machine_id last. A row is a host id's: two hosts of one
 * name (a reinstalled machine, an import beside a live host) keep theirs.
 */
#define STATS_MAX_KEYS	32

struct stats_ctx {
	uint64_t host_id;
	char host[256];
	char machine_id[256];
	uint32_t cpu;
	bool have_row;
	size_t nkeys;			/* keys of the current row so far */
	const char *keys[STATS_MAX_KEYS];
	uint64_t vals[STATS_MAX_KEYS];
	size_t ncols;			/* keys per row, fixed by the first row */
	struct proto_buf rows;		/* finished rows: host, machine_id, cpu, values */
	size_t nrows;
};

static int stats_flush(struct stats_ctx *s)
{
	uint64_t cpu = s->cpu;

	if (!s->have_row)
		return 0;
	if (!s->nrows)
		s->ncols = s->nkeys;
	if (s->nkeys != s->ncols)
		return TC_ERR_DB;
	if (proto_buf_append(&s->rows, s->host, strlen(s->host) + 1) < 0 ||
	    proto_buf_append(&s->rows, s->machine_id, strlen(s->machine_id) + 1) < 0 ||
	    proto_buf_append(&s->rows, &cpu, sizeof(cpu)) < 0 ||
	    proto_buf_append(&s->rows, s->vals, s->nkeys * sizeof(uint64_t)) < 0)
		return -ENOMEM;
	s->nrows++;
	s->have_row = false;
	s->nkeys = 0;
	return 0;
}

static int stats_cb(void *arg, const struct store_stats_host *h, uint32_t cpu,
		    const char *key, uint64_t value)
{
	struct stats_ctx *s = arg;
	int ret = 0;

	if (s->have_row && (h->id != s->host_id || cpu != s->cpu))
		ret = stats_flush(s);
	if (ret < 0)
		return ret;
	if (s->nkeys == STATS_MAX_KEYS)
		return TC_ERR_DB;
	s->host_id = h->id;
	snprintf(s->host, sizeof(s->host), "%s", h->name ? h->name : "");
	snprintf(s->machine_id, sizeof(s->machine_id), "%s", h->machine_id ? h->machine_id : "");
	s->cpu = cpu;
	s->have_row = true;
	s->keys[s->nkeys] = key;	/* static strings of the store */
	s->vals[s->nkeys++] = value;
	return 0;
}

static int run_stats(struct qworker *wk, const struct store_query *hosts,
		     struct proto_buf *out, uint64_t *rows)
{
	const char *cols[3 + STATS_MAX_KEYS] = { "host", "cpu" };
	struct stats_ctx s = { 0 };
	struct qmsg_writer *w;
	const char *p, *mid;
	size_t i, r;
	int ret;

	proto_buf_init(&s.rows);
	ret = store_stats(wk->store, hosts, stats_cb, &s);
	if (ret == 0)
		ret = stats_flush(&s);
	for (i = 0; i < s.ncols; i++)
		cols[2 + i] = s.keys[i];
	cols[2 + s.ncols] = "machine_id";
	if (ret == 0)
		ret = qmsg_reply_begin(&w, NULL, (uint32_t)(3 + s.ncols), cols);
	if (ret < 0)
		goto out;
	for (r = 0, p = (const char *)s.rows.data; r < s.nrows; r++) {
		uint64_t v;

		qmsg_put_str(w, p, strlen(p));
		mid = p + strlen(p) + 1;
		p = mid + strlen(mid) + 1;
		for (i = 0; i < 1 + s.ncols; i++, p += sizeof(v)) {
			memcpy(&v, p, sizeof(v));
			qmsg_put_uint(w, v);
		}
		qmsg_put_str(w, mid, strlen(mid));
	}
	*rows = s.nrows;
	ret = reply_end(wk->qd, w, false, 0, 0, 0, out);
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

static int run_drops(struct qworker *wk, const struct store_query *hosts,
		     struct proto_buf *out, uint64_t *rows)
{
	static const char *const cols[] = { "host", "system", "event", "reason", "count" };
	struct qmsg_writer *w;
	int ret = qmsg_reply_begin(&w, NULL, 5, cols);

	if (ret < 0)
		return ret;
	ret = store_drops(wk->store, hosts, drops_cb, w);
	if (ret < 0) {
		qmsg_reply_end(w, false, 0, 0, 0, out);
		return ret;
	}
	*rows = qmsg_reply_rows(w);
	return reply_end(wk->qd, w, ret > 0, 0, 0, 0, out);
}

/* ---- --sql: the store's user SQL surface (store_sql()) ---- */

#define QUERYD_SQL_MS		8000		/* a statement's time, under the TLS port's 10 s */
#define QUERYD_SQL_BYTES	(2u << 20)	/* values in one reply, under QMSG_MAX_WIRE */

struct sql_ctx {
	struct qmsg_writer *w;
	size_t bytes;		/* of the values put */
	bool full;		/* stopped at QUERYD_SQL_BYTES */
};

/* The bytes @v takes in a reply, as put_sql_value() counts them. */
static size_t sql_value_bytes(const struct store_sql_value *v)
{
	return v->len + 9;
}

static void put_sql_value(struct sql_ctx *x, const struct store_sql_value *v)
{
	char num[40];

	switch (v->kind) {
	case STORE_SQL_INT: qmsg_put_int(x->w, v->i); break;
	case STORE_SQL_REAL:
		/* msgpack floats are not in the query protocol: real values go as text */
		snprintf(num, sizeof(num), "%.15g", v->d);
		if (strtod(num, NULL) != v->d)
			snprintf(num, sizeof(num), "%.17g", v->d);
		qmsg_put_str(x->w, num, strlen(num));
		break;
	case STORE_SQL_TEXT: qmsg_put_str(x->w, v->p, v->len); break;
	case STORE_SQL_BLOB: qmsg_put_bin(x->w, v->p, v->len); break;
	default: qmsg_put_nil(x->w);
	}
	x->bytes += sql_value_bytes(v);
}

static int sql_row(void *arg, size_t ncols, const char *const *names,
		   const struct store_sql_value *vals)
{
	struct sql_ctx *x = arg;
	size_t row = 0;

	if (!vals)
		return ncols > QMSG_MAX_COLS ? TC_ERR_TOO_LONG :
		       qmsg_reply_begin(&x->w, NULL, (uint32_t)ncols, (const char *const *)names);
	/*
	 * A row goes in whole or not at all: its size is counted before it is
	 * put, so a reply stays under QUERYD_SQL_BYTES (the store's max_row
	 * keeps one row's values within it) and the one after is "more".
	 */
	for (size_t i = 0; i < ncols; i++)
		row += sql_value_bytes(&vals[i]);
	if (x->bytes && x->bytes + row > QUERYD_SQL_BYTES) {
		x->full = true;
		return -ECANCELED;
	}
	for (size_t i = 0; i < ncols; i++)
		put_sql_value(x, &vals[i]);
	return 0;
}

/*
 * The request's SQL through store_sql(): its rows, at most `limit` (and
 * QUERYD_SQL_BYTES of values), `more` set when it had more. A refusal or
 * an error in the SQL is answered with its code and the store's message;
 * the return is then 1 and @result says why.
 */
static int run_sql(struct qworker *wk, const struct qmsg_request *r,
		   const struct store_scope *scope, struct proto_buf *out, uint64_t *rows,
		   char *result, size_t rlen)
{
	struct store_sql_limits lim = { .max_rows = r->limit ? r->limit : QMSG_MAX_ROWS,
					.time_ms = QUERYD_SQL_MS, .max_row = QUERYD_SQL_BYTES };
	struct sql_ctx x = { 0 };
	int ret = store_sql(wk->store, r->query, scope, &lim, sql_row, &x);

	if (ret == -ECANCELED && x.full)
		ret = 1;
	if (ret < 0 && ret != -ENOMEM && ret != TC_ERR_DB) {
		if (x.w)
			qmsg_writer_free(x.w);
		snprintf(result, rlen, "refused: %.500s", store_errmsg(wk->store));
		qmsg_reply_error(ret, store_errmsg(wk->store), -1, -1, out);
		return 1;
	}
	if (ret < 0 || !x.w) {
		if (x.w)
			qmsg_writer_free(x.w);
		return ret < 0 ? ret : TC_ERR_DB;
	}
	*rows = qmsg_reply_rows(x.w);
	snprintf(result, rlen, "%llu rows%s", (unsigned long long)*rows, ret ? " (more)" : "");
	return reply_end(wk->qd, x.w, ret == 1, 0, 0, 0, out);
}

/*
 * The log line of a query: who asked, what (the text escaped, the host
 * glob), and what came of it.
 */
static void log_query(const struct qauth_who *who, const struct qmsg_request *r,
		      const char *result, int64_t t0)
{
	char w[QAUTH_NAME_MAX * 4 + 64], q[LOG_ESC_LEN], h[LOG_ESC_LEN];

	log_info("query from %s: %s%s%s%s%s%s: %s in %lld ms", qauth_who_str(who, w, sizeof(w)),
		 qmsg_op_name(r->op),
		 r->query ? " '" : "",
		 r->query ? log_escape(r->query, q, sizeof(q)) : "", r->query ? "'" : "",
		 r->host ? " host=" : "", r->host ? log_escape(r->host, h, sizeof(h)) : "",
		 result, (long long)(util_now_ms() - t0));
}

/*
 * The hosts @who may read into @scope (globs in @globs[STORE_SCOPE_MAX]);
 * NULL: every host.
 */
static const struct store_scope *scope_for(const struct qscopes *rules,
					   const struct qauth_who *who, const char **globs,
					   struct store_scope *scope)
{
	bool all = false;

	int ret = qauth_scope_of(rules->sc, who, &all, globs, STORE_SCOPE_MAX, &scope->n);

	if (ret < 0) {
		log_warn("scope: %s: this request sees no host",
			 ret == TC_ERR_TOO_LONG ? "too many globs (over " TC_STR(STORE_SCOPE_MAX)
			 ") name one identity" : "a user or group lookup failed");
		all = false;
		scope->n = 0;
	}
	scope->globs = globs;
	return all ? NULL : scope;
}

/*
 * query-max-rows: the rows of one answer, a select's or a tail's pages
 * together, as the client counts them (its `sent`): cut @r's page to what
 * is left into @capped, or, when nothing is, an error reply in @out.
 * Return: 0 (go on), 1 (refused, the reply in @out).
 */
static int rows_left(const struct queryd *qd, const struct qmsg_request *r,
		     struct qmsg_request *capped, struct proto_buf *out)
{
	uint64_t max = qd->o.max_rows, limit = r->limit ? r->limit : QMSG_MAX_ROWS;
	char why[200];

	if (!max)
		return 0;
	if (r->sent >= max) {
		snprintf(why, sizeof(why), "the answer reached the collector's query-max-rows of"
			 " %llu rows: narrow the query (--since/--until, --host, a filter) or ask"
			 " for fewer (--limit)", (unsigned long long)max);
		qmsg_reply_error(TC_ERR_TOO_LONG, why, -1, -1, out);
		return 1;
	}
	if (max - r->sent < limit)
		capped->limit = (uint32_t)(max - r->sent);
	return 0;
}

/*
 * A select's state kept after the page before @r (queryd_ahead.h), taken
 * for @r; NULL: none (@r is compiled and read afresh).
 */
static struct qsel *unpark(struct qworker *wk, const struct qmsg_request *r,
			   const struct qauth_who *who, const struct store_scope *scope)
{
	struct qsel *c;

	if (!wk->qd->ahead || r->op != QOP_SELECT || !r->after_id)
		return NULL;
	c = qahead_unpark(wk->qd->ahead, who, r, atomic_load(&wk->qd->scope_gen));
	if (c && qsel_resume(c, r, scope) < 0) {
		qsel_free(c);
		c = NULL;
	}
	return c;
}

static void park_free(void *c)
{
	qsel_free(c);
}

/*
 * Keep @c, the state after the page of @r just answered (wk->page), for
 * the request of the next page (as ahead_plan() makes it); else free it.
 */
static void park(struct qworker *wk, const struct qmsg_request *r, const struct qauth_who *who,
		 struct qsel *c)
{
	struct qmsg_request next = *r;	/* shallow: qahead_park() keeps its encoding */

	if (!wk->qd->ahead || !wk->page.more || !wk->page.rows || !qsel_keepable(c, r)) {
		qsel_free(c);
		return;
	}
	next.after_ts = wk->page.last_ts;
	next.after_id = wk->page.last_id;
	next.after_type = wk->page.last_type;
	next.sent = r->sent + wk->page.rows;
	qahead_park(wk->qd->ahead, who, &next, atomic_load(&wk->qd->scope_gen), c, park_free);
}

/*
 * Run @r (decoded, its wait for `sync` done) for @who on @wk's store, only
 * over the hosts @who may read; the reply goes to @out, a line to the log
 * (with @said, what that line would say goes there instead: a page read
 * ahead is logged when it is asked for).
 */
static void handle(struct qworker *wk, const struct qmsg_request *r,
		   const struct qauth_who *who, int64_t t0, struct proto_buf *out,
		   char *said, size_t saidlen)
{
	const char *globs[STORE_SCOPE_MAX];
	struct store_scope scope;
	struct qsel *c = NULL;
	struct store_scope hlist = { .globs = (const char *const *)r->hosts, .n = r->nhosts };
	struct store_query hosts = { .host_glob = r->host, .hosts = r->nhosts ? &hlist : NULL };
	struct qscopes *rules = scopes_get(wk->qd);	/* globs point into it */
	struct qmsg_request capped = *r;	/* its limit cut to query-max-rows */
	uint64_t rows = 0;
	char result[QAHEAD_RESULT_MAX];
	int ret;

	wk->paged = false;	/* run_page() says where a select's page ended */
	hosts.scope = scope_for(rules, who, globs, &scope);
	if (!r->host && (r->op == QOP_SYMBOLS || r->op == QOP_PRINTK || r->op == QOP_TGIDS ||
			 r->op == QOP_HEADERS)) {
		char msg[64];	/* these ops read one host's tables */

		snprintf(msg, sizeof(msg), "%s: which host?", qmsg_op_name(r->op));
		ret = qmsg_reply_error(TC_ERR_MSG_MISSING, msg, -1, -1, out);
	} else if (r->op == QOP_STATS)
		ret = run_stats(wk, &hosts, out, &rows);
	else if (r->op == QOP_DROPS)
		ret = run_drops(wk, &hosts, out, &rows);
	else if (r->op == QOP_SYMBOLS)
		ret = run_symbols(wk, r, hosts.scope, out);
	else if (r->op == QOP_PRINTK)
		ret = run_printk(wk, r, hosts.scope, out, &rows);
	else if (r->op == QOP_TGIDS)
		ret = run_tgids(wk, r, hosts.scope, out, &rows);
	else if (r->op == QOP_LOSSES || r->op == QOP_HEADERS)
		ret = run_boots(wk, r, &hosts, out, &rows);
	else if (r->op == QOP_SNAPSHOTS)
		ret = run_snapshots(wk, r, &hosts, out, &rows);
	else if (r->op == QOP_SNAPSHOT) {
		struct queryd_ingest in = ingest_get(wk->qd);

		qsnap_freeze(in.snapper, wk->store, wk->qd->o.snapshot_rights, r, who, out,
			     result, sizeof(result));
		ingest_put(wk->qd);
		ret = 0;	/* its reply, success or refusal, is written */
	}
	else if (r->op == QOP_SQL)
		ret = run_sql(wk, r, hosts.scope, out, &rows, result, sizeof(result));
	else if (r->op >= QOP_HOSTS && r->op <= QOP_FIELDS) {
		struct queryd_ingest in = ingest_get(wk->qd);

		ret = qdisc_run(wk->store, r, &hosts, &(struct qdisc_live){ in.connected, in.arg },
				out, &rows);
		ingest_put(wk->qd);
	}
	else if (r->op != QOP_COUNT && (ret = rows_left(wk->qd, r, &capped, out)) != 0)
		snprintf(result, sizeof(result), "refused: query-max-rows reached");
	else if ((c = unpark(wk, r, who, hosts.scope)))	/* the page before's state */
		ret = run_page(wk, &capped, c, false, out, &rows);
	else if ((ret = qsel_compile(wk->store, r, hosts.scope, &c, out)) == 0)
		ret = r->op == QOP_COUNT ? run_count(wk, c, out, &rows) :
		      r->op == QOP_HIST ? run_hist(wk, r, c, out, &rows) :
		      run_page(wk, &capped, c, qmsg_op_is_tail(r->op), out, &rows);
	if (ret == TC_ERR_TIMEOUT || ret == -ECANCELED) {
		char why[200];

		if (ret == TC_ERR_TIMEOUT)
			snprintf(why, sizeof(why), "stopped at the collector's query-timeout of %u ms:"
				 " narrow the query (--since/--until, --host, a filter)",
				 wk->qd->o.timeout_ms);
		else
			snprintf(why, sizeof(why), "stopped: the asker went away");
		snprintf(result, sizeof(result), "%s", why);
		out->len = 0;
		qmsg_reply_error(ret == -ECANCELED ? TC_ERR_DB : TC_ERR_TIMEOUT, why, -1, -1, out);
	} else if (ret < 0) {
		/* the store says which failure, or which read a backend does not do */
		const char *why = ret == TC_ERR_DB || ret == -ENOSYS ? store_errmsg(wk->store) :
				  tc_strerror(ret);

		snprintf(result, sizeof(result), "failed: %.500s", why);
		out->len = 0;
		reply_store_error(wk->qd, why, out);
	} else if (r->op == QOP_SQL || r->op == QOP_SNAPSHOT) {
		/* run_sql(), qsnap_freeze() said what came of it */
	} else if (ret > 0) {
		snprintf(result, sizeof(result), "refused (an error in the query)");
	} else {
		snprintf(result, sizeof(result), "%llu %s%s", (unsigned long long)rows,
			 r->op == QOP_COUNT ? "counted" : "rows",
			 hosts.scope ? hosts.scope->n ? " (scoped)" : " (scope: no host)" : "");
	}
	if (said)
		snprintf(said, saidlen, "%s", result);
	else if (!qmsg_op_is_tail(r->op) || ret != 0 || rows)	/* not every empty poll of a follow */
		log_query(who, r, result, t0);
	if (ret == 0 && c && wk->paged)
		park(wk, r, who, c);
	else
		qsel_free(c);
	scopes_put(wk->qd, rules);
}

/* An import request (queryd_import.c), with the collector's importer. */
static void import(struct qworker *wk, const struct qimport_request *r,
		   const struct qauth_who *who, struct proto_buf *out)
{
	struct queryd_ingest in = ingest_get(wk->qd);
	struct queryd_import_env env = { .im = in.importer, .store = wk->store,
					 .rights = wk->qd->o.import_rights,
					 .received = in.received, .wait_stored = in.wait_stored,
					 .arg = in.arg };

	queryd_import(&env, r, who, out);
	ingest_put(wk->qd);
}

/* ---- slots: one request in flight each ---- */

static void qlist_push(struct qlist *l, struct qslot *s)
{
	s->next = NULL;
	*l->tail = s;
	l->tail = &s->next;
	l->n++;
}

/* Wait for the next request on @s (not once the endpoint stops). */
static void slot_recv(struct qslot *s)
{
	if (atomic_load(&s->qd->stop)) {
		s->state = SLOT_IDLE;
		return;
	}
	s->state = SLOT_RECV;
	nng_aio_set_timeout(s->aio, NNG_DURATION_INFINITE);
	nng_ctx_recv(s->ctx, s->aio);
}

/*
 * Send @out (copied) as the reply of @s and receive again once it is
 * sent; a client that does not read it loses it after QUERYD_SEND_MS.
 */
static void slot_reply(struct qslot *s, const struct proto_buf *out)
{
	nng_msg *m = NULL;
	int rv;

	pthread_mutex_lock(&s->qd->lock);
	qfair_leave(&s->qd->run, &s->fair);
	pthread_mutex_unlock(&s->qd->lock);
	lathist_add(s->qd->o.latency, lathist_now_us() - s->t0_us);
	atomic_fetch_sub(&s->qd->in_flight, 1);
	qmsg_request_free(&s->req);
	qimport_request_free(&s->imp);
	if (s->reply) {
		s->reply(s->reply_ctx, out);
		return;
	}
	rv = nng_msg_alloc(&m, 0);
	if (rv == 0)
		rv = nng_msg_append(m, out->data, out->len);
	if (rv != 0) {
		log_warn("reply: %s", nng_strerror(rv));
		if (m)
			nng_msg_free(m);
		slot_recv(s);
		return;
	}
	s->state = SLOT_SEND;
	nng_aio_set_msg(s->aio, m);
	nng_aio_set_timeout(s->aio, QUERYD_SEND_MS);
	nng_ctx_send(s->ctx, s->aio);
}

static void slot_error(struct qslot *s, int code, const char *msg)
{
	struct proto_buf out;

	proto_buf_init(&out);
	qmsg_reply_error(code, msg, -1, -1, &out);
	slot_reply(s, &out);
	proto_buf_free(&out);
}

static void log_refused(const struct qauth_who *who, const char *why);

/* Hand @s to the pool: its identity's queue (queryd_fair.h). */
static void run_push(struct queryd *qd, struct qslot *s)
{
	pthread_mutex_lock(&qd->lock);
	qfair_push(&qd->run, &s->fair);
	pthread_cond_signal(&qd->work);
	pthread_mutex_unlock(&qd->lock);
}

/*
 * @s's request is in flight for its identity from now on, unless that
 * identity has QFAIR_HELD_MAX in flight already: then it is refused
 * (answered here). Return: true when it goes on.
 */
static bool slot_enter(struct qslot *s)
{
	char msg[200];
	int ret;

	pthread_mutex_lock(&s->qd->lock);
	ret = qfair_enter(&s->qd->run, &s->who, &s->fair);
	pthread_mutex_unlock(&s->qd->lock);
	if (ret == 0)
		return true;
	snprintf(msg, sizeof(msg), "%d requests of this identity are in flight already; "
		 "try again when some are answered", QFAIR_HELD_MAX);
	log_refused(&s->who, ret == -EBUSY ? msg : tc_strerror(ret));
	slot_error(s, ret, ret == -EBUSY ? msg : tc_strerror(ret));
	return false;
}

/*
 * A request with `sync`: run it now when what was received is already
 * stored; else put it on the sync list (its mark taken now), or refuse it
 * when QUERYD_SYNC_WAITERS already wait.
 */
static void slot_sync(struct qslot *s)
{
	struct queryd *qd = s->qd;
	struct queryd_ingest in = ingest_get(qd);
	bool stored = !in.received || !in.wait_stored;
	uint32_t ms = s->req.sync_ms < qd->o.sync_max_ms ? s->req.sync_ms : qd->o.sync_max_ms;
	char msg[160];

	if (!stored) {
		s->mark = in.received(in.arg);
		stored = in.wait_stored(in.arg, s->mark, 0) == 0;
	}
	ingest_put(qd);
	if (stored) {
		run_push(qd, s);
		return;
	}
	s->wait_ms = ms;
	s->deadline = util_now_ms() + ms;
	pthread_mutex_lock(&qd->lock);
	if (qd->sync.n < QUERYD_SYNC_WAITERS) {
		qlist_push(&qd->sync, s);
		pthread_cond_signal(&qd->sync_wake);
		s = NULL;
	}
	pthread_mutex_unlock(&qd->lock);
	if (!s) {
		log_debug("a request waits up to %u ms for what was received to be stored", ms);
		return;
	}
	snprintf(msg, sizeof(msg), "%d requests already wait for the collector to store "
		 "what it received; try again later", QUERYD_SYNC_WAITERS);
	log_query(&s->who, &s->req, "refused: too many sync waits", s->t0);
	slot_error(s, -EBUSY, msg);
}

/* A request refused before it was decoded: who sent it, and why. */
static void log_refused(const struct qauth_who *who, const char *why)
{
	char w[QAUTH_NAME_MAX * 4 + 64];

	log_info("query from %s: refused: %s", qauth_who_str(who, w, sizeof(w)), why);
}

/*
 * Who sent @m: the uid of an ipc peer (nng reads it with SO_PEERCRED);
 * over tcp (loopback only) nobody in particular.
 */
static void slot_who(struct qauth_who *who, nng_msg *m)
{
	uint64_t uid = 0;

	memset(who, 0, sizeof(*who));
	who->kind = QAUTH_TCP;
	if (nng_pipe_get_uint64(nng_msg_get_pipe(m), NNG_OPT_IPC_PEER_UID, &uid) == 0) {
		who->kind = QAUTH_UID;
		who->uid = uid;
	}
}

void queryd_submit(struct qslot *s, const struct qauth_who *who, const void *buf, size_t len)
{
	char msg[128];
	int ret = TC_ERR_TOO_LONG;

	s->state = SLOT_BUSY;
	s->t0 = util_now_ms();
	s->t0_us = lathist_now_us();
	atomic_fetch_add(&s->qd->in_flight, 1);	/* until slot_reply() */
	s->who = *who;
	s->cancel = false;
	if (!slot_enter(s))
		return;
	if (len <= QIMPORT_MAX_REQUEST) {	/* an import's (queryd_import.c), or a query */
		ret = qimport_request_decode(buf, len, &s->imp);
		if (ret == 0) {
			run_push(s->qd, s);
			return;
		}
		if (ret == TC_ERR_MSG_UNKNOWN)
			ret = TC_ERR_TOO_LONG;
	}
	if (len <= QMSG_MAX_REQUEST)
		ret = qmsg_request_decode(buf, len, &s->req);
	if (ret == TC_ERR_TOO_LONG) {
		snprintf(msg, sizeof(msg), "request of %zu bytes: over the limit of %u bytes",
			 len, QMSG_MAX_REQUEST);
		log_refused(&s->who, msg);
		slot_error(s, ret, msg);
	} else if (ret < 0) {
		log_refused(&s->who, tc_strerror(ret));
		slot_error(s, ret, tc_strerror(ret));
	} else if (s->req.sync_ms) {
		slot_sync(s);
	} else {
		run_push(s->qd, s);
	}
}

/* A request has come to @s over nng: from whom, then on its way. */
static void slot_intake(struct qslot *s, nng_msg *m)
{
	struct qauth_who who;

	slot_who(&who, m);
	atomic_store(&s->pipe, nng_pipe_id(nng_msg_get_pipe(m)));
	queryd_submit(s, &who, nng_msg_body(m), nng_msg_len(m));
	nng_msg_free(m);
}

struct qslot *queryd_slot_new(struct queryd *qd, queryd_reply_fn reply, void *ctx)
{
	struct qslot *s = calloc(1, sizeof(*s));

	if (s) {
		s->qd = qd;
		s->reply = reply;
		s->reply_ctx = ctx;
	}
	return s;
}

void queryd_slot_cancel(struct qslot *s)
{
	s->cancel = true;
}

/*
 * nng's thread: pipe @p closed (a client went away). The requests that
 * came on it and are being answered stop: no one would read the answer.
 */
static void pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct queryd *qd = arg;
	unsigned id = (unsigned)nng_pipe_id(p);

	(void)ev;
	for (size_t i = 0; i < qd->nslots; i++)
		if (atomic_load(&qd->slots[i].pipe) == id)
			qd->slots[i].cancel = true;
}

void queryd_slot_free(struct qslot *s)
{
	if (s) {
		qmsg_request_free(&s->req);
		qimport_request_free(&s->imp);
	}
	free(s);
}

/* The aio of @arg (a slot) finished a receive or a send. nng's thread: never blocks. */
static void slot_cb(void *arg)
{
	struct qslot *s = arg;
	int rv = nng_aio_result(s->aio);
	nng_msg *m;

	if (s->state == SLOT_SEND) {
		m = rv ? nng_aio_get_msg(s->aio) : NULL;
		if (m)
			nng_msg_free(m);
		if (rv && rv != NNG_ECLOSED && rv != NNG_ECANCELED)
			log_debug("reply not sent: %s", nng_strerror(rv));
		slot_recv(s);
	} else if (rv == 0) {
		slot_intake(s, nng_aio_get_msg(s->aio));
	} else if (rv != NNG_ECLOSED && rv != NNG_ECANCELED && !atomic_load(&s->qd->stop)) {
		log_warn("receive: %s", nng_strerror(rv));
		slot_recv(s);
	} else {
		s->state = SLOT_IDLE;
	}
}

/* ---- the pool ---- */

/* What one page read ahead needs once its request is freed. */
struct ahead_job {
	struct qahead_entry *e;		/* its place, which holds the request */
	struct qauth_who who;
};

/*
 * The page after the one just answered (@pg) of select @r, as the client
 * will ask for it (select_next() in traceq/mode_select.c): its place in
 * the cache claimed into @job. False: none to read (no more rows, a sync
 * request, no room).
 */
static bool ahead_plan(struct queryd *qd, const struct qmsg_request *r,
		       const struct qauth_who *who, const struct qsel_page *pg, uint64_t gen,
		       struct ahead_job *job)
{
	struct qmsg_request next = *r;	/* shallow: qahead_begin() keeps its encoding */

	if (!qd->ahead || r->op != QOP_SELECT || r->sync_ms || !pg->more || !pg->rows)
		return false;
	next.after_ts = pg->last_ts;
	next.after_id = pg->last_id;
	next.after_type = pg->last_type;
	next.sent = r->sent + pg->rows;
	job->who = *who;
	job->e = qahead_begin(qd->ahead, who, &next, gen);
	return job->e != NULL;
}

/* Read @job's page into its place, as handle() would answer it. */
static void ahead_read(struct qworker *wk, struct ahead_job *job)
{
	static const volatile bool never;
	struct queryd *qd = wk->qd;
	struct store_stop stop = { .cancel = &never };
	struct qmsg_request next;
	struct proto_buf page;
	char said[QAHEAD_RESULT_MAX];

	if (qahead_request(job->e, &next) < 0) {
		qahead_done(qd->ahead, job->e, NULL, NULL, "");
		return;
	}
	proto_buf_init(&page);
	stop.deadline_ms = qd->o.timeout_ms ? util_now_ms() + qd->o.timeout_ms : 0;
	store_set_stop(wk->store, &stop);
	handle(wk, &next, &job->who, util_now_ms(), &page, said, sizeof(said));
	store_set_stop(wk->store, NULL);
	qahead_done(qd->ahead, job->e, wk->paged ? &page : NULL, &wk->page, said);
	proto_buf_free(&page);
	qmsg_request_free(&next);
}

static void *worker_main(void *arg)
{
	struct qworker *wk = arg;
	struct queryd *qd = wk->qd;
	struct store_stop stop;
	struct proto_buf out;
	struct qslot *s = NULL;
	struct qfair_item *it = NULL;
	struct qfair_ident *id = NULL;
	struct ahead_job job;
	struct qsel_page pg;
	char said[QAHEAD_RESULT_MAX];

	for (;;) {
		bool ahead = false;
		uint64_t gen;

		pthread_mutex_lock(&qd->lock);
		if (id) {	/* the last request's identity gives its worker back */
			qfair_done(&qd->run, id);
			id = NULL;
			if (qd->run.queued)	/* one it held back may run now */
				pthread_cond_signal(&qd->work);
		}
		while (!atomic_load(&qd->stop) && !(it = qfair_pop(&qd->run, &id)))
			pthread_cond_wait(&qd->work, &qd->lock);
		pthread_mutex_unlock(&qd->lock);
		if (atomic_load(&qd->stop))
			break;
		s = (struct qslot *)((char *)it - offsetof(struct qslot, fair));
		proto_buf_init(&out);
		gen = atomic_load(&qd->scope_gen);
		if (s->imp.op) {
			import(wk, &s->imp, &s->who, &out);
		} else if (s->req.op == QOP_SELECT && qd->ahead &&
			   qahead_take(qd->ahead, &s->who, &s->req, gen, &out, &pg, said,
				       sizeof(said))) {
			snprintf(said + strlen(said), sizeof(said) - strlen(said), " (read ahead)");
			log_query(&s->who, &s->req, said, s->t0);
			ahead = ahead_plan(qd, &s->req, &s->who, &pg, gen, &job);
		} else {
			stop.deadline_ms = qd->o.timeout_ms ? util_now_ms() + qd->o.timeout_ms : 0;
			stop.cancel = &s->cancel;
			store_set_stop(wk->store, &stop);
			handle(wk, &s->req, &s->who, s->t0, &out, NULL, 0);
			store_set_stop(wk->store, NULL);
			ahead = wk->paged && ahead_plan(qd, &s->req, &s->who, &wk->page, gen, &job);
		}
		slot_reply(s, &out);
		proto_buf_free(&out);
		if (ahead && !atomic_load(&qd->stop))	/* read while the client decodes this one */
			ahead_read(wk, &job);
		else if (ahead)		/* stopping: its place given up unread */
			qahead_done(qd->ahead, job.e, NULL, NULL, "");
	}
	return NULL;
}

/* ---- the sync thread ---- */

/* How long to wait on ingest: until the first deadline, at most a slice. */
static int sync_wait_ms(const struct qlist *waiting)
{
	int64_t now = util_now_ms(), ms = QUERYD_SYNC_SLICE_MS;

	for (const struct qslot *s = waiting->head; s; s = s->next)
		if (s->deadline - now < ms)
			ms = s->deadline - now;
	return ms < 0 ? 0 : (int)ms;
}

static void sync_timeout(struct qslot *s)
{
	char msg[256];

	if (s->req.sync_ms > s->wait_ms)
		snprintf(msg, sizeof(msg), "the collector has not stored everything it "
			 "received yet (its receive journal) after %u ms, the longest it "
			 "waits (query-sync-max)", s->wait_ms);
	else
		snprintf(msg, sizeof(msg), "the collector has not stored everything it "
			 "received yet (its receive journal); try a longer --timeout");
	log_query(&s->who, &s->req, "timed out waiting for sync", s->t0);
	slot_error(s, TC_ERR_TIMEOUT, msg);
}

/*
 * Send on each waiter of @waiting: to the pool once its mark is stored,
 * a TC_ERR_TIMEOUT reply once its deadline is past. Return: how many left.
 */
static size_t sync_sweep(struct queryd *qd, struct qlist *waiting)
{
	struct qslot **pp = &waiting->head, *s;
	int64_t now = util_now_ms();
	size_t left = 0;
	bool stored;

	while ((s = *pp)) {
		stored = ingest_stored(qd, s->mark, 0);
		if (!stored && now < s->deadline) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		waiting->n--;
		left++;
		if (stored)
			run_push(qd, s);
		else
			sync_timeout(s);
	}
	waiting->tail = pp;
	return left;
}

/*
 * The waiters are the sync thread's own list; qd->sync is their inbox
 * (and its count, all of them). One wait on ingest at a time, for the
 * oldest mark, at most until the first deadline or a slice: then every
 * waiter is looked at again.
 */
static void *sync_main(void *arg)
{
	struct queryd *qd = arg;
	struct qlist waiting = { NULL, &waiting.head, 0 };
	struct qslot *s;
	size_t left;

	pthread_mutex_lock(&qd->lock);
	while (!atomic_load(&qd->stop)) {
		while ((s = qd->sync.head)) {
			qd->sync.head = s->next;	/* n stays: it counts them all */
			if (!qd->sync.head)
				qd->sync.tail = &qd->sync.head;
			qlist_push(&waiting, s);
		}
		if (!waiting.head) {
			pthread_cond_wait(&qd->sync_wake, &qd->lock);
			continue;
		}
		pthread_mutex_unlock(&qd->lock);
		ingest_stored(qd, waiting.head->mark, sync_wait_ms(&waiting));
		left = sync_sweep(qd, &waiting);
		pthread_mutex_lock(&qd->lock);
		qd->sync.n -= left;
	}
	pthread_mutex_unlock(&qd->lock);
	return NULL;
}

/* ---- start, stop ---- */

/*
 * The directory of ipc socket @path, made 0750 with group @gid (-1: none)
 * when missing; an existing one is left as it is (the operator's).
 */
static int ipc_dir(const char *path, gid_t gid)
{
	char *copy = strdup(path), *dir;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (mkdir(dir, 0750) == 0) {
		if ((gid != (gid_t)-1 && chown(dir, (uid_t)-1, gid) < 0) || chmod(dir, 0750) < 0)
			ret = -errno;
	} else if (errno != EEXIST) {
		ret = -errno;
	}
	if (ret < 0)
		log_err("query socket directory %s: %s", dir, strerror(-ret));
	free(copy);
	return ret;
}

/*
 * The ipc listener @l of socket @path: mode 0660 with the query group, or
 * 0600 when the group does not exist (nng sets the mode before it starts
 * listening: NNG_OPT_IPC_PERMISSIONS; the umask covers the moment before).
 */
static int ipc_listen(struct queryd *qd, nng_listener l, const char *path)
{
	const char *group = qd->o.group ? qd->o.group : QUERYD_GROUP;
	struct group gr, *g = NULL;
	char buf[4096];
	gid_t gid = (gid_t)-1;
	mode_t old;
	int rv;

	if (getgrnam_r(group, &gr, buf, sizeof(buf), &g) == 0 && g)
		gid = g->gr_gid;
	else
		log_warn("query-group: group %s does not exist: the query socket %s is "
			 "mode 0600, only this collector's user (uid %u) may query",
			 group, path, (unsigned)geteuid());
	if (ipc_dir(path, gid) < 0)
		return TC_ERR_CONFIG;
	rv = nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS,
				  gid == (gid_t)-1 ? 0600 : 0660);
	old = umask(0177);
	if (rv == 0)
		rv = nng_listener_start(l, 0);
	umask(old);
	if (rv == 0 && gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) {
		log_err("query socket %s: chown to group %s: %s", path, group, strerror(errno));
		return TC_ERR_CONFIG;
	}
	if (rv != 0) {
		log_err("cannot listen for queries on ipc://%s: %s", path, nng_strerror(rv));
		return TC_ERR_CONFIG;
	}
	if (gid != (gid_t)-1)
		log_info("query socket %s: mode 0660, group %s", path, group);
	return 0;
}

static int queryd_listen(struct queryd *qd, const char *url, char *bound, size_t blen)
{
	nng_listener l;
	char why[512];
	int port = 0, rv;

	if (qauth_url_check(url, why, sizeof(why)) < 0) {
		log_err("%s", why);
		return TC_ERR_CONFIG;
	}
	rv = nng_listener_create(&l, qd->sock, url);
	if (rv == 0 && !strncmp(url, "ipc://", 6)) {
		if (ipc_listen(qd, l, url + 6) < 0)
			return TC_ERR_CONFIG;
	} else if (rv == 0) {
		rv = nng_listener_start(l, 0);
	}
	if (rv != 0) {
		log_err("cannot listen for queries on %s: %s", url, nng_strerror(rv));
		return TC_ERR_CONFIG;
	}
	snprintf(bound, blen, "%s", url);
	if (strncmp(url, "ipc://", 6) &&
	    nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port) == 0) {
		const char *colon = strrchr(url, ':');

		snprintf(bound, blen, "%.*s:%d", (int)(colon - url), url, port);
	}
	return 0;
}

/*
 * The socket and its slots. The transport takes messages up to
 * QMSG_MAX_WIRE, well above QMSG_MAX_REQUEST, so that a request over the
 * protocol's limit reaches slot_intake() and gets an error reply (nng
 * drops a larger one and closes the connection, without a word).
 */
static int open_socket(struct queryd *qd, const char *url, char *bound, size_t blen)
{
	int rv = nng_rep0_open(&qd->sock);

	qd->sock_open = rv == 0;
	if (rv == 0)
		rv = nng_socket_set_size(qd->sock, NNG_OPT_RECVMAXSZ, QMSG_MAX_WIRE);
	qd->nslots = qd->o.threads + QUERYD_SYNC_WAITERS + QFAIR_HELD_MAX;
	qd->slots = rv ? NULL : calloc(qd->nslots, sizeof(*qd->slots));
	if (rv == 0 && !qd->slots)
		return -ENOMEM;
	for (size_t i = 0; rv == 0 && i < qd->nslots; i++) {
		qd->slots[i].qd = qd;
		rv = nng_ctx_open(&qd->slots[i].ctx, qd->sock);
		if (rv == 0)
			rv = nng_aio_alloc(&qd->slots[i].aio, slot_cb, &qd->slots[i]);
	}
	if (rv == 0)
		rv = nng_pipe_notify(qd->sock, NNG_PIPE_EV_REM_POST, pipe_gone, qd);
	if (rv != 0) {
		log_err("query endpoint: %s", nng_strerror(rv));
		return TC_ERR_CONFIG;
	}
	return queryd_listen(qd, url, bound, blen);
}

static int start_threads(struct queryd *qd, const char *db_path)
{
	int ret = 0;

	qd->workers = calloc(qd->o.threads, sizeof(*qd->workers));
	if (!qd->workers || qahead_new(qd->o.threads, &qd->ahead) < 0)
		return -ENOMEM;
	for (unsigned i = 0; ret == 0 && i < qd->o.threads; i++) {
		struct qworker *wk = &qd->workers[i];

		wk->qd = qd;
		ret = store_reader_open(db_path, &wk->store);
		if (ret < 0)
			log_err("query endpoint: database %s: %s", db_path, tc_strerror(ret));
		else if (pthread_create(&wk->thread, NULL, worker_main, wk) != 0)
			ret = -EAGAIN;
		wk->started = ret == 0;
	}
	if (ret == 0 && pthread_create(&qd->sync_thread, NULL, sync_main, qd) != 0)
		ret = -EAGAIN;
	qd->sync_started = ret == 0;
	return ret;
}

/* Stop what was started of @qd and free it (queryd_stop, or a failed start). */
static void queryd_free(struct queryd *qd)
{
	atomic_store(&qd->stop, true);
	pthread_mutex_lock(&qd->lock);
	pthread_cond_broadcast(&qd->work);
	pthread_cond_broadcast(&qd->sync_wake);
	pthread_mutex_unlock(&qd->lock);
	for (unsigned i = 0; qd->workers && i < qd->o.threads; i++)
		if (qd->workers[i].started)
			pthread_join(qd->workers[i].thread, NULL);
	if (qd->sync_started)
		pthread_join(qd->sync_thread, NULL);
	if (qd->sock_open)
		nng_close(qd->sock);	/* aborts every slot's receive or send */
	for (size_t i = 0; qd->slots && i < qd->nslots; i++) {
		if (qd->slots[i].aio) {
			nng_aio_stop(qd->slots[i].aio);
			nng_aio_free(qd->slots[i].aio);
		}
		qmsg_request_free(&qd->slots[i].req);
	}
	for (unsigned i = 0; qd->workers && i < qd->o.threads; i++)
		store_reader_close(qd->workers[i].store);
	free(qd->workers);
	free(qd->slots);
	qfair_free(&qd->run);
	qahead_free(qd->ahead);
	pthread_mutex_destroy(&qd->lock);
	pthread_cond_destroy(&qd->work);
	pthread_cond_destroy(&qd->sync_wake);
	pthread_mutex_destroy(&qd->ingest_lock);
	pthread_cond_destroy(&qd->ingest_idle);
	scopes_put(qd, qd->scopes);
	pthread_mutex_destroy(&qd->scope_lock);
	free(qd);
}

int queryd_start(const char *url, const char *db_path, const struct queryd_opts *o,
		 struct queryd **out, char *bound, size_t blen)
{
	static const struct queryd_opts def = { .threads = QUERYD_THREADS,
						.sync_max_ms = QUERYD_SYNC_MAX_MS,
						.timeout_ms = QUERYD_TIMEOUT_MS };
	struct queryd *qd;
	int ret;

	o = o ? o : &def;
	if (o->threads < 1 || o->threads > QUERYD_THREADS_MAX ||
	    o->sync_max_ms < 1 || o->sync_max_ms > QUERYD_SYNC_MAX_MS_MAX)
		return -EINVAL;
	qd = calloc(1, sizeof(*qd));
	if (!qd || !(qd->scopes = calloc(1, sizeof(*qd->scopes)))) {
		free(qd);
		return -ENOMEM;
	}
	qd->o = *o;
	qd->scopes->sc = o->scopes;	/* the caller's, kept until queryd_stop() */
	qd->scopes->refs = 1;
	pthread_mutex_init(&qd->scope_lock, NULL);
	qfair_init(&qd->run, o->threads);
	qd->sync.tail = &qd->sync.head;
	pthread_mutex_init(&qd->lock, NULL);
	pthread_cond_init(&qd->work, NULL);
	pthread_cond_init(&qd->sync_wake, NULL);
	pthread_mutex_init(&qd->ingest_lock, NULL);
	pthread_cond_init(&qd->ingest_idle, NULL);
	ret = open_socket(qd, url, bound, blen);
	if (ret == 0)
		ret = start_threads(qd, db_path);
	if (ret < 0) {
		queryd_free(qd);
		return ret;
	}
	for (size_t i = 0; i < qd->nslots; i++)
		slot_recv(&qd->slots[i]);
	*out = qd;
	return 0;
}

unsigned queryd_in_flight(struct queryd *qd)
{
	return atomic_load(&qd->in_flight);
}

void queryd_stop(struct queryd *qd)
{
	if (qd)
		queryd_free(qd);
}
