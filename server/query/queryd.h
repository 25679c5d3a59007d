/*
 * queryd.h - tracecollectd's query endpoint: an nng REP socket whose
 * requests run on a bounded pool of threads, each with its own read-only
 * store connection, so queries run beside each other and never wait on
 * ingest (WAL lets readers run beside the writer). A request that first
 * waits until what was received is stored (`sync`) holds no thread of the
 * pool while it waits.
 *
 * One of the two public headers of server/query/ (outside the room
 * nothing else of it is included). It brings in who may query what
 * (qauth.h), whose scopes and URL checks the daemon's options build. The
 * other is queryd_tls.h, the TLS query port: a front the daemon starts on
 * the endpoint, which reaches the pool through the slots below; the
 * endpoint knows nothing of it.
 */
#ifndef SERVER_QUERYD_H
#define SERVER_QUERYD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/query/qauth.h"

struct lathist;
struct proto_buf;
struct proto_msg;
struct qslot;
struct queryd;
struct qauth_scopes;

#define QUERYD_THREADS		4	/* default pool */
#define QUERYD_THREADS_MAX	64
#define QUERYD_SYNC_MAX_MS	120000	/* default longest `sync` wait */
#define QUERYD_SYNC_MAX_MS_MAX	3600000
#define QUERYD_SYNC_WAITERS	32	/* requests waiting for `sync` at once */
#define QUERYD_TIMEOUT_MS	60000	/* default query-timeout */
#define QUERYD_TIMEOUT_MS_MAX	86400000

#define QUERYD_URL	"ipc:///run/tracecollect/query.sock"	/* default endpoint */
#define QUERYD_GROUP	"tracecollect"	/* default group of the ipc socket */

struct queryd_opts {
	unsigned threads;	/* queries run at once, 1..QUERYD_THREADS_MAX */
	uint32_t sync_max_ms;	/* a longer `sync` is cut to this, 1..QUERYD_SYNC_MAX_MS_MAX */
	/*
	 * query-timeout: the store work of one request (a page, a count, an
	 * sql statement) stops after this many ms (0: never); query-max-rows:
	 * the rows of one answer, all its pages (0: no limit)
	 */
	uint32_t timeout_ms;
	uint64_t max_rows;
	/*
	 * An ipc socket is made mode 0660 with this group (NULL: QUERYD_GROUP),
	 * or 0600 (with a warning) when there is no such group; its directory,
	 * when missing, 0750 with that group.
	 */
	const char *group;
	/* who sees which hosts (NULL: no rules); until queryd_stop() or queryd_set_scopes() */
	const struct qauth_scopes *scopes;
	const struct qauth_scopes *import_rights;	/* `import` lines (queryd_import.c) */
	const struct qauth_scopes *snapshot_rights;	/* `snapshot` lines (queryd_snap.c) */
	struct lathist *latency;	/* each request, arrival to reply (NULL: not kept) */
};

/*
 * queryd_start - listen on @url (nng; a tcp port of 0 picks a free one;
 * qauth_url_check() says which URLs are taken) and answer queries against
 * the database at @db_path with @o (NULL: the defaults above). Each query
 * is logged with who asked (the ipc peer's uid, a certificate's CN), what
 * (escaped) and how many rows it returned; it reads only the hosts its
 * identity's scope allows (server/query/qauth.h).
 * @bound: receives the URL actually listened on.
 *
 * Return: 0 and *@out; -EINVAL for @o out of range; a negative code
 * (logged) when the URL cannot be listened on or the database cannot be
 * opened. *@out only on success.
 */
int queryd_start(const char *url, const char *db_path, const struct queryd_opts *o,
		 struct queryd **out, char *bound, size_t blen);

/* What the endpoint asks the collector's ingest (any thread may call it). */
/*
 * struct queryd_importer - the import ops (traceq --import) as the
 * collector's importer answers them (server/ingest/importer.h, whose
 * importer_begin(), _msg(), _pages() and _end() these call with @ctx): the
 * query room reaches the ingest room only through what tracecollectd.c
 * hands it, never by including it.
 */
struct queryd_importer {
	int (*begin)(void *ctx, const char *subject, struct proto_msg *hello, const void *raw,
		     size_t rawlen, uint64_t *id, char *err, size_t errlen);
	int (*msg)(void *ctx, const char *subject, uint64_t id, struct proto_msg *m,
		   const void *raw, size_t rawlen, char *err, size_t errlen);
	int (*pages)(void *ctx, const char *subject, uint64_t id, uint32_t cpu, uint64_t seq,
		     const uint8_t *pages, size_t len, char *err, size_t errlen);
	int (*end)(void *ctx, const char *subject, uint64_t id, bool abort, uint64_t *pages,
		   uint64_t *events, char *err, size_t errlen);
	void *ctx;
	uint64_t id_bits;	/* bits the importer sets in every id, left out of log lines */
};

/*
 * struct queryd_snapper - traceq --snapshot as the collector's freezer
 * answers it (server/conn/freeze.h, whose freezer_ask() @freeze calls
 * with @ctx): the recorders whose names match @f->host_glob (NULL: any)
 * and the right (@f->all, or @f->allow), told to freeze as snapshot *@id
 * (at least @f->min_id), *@hosts of them. Return: 0; -EACCES (a recorder
 * the glob selects is outside the right), -ENOENT (none selected), ...,
 * with a sentence in @why.
 */
#define QUERYD_FREEZE_WHY	512

struct queryd_freeze {
	const char *reason;		/* NULL: none */
	const char *who;		/* the asker, as qauth_who_str() says it */
	const char *host_glob;
	bool all;
	const char *const *allow;
	size_t nallow;
	uint64_t min_id;
};

struct queryd_snapper {
	int (*freeze)(void *ctx, const struct queryd_freeze *f, uint64_t *id, unsigned *hosts,
		      char *why, size_t len);
	void *ctx;
};

struct queryd_ingest {
	/* a mark of what has been received so far, taken as a request arrives */
	uint64_t (*received)(void *arg);
	/* 0 once what was received up to @mark is stored; -ETIMEDOUT (0 ms: only look) */
	int (*wait_stored)(void *arg, uint64_t mark, int timeout_ms);
	/* batches received but not yet stored; bytes of the receive journal */
	void (*backlog)(void *arg, uint64_t *unstored, uint64_t *journal_bytes);
	void *arg;
	const struct queryd_importer *importer;	/* imports; NULL: none */
	/* traceq --hosts: whether an agent of @host_id is connected now; NULL: none is */
	bool (*connected)(void *arg, uint64_t host_id);
	/* since when storing is held up (0: it is not) and why; NULL: never */
	void (*stalled)(void *arg, int64_t *since_ns, char *why, size_t len);
	const struct queryd_snapper *snapper;	/* snapshots; NULL: none */
};

/*
 * queryd_set_ingest - requests with sync_ms wait through @in first, and
 * every reply carries the backlog; NULL: neither (no ingest). Any time is
 * fine: it returns once no thread of the endpoint is inside the functions
 * it replaces (a wait is cut into slices of at most QUERYD_SYNC_SLICE_MS,
 * queryd.c), so the caller may then free what they use.
 */
void queryd_set_ingest(struct queryd *qd, const struct queryd_ingest *in);

/*
 * queryd_set_scopes - the requests that come after it read under the
 * rules of @sc, which move into the endpoint (@sc is left empty); requests
 * being answered finish under the rules they started with. Any thread.
 * Return: 0; -ENOMEM, and nothing changed.
 */
int queryd_set_scopes(struct queryd *qd, struct qauth_scopes *sc);

/*
 * A front of the endpoint (the TLS query port, queryd_tls.c) brings the
 * requests of its own connections to the pool through a slot each, one
 * request at a time, like an nng context of the REP socket.
 *
 * queryd_reply_fn - the reply to the request submitted on a slot, called
 * once per request with the @ctx given to queryd_slot_new(), on the
 * thread that answers it: a worker, the sync thread, or the caller of
 * queryd_submit() for a request refused there. @out is read, not kept;
 * it must not block for long.
 *
 * queryd_slot_new - a slot of @qd whose replies go to @reply(@ctx).
 * Return: the slot; NULL (no memory). queryd_slot_free - free it and its
 * request (NULL is fine): after its last reply, or once the endpoint has
 * stopped (queryd_stop()); it does not touch @qd.
 */
typedef void (*queryd_reply_fn)(void *ctx, const struct proto_buf *out);
struct qslot *queryd_slot_new(struct queryd *qd, queryd_reply_fn reply, void *ctx);
void queryd_slot_free(struct qslot *s);

/*
 * queryd_submit - the request in @buf[@len] (read, not kept) came to @s
 * from @who (copied): check its size, decode it, and send it on its way
 * (the pool, the sync list, or an error reply). Its reply comes through
 * @s's queryd_reply_fn, maybe before this returns.
 */
void queryd_submit(struct qslot *s, const struct qauth_who *who, const void *buf, size_t len);

/* queryd_slot_cancel - @s's asker went away: its request's store work stops. */
void queryd_slot_cancel(struct qslot *s);

/*
 * queryd_in_flight - requests taken and not yet answered (queued, waiting
 * for `sync`, or being answered), for /metrics. Any thread.
 */
unsigned queryd_in_flight(struct queryd *qd);

/* queryd_stop - stop the threads and free everything; NULL is fine. */
void queryd_stop(struct queryd *qd);

#endif
