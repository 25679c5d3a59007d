/*
 * store_ops.h - the contract between the storage front (store.c) and a
 * backend; private to server/store/ (everything outside includes only
 * store.h).
 *
 * store.c is a thin front: it checks arguments and calls through the
 * backend's const ops table, as libevent's bufferevents call their
 * bufferevent_ops. SQLite (sqlite*.c) is the first backend; a second one
 * (a distributed engine) is one more ops table, its constructor, and a
 * line in store_open() choosing it. Nothing in ingest, queryd or common/
 * changes for it: reads arrive as struct store_query (a bound filter,
 * never query text), and each backend compiles that to its own language.
 *
 * The handle. A backend's constructor allocates its own handle with
 * struct store as its first member, sets ops and readonly, and returns
 * &handle->base; close frees the handle and everything the backend
 * handed out (every struct store_type). Each op's meaning, arguments,
 * return values and errors are those of the store_*() function of the
 * same name in store.h; what follows is what a backend may rely on and
 * must keep.
 *
 * What the front guarantees before an op runs:
 * - @s is the backend's own handle, never NULL; the pointer arguments
 *   store.h calls required are not NULL (store.c checks each).
 * - A read-only handle (readonly set) never reaches a write op: host,
 *   host_clock, type, begin, commit, rollback, cpu_received, cpu_stats,
 *   stream_marks, stream_mark, journal_mark, journal_mark_get,
 *   journal_forget, cpu_duplicates, cpu_not_stored, cpu_held, host_usage, cmdlines, comm_change,
 *   program, symbol,
 *   printk_put, dropped,
 *   retain and set_indexes fail with -EROFS in the front. insert is not
 *   checked (it is the hot path): store_type() already failed there.
 * - sync, when the backend has it, ran (and succeeded) right before every
 *   op but close, insert, begin, commit, rollback and thread_policy; so
 *   did follow (with reopen true on a read-only handle, false otherwise),
 *   but for symbol_name (called per row of a select, which followed).
 *   begin runs after follow(reopen true) succeeded; rollback is followed
 *   by follow(reopen true), whose result is ignored.
 * - For select, count and hist: q->schema is set, and when q->filter is, every
 *   q->field_col[i] (i < q->nfields) is below q->schema->ncols.
 *
 * Who owns what after a call:
 * - Arguments are the caller's and valid only during the call; a backend
 *   copies what it keeps: the event's field values at insert (the page
 *   they point into is reused after the call), the type's description at
 *   type, strings of hello, program,
 *   symbol, cmdlines and dropped, and the index list of set_indexes.
 * - type: the struct store_type is the backend's, valid until close;
 *   the caller caches it and hands it back to insert.
 * - schema_get: *out is the caller's and is freed by store_schema_free()
 *   (store.c), so a backend allocates it as that expects: calloc'd
 *   struct, malloc'd system, name and table, a malloc'd cols array whose
 *   name and column strings are malloc'd.
 * - schema_list, select, stats, drops: what @fn is passed (schema, row
 *   and everything it points to, strings) is the backend's and valid
 *   only during @fn. A nonzero return from @fn stops the walk and is the
 *   op's return.
 * - symbol_name: the name is written into the caller's @buf.
 *
 * Errors: 0 or a negative code (common/tc_error.h; -errno passes
 * through). A failing op says why in s->errmsg (store_set_errmsg(), read
 * by store_errmsg()); TC_ERR_DB is a failure of the engine itself.
 * A failed commit leaves nothing of the transaction stored; a failed
 * insert may be reported by a later op (a backend that inserts behind
 * the caller's back), which must then keep failing until rollback or
 * begin, so no commit can go through without rows it should hold.
 *
 * Threads: a handle is used by one thread at a time, and each op runs on
 * the caller's thread. In tracecollectd the writable handle is opened,
 * given its indexes (set_indexes) and closed by main, and used in between
 * only by the ingest worker (every write op, and the reads the write
 * path needs: stream_marks, journal_mark_get); the query endpoint's
 * thread opens a read-only handle of its own and calls only schema_get,
 * schema_list, type_seen, select, count, hist, tail, host_find, symbol_name, stats,
 * drops and sql. Threads a
 * backend runs for itself (SQLite: the writer that runs batched INSERTs,
 * the checkpointer) are its own business: started by its constructor,
 * stopped by close, waited for by sync, scheduled by thread_policy; the
 * engine must allow one writing and several reading handles on the same
 * store at once (SQLite: WAL). The one op called while another thread
 * may be using the handle is thread_policy (main, as the ingest worker
 * starts): it may touch nothing but the backend's own threads.
 *
 * Optional: set_stop may be NULL (reads are never stopped); sync and
 * thread_policy may be NULL (no threads of its own),
 * follow (no file that can be removed); every other op must be set.
 */
#ifndef SERVER_STORE_STORE_OPS_H
#define SERVER_STORE_STORE_OPS_H

#include "server/store/store.h"

#define STORE_ERRMSG_MAX 512

struct store_ops {
	const char *name;
	/* close: stop the backend's threads, free the handle and its store_types */
	void (*close)(struct store *s);

	/* ---- write side: the ingest worker ---- */
	int (*host)(struct store *s, const struct proto_hello *h, const char *peer_subject,
		    uint64_t *host_id);
	int (*host_clock)(struct store *s, uint64_t host_id, int64_t offset_ns);
	int (*type)(struct store *s, const struct store_type_desc *t, const struct store_origin *o,
		    struct store_type **out);
	int (*begin)(struct store *s);
	int (*commit)(struct store *s);
	int (*rollback)(struct store *s);
	/* insert: the hot path; may queue the row and report its failure later */
	int (*insert)(struct store *s, struct store_type *t, const struct store_event *ev);
	int (*cpu_received)(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
			    uint64_t events, uint64_t bytes);
	int (*cpu_stats)(struct store *s, uint64_t host_id, const struct proto_cpu_stats *st);
	int (*stream_marks)(struct store *s, uint64_t host_id, const char *boot_id,
			    uint64_t session, uint64_t *seqs, uint32_t n);
	int (*journal_mark)(struct store *s, uint64_t file, uint64_t pos);
	int (*journal_mark_get)(struct store *s, uint64_t file, uint64_t *pos);
	int (*journal_forget)(struct store *s, uint64_t from, uint64_t to);
	int (*stream_mark)(struct store *s, uint64_t host_id, const char *boot_id,
			   uint64_t session, uint32_t stream, uint64_t seq);
	int (*cpu_duplicates)(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t n);
	int (*cpu_not_stored)(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
			      uint64_t events);
	int (*cpu_held)(struct store *s, uint64_t host_id, uint32_t cpu,
			const struct store_held *h);
	int (*host_usage)(struct store *s, int (*fn)(void *ctx, const char *host, uint64_t bytes),
			  void *ctx);
	int (*cmdlines)(struct store *s, uint64_t host_id, const struct proto_cmdlines *c);
	int (*comm_change)(struct store *s, uint64_t host_id, const struct store_comm_change *c);
	int (*program)(struct store *s, uint64_t host_id, const struct store_program *p,
		       uint64_t *program_id);
	int (*symbol)(struct store *s, uint64_t program_id, uint64_t addr, uint64_t size,
		      const char *name);
	int (*kallsyms_held)(struct store *s, uint64_t host_id, const char *boot_id,
			     bool *held);
	int (*printk_put)(struct store *s, uint64_t host_id, const char *boot_id, int64_t since,
			  uint64_t addr, const char *fmt, size_t len);
	int (*printk_held)(struct store *s, uint64_t host_id, const char *boot_id, bool *held);
	int (*dropped)(struct store *s, uint64_t host_id, const char *system, const char *name,
		       const char *reason, uint64_t n);
	int (*retain)(struct store *s, int64_t before_ts, uint64_t max_bytes, uint64_t *removed);
	/* set_indexes: main, before the ingest worker starts; outside a transaction */
	int (*set_indexes)(struct store *s, const struct store_indexes *ix, unsigned *created,
			   unsigned *dropped);

	/* ---- read side: the query endpoint's thread (and tests) ---- */
	int (*host_find)(struct store *s, const char *name, const struct store_scope *scope,
			 uint64_t *host_id);
	int (*import_check)(struct store *s, const char *name, const char *machine_id,
			    bool *live, bool *stored);
	int (*symbol_name)(struct store *s, uint64_t host_id, int32_t pid, int64_t ts,
			   uint64_t addr, char *buf, size_t len);
	int (*printk_list)(struct store *s, uint64_t host_id, int64_t ts, uint32_t max,
			   int (*fn)(void *ctx, uint64_t addr, const char *fmt), void *ctx);
	int (*tgids_list)(struct store *s, uint64_t host_id, int32_t after_pid, uint32_t max,
			  int (*fn)(void *ctx, int32_t pid, int32_t tgid), void *ctx);
	int (*schema_get)(struct store *s, const char *system, const char *event,
			  struct store_schema **out);
	int (*schema_list)(struct store *s, const char *system,
			   int (*fn)(void *ctx, const struct store_schema *sc), void *ctx);
	int (*type_seen)(struct store *s, const struct store_schema *sc,
			 const struct store_scope *scope, bool *seen);
	/*
	 * select, count: compile @q (its bound filter, with FILTER_FIELD_CPU
	 * and FILTER_FIELD_COMM as store.h says, the host glob, the scope, the window)
	 * to the backend's own query; rows in (ts, rowid) order, keyset paged.
	 */
	int (*select)(struct store *s, const struct store_query *q, store_row_fn fn, void *ctx);
	int (*count)(struct store *s, const struct store_query *q, uint64_t *count);
	/* hist: @q's rows grouped as @h says (store.h); one read */
	int (*hist)(struct store *s, const struct store_query *q, const struct store_hist *h,
		    int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		    struct store_hist_totals *tot);
	/* stats, drops: only the hosts q allows (host_glob, scope); q may be NULL */
	int (*stats)(struct store *s, const struct store_query *q,
		     int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			       const char *key, uint64_t value),
		     void *ctx);
	int (*drops)(struct store *s, const struct store_query *q,
		     int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			       const char *reason, uint64_t count),
		     void *ctx);
	/* hosts: only the hosts q allows (host globs, scope); q may be NULL */
	int (*hosts)(struct store *s, const struct store_query *q,
		     int (*fn)(void *ctx, const struct store_host_info *h), void *ctx);

	/*
	 * sql: the user SQL surface (store_sql()): @text is the user's, to be
	 * run read-only over the documented views only, enforced by the
	 * engine (SQLite: an authorizer), not by reading the text.
	 */
	int (*sql)(struct store *s, const char *text, const struct store_scope *scope,
		   const struct store_sql_limits *lim, store_sql_fn fn, void *ctx);

	/*
	 * tail: rows in storage order from a cursor (store_tail()); each
	 * query as select's (its paging, limit and order unused)
	 */
	int (*tail)(struct store *s, const struct store_query *const *qs, size_t nq,
		    struct store_tail *t, store_tail_fn fn, void *ctx);

	/* set_stop: reads stop as @stop says (NULL: not) from now on (store_set_stop()) */
	void (*set_stop)(struct store *s, const struct store_stop *stop);

	/* ---- optional ---- */
	/*
	 * sync: wait for work the backend runs behind the caller's back
	 * (queued inserts); after it the handle is the caller's alone.
	 * Return: 0, or the error that work ran into (until rollback/begin).
	 */
	int (*sync)(struct store *s);
	/*
	 * thread_policy: run the backend's own threads at @policy
	 * (SCHED_IDLE...); may run while another thread uses the handle.
	 */
	int (*thread_policy)(struct store *s, int policy);
	/*
	 * follow: keep to the database at the handle's path (store.h, "the
	 * database removed or replaced"). With @reopen false (before every op
	 * that sync precedes): 0, or TC_ERR_DB while a writable handle is lost.
	 * With @reopen true (store_begin(), after store_rollback(),
	 * store_refresh(), and a read-only handle's reads): reopen the path
	 * when the handle lost its file (writable: noticed by commit;
	 * read-only: checked here), moving generation and setting note. The
	 * front calls it before sync. NULL: a backend without files.
	 */
	int (*follow)(struct store *s, bool reopen);
};

struct store {
	const struct store_ops *ops;
	bool readonly;
	uint64_t generation;	/* reopened this many times (follow) */
	char errmsg[STORE_ERRMSG_MAX];
	char note[STORE_ERRMSG_MAX];	/* what the last reopen found */
};

/* store_set_errmsg - printf into s->errmsg; returns @err for tail calls. */
int store_set_errmsg(struct store *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * store_note_open_error - a backend's constructor that fails keeps @s's
 * message for store_open_errmsg() (this thread's), before it frees @s.
 */
void store_note_open_error(const struct store *s);

/* store_sqlite_open - the SQLite backend's constructor (sqlite.c). */
int store_sqlite_open(const char *path, bool readonly, struct store **out);

#endif
