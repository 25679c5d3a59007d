/*
 * collector.h - tracecollectd's shared state and its parts: the agent
 * connections (conn.c), the ingest transaction (ingest.c) and the query
 * endpoint (queryd.c). Module-private to server/.
 *
 * Threads: the event loop runs connections and TLS (conn.c); one ingest
 * worker (ingest.c, sink.c) owns the store and does all decoding, filtering
 * and writing. They talk through a bounded job queue and a result list.
 */
#ifndef SERVER_COLLECTOR_H
#define SERVER_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "server/store/store.h"

struct conn;
struct ingest;
struct sink;
struct filters;
struct proto_msg;

struct collector {
	struct event_base *base;
	SSL_CTX *tls;
	struct evconnlistener *listener;
	struct store *store;		/* the one writer: used by the ingest worker only */
	struct ingest *ing;		/* the ingest worker and its queue */
	struct conn *conns;		/* live agent connections */
	unsigned nconns;
	uint64_t refused;		/* agents refused at the TLS handshake */
	uint64_t next_conn_id;
};

/*
 * conn_accept - take a new TCP connection @fd from @peer and start the TLS
 * handshake; the connection frees itself when it ends.
 */
void conn_accept(struct collector *col, int fd, const struct sockaddr *peer, int socklen);

/*
 * conn_committed_all - called on the event loop after a commit made durable
 * everything the ingest worker had taken over before that commit began;
 * each connection's cpus[].committed_seq is then the highest page of that
 * CPU on disk (resends dropped as duplicates included), and a connection
 * whose agent announced a session sends it MSG_ACK for every stream whose
 * mark moved.
 */
void conn_committed_all(struct collector *col);

/* conn_close_all - end every agent connection (at shutdown). */
void conn_close_all(struct collector *col);

/* ---- results of the ingest worker, delivered on the event loop ---- */

enum ingest_result_kind {
	IR_WELCOME,		/* HELLO stored: send WELCOME with host_id */
	IR_DONE,		/* BYE: everything committed; send DONE */
	IR_FAIL,		/* a message or page failed: send ERROR, close */
	IR_MSG,			/* send msg (MSG_FILTER: push-down) */
};

struct ingest_result {
	struct ingest_result *next;
	uint64_t conn_id;
	enum ingest_result_kind kind;
	uint64_t host_id;	/* IR_WELCOME */
	uint64_t pages, events;	/* IR_DONE: stored this session */
	int err;		/* IR_FAIL */
	char what[32];		/* IR_FAIL: "page", "format", ... */
	struct proto_msg *msg;	/* IR_MSG: owned by the result */
};

/* conn_on_result - handle one result (the connection may be gone: ignored). */
void conn_on_result(struct collector *col, const struct ingest_result *r);

/* conn_resume_all - the queue drained: resume reading on paused connections. */
void conn_resume_all(struct collector *col);

/* ---- the ingest worker (ingest.c) ---- */

struct ingest_opts {
	unsigned commit_ms;	/* commit at least this often while data flows */
	size_t queue_bytes;	/* pause reading from agents above this */
	int64_t retain_age_ns;	/* 0: keep forever */
	uint64_t retain_bytes;	/* 0: no size limit */
	bool pushdown;		/* send agents that take it their filters */
	struct filters *filters;	/* the first filter table (NULL: none) */
	const char *journal_dir;	/* receive journal (NULL: none; ACK on commit) */
	uint64_t journal_bytes;		/* pause reading above this much journal */
	bool store_idle;		/* with a journal: decode and store at SCHED_IDLE */
};

/*
 * ingest_start - start the worker thread that owns col->store: it decodes,
 * filters and stores what connections hand over, in order, in large
 * transactions, and reports back on col->base.
 * Return: 0; -ENOMEM; -errno from the thread or eventfd.
 */
int ingest_start(struct collector *col, const struct ingest_opts *o);

/*
 * ingest_stop - process everything queued, commit, stop the worker.
 * Call after conn_close_all(). NULL-safe on a collector never started.
 */
void ingest_stop(struct collector *col);

/*
 * ingest_set_filters - use @fs (a reference is taken; NULL: none) for every
 * event from now on; connections re-resolve their events' filters before
 * their next page. Called on the event loop (SIGHUP).
 */
void ingest_set_filters(struct collector *col, struct filters *fs);

/*
 * ingest_full - stop reading? The queue is above its limit; with a journal:
 * the journal is, and not everything in it is stored yet.
 */
bool ingest_full(struct collector *col);

/*
 * ingest_sink_new - the worker-side state of connection @conn_id.
 * Return: 0 and *@out; -ENOMEM.
 */
int ingest_sink_new(struct collector *col, uint64_t conn_id, struct sink **out);

/*
 * ingest_push_msg - hand message @m to the worker, which takes over what
 * it owns (*@m is emptied); @raw is its payload as received (journaled).
 * Return: 0; -ENOMEM, -errno from the journal (@m is then freed).
 */
int ingest_push_msg(struct collector *col, struct sink *s, struct proto_msg *m,
		    const void *raw, size_t rawlen);

/*
 * ingest_journaled - is there a receive journal? Then what ingest_flush()
 * and ingest_push_msg() returned 0 for is durable: ACK it, and answer BYE
 * at once.
 */
bool ingest_journaled(struct collector *col);

/*
 * ingest_journal_tidy - after a commit: once everything in the journal
 * file of @s is committed and the file is large, start a new one (with the
 * messages that shape decoding) and remove the old.
 */
void ingest_journal_tidy(struct collector *col, struct sink *s);

/*
 * ingest_wait_stored - wait until everything queued before the call (and
 * the journal files of an earlier run) is committed, at most @timeout_ms.
 * Any thread. Return: 0; -ETIMEDOUT.
 */
int ingest_wait_stored(struct collector *col, int timeout_ms);

/*
 * ingest_backlog - jobs (batches of pages, messages) queued but not yet
 * committed, plus journal files still to store; and the journal's size
 * (0: none). Any thread.
 */
void ingest_backlog(struct collector *col, uint64_t *unstored, uint64_t *journal_bytes);

/*
 * ingest_push_page - hand a copy of page @seq of CPU @cpu to the worker.
 * Pages are batched per sink until ingest_flush() or the next message.
 * Return: 0; -ENOMEM.
 */
int ingest_push_page(struct collector *col, struct sink *s, uint32_t cpu, uint64_t seq,
		     const void *page, size_t len);

/* ingest_flush - queue the sink's batched pages now. Return: 0; -ENOMEM; -errno. */
int ingest_flush(struct collector *col, struct sink *s);

/*
 * ingest_sink_close - the connection is gone: no more pushes; the worker
 * frees @s after the jobs already queued.
 */
void ingest_sink_close(struct collector *col, struct sink *s);

/*
 * ingest_sink_committed - the highest page sequence number of CPU @cpu of
 * @s that is committed (0: none yet).
 */
uint64_t ingest_sink_committed(struct collector *col, struct sink *s, uint32_t cpu);

#endif
