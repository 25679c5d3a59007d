/*
 * ingest.h - the ingest worker: one thread that owns the store and turns
 * what agent connections hand over (control messages, ring-buffer pages)
 * into committed rows, behind a receive journal when there is one
 * (ingest.c tells the whole story).
 *
 * The public header of server/ingest/: outside the room nothing else of
 * it is included. It brings in the two parts of the room whose types its
 * callers build and hand over: the server-side filter table
 * (filter_table.h) and the importer of traceq --import's recordings
 * (importer.h).
 *
 * Ingest knows nothing of connections. A connection is a sink
 * (ingest_sink_new()) named by a conn_id of the caller's choosing, and
 * what the worker has to say about it comes back through the hooks the
 * caller gave ingest_start() (tracecollectd: conn.c, conn_ingest_hooks()).
 *
 * Threads:
 *  - the event loop, the thread that runs event_base_dispatch() on the
 *    base given to ingest_start(), makes every call below but the two
 *    marked "any thread", and is the only thread that runs a hook;
 *  - the ingest worker, a thread of ingest's own, decodes, filters and
 *    stores (sink.c, dedup.c), commits, and applies retention; it never
 *    runs a hook: it queues results and wakes the loop through an eventfd;
 *  - the store's writer and checkpointer threads (server/store/sqlite_write.c, sqlite_ckpt.c) take the
 *    worker's inserts and checkpoints; with a journal all three run at
 *    SCHED_IDLE (ingest_opts.store_idle);
 *  - any thread (the query endpoint's, queryd.c): ingest_wait_stored(),
 *    ingest_received(), ingest_wait_mark(), ingest_backlog(), ingest_stalled().
 */
#ifndef SERVER_INGEST_H
#define SERVER_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/ingest/filter_table.h"
#include "server/ingest/importer.h"

struct event_base;
struct filter_table;
struct ingest;
struct lathist;
struct proto_msg;
struct sink;
struct store_writer;

struct ingest_opts {
	unsigned commit_ms;	/* commit at least this often while data flows */
	size_t queue_bytes;	/* pause reading from agents above this */
	int64_t retain_age_ns;	/* 0: keep forever */
	uint64_t retain_bytes;	/* 0: no size limit */
	bool pushdown;		/* send agents that take it their filters */
	struct filter_table *filters;	/* the first filter table (NULL: none) */
	const char *journal_dir;	/* receive journal (NULL: none; ACK on commit) */
	uint64_t journal_bytes;		/* pause reading above this much journal */
	bool store_idle;		/* with a journal: decode and store at SCHED_IDLE */
	bool host_usage;		/* report bytes stored per host (hooks.usage) */
	unsigned max_types;	/* event types per host; 0: no cap (sink_env) */
	unsigned max_fields;	/* fields per event format; 0: no cap */
	struct lathist *commit_latency;	/* each commit's time (NULL: not kept; /metrics) */
	int64_t clock_tol_ns;	/* clock-tolerance (sink_env) */
	/*
	 * The hosts connected to this collector now, at most @max into @ids
	 * (returns how many); called on the worker every INGEST_LIVE_S, and
	 * handed to store_live_hosts() (a store several collectors share).
	 * NULL: never.
	 */
	size_t (*live_hosts)(void *arg, uint64_t *ids, size_t max);
	void *live_arg;
#ifdef TC_TEST_AIDS
	/* TEST AID: abort() while decoding the FORMAT of this event name, as
	 * a record that kills the collector would (journal.h: quarantine) */
	const char *test_abort_format;
#endif
};

/*
 * struct ingest_hooks - what the worker tells the connections, called on
 * the event loop only (from the callback of ingest's eventfd), never on
 * the worker. On each wake-up: committed (if a commit happened since the
 * last), then the per-connection hooks in the order the worker posted
 * them, then resume (if the queue drained). @conn_id is the one given to
 * ingest_sink_new(); that connection may be gone by then (ignore it). A
 * hook may call the event-loop functions below, but not ingest_stop().
 * A NULL hook is not called.
 */
struct ingest_hooks {
	/*
	 * HELLO is stored: answer WELCOME with @host_id, @kallsyms (this
	 * boot's kernel symbols are stored) and @printk (send this boot's
	 * printk_formats: none are stored).
	 */
	void (*welcome)(void *arg, uint64_t conn_id, uint64_t host_id, bool kallsyms,
			bool printk);
	/*
	 * BYE: everything of the connection is committed (@pages and
	 * @events stored in this session): answer DONE. With a journal the
	 * connection answered at once and is closing already.
	 */
	void (*done)(void *arg, uint64_t conn_id, uint64_t pages, uint64_t events);
	/*
	 * A message or page of the connection failed, or a commit did (its
	 * pages are not stored): send ERROR @err and close. @what says what
	 * ("page", "format", "commit failed", ...); valid during the call.
	 */
	void (*failed)(void *arg, uint64_t conn_id, int err, const char *what);
	/* Send @m to the agent (MSG_FILTER: push-down); @m stays ingest's. */
	void (*send)(void *arg, uint64_t conn_id, const struct proto_msg *m);
	/*
	 * A commit made durable everything the worker had taken over before
	 * it began: ingest_sink_committed() moved (ACK it), and with a
	 * journal, files may rotate (ingest_journal_tidy()).
	 */
	void (*committed)(void *arg);
	/* The queue drained to half its limit: resume reading (ingest_full()). */
	void (*resume)(void *arg);
	/*
	 * With ingest_opts.host_usage, after each commit: host name @host
	 * has @bytes stored (store_host_usage()); @host is valid during the
	 * call. Then page_bytes for each connection that had pages in it:
	 * the bytes of the pages it handed over (ingest_push_page()) that are
	 * committed now (stored, or counted as not stored). Both come in the
	 * same wake-up, so what the pages of a connection handed over add up
	 * to less page_bytes is still on its way to the store, and is not in
	 * usage yet.
	 */
	void (*usage)(void *arg, const char *host, uint64_t bytes);
	void (*page_bytes)(void *arg, uint64_t conn_id, uint64_t bytes);
	void *arg;
};

/*
 * ingest_start - start the worker thread that owns @store: it decodes,
 * filters and stores what sinks hand over, in order, in large
 * transactions, and reports back through @hooks (copied) on @base.
 * With o->journal_dir, the files an earlier run left there are stored
 * before anything else.
 * Return: 0 and *@out; -ENOMEM; -EBUSY (journal in use); -errno from the
 * journal, the thread or the eventfd. *@out only on success.
 */
int ingest_start(struct event_base *base, struct store_writer *store, const struct ingest_opts *o,
		 const struct ingest_hooks *hooks, struct ingest **out);

/*
 * ingest_stop - process everything queued, commit, stop the worker, free
 * @g; results not yet delivered are dropped (no hook runs). Call after
 * every sink is closed (ingest_sink_close()). NULL is fine.
 */
void ingest_stop(struct ingest *g);

/*
 * ingest_set_filters - use @fs (a reference is taken; NULL: none) for every
 * event from now on; sinks re-resolve their events' filters before their
 * next page. Called on the event loop (SIGHUP).
 */
void ingest_set_filters(struct ingest *g, struct filter_table *fs);

/*
 * ingest_full - stop reading? The queue is above its limit; with a journal:
 * the journal is, and not everything in it is stored yet.
 */
bool ingest_full(struct ingest *g);

/*
 * ingest_sink_new - the worker-side state of connection @conn_id, whose
 * agent's certificate subject is @subject (copied, for the journal and
 * the hosts table).
 * Return: 0 and *@out; -ENOMEM.
 */
int ingest_sink_new(struct ingest *g, uint64_t conn_id, const char *subject,
		    struct sink **out);

/*
 * ingest_push_msg - hand message @m to the worker, which takes over what
 * it owns (*@m is emptied); @raw is its payload as received (journaled).
 * Return: 0; -ENOMEM, -errno from the journal (@m is then freed).
 */
int ingest_push_msg(struct ingest *g, struct sink *s, struct proto_msg *m,
		    const void *raw, size_t rawlen);

/*
 * ingest_journaled - is there a receive journal? Then what ingest_flush()
 * and ingest_push_msg() returned 0 for is durable: ACK it, and answer BYE
 * at once.
 */
bool ingest_journaled(struct ingest *g);

/*
 * ingest_journal_tidy - after a commit: once everything in the journal
 * file of @s is committed and the file is large, start a new one (with the
 * messages that shape decoding) and remove the old.
 */
void ingest_journal_tidy(struct ingest *g, struct sink *s);

/*
 * ingest_wait_stored - wait until everything queued before the call (and
 * the journal files of an earlier run) is committed, at most @timeout_ms.
 * Any thread. Return: 0; -ETIMEDOUT.
 */
int ingest_wait_stored(struct ingest *g, int timeout_ms);

/*
 * ingest_received - a mark of what has been queued so far, for
 * ingest_wait_mark(): a waiter takes it when its request arrives and may
 * wait later, on another thread. Any thread.
 */
uint64_t ingest_received(struct ingest *g);

/*
 * ingest_wait_mark - as ingest_wait_stored(), for what was queued when
 * @mark was taken (ingest_received()); @timeout_ms 0 only looks. Any
 * thread. Return: 0; -ETIMEDOUT.
 */
int ingest_wait_mark(struct ingest *g, uint64_t mark, int timeout_ms);

/*
 * ingest_backlog - jobs (batches of pages, messages) queued but not yet
 * committed, plus journal files still to store; and the journal's size
 * (0: none). Any thread.
 */
void ingest_backlog(struct ingest *g, uint64_t *unstored, uint64_t *journal_bytes);

/*
 * ingest_stalled - since when storing is held up (realtime ns; 0: it is
 * not): the store failed and the worker keeps trying (a locked SQLite, a
 * ClickHouse down or too slow), or storing is so slow that the journal is
 * full and agents are held back (ingest_full()); and why, into @why[@len]
 * ("" when not). Each is said once in the log when it starts and once
 * when it ends. Any thread.
 */
void ingest_stalled(struct ingest *g, int64_t *since_ns, char *why, size_t len);

/*
 * ingest_push_page - hand a copy of page @seq of CPU @cpu to the worker.
 * Pages are batched per sink until ingest_flush() or the next message.
 * Return: 0; -ENOMEM.
 */
int ingest_push_page(struct ingest *g, struct sink *s, uint32_t cpu, uint64_t seq,
		     const void *page, size_t len);

/*
 * ingest_report_usage - whether hooks.usage reports bytes stored per host
 * from now on (ingest_opts.host_usage at the start). Event loop (SIGHUP).
 */
void ingest_report_usage(struct ingest *g, bool on);

/* What a host limit held back of one stream of a connection (store_held). */
struct ingest_held {
	uint32_t cpu;
	uint64_t rate_pages, rate_ms;
	uint64_t quota_pages, quota_ms;
};

/*
 * ingest_count_held - add @n counts @h to the CPUs of @s's host, in the
 * transaction after the jobs queued before. Not journaled: counters of a
 * run that dies with them are lost (no event is).
 * Return: 0; -ENOMEM.
 */
int ingest_count_held(struct ingest *g, struct sink *s, const struct ingest_held *h, size_t n);

/* ingest_flush - queue the sink's batched pages now. Return: 0; -ENOMEM; -errno. */
int ingest_flush(struct ingest *g, struct sink *s);

/*
 * ingest_sink_close - the connection is gone: no more pushes; the worker
 * frees @s after the jobs already queued. NULL is fine.
 */
void ingest_sink_close(struct ingest *g, struct sink *s);

/*
 * ingest_sink_committed - the highest page sequence number of CPU @cpu of
 * @s that is committed (0: none yet).
 */
uint64_t ingest_sink_committed(struct ingest *g, struct sink *s, uint32_t cpu);

/*
 * ingest_note_crash - for a fatal signal's handler: if the calling thread
 * is decoding a journal unit, note that the process dies of it, so the next
 * start quarantines it at once (journal.h). Async-signal-safe.
 */
void ingest_note_crash(void);

#endif
