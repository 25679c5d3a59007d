/*
 * ingest.c - the ingest worker: one thread that owns the store and turns
 * what the connections hand over into committed rows.
 *
 * The event loop (conn.c) frames input and pushes jobs - a control message,
 * a batch of pages, or "connection closed" - onto one FIFO queue, so each
 * connection's jobs run in the order they arrived. The worker decodes,
 * filters and inserts them (sink.c) inside one open transaction, committed
 * every INGEST_BATCH events or commit_ms milliseconds, whichever comes
 * first, and before answering a BYE (so DONE means "on disk"). Large
 * transactions are what makes SQLite fast. The store runs the batched
 * INSERTs on a writer thread of its own and checkpoints on another
 * (store_sqlite.c): decoding and filtering here, B-tree work there.
 *
 * Flow control: the queue counts the bytes it holds. Above queue_bytes a
 * connection stops reading its socket (ingest_full()), so TCP pushes back
 * on its agent; once the worker has drained the queue to half, it asks the
 * loop to resume them. Nothing is dropped.
 *
 * The worker reports to the loop through a result list and an eventfd:
 * per-connection results (WELCOME, DONE, FAIL), "a commit happened" (the
 * loop then calls conn_committed_all()) and "resume reading".
 *
 * Retention runs in the worker too, inside a transaction, at most once per
 * INGEST_RETAIN_S seconds.
 */
#include "config.h"

#define LOG_PREFIX "ingest"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/eventfd.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "server/collector.h"
#include "server/dedup.h"
#include "server/filters.h"
#include "server/sink.h"

#define INGEST_BATCH		1000000		/* events per transaction, at most */
#define INGEST_JOB_BYTES	(256u << 10)	/* pages batched per job */
#define INGEST_RETAIN_S		1

enum job_kind { JOB_MSG, JOB_PAGES, JOB_CLOSE };

struct ingest_job {
	struct ingest_job *next;
	struct sink *sink;
	enum job_kind kind;
	struct proto_msg msg;	/* JOB_MSG */
	uint8_t *buf;		/* JOB_PAGES: page records */
	size_t len, cap;
};

/* In a JOB_PAGES buffer: this header, the page, padding to 8 bytes. */
struct page_rec {
	uint32_t cpu;
	uint32_t len;
	uint64_t seq;
};

struct ingest {
	struct collector *col;
	struct ingest_opts o;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock: */
	struct ingest_job *head, **tail;
	size_t bytes;			/* queued job bytes */
	bool stop, full;
	struct ingest_result *results, **rtail;
	bool committed, resume;
	struct filters *filters;
	unsigned filters_gen;
	/* event loop: */
	int efd;
	struct event *ev;
	/* worker only: */
	struct sink *sinks;
	struct sink_env env;
	struct filters *env_filters;	/* the reference env.filters holds */
	struct dedup *sessions;		/* env.sessions points here */
	bool txn_open;
	uint64_t txn_events;
	int64_t txn_start, last_retain;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t job_bytes(const struct ingest_job *j)
{
	return sizeof(*j) + j->cap;
}

static void job_free(struct ingest_job *j)
{
	if (j->kind == JOB_MSG)
		proto_msg_free(&j->msg);
	free(j->buf);
	free(j);
}

/* ---- worker -> loop ---- */

static void ing_notify(struct ingest *g)
{
	uint64_t one = 1;

	if (write(g->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_err("eventfd: %s", strerror(errno));
}

/* Queue @r for the loop (takes it over). Called with the lock held. */
static void ing_post_locked(struct ingest *g, struct ingest_result *r)
{
	r->next = NULL;
	*g->rtail = r;
	g->rtail = &r->next;
	ing_notify(g);
}

static void ing_post(struct ingest *g, const struct ingest_result *tmpl)
{
	struct ingest_result *r = malloc(sizeof(*r));

	if (!r) {
		log_err("out of memory posting a result for connection %llu",
			(unsigned long long)tmpl->conn_id);
		return;
	}
	*r = *tmpl;
	pthread_mutex_lock(&g->lock);
	ing_post_locked(g, r);
	pthread_mutex_unlock(&g->lock);
}

static void ing_fail(struct ingest *g, struct sink *s, int err, const char *what)
{
	struct ingest_result r = { .conn_id = s->conn_id, .kind = IR_FAIL, .err = err };

	snprintf(r.what, sizeof(r.what), "%s", what);
	s->failed = true;
	ing_post(g, &r);
}

/* Free a result and the message it may carry. */
static void ing_result_free(struct ingest_result *r)
{
	if (r->msg) {
		proto_msg_free(r->msg);
		free(r->msg);
	}
	free(r);
}

/* Post the MSG_FILTERs @s queued (push-down) for its connection to send. */
static void ing_post_pushes(struct ingest *g, struct sink *s)
{
	struct proto_msg *msgs;
	size_t n, i;

	pushdown_take(&s->pushq, &msgs, &n);
	for (i = 0; i < n; i++) {
		struct ingest_result *r = calloc(1, sizeof(*r));

		if (r)
			r->msg = malloc(sizeof(*r->msg));
		if (!r || !r->msg) {
			free(r);
			proto_msg_free(&msgs[i]);
			log_err("out of memory posting a filter for host %s", s->host);
			continue;
		}
		r->conn_id = s->conn_id;
		r->kind = IR_MSG;
		*r->msg = msgs[i];
		pthread_mutex_lock(&g->lock);
		ing_post_locked(g, r);
		pthread_mutex_unlock(&g->lock);
	}
	free(msgs);
}

/* The loop's side of the eventfd: take everything the worker posted. */
static void ing_results_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ingest *g = arg;
	struct ingest_result *list, *r;
	bool committed, resume;
	uint64_t n;

	if (read(g->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_err("eventfd: %s", strerror(errno));
	pthread_mutex_lock(&g->lock);
	list = g->results;
	g->results = NULL;
	g->rtail = &g->results;
	committed = g->committed;
	resume = g->resume;
	g->committed = g->resume = false;
	pthread_mutex_unlock(&g->lock);
	if (committed)
		conn_committed_all(g->col);
	while ((r = list)) {
		list = r->next;
		conn_on_result(g->col, r);
		ing_result_free(r);
	}
	if (resume)
		conn_resume_all(g->col);
}

/* ---- worker: transactions ---- */

static int ing_begin(struct ingest *g)
{
	int ret;

	if (g->txn_open)
		return 0;
	ret = store_begin(g->col->store);
	if (ret < 0) {
		log_err("begin: %s (%s)", tc_strerror(ret), store_errmsg(g->col->store));
		return ret;
	}
	g->txn_open = true;
	g->txn_events = 0;
	g->txn_start = now_ms();
	return 0;
}

static void ing_retain(struct ingest *g)
{
	struct timespec ts;
	int64_t before = INT64_MIN;
	uint64_t removed = 0;
	int ret;

	if ((!g->o.retain_age_ns && !g->o.retain_bytes) ||
	    now_ms() - g->last_retain < INGEST_RETAIN_S * 1000)
		return;
	g->last_retain = now_ms();
	if (g->o.retain_age_ns) {
		clock_gettime(CLOCK_REALTIME, &ts);
		before = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - g->o.retain_age_ns;
	}
	ret = store_retain(g->col->store, before, g->o.retain_bytes, &removed);
	if (ret < 0)
		log_err("retention: %s (%s)", tc_strerror(ret), store_errmsg(g->col->store));
	else if (removed)
		log_info("retention removed %llu events", (unsigned long long)removed);
}

/*
 * The transaction was rolled back (disk full, I/O error): none of its pages
 * is stored, yet every connection has moved past them. Forget the marks
 * they raised and close every connection without acknowledging them; the
 * agents reconnect and resend what was not acknowledged (program pages,
 * which are not kept for resending, the agent counts as lost).
 */
static void ing_rolled_back(struct ingest *g, int err)
{
	struct store *st = g->col->store;
	int ret;

	log_err("commit failed: %s (%s); closing every agent connection so "
		"that the agents send the pages of this transaction again",
		tc_strerror(err), store_errmsg(st));
	store_rollback(st);	/* if a flush failed before the commit */
	ret = dedup_reload(g->sessions, st);
	if (ret < 0)
		log_err("re-reading the stored page marks: %s (%s); pages sent "
			"again may be refused as duplicates", tc_strerror(ret),
			store_errmsg(st));
	for (struct sink *s = g->sinks; s; s = s->next)
		if (!s->failed)
			ing_fail(g, s, err, "commit failed");
}

/* Flush counters, apply retention, commit; tell the loop what is on disk. */
static void ing_commit(struct ingest *g)
{
	struct store *st = g->col->store;
	int ret = 0;

	if (!g->txn_open && (g->o.retain_age_ns || g->o.retain_bytes) &&
	    now_ms() - g->last_retain >= INGEST_RETAIN_S * 1000)
		ret = ing_begin(g);
	if (!g->txn_open || ret < 0)
		return;
	for (struct sink *s = g->sinks; s && ret == 0; s = s->next)
		ret = sink_flush(s, st);
	if (ret == 0)
		ing_retain(g);
	ret = ret ?: store_commit(st);
	g->txn_open = false;
	if (ret < 0) {
		ing_rolled_back(g, ret);
		return;
	}
	pthread_mutex_lock(&g->lock);
	for (struct sink *s = g->sinks; s; s = s->next)
		sink_mark_committed(s);
	g->committed = true;
	ing_notify(g);
	pthread_mutex_unlock(&g->lock);
}

/* ---- worker: jobs ---- */

static void ing_unlist(struct ingest *g, struct sink *s)
{
	struct sink **pp = &g->sinks;

	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
}

static void ing_close(struct ingest *g, struct sink *s)
{
	if (s->listed && ing_begin(g) == 0 && sink_flush(s, g->col->store) < 0)
		log_err("counters of host %s: %s", s->host ? s->host : "?",
			store_errmsg(g->col->store));
	pthread_mutex_lock(&g->lock);
	ing_unlist(g, s);
	pthread_mutex_unlock(&g->lock);
	sink_free(s);
}

static void ing_msg(struct ingest *g, struct sink *s, struct proto_msg *m)
{
	struct ingest_result r = { .conn_id = s->conn_id };
	bool respond = false, commit = false;
	int ret;

	ret = sink_msg(s, &g->env, m, &r, &respond, &commit);
	if (ret < 0) {
		ing_fail(g, s, ret, proto_msg_name(m->type));
		return;
	}
	if (commit)
		ing_commit(g);
	if (respond)
		ing_post(g, &r);
}

static void ing_pages(struct ingest *g, struct sink *s, const struct ingest_job *j)
{
	size_t off = 0;

	while (off + sizeof(struct page_rec) <= j->len && !s->failed) {
		struct page_rec rec;
		uint64_t stored = 0;
		int ret;

		memcpy(&rec, j->buf + off, sizeof(rec));
		off += sizeof(rec);
		ret = sink_page(s, &g->env, rec.cpu, rec.seq, j->buf + off, rec.len, &stored);
		off += (rec.len + 7) & ~(size_t)7;
		if (ret < 0)
			ing_fail(g, s, ret, "page");
		g->txn_events += stored;
	}
}

static void ing_run(struct ingest *g, struct ingest_job *j)
{
	struct sink *s = j->sink;

	if (j->kind == JOB_CLOSE) {
		ing_close(g, s);
		return;
	}
	if (s->failed)
		return;
	if (!s->listed) {
		pthread_mutex_lock(&g->lock);
		s->next = g->sinks;
		g->sinks = s;
		s->listed = true;
		pthread_mutex_unlock(&g->lock);
	}
	if (ing_begin(g) < 0) {
		ing_fail(g, s, TC_ERR_DB, "store");
		return;
	}
	if (j->kind == JOB_MSG)
		ing_msg(g, s, &j->msg);
	else
		ing_pages(g, s, j);
	if (s->pushq.n)
		ing_post_pushes(g, s);
}

/* A new filter table: re-resolve every live sink now (push-down updates). */
static void ing_refilter(struct ingest *g)
{
	for (struct sink *s = g->sinks; s; s = s->next) {
		if (s->failed)
			continue;
		if (sink_refilter(s, &g->env) < 0)
			ing_fail(g, s, -ENOMEM, "filters");
		else if (s->pushq.n)
			ing_post_pushes(g, s);
	}
}

/* Called with the lock held: adopt a newer filter table. Return: whether it did. */
static bool ing_env_locked(struct ingest *g)
{
	if (g->env.filters_gen == g->filters_gen && g->env_filters == g->filters)
		return false;
	filters_unref(g->env_filters);
	g->env_filters = filters_ref(g->filters);
	g->env.filters = g->env_filters;
	g->env.filters_gen = g->filters_gen;
	return true;
}

static bool ing_commit_due(const struct ingest *g)
{
	return g->txn_open && (g->txn_events >= INGEST_BATCH ||
			       now_ms() - g->txn_start >= (int64_t)g->o.commit_ms);
}

/* Wait for a job or the next commit deadline (lock held). */
static void ing_wait_locked(struct ingest *g)
{
	int64_t deadline = g->txn_open ? g->txn_start + g->o.commit_ms
				       : now_ms() + INGEST_RETAIN_S * 1000;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	deadline -= now_ms();
	deadline = deadline < 1 ? 1 : deadline;
	ts.tv_sec += deadline / 1000;
	ts.tv_nsec += (deadline % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&g->cond, &g->lock, &ts);
}

/* Nothing queued: commit when due; when idle, let retention run. */
static void ing_tick(struct ingest *g)
{
	if (ing_commit_due(g) || !g->txn_open)
		ing_commit(g);
}

static void *ing_main(void *arg)
{
	struct ingest *g = arg;
	struct ingest_job *j;
	size_t bytes;

	pthread_mutex_lock(&g->lock);
	for (;;) {
		if (ing_env_locked(g) && g->env.pushdown) {
			pthread_mutex_unlock(&g->lock);
			ing_refilter(g);
			pthread_mutex_lock(&g->lock);
			continue;
		}
		j = g->head;
		if (!j) {
			if (g->stop)
				break;
			ing_wait_locked(g);
			if (!g->head) {
				pthread_mutex_unlock(&g->lock);
				ing_tick(g);
				pthread_mutex_lock(&g->lock);
			}
			continue;
		}
		g->head = j->next;
		if (!g->head)
			g->tail = &g->head;
		pthread_mutex_unlock(&g->lock);
		bytes = job_bytes(j);
		ing_run(g, j);
		job_free(j);
		if (ing_commit_due(g))
			ing_commit(g);
		pthread_mutex_lock(&g->lock);
		g->bytes -= bytes;
		if (g->full && g->bytes <= g->o.queue_bytes / 2) {
			g->full = false;
			g->resume = true;
			ing_notify(g);
		}
	}
	pthread_mutex_unlock(&g->lock);
	ing_commit(g);
	return NULL;
}

/* ---- event loop: pushing jobs ---- */

static void ing_enqueue(struct ingest *g, struct ingest_job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&g->lock);
	*g->tail = j;
	g->tail = &j->next;
	g->bytes += job_bytes(j);
	if (g->bytes > g->o.queue_bytes)
		g->full = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

bool ingest_full(struct collector *col)
{
	struct ingest *g = col->ing;
	bool full;

	pthread_mutex_lock(&g->lock);
	full = g->full;
	pthread_mutex_unlock(&g->lock);
	return full;
}

int ingest_flush(struct collector *col, struct sink *s)
{
	if (s->pending) {
		ing_enqueue(col->ing, s->pending);
		s->pending = NULL;
	}
	return 0;
}

int ingest_push_msg(struct collector *col, struct sink *s, struct proto_msg *m)
{
	struct ingest_job *j = calloc(1, sizeof(*j));

	if (!j) {
		proto_msg_free(m);
		return -ENOMEM;
	}
	ingest_flush(col, s);
	j->sink = s;
	j->kind = JOB_MSG;
	j->msg = *m;
	memset(m, 0, sizeof(*m));
	ing_enqueue(col->ing, j);
	return 0;
}

static struct ingest_job *job_pages_new(struct sink *s, size_t need)
{
	struct ingest_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->cap = need > INGEST_JOB_BYTES ? need : INGEST_JOB_BYTES;
	j->buf = malloc(j->cap);
	if (!j->buf) {
		free(j);
		return NULL;
	}
	j->sink = s;
	j->kind = JOB_PAGES;
	return j;
}

int ingest_push_page(struct collector *col, struct sink *s, uint32_t cpu, uint64_t seq,
		     const void *page, size_t len)
{
	struct page_rec rec = { .cpu = cpu, .len = (uint32_t)len, .seq = seq };
	size_t need = sizeof(rec) + ((len + 7) & ~(size_t)7);
	struct ingest_job *j = s->pending;

	if (j && j->len + need > j->cap) {
		ingest_flush(col, s);
		j = NULL;
	}
	if (!j && !(j = s->pending = job_pages_new(s, need)))
		return -ENOMEM;
	memcpy(j->buf + j->len, &rec, sizeof(rec));
	memcpy(j->buf + j->len + sizeof(rec), page, len);
	j->len += need;
	return 0;
}

/* ---- sinks ---- */

int ingest_sink_new(struct collector *col, uint64_t conn_id, struct sink **out)
{
	struct sink *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->conn_id = conn_id;
	*out = s;
	return 0;
}

void ingest_sink_close(struct collector *col, struct sink *s)
{
	struct ingest_job *j;

	if (!s)
		return;
	j = calloc(1, sizeof(*j));
	if (!j) {
		/* cannot tell the worker: leak rather than free under its feet */
		log_err("out of memory closing a connection");
		return;
	}
	ingest_flush(col, s);
	j->sink = s;
	j->kind = JOB_CLOSE;
	ing_enqueue(col->ing, j);
}

uint64_t ingest_sink_committed(struct collector *col, struct sink *s, uint32_t cpu)
{
	uint64_t seq = 0;

	pthread_mutex_lock(&col->ing->lock);
	if (cpu < s->ncommitted)
		seq = s->committed[cpu];
	pthread_mutex_unlock(&col->ing->lock);
	return seq;
}

/* ---- filters ---- */

void ingest_set_filters(struct collector *col, struct filters *fs)
{
	struct ingest *g = col->ing;
	struct filters *old;

	pthread_mutex_lock(&g->lock);
	old = g->filters;
	g->filters = filters_ref(fs);
	g->filters_gen++;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	filters_unref(old);
}

/* ---- start, stop ---- */

int ingest_start(struct collector *col, const struct ingest_opts *o)
{
	struct ingest *g = calloc(1, sizeof(*g));
	int ret;

	if (!g)
		return -ENOMEM;
	g->col = col;
	g->o = *o;
	g->tail = &g->head;
	g->rtail = &g->results;
	g->env.store = col->store;
	g->env.sessions = &g->sessions;
	g->env.pushdown = o->pushdown;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	col->ing = g;
	g->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (g->efd < 0)
		return -errno;
	g->ev = event_new(col->base, g->efd, EV_READ | EV_PERSIST, ing_results_cb, g);
	if (!g->ev || event_add(g->ev, NULL) < 0)
		return -ENOMEM;
	ret = -pthread_create(&g->thread, NULL, ing_main, g);
	g->started = ret == 0;
	return ret;
}

void ingest_stop(struct collector *col)
{
	struct ingest *g = col->ing;
	struct ingest_result *r;

	if (!g)
		return;
	if (g->started) {
		pthread_mutex_lock(&g->lock);
		g->stop = true;
		pthread_cond_signal(&g->cond);
		pthread_mutex_unlock(&g->lock);
		pthread_join(g->thread, NULL);
	}
	while (g->head) {	/* only when the thread never ran */
		struct ingest_job *j = g->head;

		g->head = j->next;
		if (j->kind == JOB_CLOSE)
			sink_free(j->sink);
		job_free(j);
	}
	while ((r = g->results)) {
		g->results = r->next;
		ing_result_free(r);
	}
	while (g->sinks) {
		struct sink *s = g->sinks;

		g->sinks = s->next;
		sink_free(s);
	}
	if (g->ev)
		event_free(g->ev);
	if (g->efd >= 0)
		close(g->efd);
	filters_unref(g->filters);
	filters_unref(g->env_filters);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
	col->ing = NULL;
}
