/*
 * ingest.c - the ingest worker: one thread that owns the store and turns
 * what the connections hand over into committed rows.
 *
 * The event loop (the connections: conn.c in tracecollectd) frames input
 * and pushes jobs - a control message, a batch of pages, or "connection
 * closed" - onto one FIFO queue, so each connection's jobs run in the order
 * they arrived. The worker decodes, filters and inserts them (sink.c)
 * inside one open transaction, committed every INGEST_BATCH events or
 * commit_ms milliseconds, whichever comes first, and before answering a BYE
 * (so DONE means "on disk"). Large transactions are what makes SQLite fast. The store runs the batched
 * INSERTs on a writer thread of its own and checkpoints on another
 * (server/store/sqlite_write.c): decoding and filtering here, B-tree work there.
 *
 * Flow control: the queue counts the bytes it holds. Above queue_bytes a
 * connection stops reading its socket (ingest_full()), so TCP pushes back
 * on its agent; once the worker has drained the queue to half, it asks the
 * loop to resume them. Nothing is dropped.
 *
 * The worker reports to the loop through a result list and an eventfd:
 * per-connection results (WELCOME, DONE, FAIL, a message to send), "a
 * commit happened" and "resume reading". On the loop, ing_results_cb()
 * hands each to the hooks the caller gave ingest_start() (ingest.h says
 * which and in what order); ingest never calls into the connections.
 *
 * Retention runs in the worker too, inside a transaction, at most once per
 * INGEST_RETAIN_S seconds.
 *
 * With a receive journal (journal.h; the default), the event loop appends
 * every job to its connection's journal file before queueing it, and
 * acknowledges pages as soon as they are there. The queue's memory stays
 * within queue_bytes: above it a batch of pages keeps only its place in the
 * file, and the worker reads it back. Reading stops only when the journal
 * reaches its limit. A file goes once everything in it is committed: at the
 * connection's end, or before, by rotation to a new file that starts with
 * the messages that shape decoding (HELLO, HEADER_PAGE, GROUP, FORMAT,
 * CMDLINES, the latest CLOCK and clock measurement), then the clock map
 * as it stands (JREC_CLOCKMAP: a slew under way goes on in a replay as it
 * did; clockmap.h) and the task names the connection knows (JREC_PIDNAMES:
 * the names learned from events before it; pidnames.h). Pages stored before
 * a crash are walked again in a replay, for the clock map and the names they
 * teach, not stored. The worker stores the files left by an
 * earlier run before anything else, and after a failed commit it stores
 * again, from their files, every connection that was live or closed in the
 * lost transaction. The store keeps how far each file is stored (journal
 * marks, committed with the rows), so that is where storing resumes.
 * Each message and page it decodes is marked in progress first, so that
 * one that kills the process is quarantined at the next start instead of
 * killing it again (journal.h: crash quarantine).
 *
 * Nothing acknowledged is dropped without a word: a page that is not
 * stored (malformed, of an unknown CPU, after its connection failed,
 * quarantined) and an event that is not (no FORMAT, a field outside its
 * record) are counted with why in drops and per CPU (sink_page_dropped()),
 * and each reason is logged once per connection.
 */
#include "config.h"

#define LOG_PREFIX "ingest"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/eventfd.h>

#include <event2/event.h>

#include "common/lathist.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "server/ingest/dedup.h"
#include "server/ingest/filter_table.h"
#include "server/ingest/ingest.h"
#include "server/ingest/journal.h"
#include "server/ingest/sink.h"

#define INGEST_BATCH		1000000		/* events per transaction, at most */
#define INGEST_JOB_BYTES	(256u << 10)	/* pages batched per job */
#define INGEST_RETAIN_S		1
#define INGEST_LIVE_S		5	/* the live-host set to the store this often */
#define INGEST_LIVE_MAX		65536	/* hosts of one collector in it, at most */
#define INGEST_ROTATE_BYTES	(64u << 20)	/* a journal file rotates above this */
#define INGEST_RETRY_MS		1000		/* after a failed replay */
#define INGEST_ALTSTACK		(64u << 10)	/* the worker's signal stack */
#define INGEST_STALL_WHY	256		/* the failure a stall is reported with */

enum job_kind { JOB_MSG, JOB_PAGES, JOB_CLOSE, JOB_HELD };

struct ingest_job {
	struct ingest_job *next;
	struct sink *sink;
	enum job_kind kind;
	struct proto_msg msg;	/* JOB_MSG */
	uint8_t *buf;		/* JOB_PAGES: page records; NULL: spilled;
				 * JOB_HELD: struct ingest_held[] */
	size_t len, cap;
	struct jfile *jf;	/* the job's journal file (JOB_CLOSE: the
				 * connection's, handed over); NULL: none */
	uint64_t joff;		/* its payload there: a spilled buf is read back */
	uint64_t jend;		/* the end of its record (the store's mark) */
	uint64_t page_bytes;	/* JOB_PAGES: the bytes of its pages */
};

/* A context record in a connection's journal file (rotation copies it). */
struct sink_jctx {
	uint64_t off;
	uint32_t len;
	uint32_t kind;
};

/*
 * Messages that shape how later pages decode (and are stored: hosts, event
 * tables, comms, the clock): a new journal file starts with them, and
 * stored parts of a file still apply them when it is stored again.
 */
static bool msg_shapes_decoding(enum proto_msg_type type)
{
	switch (type) {
	case MSG_HELLO:
	case MSG_HEADER_PAGE:
	case MSG_GROUP:
	case MSG_FORMAT:
	case MSG_CMDLINES:
	case MSG_CLOCK:
	case MSG_CLOCK_MEASURE:
		return true;
	default:
		return false;
	}
}

/* A list of journal files the worker holds. */
struct jlist {
	struct jfile **v;
	size_t n, cap;
};

/* What the worker posts for the loop; ing_results_cb() calls its hook. */
enum ingest_result_kind {
	IR_WELCOME,		/* HELLO stored: hooks.welcome */
	IR_DONE,		/* BYE: everything committed: hooks.done */
	IR_FAIL,		/* a message or page failed: hooks.failed */
	IR_MSG,			/* a message to send (MSG_FILTER): hooks.send */
	IR_USAGE,		/* a host's bytes stored: hooks.usage */
	IR_PAGE_BYTES,		/* a connection's page bytes committed: hooks.page_bytes */
};

struct ingest_result {
	struct ingest_result *next;
	uint64_t conn_id;
	enum ingest_result_kind kind;
	uint64_t host_id;	/* IR_WELCOME */
	bool kallsyms;		/* IR_WELCOME */
	bool printk;		/* IR_WELCOME: ask for printk_formats */
	uint64_t pages, events;	/* IR_DONE: stored this session */
	int err;		/* IR_FAIL */
	char what[32];		/* IR_FAIL: "page", "format", ... */
	struct proto_msg *msg;	/* IR_MSG: owned by the result */
	char *host;		/* IR_USAGE: owned by the result */
	uint64_t bytes;		/* IR_USAGE, IR_PAGE_BYTES */
};

/* In a JOB_PAGES buffer: this header, the page, padding to 8 bytes. */
struct page_rec {
	uint32_t cpu;
	uint32_t len;
	uint64_t seq;
};

struct ingest {
	struct store_writer *store;		/* the one writer: the worker's */
	struct ingest_hooks hooks;	/* called on the event loop only */
	struct ingest_opts o;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock: */
	struct ingest_job *head, **tail;
	size_t bytes;			/* queued job bytes */
	bool stop, full;
	bool replaying;			/* journal files wait to be stored */
	bool replay_busy;		/* the worker holds one, off the list */
	struct ingest_result *results, **rtail;
	bool committed, resume;
	uint64_t jobs_pushed;		/* jobs queued since the start */
	uint64_t jobs_committed;	/* of those, run and committed */
	pthread_cond_t stored;		/* jobs_committed moved */
	struct filter_table *filters;
	unsigned filters_gen;
	int64_t stall_since_ns;		/* storing held up since (realtime); 0: it is not */
	int64_t full_since_ns;		/* agents held back since: the journal (queue) full */
	char stall_why[INGEST_STALL_WHY];	/* the failure that began it */
	/* event loop: */
	int efd;			/* the worker's wake-up call; -1: none yet */
	struct event *ev;
	/* worker only: */
	struct sink *sinks;
	uint64_t store_gen;		/* store_generation() as last seen */
	struct sink_env env;
	struct filter_table *env_filters;	/* the reference env.filters holds */
	struct dedup *sessions;		/* env.sessions points here */
	bool txn_open;
	uint64_t txn_events;
	int64_t txn_start, last_retain, last_live;
	uint64_t jobs_run;
	struct journal *journal;	/* NULL: none */
	struct jlist closed;		/* closed connections' files: remove at commit */
	struct jlist replay;		/* files to store (again) */
	uint8_t *rbuf;			/* a spilled job read back */
	size_t rcap;
	bool stalled;			/* the worker's copy of stall_since_ns != 0 */
	bool retain_failing;		/* the last retention failed (said when it began) */
};


static size_t job_bytes(const struct ingest_job *j)
{
	return sizeof(*j) + j->cap;
}

static void job_free(struct ingest_job *j)
{
	if (j->kind == JOB_MSG)
		proto_msg_free(&j->msg);
	jfile_put(j->jf, false);
	free(j->buf);
	free(j);
}

static int jlist_add(struct jlist *l, struct jfile *f)
{
	struct jfile **v = util_grow(l->v, &l->cap, l->n, sizeof(*v), 8);

	if (!v)
		return -ENOMEM;
	l->v = v;
	l->v[l->n++] = f;
	return 0;
}

/*
 * Hold @f (its reference is taken over) on @l; @sorted: in file-number
 * order, the order the connections came in. Without memory the file is
 * dropped here and stays on disk: the next start stores it.
 */
static void jlist_hold(struct jlist *l, struct jfile *f, bool sorted)
{
	size_t i;

	if (jlist_add(l, f) < 0) {
		log_err("out of memory: journal file %016llx is kept for the next start",
			(unsigned long long)jfile_no(f));
		jfile_put(f, false);
		return;
	}
	for (i = l->n - 1; sorted && i > 0 && jfile_no(l->v[i - 1]) > jfile_no(f); i--)
		l->v[i] = l->v[i - 1];
	l->v[i] = f;
}

/* Drop every file of @l; with @remove, they are stored and may go. */
static void jlist_drop(struct jlist *l, bool remove)
{
	for (size_t i = 0; i < l->n; i++)
		jfile_put(l->v[i], remove);
	l->n = 0;
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
	if (!s->failed) {
		s->fail_err = err;
		snprintf(s->fail_what, sizeof(s->fail_what), "%s", what);
	}
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
	free(r->host);
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
			log_err("out of memory posting a filter for a host");
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

/* Hand result @r to its hook (on the loop). */
static void ing_deliver(const struct ingest *g, const struct ingest_result *r)
{
	const struct ingest_hooks *h = &g->hooks;

	switch (r->kind) {
	case IR_WELCOME:
		if (h->welcome)
			h->welcome(h->arg, r->conn_id, r->host_id, r->kallsyms, r->printk);
		break;
	case IR_DONE:
		if (h->done)
			h->done(h->arg, r->conn_id, r->pages, r->events);
		break;
	case IR_FAIL:
		if (h->failed)
			h->failed(h->arg, r->conn_id, r->err, r->what);
		break;
	case IR_MSG:
		if (h->send)
			h->send(h->arg, r->conn_id, r->msg);
		break;
	case IR_USAGE:
		if (h->usage && r->host)	/* NULL: out of memory */
			h->usage(h->arg, r->host, r->bytes);
		break;
	case IR_PAGE_BYTES:
		if (h->page_bytes)
			h->page_bytes(h->arg, r->conn_id, r->bytes);
		break;
	}
}

/*
 * The loop's side of the eventfd: take everything the worker posted and
 * call the hooks - committed, then the results in order, then resume.
 */
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
	if (committed && g->hooks.committed)
		g->hooks.committed(g->hooks.arg);
	while ((r = list)) {
		list = r->next;
		ing_deliver(g, r);
		ing_result_free(r);
	}
	if (resume && g->hooks.resume)
		g->hooks.resume(g->hooks.arg);
}

/* ---- worker: transactions ---- */

/*
 * The store reopened its database (removed or replaced under it, see
 * store.h): what the worker learnt from the old file is void. The sinks
 * there are all failed (the commit that found the file gone failed them)
 * and write nothing of theirs into the new file; the stream marks are read
 * again; the journal files of the failed connections are stored again
 * from their start, the new file holding no mark of them.
 */
static void ing_store_reopened(struct ingest *g)
{
	const char *note;
	int ret;

	g->store_gen = store_generation(g->store, &note);
	log_warn("%s; storing again (%s)", note, g->journal ?
		 "what the receive journal holds is stored into it again" :
		 "agents send again what was not acknowledged");
	for (struct sink *s = g->sinks; s; s = s->next) {
		s->counters_dirty = false;
		s->nlosses = 0;		/* the old file's, as the counters */
		s->jmark_dirty = false;
	}
	ret = dedup_reload(g->sessions, g->store);
	if (ret < 0)
		log_err("re-reading the stored page marks: %s (%s)", tc_strerror(ret),
			store_errmsg(g->store));
}

/*
 * Storing failed with @err: the first failure of a run of them says so in
 * the log and starts the stall that traceq --stats reports (ingest_stalled());
 * the others say nothing, however often the worker tries again. Return:
 * whether storing was held up already (the caller's own line is then not said).
 */
static bool ing_stall(struct ingest *g, int err)
{
	char why[INGEST_STALL_WHY];
	struct timespec ts;
	uint64_t jb = g->journal ? journal_bytes(g->journal) : 0;

	if (g->stalled)
		return true;
	g->stalled = true;
	sink_clean(why, sizeof(why), store_errmsg(g->store));
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&g->lock);
	g->stall_since_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	memcpy(g->stall_why, why, sizeof(why));
	pthread_mutex_unlock(&g->lock);
	if (g->journal)
		log_err("storing is held up: %s (%s); the receive journal keeps what agents send "
			"(%.1f MB now) and holds them back when it is full; trying again, said "
			"again when storing resumes", tc_strerror(err), why, (double)jb / (1 << 20));
	else
		log_err("storing is held up: %s (%s); agents are held back and send again; "
			"trying again, said again when storing resumes", tc_strerror(err), why);
	return false;
}

/* A commit went through: a stall ends, said once. */
static void ing_unstall(struct ingest *g)
{
	struct timespec ts;
	int64_t since;

	if (!g->stalled)
		return;
	g->stalled = false;
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&g->lock);
	since = g->stall_since_ns;
	g->stall_since_ns = 0;
	pthread_mutex_unlock(&g->lock);
	log_info("storing resumed after %lld s held up; the receive journal holds %.1f MB",
		 (long long)(ts.tv_sec - since / 1000000000),
		 (double)(g->journal ? journal_bytes(g->journal) : 0) / (1 << 20));
}

static int ing_begin(struct ingest *g)
{
	int ret;

	if (g->txn_open)
		return 0;
	ret = store_begin(g->store);
	if (ret < 0) {
		ing_stall(g, ret);
		return ret;
	}
	if (store_generation(g->store, NULL) != g->store_gen)
		ing_store_reopened(g);
	g->txn_open = true;
	g->txn_events = 0;
	g->txn_start = util_now_ms();
	return 0;
}

/*
 * Retention, when due. A failure is logged when failures begin (not while
 * storing is held up: that was said), not at each try.
 * Return: 0 (done, or not due); the error.
 */
static int ing_retain(struct ingest *g)
{
	struct timespec ts;
	int64_t before = INT64_MIN;
	uint64_t removed = 0;
	int ret;

	if ((!g->o.retain_age_ns && !g->o.retain_bytes) ||
	    util_now_ms() - g->last_retain < INGEST_RETAIN_S * 1000)
		return 0;
	g->last_retain = util_now_ms();
	if (g->o.retain_age_ns) {
		clock_gettime(CLOCK_REALTIME, &ts);
		before = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - g->o.retain_age_ns;
	}
	ret = store_retain(g->store, before, g->o.retain_bytes, &removed);
	if (ret < 0 && !g->stalled && !g->retain_failing)
		log_err("retention: %s (%s); trying again each %d s", tc_strerror(ret),
			store_errmsg(g->store), INGEST_RETAIN_S);
	else if (removed)
		log_info("retention removed %llu events", (unsigned long long)removed);
	g->retain_failing = ret < 0;
	return ret;
}

/* For ingest_wait_stored(): are journal files waiting to be stored (again)? */
static void ing_update_replaying(struct ingest *g)
{
	pthread_mutex_lock(&g->lock);
	g->replaying = g->replay.n > 0 || g->replay_busy;
	for (struct sink *s = g->sinks; s; s = s->next)
		g->replaying |= s->replay;	/* its file comes when it closes */
	pthread_cond_broadcast(&g->stored);
	pthread_mutex_unlock(&g->lock);
}

/*
 * The transaction was rolled back (disk full, I/O error): none of its pages
 * is stored, yet every connection has moved past them. Forget the marks
 * they raised and close every connection; the agents reconnect and resend
 * what was not acknowledged (program pages, which are not kept for
 * resending, the agent counts as lost). With a journal, what was
 * acknowledged is stored again from the files of those connections, and of
 * the ones that ended in the lost transaction (the replay list).
 */
static void ing_rolled_back(struct ingest *g, int err)
{
	struct store_writer *st = g->store;
	int ret;

	if (ing_stall(g, err))
		;	/* held up already: said when it began */
	else if (g->journal)
		log_err("commit failed: %s (%s); closing every agent connection and "
			"storing what they sent again from the receive journal",
			tc_strerror(err), store_errmsg(st));
	else
		log_err("commit failed: %s (%s); closing every agent connection so "
			"that the agents send the pages of this transaction again",
			tc_strerror(err), store_errmsg(st));
	store_rollback(st);	/* if a flush failed before the commit */
	ret = dedup_reload(g->sessions, st);
	if (ret < 0)
		log_err("re-reading the stored page marks: %s (%s); pages sent "
			"again may be refused as duplicates", tc_strerror(ret),
			store_errmsg(st));
	for (struct sink *s = g->sinks; s; s = s->next) {
		s->replay = g->journal != NULL;
		s->jmark_dirty = false;	/* that mark was in the lost transaction */
		if (!s->failed)
			ing_fail(g, s, err, "commit failed");
	}
	/* connections that ended in the lost transaction: their files again */
	for (size_t i = 0; i < g->closed.n; i++)
		jlist_hold(&g->replay, g->closed.v[i], true);
	g->closed.n = 0;
	ing_update_replaying(g);
}

/*
 * Into the open transaction: how far each sink's journal file is stored
 * (its mark goes in with the pages), and forget the marks of removed files.
 */
static int ing_journal_marks(struct ingest *g)
{
	struct store_writer *st = g->store;
	uint64_t gone[64];
	size_t n;
	int ret = 0;

	if (!g->journal)
		return 0;
	for (struct sink *s = g->sinks; s && ret == 0; s = s->next)
		if (s->jmark_dirty)
			ret = store_journal_mark(st, s->jmark_file, s->jmark);
	while (ret == 0 && (n = journal_take_removed(g->journal, gone, 64)))
		for (size_t i = 0; i < n && ret == 0; i++)
			ret = store_journal_forget(st, gone[i], gone[i]);
	return ret;
}

/* A chain of results posted together (ing_post_chain()). */
struct ing_chain {
	struct ingest_result *head, **tail;
};

/* Append a new result of @kind to @c; NULL when out of memory. */
static struct ingest_result *ing_chain_add(struct ing_chain *c, enum ingest_result_kind kind)
{
	struct ingest_result *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->kind = kind;
	*c->tail = r;
	c->tail = &r->next;
	return r;
}

/* store_host_usage() callback: one host's bytes stored. */
static int ing_usage_cb(void *arg, const char *host, uint64_t bytes)
{
	struct ingest_result *r = ing_chain_add(arg, IR_USAGE);

	if (!r || !(r->host = strdup(host)))
		return -ENOMEM;
	r->bytes = bytes;
	return 0;
}

/*
 * After a commit, with host quotas: what each host has stored, and for
 * each connection the bytes of its pages committed so far, into @c. The
 * loop gets them in one piece (the lock): a committed page counts either
 * as stored or as on its way, never as neither, so a host held for its
 * quota stays held.
 */
static void ing_usage(struct ingest *g, struct ing_chain *c)
{
	struct ingest_result *r;
	bool on;
	int ret;

	pthread_mutex_lock(&g->lock);
	on = g->o.host_usage;
	pthread_mutex_unlock(&g->lock);
	if (!on)
		return;
	ret = store_host_usage(g->store, ing_usage_cb, c);
	for (struct sink *s = g->sinks; s && ret == 0; s = s->next) {
		if (s->page_bytes_posted == s->page_bytes_done)
			continue;
		r = ing_chain_add(c, IR_PAGE_BYTES);
		if (!r) {
			ret = -ENOMEM;
			break;
		}
		r->conn_id = s->conn_id;
		r->bytes = s->page_bytes_posted = s->page_bytes_done;
	}
	if (ret < 0)
		log_err("bytes stored per host: %s (%s)", tc_strerror(ret),
			store_errmsg(g->store));
}

/*
 * Flush counters, apply retention, commit; tell the loop what is on disk.
 * Return: 0 (committed, or nothing to commit); the error (rolled back).
 */
static int ing_commit(struct ingest *g)
{
	struct store_writer *st = g->store;
	struct ing_chain usage = { NULL, &usage.head };
	uint64_t t0 = lathist_now_us();
	int ret = 0, rret = 0;

	if (!g->txn_open && (g->o.retain_age_ns || g->o.retain_bytes) &&
	    util_now_ms() - g->last_retain >= INGEST_RETAIN_S * 1000)
		ret = ing_begin(g);
	if (!g->txn_open || ret < 0)
		return ret;
	for (struct sink *s = g->sinks; s && ret == 0; s = s->next)
		ret = sink_flush(s, st);
	if (ret == 0)
		ret = ing_journal_marks(g);
	if (ret == 0)
		rret = ing_retain(g);
	ret = ret ?: store_commit(st);
	g->txn_open = false;
	if (ret < 0) {
		ing_rolled_back(g, ret);
		return ret;
	}
	if (rret == 0)	/* the store answered (a failed retention may have sent nothing) */
		ing_unstall(g);
	lathist_add(g->o.commit_latency, lathist_now_us() - t0);
	ing_usage(g, &usage);
	pthread_mutex_lock(&g->lock);
	if (usage.head) {
		*g->rtail = usage.head;
		g->rtail = usage.tail;
	}
	for (struct sink *s = g->sinks; s; s = s->next) {
		sink_mark_committed(s);
		s->jobs_committed = s->jobs_done;
		s->jmark_dirty = false;
	}
	g->jobs_committed = g->jobs_run;
	pthread_cond_broadcast(&g->stored);
	g->committed = true;
	ing_notify(g);
	pthread_mutex_unlock(&g->lock);
	jlist_drop(&g->closed, true);
	return 0;
}

/* ---- worker: jobs ---- */

/* Put @s on the worker's list of sinks (commits flush and mark it). */
static void ing_list(struct ingest *g, struct sink *s)
{
	pthread_mutex_lock(&g->lock);
	s->next = g->sinks;
	g->sinks = s;
	s->listed = true;
	pthread_mutex_unlock(&g->lock);
}

static void ing_unlist(struct ingest *g, struct sink *s)
{
	struct sink **pp = &g->sinks;

	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
}

/*
 * The connection of @s is gone; @jf is its journal file (NULL: none).
 * Its file goes at the next commit, or is stored again after a rollback.
 * Its pages in the open transaction need their marks in it too: when they
 * cannot be written, the transaction must not commit (its events would be
 * stored without their marks, and stored again when the agent resends
 * them), so it is rolled back as a failed commit is.
 * Return: 0; the failed flush's code (the transaction was rolled back).
 */
static int ing_close(struct ingest *g, struct sink *s, struct jfile *jf)
{
	int ret = 0;

	if (s->listed && !s->replay && ing_begin(g) == 0)
		ret = sink_flush(s, g->store);
	if (ret < 0) {
		char h[LOG_ESC_LEN];

		if (!g->stalled)	/* held up: said once */
			log_err("counters of host %s: %s", sink_clean(h, sizeof(h), s->host),
				store_errmsg(g->store));
		s->replay = g->journal != NULL;	/* its file is stored again */
	}
	if (s->failed && !s->replay && s->dropped_jobs) {
		char h[LOG_ESC_LEN];

		log_warn("host %s: %llu batches (%llu pages) of journaled pages after the "
			 "failure (%s: %s) were not stored (counted in traceq --drops: \"%s\")",
			 sink_clean(h, sizeof(h), s->host), (unsigned long long)s->dropped_jobs,
			 (unsigned long long)s->dropped_pages, s->fail_what,
			 tc_strerror(s->fail_err), sink_why_failed);
	}
	if (jf)
		jlist_hold(s->replay ? &g->replay : &g->closed, jf, s->replay);
	pthread_mutex_lock(&g->lock);
	ing_unlist(g, s);
	pthread_mutex_unlock(&g->lock);
	sink_free(s);
	if (ret < 0 && g->txn_open) {
		g->txn_open = false;
		ing_rolled_back(g, ret);
	}
	return ret;
}

/* ---- worker: units in progress, quarantine (journal.h) ---- */

/*
 * Where a job's records are in its journal file, so that each unit (a
 * message, a page) is marked in progress while it is decoded: off without
 * a journal. @count: the record is past the store's mark, so a unit
 * skipped is counted (before it, the count is in the store already).
 */
struct ing_at {
	bool on;
	uint64_t file, end;
	bool count;
};

/* The journal place of job @j (live: always past the store's mark). */
static struct ing_at ing_at_job(const struct ingest *g, const struct ingest_job *j)
{
	if (!g->journal || !j->jf)
		return (struct ing_at){ .on = false };
	return (struct ing_at){ .on = true, .file = jfile_no(j->jf), .end = j->jend,
				.count = true };
}

/* What unit @u of @s is, for the quarantine's text and log: @rec or @m. */
static void ing_unit_name(const struct page_rec *rec, uint32_t page, const struct proto_msg *m,
			  char *buf, size_t size)
{
	char sys[LOG_ESC_LEN], name[LOG_ESC_LEN];

	if (rec)
		snprintf(buf, size, "page %u of the record (CPU %u, page sequence %llu)", page,
			 rec->cpu, (unsigned long long)rec->seq);
	else if (m && m->type == MSG_FORMAT)
		snprintf(buf, size, "message FORMAT %s:%s",
			 sink_clean(sys, sizeof(sys), m->format.system),
			 sink_clean(name, sizeof(name), m->format.name));
	else
		snprintf(buf, size, "message %s", m ? proto_msg_name(m->type) : "?");
}

/* Keep unit @u (@data, @len) of @s aside: it killed the last run. */
static void ing_quarantine(struct ingest *g, struct sink *s, const struct journal_unit *u,
			   const char *what, const void *data, size_t len)
{
	char text[2048], h[LOG_ESC_LEN], subj[LOG_ESC_LEN];
	int ret;

	snprintf(text, sizeof(text),
		 "the collector died while decoding this record\n"
		 "journal file: %s/%016llx.tcj\n"
		 "record: ends at byte %llu of the file\n"
		 "unit: %s\n"
		 "host: %s\n"
		 "certificate subject: %s\n",
		 g->o.journal_dir, (unsigned long long)u->file, (unsigned long long)u->end, what,
		 sink_clean(h, sizeof(h), s->host), sink_clean(subj, sizeof(subj), s->subject));
	ret = journal_quarantine(g->journal, u, data, len, text);
	log_err("host %s: journal file %016llx, record ending at %llu, %s: the collector died "
		"decoding it; quarantined in %s/quarantine%s%s, never decoded again; the rest "
		"of the file is stored", h, (unsigned long long)u->file,
		(unsigned long long)u->end, what, g->o.journal_dir, ret < 0 ? ", but: " : "",
		ret < 0 ? tc_strerror(ret) : "");
}

/*
 * Before decoding unit @page of @at - page @rec, or message @m - whose
 * bytes (as journaled) are @data, @len: mark it in progress. Return: true
 * to decode it (then ing_unit_end()); false to skip it: it is quarantined
 * (kept aside now if it killed the last run).
 */
static bool ing_unit_begin(struct ingest *g, struct sink *s, const struct ing_at *at,
			   uint32_t page, const struct page_rec *rec, const struct proto_msg *m,
			   const void *data, size_t len)
{
	struct journal_unit u = { at->file, at->end, page };
	enum journal_verdict v;
	char what[160];

	if (!at->on)
		return true;
	v = journal_unit_begin(g->journal, &u);
	if (v == JOURNAL_DECODE)
		return true;
	if (v == JOURNAL_KILLER) {
		ing_unit_name(rec, page, m, what, sizeof(what));
		ing_quarantine(g, s, &u, what, data, len);
	}
	return false;
}

static void ing_unit_end(struct ingest *g, const struct ing_at *at)
{
	if (at->on)
		journal_unit_end(g->journal);
}

/* Message @m of @s was skipped (quarantined): count it. Return: 0; a store error. */
static int ing_msg_skipped(struct ingest *g, struct sink *s, const struct ing_at *at,
			   const struct proto_msg *m)
{
	bool fmt = m->type == MSG_FORMAT;

	if (!at->count)
		return 0;
	return sink_msg_dropped(s, &g->env, fmt ? m->format.system : NULL,
				fmt ? m->format.name : NULL, sink_why_crash);
}

static void ing_msg(struct ingest *g, struct sink *s, struct proto_msg *m)
{
	struct sink_reply reply = { SINK_REPLY_NONE };
	struct ingest_result r = { .conn_id = s->conn_id };
	bool commit = false;
	int ret;

	ret = sink_msg(s, &g->env, m, &reply, &commit);
	if (ret < 0) {
		ing_fail(g, s, ret, proto_msg_name(m->type));
		if (ret == TC_ERR_DB)
			s->replay = g->journal != NULL;
		return;
	}
	if (commit)
		ing_commit(g);
	if (reply.kind == SINK_REPLY_NONE)
		return;
	r.kind = reply.kind == SINK_REPLY_WELCOME ? IR_WELCOME : IR_DONE;
	r.host_id = reply.host_id;
	r.kallsyms = reply.kallsyms;
	r.printk = !reply.printk_held;
	r.pages = reply.pages;
	r.events = reply.events;
	ing_post(g, &r);
}

/*
 * Store the page records of @buf (@len bytes, as ingest_push_page() lays
 * them out; from a journal they are untrusted: a record that does not fit
 * is refused). Return: 0; the first error (the sink has failed).
 */
static int ing_pages(struct ingest *g, struct sink *s, const struct ing_at *at,
		     const uint8_t *buf, size_t len, bool stored_before)
{
	size_t off = 0;
	uint32_t page = 0;
	int ret = 0;

	while (off + sizeof(struct page_rec) <= len && !s->failed) {
		struct page_rec rec;
		uint64_t stored = 0;
		size_t step;

		memcpy(&rec, buf + off, sizeof(rec));
		off += sizeof(rec);
		if (rec.len > len - off) {
			ret = TC_ERR_MSG_MALFORMED;
			ing_fail(g, s, ret, "page");
			break;
		}
		if (ing_unit_begin(g, s, at, page++, &rec, NULL, buf + off, rec.len)) {
			if (stored_before)
				ret = sink_page_seen(s, rec.cpu, buf + off, rec.len);
			else
				ret = sink_page(s, &g->env, rec.cpu, rec.seq, buf + off, rec.len,
						&stored);
			ing_unit_end(g, at);
		} else {
			ret = at->count ? sink_page_dropped(s, &g->env, rec.cpu, rec.seq,
							    sink_why_crash) : 0;
		}
		step = (rec.len + 7) & ~(size_t)7;
		off += step < len - off ? step : len - off;
		if (ret < 0)
			ing_fail(g, s, ret, "page");
		if (ret == TC_ERR_DB)
			s->replay = g->journal != NULL;
		g->txn_events += stored;
	}
	return ret;
}

/* The records of a spilled job, read back from its journal file. */
static const uint8_t *ing_read_back(struct ingest *g, struct sink *s, struct ingest_job *j)
{
	int ret;

	if (j->len > g->rcap) {
		uint8_t *b = realloc(g->rbuf, j->len);

		if (!b) {
			ing_fail(g, s, -ENOMEM, "page");
			s->replay = true;
			return NULL;
		}
		g->rbuf = b;
		g->rcap = j->len;
	}
	ret = jfile_read(j->jf, j->joff, g->rbuf, j->len);
	if (ret < 0) {
		char h[LOG_ESC_LEN];

		log_err("host %s: reading pages back from journal file %016llx: %s",
			sink_clean(h, sizeof(h), s->host ? s->host : "?"),
			(unsigned long long)jfile_no(j->jf), tc_strerror(ret));
		ing_fail(g, s, ret, "journal");
		return NULL;
	}
	return g->rbuf;
}

static void ing_run_job(struct ingest *g, struct sink *s, struct ingest_job *j)
{
	struct ing_at at = ing_at_job(g, j);
	const uint8_t *buf;

	if (!s->listed)
		ing_list(g, s);
	if (ing_begin(g) < 0) {
		ing_fail(g, s, TC_ERR_DB, "store");
		s->replay = g->journal != NULL;
		return;
	}
	if (j->kind == JOB_MSG) {
		if (ing_unit_begin(g, s, &at, JOURNAL_UNIT_MSG, NULL, &j->msg, NULL, 0)) {
			ing_msg(g, s, &j->msg);
			ing_unit_end(g, &at);
		} else if (ing_msg_skipped(g, s, &at, &j->msg) < 0) {
			ing_fail(g, s, TC_ERR_DB, "store");
			s->replay = true;
		}
	} else {
		buf = j->buf ? j->buf : ing_read_back(g, s, j);
		if (buf)
			ing_pages(g, s, &at, buf, j->len, false);
	}
	if (s->pushq.n)
		ing_post_pushes(g, s);
}

/*
 * A batch of pages of @s after its connection failed: not stored. With a
 * journal they were acknowledged, so each is counted (without one, they
 * were not: the agent sends them again); not when the failure is the
 * store's (s->replay: the file is stored again).
 */
static void ing_count_failed(struct ingest *g, struct sink *s, struct ingest_job *j)
{
	const uint8_t *buf;
	size_t off = 0;
	int ret = 0;

	s->dropped_jobs++;
	if (!g->journal || s->replay || ing_begin(g) < 0)
		return;
	buf = j->buf ? j->buf : ing_read_back(g, s, j);
	while (buf && ret == 0 && off + sizeof(struct page_rec) <= j->len) {
		struct page_rec rec;

		memcpy(&rec, buf + off, sizeof(rec));
		off += sizeof(rec);
		if (rec.len > j->len - off)
			break;
		off += ((rec.len + 7) & ~(size_t)7) < j->len - off ?
		       ((rec.len + 7) & ~(size_t)7) : j->len - off;
		s->dropped_pages++;
		ret = sink_page_dropped(s, &g->env, rec.cpu, rec.seq, sink_why_failed);
	}
	if (ret < 0 && !g->stalled)	/* held up: said once */
		log_err("counting pages not stored: %s (%s)", tc_strerror(ret),
			store_errmsg(g->store));
}

/* Counts of what a host limit held back (ingest_count_held()) into the store. */
static void ing_held(struct ingest *g, struct sink *s, const struct ingest_job *j)
{
	struct ingest_held h;
	int ret = ing_begin(g);

	for (size_t off = 0; ret == 0 && off + sizeof(h) <= j->len; off += sizeof(h)) {
		memcpy(&h, j->buf + off, sizeof(h));
		ret = store_cpu_held(g->store, s->host_id, h.cpu, &(struct store_held){
			h.rate_pages, h.rate_ms, h.quota_pages, h.quota_ms });
	}
	if (ret < 0 && !g->stalled)	/* held up: said once */
		log_err("counting pages held back by host limits: %s (%s)", tc_strerror(ret),
			store_errmsg(g->store));
}

static void ing_run(struct ingest *g, struct ingest_job *j)
{
	struct sink *s = j->sink;

	if (j->kind == JOB_CLOSE) {
		ing_close(g, s, j->jf);
		j->jf = NULL;
		return;
	}
	g->jobs_run++;
	s->jobs_done++;
	s->page_bytes_done += j->page_bytes;
	if (s->failed) {
		if (j->kind == JOB_PAGES)
			ing_count_failed(g, s, j);
		return;
	}
	if (j->kind == JOB_HELD) {
		ing_held(g, s, j);
		return;
	}
	ing_run_job(g, s, j);
	if (j->jf && !s->failed) {	/* the store's mark follows (ing_commit()) */
		s->jmark_file = jfile_no(j->jf);
		s->jmark = j->jend;
		s->jmark_dirty = true;
	}
}

/* ---- worker: storing journal files (again) ---- */

static bool ing_stopping(struct ingest *g)
{
	bool stop;

	pthread_mutex_lock(&g->lock);
	stop = g->stop;
	pthread_mutex_unlock(&g->lock);
	return stop;
}

/* One journal file being stored: the sink of its connection. */
struct ing_replay {
	struct ingest *g;
	struct sink *s;
	uint64_t file;
	uint64_t stored;	/* the store's mark: records up to here are in */
	uint64_t records;
};

/*
 * One record of a journal file. Up to the file's mark only what shapes
 * decoding applies (the sink is new), and what the pages tell the clock
 * map (sink_page_seen()); past it, everything, and the mark follows.
 */
static int ing_replay_rec(void *arg, uint32_t kind, const uint8_t *data, size_t len,
			  uint64_t end)
{
	struct ing_replay *r = arg;
	struct ingest *g = r->g;
	struct sink_reply reply = { SINK_REPLY_NONE };	/* no one to answer */
	bool commit = false, stored = end <= r->stored;
	struct ing_at at = { .on = true, .file = r->file, .end = end, .count = !stored };
	struct proto_msg m;
	bool decoded = false;
	int ret;

	r->records++;
	if (!r->s) {
		ret = ingest_sink_new(g, 0, "", &r->s);
		if (ret < 0)
			return ret;
		ing_list(g, r->s);
	}
	if (kind == JREC_SUBJECT) {
		snprintf(r->s->subject, sizeof(r->s->subject), "%.*s", (int)len, data);
		return 0;
	}
	if (kind == JREC_PAGES) {
		/* stored: its pages still tell the clock map how far they go */
		ret = ing_pages(g, r->s, &at, data, len, stored);
	} else if (kind == JREC_CLOCKMAP) {
		ret = sink_clock_restore(r->s, data, len);
	} else if (kind == JREC_PIDNAMES) {
		ret = sink_names_restore(r->s, data, len);
	} else {
		/*
		 * Decoding the msgpack is not marked: the event loop decoded
		 * these bytes before it journaled them, so it does not kill.
		 */
		ret = proto_msg_decode(data, len, &m);
		decoded = ret == 0;
		if (ret == 0 && (!stored || msg_shapes_decoding(m.type))) {
			if (ing_unit_begin(g, r->s, &at, JOURNAL_UNIT_MSG, NULL, &m, data, len)) {
				ret = sink_msg(r->s, &g->env, &m, &reply, &commit);
				ing_unit_end(g, &at);
			} else {
				ret = ing_msg_skipped(g, r->s, &at, &m);
			}
		}
		if (decoded)
			proto_msg_free(&m);
	}
	if (ret == TC_ERR_DB)
		r->s->replay = true;
	if (ret < 0) {
		r->s->failed = true;
		return ret;
	}
	if (!stored) {
		r->s->jmark_file = r->file;
		r->s->jmark = end;
		r->s->jmark_dirty = true;
	}
	return 0;
}

/*
 * Store journal file @jf (taken over) in a transaction of its own.
 * Return: true when done with it (stored; or unreadable past some point,
 * logged); false when the store failed: it is queued again.
 */
static bool ing_replay_file(struct ingest *g, struct jfile *jf)
{
	struct ing_replay r = { .g = g, .file = jfile_no(jf) };
	bool again;
	int ret;

	ret = ing_begin(g);
	if (ret == 0)
		ret = store_journal_mark_get(g->store, r.file, &r.stored);
	if (ret == 0)
		ret = jfile_replay(jf, ing_replay_rec, &r);
	again = ret == TC_ERR_DB || (r.s && r.s->replay) || (ret < 0 && !r.s);
	if (ret < 0 && !again) {
		char h[LOG_ESC_LEN];

		log_warn("journal file %016llx (host %s): %s after %llu records; the rest "
			 "of it is not stored", (unsigned long long)jfile_no(jf),
			 sink_clean(h, sizeof(h), r.s && r.s->host ? r.s->host : "?"),
			 tc_strerror(ret), (unsigned long long)r.records);
	}
	if (r.s) {
		r.s->replay = false;
		if (ing_close(g, r.s, NULL) < 0)
			again = true;	/* rolled back: none of it is stored */
	}
	if (again) {
		if (g->txn_open) {
			g->txn_open = false;
			ing_rolled_back(g, TC_ERR_DB);
		}
		jlist_hold(&g->replay, jf, true);
		return false;
	}
	jlist_hold(&g->closed, jf, false);
	return ing_commit(g) == 0;	/* a failure queues jf again */
}

/*
 * Store the queued journal files, oldest first, before any further job:
 * an agent's next connection may resend what they hold. After a failure,
 * wait INGEST_RETRY_MS (the store may be full or locked).
 */
static void ing_replay_pending(struct ingest *g)
{
	int64_t t0 = util_now_ms();
	size_t n = 0;
	bool ok;

	while (g->replay.n && !ing_stopping(g)) {
		struct jfile *jf = g->replay.v[0];

		memmove(g->replay.v, g->replay.v + 1, --g->replay.n * sizeof(*g->replay.v));
		/* a rollback on the way must not take the file for stored */
		g->replay_busy = true;
		ok = ing_replay_file(g, jf);
		g->replay_busy = false;
		if (!ok) {
			if (!ing_stall(g, TC_ERR_DB))
				log_err("storing journal file %016llx failed; trying again in %d ms",
					(unsigned long long)jfile_no(jf), INGEST_RETRY_MS);
			usleep(INGEST_RETRY_MS * 1000);
			continue;
		}
		n++;
	}
	if (n)
		log_info("stored %zu journal file(s) in %lld ms", n, (long long)(util_now_ms() - t0));
	ing_update_replaying(g);
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
	filter_table_unref(g->env_filters);
	g->env_filters = filter_table_ref(g->filters);
	g->env.filters = g->env_filters;
	g->env.filters_gen = g->filters_gen;
	return true;
}

static bool ing_commit_due(const struct ingest *g)
{
	return g->txn_open && (g->txn_events >= INGEST_BATCH ||
			       util_now_ms() - g->txn_start >= (int64_t)g->o.commit_ms);
}

/* Wait for a job or the next commit deadline (lock held). */
static void ing_wait_locked(struct ingest *g)
{
	int64_t deadline = g->txn_open ? g->txn_start + g->o.commit_ms
				       : util_now_ms() + INGEST_RETAIN_S * 1000;
	struct timespec ts;

	deadline -= util_now_ms();
	ts = util_deadline(deadline < 1 ? 1 : deadline);
	pthread_cond_timedwait(&g->cond, &g->lock, &ts);
}

/*
 * Every INGEST_LIVE_S: the hosts connected to this collector into the
 * store (store_live_hosts(): traceq --hosts on any collector of a fleet
 * says where each is connected). A failure is the store's outage, which
 * the commits report; the next refresh tries again.
 */
static void ing_live(struct ingest *g)
{
	uint64_t *ids;
	size_t n;

	if (!g->o.live_hosts || util_now_ms() - g->last_live < INGEST_LIVE_S * 1000)
		return;
	g->last_live = util_now_ms();
	ids = malloc(INGEST_LIVE_MAX * sizeof(*ids));
	if (!ids)
		return;
	n = g->o.live_hosts(g->o.live_arg, ids, INGEST_LIVE_MAX);
	if (store_live_hosts(g->store, ids, n) < 0)
		log_debug("the live hosts were not stored: %s", store_errmsg(g->store));
	free(ids);
}

/* Nothing queued: commit when due; when idle, let retention run. */
static void ing_tick(struct ingest *g)
{
	if (ing_commit_due(g) || !g->txn_open)
		ing_commit(g);
	ing_live(g);
}

/*
 * The worker's own signal stack: a fatal signal's handler (tracecollectd:
 * journal_note_crash()) must run even when decoding overflowed the stack.
 * Return: the stack to free after sigaltstack(SS_DISABLE); NULL: none.
 */
static void *ing_altstack(void)
{
	stack_t ss = { .ss_size = INGEST_ALTSTACK };

	ss.ss_sp = malloc(ss.ss_size);
	if (ss.ss_sp && sigaltstack(&ss, NULL) < 0) {
		free(ss.ss_sp);
		ss.ss_sp = NULL;
	}
	return ss.ss_sp;
}

static void ing_altstack_free(void *sp)
{
	stack_t ss = { .ss_flags = SS_DISABLE };

	if (sp && sigaltstack(&ss, NULL) == 0)
		free(sp);
}

static void *ing_main(void *arg)
{
	struct ingest *g = arg;
	void *altstack = ing_altstack();
	struct ingest_job *j;
	size_t bytes;

	pthread_mutex_lock(&g->lock);
	for (;;) {
		if (g->replay.n) {
			pthread_mutex_unlock(&g->lock);
			ing_replay_pending(g);
			pthread_mutex_lock(&g->lock);
			if (g->stop)
				break;
			continue;
		}
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
		ing_live(g);	/* busy or idle, every INGEST_LIVE_S */
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
	ing_altstack_free(altstack);
	return NULL;
}

/* ---- event loop: pushing jobs ---- */

/*
 * Queue @j, journaled in @jf (NULL: no journal) with its payload at @joff
 * and its record ending at @jend. A batch of pages leaves only its place in
 * the file when the queue's memory is above queue_bytes.
 */
static void ing_enqueue(struct ingest *g, struct ingest_job *j, struct jfile *jf,
			uint64_t joff, uint64_t jend)
{
	j->next = NULL;
	if (jf) {
		j->jf = jfile_ref(jf);
		j->joff = joff;
		j->jend = jend;
	}
	pthread_mutex_lock(&g->lock);
	if (jf && j->kind == JOB_PAGES && g->bytes + job_bytes(j) > g->o.queue_bytes) {
		free(j->buf);
		j->buf = NULL;
		j->cap = 0;
	}
	*g->tail = j;
	g->tail = &j->next;
	g->bytes += job_bytes(j);
	if (g->bytes > g->o.queue_bytes && !g->journal)
		g->full = true;
	if (j->kind != JOB_CLOSE) {
		g->jobs_pushed++;
		j->sink->jobs_queued++;
	}
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/*
 * Append a record to the journal file of @s (made on first use, starting
 * with the agent's certificate subject). No journal: nothing to do.
 * Return: 0 and *@off; -errno (logged: the caller fails the connection,
 * whose unacknowledged pages its agent sends again).
 */
static int ing_journal(struct ingest *g, struct sink *s, uint32_t kind, const void *data,
		       size_t len, uint64_t *off, uint64_t *end)
{
	uint64_t o;
	int ret = 0;

	if (!g->journal)
		return 0;
	if (!s->jf) {
		ret = jfile_new(g->journal, &s->jf);
		if (ret == 0)
			ret = jfile_append(s->jf, JREC_SUBJECT, s->subject, strlen(s->subject),
					   &o, NULL);
	}
	if (ret == 0)
		ret = jfile_append(s->jf, kind, data, len, off, end);
	if (ret < 0)
		log_err("writing the receive journal: %s", tc_strerror(ret));
	return ret;
}

/* Remember context record @off of @s (a message of @type) for rotation. */
static void ing_journal_ctx(struct sink *s, enum proto_msg_type type, uint64_t off, size_t len)
{
	struct sink_jctx *v;
	size_t i = s->njctx;

	if (!msg_shapes_decoding(type))
		return;
	if (type == MSG_HELLO)
		s->jclock = s->jmeasure = SIZE_MAX;
	if (type == MSG_CLOCK && s->jclock < s->njctx)
		i = s->jclock;
	if (type == MSG_CLOCK_MEASURE && s->jmeasure < s->njctx)
		i = s->jmeasure;	/* the latest measurement, as the latest CLOCK */
	if (i == s->njctx) {
		v = realloc(s->jctx, (s->njctx + 1) * sizeof(*v));
		if (!v) {	/* rotation then keeps the file as it is */
			s->jctx_lost = true;
			return;
		}
		s->jctx = v;
		s->njctx++;
	}
	if (type == MSG_CLOCK)
		s->jclock = i;
	if (type == MSG_CLOCK_MEASURE)
		s->jmeasure = i;
	s->jctx[i] = (struct sink_jctx){ .off = off, .len = (uint32_t)len, .kind = JREC_MSG };
}

/*
 * Whether agents are held back: said once in the log when it begins and
 * once when it ends (the loop asks at each frame and each commit), and
 * reported by ingest_stalled() meanwhile unless storing failed, which says more.
 */
static bool ing_full_said(struct ingest *g, bool full)
{
	int64_t since = 0, now;
	struct timespec ts;

	/* the fast path, at each frame: nothing changes (only the loop writes it) */
	if (full == (__atomic_load_n(&g->full_since_ns, __ATOMIC_RELAXED) != 0))
		return full;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	pthread_mutex_lock(&g->lock);
	since = g->full_since_ns;
	if (full != (since != 0))
		__atomic_store_n(&g->full_since_ns, full ? now : 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&g->lock);
	if (full && !since)
		log_warn("the receive %s is full (%.1f MB): agents are held back until storing "
			 "catches up; said again when they are not", g->journal ? "journal" : "queue",
			 (double)(g->journal ? journal_bytes(g->journal) : g->o.queue_bytes) / (1 << 20));
	else if (!full && since)
		log_info("agents are not held back any more (held %lld s)",
			 (long long)((now - since) / 1000000000));
	return full;
}

bool ingest_full(struct ingest *g)
{
	bool full;

	if (g->journal && !journal_full(g->journal))
		return ing_full_said(g, false);
	pthread_mutex_lock(&g->lock);
	/* a full journal of nothing but stored files (their context) must not
	 * stop everyone */
	full = g->journal ? g->jobs_committed < g->jobs_pushed : g->full;
	pthread_mutex_unlock(&g->lock);
	return ing_full_said(g, full);
}

bool ingest_journaled(struct ingest *g)
{
	return g->journal != NULL;
}

int ingest_flush(struct ingest *g, struct sink *s)
{
	struct ingest_job *j = s->pending;
	uint64_t off = 0, end = 0;
	int ret;

	if (!j)
		return 0;
	s->pending = NULL;
	ret = ing_journal(g, s, JREC_PAGES, j->buf, j->len, &off, &end);
	if (ret < 0) {
		job_free(j);
		return ret;
	}
	ing_enqueue(g, j, s->jf, off, end);
	return 0;
}

int ingest_push_msg(struct ingest *g, struct sink *s, struct proto_msg *m,
		    const void *raw, size_t rawlen)
{
	struct ingest_job *j = calloc(1, sizeof(*j));
	uint64_t off = 0, end = 0;
	int ret = j ? 0 : -ENOMEM;

	if (ret == 0)
		ret = ingest_flush(g, s);
	if (ret == 0)
		ret = ing_journal(g, s, JREC_MSG, raw, rawlen, &off, &end);
	if (ret < 0) {
		free(j);
		proto_msg_free(m);
		return ret;
	}
	if (g->journal)
		ing_journal_ctx(s, m->type, off, rawlen);
	j->sink = s;
	j->kind = JOB_MSG;
	j->msg = *m;
	memset(m, 0, sizeof(*m));
	ing_enqueue(g, j, s->jf, off, end);
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

int ingest_push_page(struct ingest *g, struct sink *s, uint32_t cpu, uint64_t seq,
		     const void *page, size_t len)
{
	struct page_rec rec = { .cpu = cpu, .len = (uint32_t)len, .seq = seq };
	size_t need = sizeof(rec) + ((len + 7) & ~(size_t)7);
	struct ingest_job *j = s->pending;

	if (j && j->len + need > j->cap) {
		ingest_flush(g, s);
		j = NULL;
	}
	if (!j && !(j = s->pending = job_pages_new(s, need)))
		return -ENOMEM;
	memcpy(j->buf + j->len, &rec, sizeof(rec));
	memcpy(j->buf + j->len + sizeof(rec), page, len);
	j->len += need;
	j->page_bytes += len;
	return 0;
}

void ingest_report_usage(struct ingest *g, bool on)
{
	pthread_mutex_lock(&g->lock);
	g->o.host_usage = on;
	pthread_mutex_unlock(&g->lock);
}

int ingest_count_held(struct ingest *g, struct sink *s, const struct ingest_held *h, size_t n)
{
	struct ingest_job *j;

	if (!n)
		return 0;
	j = calloc(1, sizeof(*j));
	if (j)
		j->buf = malloc(n * sizeof(*h));
	if (!j || !j->buf) {
		free(j);
		return -ENOMEM;
	}
	memcpy(j->buf, h, n * sizeof(*h));
	j->len = j->cap = n * sizeof(*h);
	j->sink = s;
	j->kind = JOB_HELD;
	ing_enqueue(g, j, NULL, 0, 0);
	return 0;
}

/* ---- sinks ---- */

int ingest_sink_new(struct ingest *g, uint64_t conn_id, const char *subject,
		    struct sink **out)
{
	struct sink *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->conn_id = conn_id;
	snprintf(s->subject, sizeof(s->subject), "%s", subject);
	s->jclock = s->jmeasure = SIZE_MAX;
	*out = s;
	return 0;
}

void ingest_sink_close(struct ingest *g, struct sink *s)
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
	if (ingest_flush(g, s) < 0) {
		char h[LOG_ESC_LEN];

		log_err("host %s: the last pages could not be journaled; its agent "
			"sends them again", sink_clean(h, sizeof(h), s->host ? s->host : s->subject));
	}
	j->sink = s;
	j->kind = JOB_CLOSE;
	j->jf = s->jf;		/* the worker's now */
	s->jf = NULL;
	ing_enqueue(g, j, NULL, 0, 0);
}

/* Bytes a new journal file of @s starts with: its context records. */
static uint64_t ing_journal_ctx_bytes(const struct sink *s)
{
	uint64_t n = JOURNAL_FILE_HDR + JOURNAL_REC_HDR + strlen(s->subject) + 8;
	uint64_t recs = s->jnames / PIDNAMES_SAVE_MAX + 1;

	for (size_t i = 0; i < s->njctx; i++)
		n += JOURNAL_REC_HDR + s->jctx[i].len + 8;
	n += recs * (JOURNAL_REC_HDR + PIDNAMES_SAVE_HDR) + s->jnames * PIDNAMES_SAVE_SLOT;
	return n + JOURNAL_REC_HDR + CLOCKSRC_SAVE_MAX;
}

/*
 * The task names @s knows, into @nf as JREC_PIDNAMES records (the worker
 * is done with @s: all its jobs committed), so that a replay of nf knows
 * them at its first page as the first pass did (pidnames.h).
 * Return: 0; -ENOMEM; as jfile_append().
 */
static int ing_journal_names(struct sink *s, struct jfile *nf)
{
	uint8_t *buf = malloc(PIDNAMES_SAVE_HDR + PIDNAMES_SAVE_MAX * PIDNAMES_SAVE_SLOT);
	size_t pos = 0, n;
	uint64_t off;
	int ret = buf ? 0 : -ENOMEM;

	s->jnames = 0;
	while (ret == 0 && (n = pidnames_save(&s->names, &pos, buf))) {
		s->jnames += (n - PIDNAMES_SAVE_HDR) / PIDNAMES_SAVE_SLOT;
		ret = jfile_append(nf, JREC_PIDNAMES, buf, n, &off, NULL);
	}
	free(buf);
	return ret;
}

void ingest_journal_tidy(struct ingest *g, struct sink *s)
{
	struct jfile *nf = NULL, *old = s->jf;
	uint8_t clk[CLOCKSRC_SAVE_MAX];
	uint64_t done, off, rotate;
	uint8_t *buf = NULL;
	int ret;

	if (!g->journal || !old || s->pending || s->jctx_lost)
		return;
	/* a file rotates above an eighth of the journal, so 8 connections fit
	 * (past the names the last rotation wrote: they may be more than an
	 * eighth, and a rotation must not follow at once); with the journal
	 * full, as soon as that shrinks it */
	rotate = g->o.journal_bytes / 8 < INGEST_ROTATE_BYTES ? g->o.journal_bytes / 8
							      : INGEST_ROTATE_BYTES;
	if (jfile_size(old) < rotate + s->jnames * PIDNAMES_SAVE_SLOT &&
	    !(journal_full(g->journal) && jfile_size(old) > 2 * ing_journal_ctx_bytes(s)))
		return;
	pthread_mutex_lock(&g->lock);
	done = s->jobs_committed;
	pthread_mutex_unlock(&g->lock);
	if (done != s->jobs_queued)	/* the worker still needs the file */
		return;
	ret = jfile_new(g->journal, &nf);
	if (ret == 0)
		ret = jfile_append(nf, JREC_SUBJECT, s->subject, strlen(s->subject), &off, NULL);
	for (size_t i = 0; i < s->njctx && ret == 0; i++) {
		uint8_t *b = realloc(buf, s->jctx[i].len ? s->jctx[i].len : 1);

		if (!b) {
			ret = -ENOMEM;
			break;
		}
		buf = b;
		ret = jfile_read(old, s->jctx[i].off, buf, s->jctx[i].len);
		if (ret == 0)
			ret = jfile_append(nf, s->jctx[i].kind, buf, s->jctx[i].len, &off, NULL);
		s->jctx[i].off = off;	/* (only kept on success) */
	}
	free(buf);
	/* the worker is done with @s (all its jobs committed): its clock map
	 * as it stands, so that a replay of nf goes on from it (clockmap.h) */
	if (ret == 0)
		ret = jfile_append(nf, JREC_CLOCKMAP, clk, clocksrc_save(&s->clk, clk), &off, NULL);
	if (ret == 0)
		ret = ing_journal_names(s, nf);
	if (ret < 0) {
		char h[LOG_ESC_LEN];

		log_err("host %s: rotating journal file %016llx: %s; it is kept",
			sink_clean(h, sizeof(h), s->host ? s->host : s->subject),
			(unsigned long long)jfile_no(old), tc_strerror(ret));
		jfile_put(nf, true);
		s->jctx_lost = true;	/* offsets may point into nf: rotate no more */
		return;
	}
	s->jf = nf;
	jfile_put(old, true);
}

void ingest_stalled(struct ingest *g, int64_t *since_ns, char *why, size_t len)
{
	pthread_mutex_lock(&g->lock);
	*since_ns = g->stall_since_ns ? g->stall_since_ns : g->full_since_ns;
	if (len && g->stall_since_ns)
		snprintf(why, len, "%s", g->stall_why);
	else if (len)
		snprintf(why, len, "%s", g->full_since_ns ? "storing is slower than agents send:"
			 " the receive journal is full and agents are held back" : "");
	pthread_mutex_unlock(&g->lock);
}

void ingest_backlog(struct ingest *g, uint64_t *unstored, uint64_t *jbytes)
{
	pthread_mutex_lock(&g->lock);
	*unstored = g->jobs_pushed - g->jobs_committed + g->replaying;
	pthread_mutex_unlock(&g->lock);
	*jbytes = g->journal ? journal_bytes(g->journal) : 0;
}

uint64_t ingest_received(struct ingest *g)
{
	uint64_t n;

	pthread_mutex_lock(&g->lock);
	n = g->jobs_pushed;
	pthread_mutex_unlock(&g->lock);
	return n;
}

int ingest_wait_mark(struct ingest *g, uint64_t mark, int timeout_ms)
{
	struct timespec ts = util_deadline(timeout_ms);
	int ret = 0;

	pthread_mutex_lock(&g->lock);
	while ((g->jobs_committed < mark || g->replaying) && ret == 0)
		ret = pthread_cond_timedwait(&g->stored, &g->lock, &ts);
	pthread_mutex_unlock(&g->lock);
	return ret == 0 ? 0 : -ETIMEDOUT;
}

int ingest_wait_stored(struct ingest *g, int timeout_ms)
{
	return ingest_wait_mark(g, ingest_received(g), timeout_ms);
}

uint64_t ingest_sink_committed(struct ingest *g, struct sink *s, uint32_t cpu)
{
	uint64_t seq = 0;
	const uint64_t *mark;

	pthread_mutex_lock(&g->lock);
	mark = cpuslots_find(&s->committed, cpu);
	if (mark)
		seq = *mark;
	pthread_mutex_unlock(&g->lock);
	return seq;
}

/* ---- filters ---- */

void ingest_set_filters(struct ingest *g, struct filter_table *fs)
{
	struct filter_table *old;

	pthread_mutex_lock(&g->lock);
	old = g->filters;
	g->filters = filter_table_ref(fs);
	g->filters_gen++;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	filter_table_unref(old);
}

/* ---- start, stop ---- */

/* Open the journal; queue the files an earlier run left for storing first. */
static int ing_journal_open(struct ingest *g, const struct ingest_opts *o)
{
	struct jfile **old;
	size_t n;
	int ret;

	ret = journal_open(o->journal_dir, o->journal_bytes, &g->journal);
	if (ret < 0) {
		log_err("receive journal %s: %s", o->journal_dir, ret == -EBUSY ?
			"in use by another tracecollectd" : tc_strerror(ret));
		return ret;
	}
	ret = journal_adopt(g->journal, &old, &n);
	if (ret < 0) {
		log_err("receive journal %s: %s", o->journal_dir, tc_strerror(ret));
		return ret;
	}
	for (size_t i = 0; i < n; i++)
		jlist_hold(&g->replay, old[i], true);
	free(old);
	g->replaying = n > 0;
	if (n)
		log_info("receive journal %s: %zu file(s), %.1f MB, left by an earlier run "
			 "are stored first", o->journal_dir, n,
			 (double)journal_bytes(g->journal) / 1e6);
	return 0;
}

/*
 * With a journal, taking pages in (TLS, the journal, ACKs: the event loop)
 * must not wait for decoding and storing them, which is what the journal
 * is for: the worker and the store's threads run at SCHED_IDLE and get
 * the CPU time nothing else wants. A failure only costs that.
 */
static void ing_idle(struct ingest *g)
{
	struct sched_param sp = { 0 };
	int ret;

	ret = -pthread_setschedparam(g->thread, SCHED_IDLE, &sp);
	if (ret == 0)
		ret = store_thread_policy(g->store, SCHED_IDLE);
	if (ret < 0)
		log_warn("decoding and storing at idle priority: %s; they compete with "
			 "taking pages in", tc_strerror(ret));
}

/*
 * Set up everything but the thread; ingest_stop() undoes what is done
 * whatever the point of failure.
 */
static int ing_init(struct ingest *g, struct event_base *base, const struct ingest_opts *o)
{
	int ret;

	g->tail = &g->head;
	g->rtail = &g->results;
	g->efd = -1;
	g->env.store = g->store;
	g->env.sessions = &g->sessions;
	g->env.pushdown = o->pushdown;
	g->env.max_types = o->max_types;
	g->env.max_fields = o->max_fields;
	g->env.clock_tol_ns = o->clock_tol_ns;
#ifdef TC_TEST_AIDS
	g->env.test_abort_format = o->test_abort_format;
#endif
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	pthread_cond_init(&g->stored, NULL);
	if (o->filters) {
		g->filters = filter_table_ref(o->filters);
		g->filters_gen = 1;
	}
	if (o->journal_dir) {
		ret = ing_journal_open(g, o);
		if (ret < 0)
			return ret;
	}
	g->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (g->efd < 0)
		return -errno;
	g->ev = event_new(base, g->efd, EV_READ | EV_PERSIST, ing_results_cb, g);
	if (!g->ev || event_add(g->ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

int ingest_start(struct event_base *base, struct store_writer *store, const struct ingest_opts *o,
		 const struct ingest_hooks *hooks, struct ingest **out)
{
	struct ingest *g = calloc(1, sizeof(*g));
	int ret;

	if (!g)
		return -ENOMEM;
	g->store = store;
	g->store_gen = store_generation(store, NULL);
	g->hooks = *hooks;
	g->o = *o;
	ret = ing_init(g, base, o);
	if (ret == 0)
		ret = -pthread_create(&g->thread, NULL, ing_main, g);
	if (ret < 0)
		goto out;
	g->started = true;
	if (g->journal && o->store_idle)
		ing_idle(g);
	*out = g;
out:
	if (ret < 0)
		ingest_stop(g);
	return ret;
}

void ingest_stop(struct ingest *g)
{
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
	filter_table_unref(g->filters);
	filter_table_unref(g->env_filters);
	jlist_drop(&g->closed, false);	/* not committed: kept for the next start */
	jlist_drop(&g->replay, false);
	free(g->closed.v);
	free(g->replay.v);
	free(g->rbuf);
	journal_close(g->journal);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	pthread_cond_destroy(&g->stored);
	free(g);
}

void ingest_note_crash(void)
{
	journal_note_crash();
}
