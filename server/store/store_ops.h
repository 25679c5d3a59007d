/*
 * store_ops.h - the two contracts between the storage layer's callers and
 * a backend, one per role, as libevent's bufferevents have their
 * bufferevent_ops. Callers include store.h, whose functions call through
 * these tables; a backend includes this file (and store_types.h), never
 * store.h.
 *
 * Two roles, two tables. The ingest worker writes through a struct
 * store_writer (struct store_writer_ops); each query worker reads through
 * a struct store_reader of its own (struct store_reader_ops). Neither
 * table has an op its role does not use, so a reader simply cannot write,
 * and a backend implements for each role only what that role does. The
 * few reads the write path makes (stream_marks, journal_mark_get,
 * kallsyms_held, printk_held, host_usage: through the writer's own open
 * transaction) are writer ops.
 *
 * Who does what:
 * - store.h's inline functions check the pointer arguments store.h calls
 *   required and call the op through the table: nothing else lies between
 *   a caller and the backend.
 * - The front, store.c, is a function only where it adds something every
 *   backend needs: opening (which backend a path selects, and why an open
 *   failed: store_open_errmsg()), the handle's error and reopen reports
 *   (store_errmsg(), store_generation() read struct store_handle, which
 *   the backend fills), and the scope check of every read that takes a
 *   struct store_query or a struct store_scope (host_find, type_seen,
 *   select, count, hist, tail, stats, hosts, drops, sql, losses): what a query
 *   identity may read is checked once, at the storage boundary, for every
 *   backend. The front neither logs nor counts.
 * - The backend does the rest: each op keeps to its file and waits for
 *   the threads it runs itself (SQLite: the writer that runs batched
 *   INSERTs, the checkpointer; noticing its file removed or replaced,
 *   store.h) before it touches the engine.
 * Adding an op: a field in one table here, its inline function and
 * contract in store.h, a function in store.c only when the op takes a
 * query or a scope, and the backend's function.
 *
 * The handle. A backend's constructor (sqlite.h) allocates its own handle
 * with struct store_writer (or struct store_reader) as its first member,
 * sets ops, and returns it; close frees it and everything the backend
 * handed out (every struct store_type). Each op's meaning, arguments,
 * return values and errors are those of the store_*() function of the
 * same name in store.h; what follows is what a backend may rely on and
 * must keep.
 *
 * What a backend may rely on:
 * - The handle is its own, never NULL; the pointer arguments store.h calls
 *   required are not NULL.
 * - For select, count, hist and tail: every q->schema is set, and when
 *   q->filter is, every q->field_col[i] (i < q->nfields) is below
 *   q->schema->ncols. A read's scope (the asker's) has at most
 *   STORE_SCOPE_MAX globs, none NULL; so has the host list of a query
 *   that select, count, hist, tail and hosts take. type_seen is called
 *   only with a scope (no scope: every type is seen, and the front says
 *   so).
 *
 * Who owns what after a call:
 * - Arguments are the caller's and valid only during the call; a backend
 *   copies what it keeps: the event's field values at insert (the page
 *   they point into is reused after the call), the type's description at
 *   type, strings of host, program, symbol, cmdlines and dropped, and the
 *   index list of set_indexes.
 * - type: the struct store_type is the backend's, valid until close;
 *   the caller caches it and hands it back to insert.
 * - schema_get: *out is the caller's and is freed by store_schema_free()
 *   (store_types.c), so a backend allocates it as that expects: calloc'd
 *   struct, malloc'd system, name and table, a malloc'd cols array whose
 *   name and column strings are malloc'd.
 * - schema_list, select, stats, drops: what @fn is passed (schema, row
 *   and everything it points to, strings) is the backend's and valid
 *   only during @fn. A nonzero return from @fn stops the walk and is the
 *   op's return.
 * - symbol_name: the name is written into the caller's @buf; @flags is 0
 *   (store_symbol_name()) or STORE_SYM_SIZED (store_symbol_sized()).
 *
 * Errors: 0 or a negative code (common/tc_error.h; -errno passes
 * through). A failing op says why in its handle's h.errmsg (read by
 * store_errmsg()); TC_ERR_DB is a failure of the engine itself. A failed
 * commit leaves nothing of the transaction stored; a failed insert may be
 * reported by a later op (a backend that inserts behind the caller's
 * back), which must then keep failing until rollback or begin, so no
 * commit can go through without rows it should hold.
 *
 * Threads: a handle is used by one thread at a time, and each op runs on
 * the caller's thread. In tracecollectd main opens the writer, gives it
 * its indexes (set_indexes) and closes it, and only the ingest worker uses
 * it in between; each query worker opens a reader of its own. The engine
 * must allow one writer and several readers on the same store at once
 * (SQLite: WAL). The one op called while another thread may be using the
 * handle is thread_policy (main, as the ingest worker starts): it may
 * touch nothing but the backend's own threads.
 *
 * Optional: thread_policy may be NULL (no threads of its own) and set_stop
 * (reads are never stopped); every other op must be set: a backend that
 * cannot answer one exactly fails it saying why (-ENOSYS and a sentence in
 * h.errmsg), never by leaving the op out, so that the front has no quiet
 * default that answers differently from another backend.
 */
#ifndef SERVER_STORE_STORE_OPS_H
#define SERVER_STORE_STORE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"
#include "server/store/store_types.h"

#define STORE_ERRMSG_MAX 512
#define STORE_SYM_SIZED	0x1u	/* symbol_name's flag: "NAME+0xOFF/0xSIZE", the kernel's %pS */

struct store_type;
struct store_writer;
struct store_reader;

/* What every handle has: the backend writes it, the front reads it. */
struct store_handle {
	char errmsg[STORE_ERRMSG_MAX];	/* why the last op failed (store_errmsg()) */
	uint64_t generation;		/* reopened this many times (store_generation()) */
	char note[STORE_ERRMSG_MAX];	/* what the last reopen found */
};

/* Pages lo..hi (sequence numbers, both in) of one agent stream, stored. */
struct store_span {
	uint32_t stream;
	uint64_t lo, hi;
};

/* Called for each stored span; a negative return stops the read and is returned. */
typedef int (*store_span_fn)(void *ctx, const struct store_span *sp);

/* The ingest worker's: everything it stores, and the reads its writes need. */
struct store_writer_ops {
	/* close: stop the backend's threads, free the handle and its store_types */
	void (*close)(struct store_writer *w);
	/*
	 * thread_policy: run the backend's own threads at @policy
	 * (SCHED_IDLE...); may run while another thread uses the handle.
	 */
	int (*thread_policy)(struct store_writer *w, int policy);
	/* set_indexes: main, before the ingest worker starts; outside a transaction */
	int (*set_indexes)(struct store_writer *w, const struct store_indexes *ix,
			   unsigned *created, unsigned *dropped);

	int (*host)(struct store_writer *w, const struct proto_hello *h,
		    const char *peer_subject, uint64_t *host_id);
	int (*host_clock)(struct store_writer *w, uint64_t host_id, int64_t offset_ns);
	int (*clock_point)(struct store_writer *w, uint64_t host_id,
			   const struct store_clock_point *p);
	int (*type)(struct store_writer *w, const struct store_type_desc *t,
		    const struct store_origin *o, struct store_type **out);
	/* begin, rollback: also reopen a file the writer lost (store.h) */
	int (*begin)(struct store_writer *w);
	int (*commit)(struct store_writer *w);
	int (*rollback)(struct store_writer *w);
	/* insert: the hot path; may queue the row and report its failure later */
	int (*insert)(struct store_writer *w, struct store_type *t, const struct store_event *ev);
	int (*cpu_received)(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			    uint64_t pages, uint64_t events, uint64_t bytes);
	int (*cpu_stats)(struct store_writer *w, uint64_t host_id,
			 const struct proto_cpu_stats *st);
	int (*cpu_duplicates)(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			      uint64_t n);
	int (*cpu_not_stored)(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			      uint64_t pages, uint64_t events);
	int (*cpu_held)(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			const struct store_held *h);
	int (*stream_marks)(struct store_writer *w, uint64_t host_id, const char *boot_id,
			    uint64_t session, uint32_t n, store_span_fn fn, void *ctx);
	int (*stream_mark)(struct store_writer *w, uint64_t host_id, const char *boot_id,
			   uint64_t session, uint32_t stream, uint64_t lo, uint64_t hi);
	int (*journal_mark)(struct store_writer *w, uint64_t file, uint64_t pos);
	int (*journal_mark_get)(struct store_writer *w, uint64_t file, uint64_t *pos);
	int (*journal_forget)(struct store_writer *w, uint64_t from, uint64_t to);
	int (*live_hosts)(struct store_writer *w, const uint64_t *ids, size_t n);
	int (*host_usage)(struct store_writer *w,
			  int (*fn)(void *ctx, const char *host, uint64_t bytes), void *ctx);
	int (*cmdlines)(struct store_writer *w, uint64_t host_id, const struct proto_cmdlines *c);
	int (*comm_change)(struct store_writer *w, uint64_t host_id,
			   const struct store_comm_change *c);
	int (*program)(struct store_writer *w, uint64_t host_id, const struct store_program *p,
		       uint64_t *program_id);
	int (*symbol)(struct store_writer *w, uint64_t program_id, uint64_t addr, uint64_t size,
		      const char *name, const char *module);
	int (*kallsyms_held)(struct store_writer *w, uint64_t host_id, const char *boot_id,
			     bool *held);
	int (*printk_put)(struct store_writer *w, uint64_t host_id, const char *boot_id,
			  int64_t since, uint64_t addr, const char *fmt, size_t len);
	int (*printk_held)(struct store_writer *w, uint64_t host_id, const char *boot_id,
			   bool *held);
	int (*dropped)(struct store_writer *w, uint64_t host_id, const char *system,
		       const char *name, const char *reason, uint64_t n);
	int (*retain)(struct store_writer *w, int64_t before_ts, uint64_t max_bytes,
		      uint64_t *removed);
	/*
	 * losses_put: where the kernel lost events, @n pages of one
	 * connection (issue 33), in the transaction of the pages' events: a
	 * row per loss, kept once for (host, boot, cpu, trace_ts), so a
	 * replay that writes it again adds nothing
	 */
	int (*losses_put)(struct store_writer *w, uint64_t host_id, const char *boot_id,
			  const struct store_loss *l, size_t n);
	/* snapshots: a host told to freeze (once however often), what it shipped */
	int (*snapshot_asked)(struct store_writer *w, const struct store_snapshot *sn);
	int (*snapshot_done)(struct store_writer *w, const struct store_snapshot *sn);
	/*
	 * boot: a host's boot as HELLO and HEADER_PAGE describe it
	 * (trace.dat's headers): kept per (host, boot), each field that is
	 * not told keeping what was stored
	 */
	int (*boot)(struct store_writer *w, uint64_t host_id, const struct store_boot *b);
};

/* A query worker's: reads only, each within the asker's scope. */
struct store_reader_ops {
	/* close: free the handle */
	void (*close)(struct store_reader *r);
	/* set_stop: reads stop as @stop says (NULL: not) from now on (store_set_stop()) */
	void (*set_stop)(struct store_reader *r, const struct store_stop *stop);

	int (*schema_get)(struct store_reader *r, const char *system, const char *event,
			  struct store_schema **out);
	int (*schema_list)(struct store_reader *r, const char *system,
			   int (*fn)(void *ctx, const struct store_schema *sc), void *ctx);
	int (*type_seen)(struct store_reader *r, const struct store_schema *sc,
			 const struct store_scope *scope, bool *seen);
	int (*host_find)(struct store_reader *r, const char *name,
			 const struct store_scope *scope, uint64_t *host_id);
	int (*import_check)(struct store_reader *r, const char *name, const char *machine_id,
			    bool *live, bool *stored);
	int (*symbol_name)(struct store_reader *r, uint64_t host_id, int32_t pid, int64_t ts,
			   uint64_t addr, unsigned flags, char *buf, size_t len);
	int (*printk_list)(struct store_reader *r, uint64_t host_id, int64_t ts, uint32_t max,
			   int (*fn)(void *ctx, uint64_t addr, const char *fmt), void *ctx);
	int (*tgids_list)(struct store_reader *r, uint64_t host_id, int32_t after_pid,
			  uint32_t max, int (*fn)(void *ctx, int32_t pid, int32_t tgid), void *ctx);
	/*
	 * select, count: compile @q (its bound filter, with FILTER_FIELD_CPU
	 * and FILTER_FIELD_COMM as store_types.h says, the host globs, the
	 * scope, the window) to the backend's own query; rows in (ts, rowid)
	 * order, keyset paged.
	 */
	int (*select)(struct store_reader *r, const struct store_query *q, store_row_fn fn,
		      void *ctx);
	int (*count)(struct store_reader *r, const struct store_query *q, uint64_t *count);
	/* hist: @q's rows grouped as @h says (store_types.h); one read */
	int (*hist)(struct store_reader *r, const struct store_query *q,
		    const struct store_hist *h,
		    int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		    struct store_hist_totals *tot);
	/*
	 * tail: rows in storage order from a cursor (store_tail()); each
	 * query as select's (its paging, limit and order unused)
	 */
	int (*tail)(struct store_reader *r, const struct store_query *const *qs, size_t nq,
		    struct store_tail *t, store_tail_fn fn, void *ctx);
	/*
	 * tail_writers: the same with t->writers (a store several collectors
	 * write); NULL: the store has one writer, its cursor is writers[0]
	 */
	int (*tail_writers)(struct store_reader *r, const struct store_query *const *qs,
			    size_t nq, struct store_tail *t, store_tail_fn fn, void *ctx);
	/* stats, drops, hosts: only the hosts q allows (host globs, scope); q may be NULL */
	int (*stats)(struct store_reader *r, const struct store_query *q,
		     int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			       const char *key, uint64_t value),
		     void *ctx);
	int (*drops)(struct store_reader *r, const struct store_query *q,
		     int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			       const char *reason, uint64_t count),
		     void *ctx);
	int (*hosts)(struct store_reader *r, const struct store_query *q,
		     int (*fn)(void *ctx, const struct store_host_info *h), void *ctx);
	/* snapshots: rows of snapshot @id (0: all) of the hosts q allows, by id, host */
	int (*snapshots)(struct store_reader *r, const struct store_query *q, uint64_t id,
			 int (*fn)(void *ctx, const struct store_snapshot *sn), void *ctx);
	int (*snapshot_max)(struct store_reader *r, uint64_t *id);
	/* size: the bytes the store's data takes (store_size()); NULL: not known */
	int (*size)(struct store_reader *r, uint64_t *bytes);
	/*
	 * sql: the user SQL surface (store_sql()): @text is the user's, to be
	 * run read-only over the documented views only, enforced by the
	 * engine (SQLite: an authorizer), not by reading the text.
	 */
	int (*sql)(struct store_reader *r, const char *text, const struct store_scope *scope,
		   const struct store_sql_limits *lim, store_sql_fn fn, void *ctx);
	/*
	 * losses: the losses_put rows of the hosts, CPUs and window q allows
	 * (host globs, scope, cpus, win; after_ts/after_rowid, reverse and
	 * limit page them as select's rows; q->schema unused), in (ts, id)
	 * order (issue 33)
	 */
	int (*losses)(struct store_reader *r, const struct store_query *q,
		      int (*fn)(void *ctx, const struct store_loss_row *x), void *ctx);
	/* boot_get: @host_id's boot up at wall-clock @ts (store_boot_get()) */
	int (*boot_get)(struct store_reader *r, uint64_t host_id, int64_t ts,
			int (*fn)(void *ctx, const struct store_boot *b), void *ctx);
	/* boot_formats: the formats @host_id sent in boot @boot_id, by format id */
	int (*boot_formats)(struct store_reader *r, uint64_t host_id, const char *boot_id,
			    int64_t after_id, uint32_t max,
			    int (*fn)(void *ctx, int64_t id, const char *system, const char *name,
				      const char *text),
			    void *ctx);
	/*
	 * boot_programs: the programs (MSG_GROUPs; not the kernel's) @host_id
	 * announced in boot @boot_id, by since_ns, at most @max (issue 33)
	 */
	int (*boot_programs)(struct store_reader *r, uint64_t host_id, const char *boot_id,
			     uint32_t max, int (*fn)(void *ctx, const struct store_program *p),
			     void *ctx);
};

/*
 * How to authenticate to a store that is a server (ClickHouse), kept by
 * the front (store_remote_setup()) and handed to that backend's opens: a
 * password never travels in the path, which is logged.
 */
#define STORE_COLLECTOR_IDS	64	/* --collector-id: 0 .. this - 1 */
#define STORE_RETAIN_LEASE_MAX	3600	/* --retain-lease: seconds, at most */

struct store_remote_auth {
	const char *collector;	/* this collector's name among those sharing the store */
	unsigned collector_id;	/* and its number (--collector-id), unique among them */
	unsigned retain_lease_s;	/* the retention lease's length (--retain-lease); 0: default */
	const char *password;	/* NULL: none */
	const char *cert, *key;	/* TLS client certificate and key; NULL: none */
	const char *ca;		/* CA of the server's certificate; NULL: the system's */
};

struct store_writer {
	const struct store_writer_ops *ops;
	struct store_handle h;
};

struct store_reader {
	const struct store_reader_ops *ops;
	struct store_handle h;
};

#endif
