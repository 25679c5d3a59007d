/*
 * store.h - where the collector keeps hosts, counters and decoded events,
 * and where the query endpoint reads them.
 *
 * One interface, several possible backends (server/store/store_ops.h holds the
 * ops table); SQLite is the first and the only one store_open() picks
 * today. The layout - one typed table per event type - is described in
 * sql/schema.sql.
 *
 * Threads: a store handle is used by one thread at a time. Open one handle
 * per thread (the SQLite backend runs in WAL mode, so one writer and any
 * number of readers work on the same file concurrently).
 *
 * Errors: every function returns 0 or a negative code (tc_error.h):
 * TC_ERR_DB for a database failure, TC_ERR_DB_SCHEMA for a database this
 * binary cannot use, -ENOMEM, -EINVAL for bad arguments. store_errmsg()
 * then says more.
 */
#ifndef SERVER_STORE_STORE_H
#define SERVER_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"
#include "server/store/store_types.h"

struct filter;
struct store;
struct store_type;

/* ---- opening ---- */

/*
 * store_open - open (creating if needed) the database at @path for writing:
 * applies pending schema migrations, WAL journal, synchronous=NORMAL.
 *
 * Return: 0; TC_ERR_DB (cannot open or write); TC_ERR_DB_SCHEMA (the file
 * is newer than this binary or a migration failed); -ENOMEM.
 */
int store_open(const char *path, struct store **out);

/*
 * store_open_readonly - open an existing database for the read side.
 *
 * Return: 0; TC_ERR_DB (no such file or not a database); TC_ERR_DB_SCHEMA
 * (schema version differs from this binary's); -ENOMEM.
 */
int store_open_readonly(const char *path, struct store **out);

/*
 * store_open_errmsg - why this thread's last store_open() or
 * store_open_readonly() failed, @ret being what it returned: a sentence a
 * person can act on (not an SQLite database, permission denied, disk full,
 * read-only, locked by another process...). Valid until the next open.
 */
const char *store_open_errmsg(int ret);

/* store_close - close @s; frees every store_type it handed out. NULL is allowed. */
void store_close(struct store *s);

/*
 * store_thread_policy - run the threads the store keeps (the SQLite
 * backend's writer and checkpointer) at scheduling @policy, e.g. SCHED_IDLE.
 * Return: 0 (also for a backend without threads); -errno.
 */
int store_thread_policy(struct store *s, int policy);

/*
 * store_errmsg - a sentence about the last failure on @s (database message,
 * the systems of an ambiguous event name...); "database error" when the
 * last failure left none. Valid until the next call.
 */
const char *store_errmsg(const struct store *s);

/* ---- the database removed or replaced under a running store ---- */

/*
 * A database removed (rm) or replaced (mv) while a store has it open would
 * otherwise go on taking rows into a file no one will read again. So:
 *
 * - A writable store compares the file at its path with the one it has
 *   open after every COMMIT (one stat(2)). When they differ, store_commit()
 *   fails with TC_ERR_DB, "database PATH was removed or replaced; not
 *   storing until it is back": the rows went into the old file, so for
 *   the caller they are not stored (it must not acknowledge them). From
 *   then on every call fails the same way, but store_rollback() and
 *   store_close(), until the store is back.
 * - Back: store_rollback(), store_begin() and store_refresh() reopen the
 *   path - the database file found there (migrated if older), or a new,
 *   empty one when there is none - and store_generation() moves. The rows
 *   of the old file are not copied; what the caller still holds (a receive
 *   journal, agents' unacknowledged pages) it stores again. When the path
 *   cannot be opened (its directory is gone, the file is newer than this
 *   binary...), the store stays lost and the next of those calls tries
 *   again.
 * - A read-only store checks the path before each read and reopens it
 *   when it holds another file (store_refresh()); until the writer has
 *   made the new file (its -shm is still the old one's), or while there is
 *   none, reads fail with TC_ERR_DB.
 */

/*
 * store_refresh - make @s use the database now at its path when it is no
 * longer the file @s has open (see above). Read-only stores do this before
 * every read on their own; a caller may call it first to learn whether the
 * store is usable.
 *
 * Return: 0 (@s has the file at its path open); TC_ERR_DB (it is lost and
 * could not be reopened: store_errmsg() says why).
 */
int store_refresh(struct store *s);

/*
 * store_generation - how many times @s reopened its path; *@note (@note may
 * be NULL) then says what it found ("database PATH re-created ..."). When
 * it moves, everything the caller learnt from the store - host ids, stream
 * and journal marks - belonged to the old file.
 */
uint64_t store_generation(const struct store *s, const char **note);

/* ---- write side (the collector) ---- */

/*
 * store_host - insert or update the host (keyed by machine_id + host name)
 * from its HELLO: boot id, kernel, CPUs, page size, clock; @peer_subject
 * (may be NULL) is the agent certificate's subject. Sets last_seen to now
 * and, for a new host, first_seen too.
 *
 * Return: 0 and *@host_id; TC_ERR_DB.
 */
int store_host(struct store *s, const struct proto_hello *h, const char *peer_subject,
	       uint64_t *host_id);

/*
 * store_host_clock - record the latest clock offset of @host_id:
 * @offset_ns = CLOCK_REALTIME - trace clock, both in ns.
 *
 * Return: 0; TC_ERR_DB; -ENOENT for an unknown host.
 */
int store_host_clock(struct store *s, uint64_t host_id, int64_t offset_ns);

/*
 * Where a format came from, and the caps on what one host may add to the
 * schema (0: no cap).
 */
struct store_origin {
	uint64_t host_id;
	const char *boot_id;	/* NULL: "" */
	int64_t since;		/* wall-clock ns of the connection that sent it */
	unsigned max_types;	/* event types one host may have formats for */
	unsigned max_fields;	/* fields in one format */
};

/*
 * store_type - make the table for @t exist with a column per field (one
 * CREATE TABLE for a new type; a column for each field whose (name, kind)
 * the table lacks), record t->format as a format of the type and as the
 * one @o's host sent in its boot, and make it the type's latest format.
 *
 * The returned handle holds the prepared INSERT for @t's field order, of
 * rows stored with this format; it is owned by @s (valid until
 * store_close()) and shared by every type described with the same format
 * text, so the caller may cache it with its own description of the type.
 *
 * Return: 0; TC_ERR_FORMAT_LIMIT (store_errmsg() says which cap: the
 * host's types, the format's fields, the table's columns, the host's
 * formats of the type; nothing is stored); TC_ERR_DB; -ENOMEM.
 */
int store_type(struct store *s, const struct store_type_desc *t, const struct store_origin *o,
	       struct store_type **out);

/*
 * store_begin, store_commit - bracket a batch of inserts in one transaction;
 * a failed commit rolls it back. store_rollback - drop the open transaction
 * (nothing of it is stored); 0 also when none is open. A commit also fails
 * when the database file was removed or replaced meanwhile; store_begin()
 * and store_rollback() then reopen it ("the database removed or replaced"
 * above).
 */
int store_begin(struct store *s);
int store_commit(struct store *s);
int store_rollback(struct store *s);

/*
 * store_insert - insert @ev into @t's table: its values (decoded by the
 * caller, ev->nvals of them, one per field of the format @t was made
 * for: struct store_event) in the format's columns. @t must come from
 * store_type().
 *
 * Return: 0; TC_ERR_DB; -EINVAL (@ev's values are not @t's fields);
 * -E2BIG (a value longer than the engine takes; the row is not inserted).
 */
int store_insert(struct store *s, struct store_type *t, const struct store_event *ev);

/* store_cpu_received - add what the collector received and stored for one CPU. */
int store_cpu_received(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
		       uint64_t events, uint64_t bytes);

/* store_cpu_stats - set the agent-reported counters of one CPU. */
int store_cpu_stats(struct store *s, uint64_t host_id, const struct proto_cpu_stats *st);

/*
 * store_stream_marks - for the agent session (@host_id, @boot_id, @session),
 * the highest stored page sequence number of each stream 0..@n-1 into
 * @seqs[] (0 for a stream with none). Reads through the open transaction,
 * so marks set but not yet committed count.
 *
 * Return: 0; TC_ERR_DB; -EINVAL.
 */
int store_stream_marks(struct store *s, uint64_t host_id, const char *boot_id,
		       uint64_t session, uint64_t *seqs, uint32_t n);

/*
 * store_stream_mark - record that pages of @stream up to @seq of that agent
 * session are stored; call it in the transaction that inserts the page's
 * events, so the mark and the events commit (or vanish) together. The mark
 * never goes down.
 *
 * Return: 0; TC_ERR_DB; -EINVAL.
 */
int store_stream_mark(struct store *s, uint64_t host_id, const char *boot_id,
		      uint64_t session, uint32_t stream, uint64_t seq);

/*
 * store_journal_mark - journal file @file is stored up to byte @pos; call it
 * in the transaction that stores those pages (sql/0006-journal.sql).
 * store_journal_mark_get - that position (0: none), through the open
 * transaction. store_journal_forget - drop the marks of files @from..@to
 * (removed files).
 * Return: 0; TC_ERR_DB.
 */
int store_journal_mark(struct store *s, uint64_t file, uint64_t pos);
int store_journal_mark_get(struct store *s, uint64_t file, uint64_t *pos);
int store_journal_forget(struct store *s, uint64_t from, uint64_t to);

/* store_cpu_duplicates - add @n to the pages of one CPU received again and
 * dropped. Return: 0; TC_ERR_DB. */
int store_cpu_duplicates(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t n);

/*
 * store_cpu_not_stored - add to the pages of one CPU received and not
 * stored (malformed, after a failure, quarantined) and the events of
 * stored pages not stored (no format, malformed); the reasons go to
 * store_dropped(). Return: 0; TC_ERR_DB.
 */
int store_cpu_not_stored(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
			 uint64_t events);

/*
 * What a host limit held back of one CPU (tracecollectd --host-rate,
 * --host-quota): pages whose reading waited, and for how long (ms).
 */
struct store_held {
	uint64_t rate_pages, rate_ms;	/* over its events/s */
	uint64_t quota_pages, quota_ms;	/* over its bytes stored */
};

/* store_cpu_held - add @h to the counters of one CPU. Return: 0; TC_ERR_DB. */
int store_cpu_held(struct store *s, uint64_t host_id, uint32_t cpu, const struct store_held *h);

/*
 * store_host_usage - the bytes each host name has stored, for quotas: the
 * page bytes of its stored pages (the "bytes" of store_stats(), over its
 * CPUs and every host id of that name) less what store_retain() gave back
 * (each row it removes gives back its host's page bytes per stored event).
 * Calls @fn per name; a nonzero return from @fn stops and is returned.
 * Return: 0; TC_ERR_DB; or @fn's return.
 */
int store_host_usage(struct store *s, int (*fn)(void *ctx, const char *host, uint64_t bytes),
		     void *ctx);

/* A program whose function addresses may be named (sql/0004-symbols.sql). */
struct store_program {
	const char *boot_id;
	uint64_t session;	/* the agent run; 0: none */
	uint32_t group;		/* MSG_GROUP number; 0: the kernel */
	int32_t pid;
	const char *comm;
	uint32_t first_stream, nstreams;	/* its rows' cpu values */
	int64_t since_ns;	/* wall clock, no later than its first event */
};

/*
 * store_program - record program @p of @host_id, or find the row an
 * earlier connection of the same agent run (same boot, session != 0 and
 * group) made, keeping that row's facts.
 *
 * Return: 0 and *@program_id; TC_ERR_DB; -EINVAL.
 */
int store_program(struct store *s, uint64_t host_id, const struct store_program *p,
		  uint64_t *program_id);

/*
 * store_symbol - add one function symbol of @program_id; one already there
 * (same address and name: a resend after a reconnect) is left as it is.
 * Return: 0; TC_ERR_DB; -EINVAL.
 */
int store_symbol(struct store *s, uint64_t program_id, uint64_t addr, uint64_t size,
		 const char *name);

/*
 * store_symbol_name - name @addr as seen by a row of @host_id with
 * common_pid @pid at wall-clock @ts: "NAME" or "NAME+0xOFF" into
 * @buf[@len]. Programs announced no later than @ts are tried, the one
 * whose pid is @pid first, then the latest few; the first with a symbol
 * at or below @addr that covers it (a sized symbol must contain it) names
 * it. Rows carry thread ids, not programs, so for another thread of a
 * program the search is by address: see server/store/sqlite_symbols.c.
 *
 * Return: 0; -ENOENT (no program or symbol); TC_ERR_DB; -EINVAL.
 */
int store_symbol_name(struct store *s, uint64_t host_id, int32_t pid, int64_t ts,
		      uint64_t addr, char *buf, size_t len);

/*
 * store_kallsyms_held - whether the kernel symbols (group 0) of boot
 * @boot_id of @host_id are stored, from any agent run: an agent then need
 * not send them again (WELCOME's kallsyms). Return: 0; TC_ERR_DB.
 */
int store_kallsyms_held(struct store *s, uint64_t host_id, const char *boot_id, bool *held);

/*
 * store_printk_put - one line of the kernel's printk_formats of boot
 * @boot_id of @host_id: the string @fmt[0..@len) (the kernel's text,
 * quotes included) at @addr. @since is the wall-clock ns of the
 * connection that sends it. A line already there (a resend) is left as it
 * is. Return: 0; TC_ERR_DB; -EINVAL.
 */
int store_printk_put(struct store *s, uint64_t host_id, const char *boot_id, int64_t since,
		     uint64_t addr, const char *fmt, size_t len);

/*
 * store_printk_held - whether the printk_formats of boot @boot_id of
 * @host_id are stored: an agent then need not send them (WELCOME's
 * printk_formats). Return: 0; TC_ERR_DB.
 */
int store_printk_held(struct store *s, uint64_t host_id, const char *boot_id, bool *held);

/*
 * store_printk_list - call @fn for each printk_formats string of
 * @host_id's boot that was up at wall-clock @ts (the boot whose table came
 * last at or before @ts; before any, the first), in address order, at most
 * @max. @fmt is valid during the call. @fn's nonzero return stops the walk
 * and is returned. Return: 0; TC_ERR_DB; -EINVAL.
 */
int store_printk_list(struct store *s, uint64_t host_id, int64_t ts, uint32_t max,
		      int (*fn)(void *ctx, uint64_t addr, const char *fmt), void *ctx);

/*
 * store_tgids_list - call @fn for each pid -> tgid pair of @host_id
 * (store_cmdlines()) with pid > @after_pid, in pid order, at most @max.
 * @fn's nonzero return stops the walk and is returned.
 * Return: 0; TC_ERR_DB; -EINVAL.
 */
int store_tgids_list(struct store *s, uint64_t host_id, int32_t after_pid, uint32_t max,
		     int (*fn)(void *ctx, int32_t pid, int32_t tgid), void *ctx);

/*
 * store_host_find - the id of the host named @name (of the machines that
 * share the name, the one seen last), if @scope (NULL: every host) lets
 * the reader see it: a host outside the scope is not found, as an unknown
 * one. Return: 0; -ENOENT; TC_ERR_DB.
 */
struct store_scope;
int store_host_find(struct store *s, const char *name, const struct store_scope *scope,
		    uint64_t *host_id);

/*
 * store_import_check - before an import (traceq --import) of the file whose
 * host row would have @machine_id ("import:DIGEST") under host name @name:
 * *@live, whether an agent's host (not an import) has that name; *@stored,
 * whether that file is stored already. Return: 0; TC_ERR_DB.
 */
int store_import_check(struct store *s, const char *name, const char *machine_id, bool *live,
		       bool *stored);

/*
 * store_cmdlines - remember pid -> comm pairs, and pid -> tgid pairs
 * (@c->tgids), of @host_id (replacing older ones).
 */
int store_cmdlines(struct store *s, uint64_t host_id, const struct proto_cmdlines *c);

/* A name a task of a host took (see store_comm_change()). */
struct store_comm_change {
	int32_t pid;
	int64_t trace_ts;	/* trace clock of the first event with the name, as
				   the events' trace_ts (ns, or TSC ticks) */
	int64_t ts;		/* the same instant on the wall clock, ns */
	double tick_ns;		/* ns per unit of @trace_ts (1: a ns clock) */
	const char *old;	/* the name before (a rename); NULL: a new task */
	const char *comm;	/* the name from @trace_ts on */
};

/*
 * store_comm_change - remember that task @c->pid of @host_id is named
 * @c->comm from @c->trace_ts on (fork, exec, prctl(PR_SET_NAME)): what the
 * filters' COMM reads for events of that task (store_query.field_col).
 * Return: 0; -EINVAL (no name); TC_ERR_DB.
 */
int store_comm_change(struct store *s, uint64_t host_id, const struct store_comm_change *c);

/*
 * store_dropped - add @n to the count of events of @system:@name the
 * collector did not keep for @reason: "filter" (a server-side filter
 * dropped them at ingest; @host_id is their host) or "retention" (rows
 * removed by store_retain(); @host_id 0).
 *
 * Return: 0; TC_ERR_DB.
 */
int store_dropped(struct store *s, uint64_t host_id, const char *system, const char *name,
		  const char *reason, uint64_t n);

/*
 * store_retain - remove the oldest events: every row with ts < @before_ts
 * (INT64_MIN: no age limit), then, while the pages in use exceed
 * @max_bytes (0: no size limit), the oldest time slice across all event
 * tables. Removals are counted with store_dropped(..., "retention", ...),
 * and give back their hosts' quota (store_host_usage()).
 * Freed pages are reused by later inserts, so the file stops growing
 * instead of shrinking.
 *
 * Return: 0 and *@removed (rows removed by this call); TC_ERR_DB.
 */
int store_retain(struct store *s, int64_t before_ts, uint64_t max_bytes, uint64_t *removed);

/* ---- field indexes ---- */

/*
 * An index of the rows of every event whose system and name match @system
 * and @event (fnmatch(3) globs) by (@field, ts): with it, `EVENT where
 * FIELD == X` reads only the matching rows, already in time order, and
 * counts them from the index alone. Each costs the collector an index
 * insert per stored row of those events.
 */
struct store_index {
	char *system;
	char *event;
	char *field;
};

struct store_indexes {
	struct store_index *v;
	size_t n;
};

/*
 * The indexes a collector keeps unless told otherwise: the pid fields of
 * the scheduler events that queries select on most.
 */
#define STORE_DEFAULT_INDEXES	"sched:sched_switch prev_pid,next_pid", \
				"sched:sched_wakeup pid", "sched:sched_waking pid"

/*
 * store_index_parse - add the indexes of @spec to @ix: "SYSTEM[:EVENT]
 * FIELD[,FIELD...]" (SYSTEM alone: all its events; globs allowed in SYSTEM
 * and EVENT), or "none", which empties @ix.
 *
 * Return: 0; TC_ERR_CONFIG with a sentence in @err (and @ix as it was);
 * -ENOMEM.
 */
int store_index_parse(struct store_indexes *ix, const char *spec, char *err, size_t errlen);

/* store_indexes_free - free what @ix holds and empty it. */
void store_indexes_free(struct store_indexes *ix);

/*
 * store_set_indexes - keep exactly the field indexes @ix names, on the
 * tables there are and on every table and column made later: creates the
 * missing ones (reading each such table once: seconds for millions of
 * rows) and drops those of earlier settings. *@created and *@dropped (may
 * be NULL) say how many. Writable stores only, outside a transaction.
 *
 * Return: 0; TC_ERR_DB; -ENOMEM.
 */
int store_set_indexes(struct store *s, const struct store_indexes *ix, unsigned *created,
		      unsigned *dropped);

/* ---- read side (the query endpoint) ---- */

struct store_col {
	const char *name;	/* the field's name */
	const char *column;	/* its column (== name unless it clashed or another
				 * column of the name has another kind, see schema.sql) */
	enum store_kind kind;	/* the column's kind */
};

/*
 * One format an event type was stored with: its text and its fields, as
 * indices into the schema's columns (a row stored with it has values in
 * those columns only), and the hosts that sent it.
 */
struct store_fmt {
	int64_t id;		/* the store's key of the format (store_query.fmt) */
	char *text;		/* as sent */
	size_t ncols;
	size_t *cols;		/* per field, in the format's order: a schema column */
	char **types;		/* per field: its C type ("" when not known) */
	size_t nhosts;
	uint64_t *host_ids;	/* read when the type has several formats; none:
				 * rows stored before formats were kept per host */
};

struct store_schema {
	char *system;
	char *name;
	char *table;
	int64_t type_id;	/* the store's key of the event type */
	size_t ncols;
	struct store_col *cols;	/* every column: a field name per kind it was sent with,
				 * common_* first, in first-seen order */
	char *format;		/* the latest format text stored for it (as sent) */
	size_t nfmts;		/* with the columns (store_schema_get()) */
	struct store_fmt *fmts;	/* in the order they were first stored */
};

/*
 * store_schema_get - describe event @event of @system. @system may be NULL:
 * then the name must be unique across systems.
 *
 * Return: 0 and *@out (free with store_schema_free()); TC_ERR_UNKNOWN_EVENT;
 * TC_ERR_AMBIGUOUS (store_errmsg() lists the systems); TC_ERR_DB; -ENOMEM.
 */
int store_schema_get(struct store *s, const char *system, const char *event,
		     struct store_schema **out);

/*
 * store_schema_list - call @fn for each event type of @system (all systems
 * if NULL), ordered by system and name, with a schema it may not keep:
 * its names, table, format and type id, not its columns (ncols 0;
 * store_schema_get() has them).
 * A nonzero return from @fn stops the walk and is returned.
 *
 * Return: 0; TC_ERR_UNKNOWN_EVENT when @system has no events; TC_ERR_DB;
 * -ENOMEM; or @fn's return.
 */
int store_schema_list(struct store *s, const char *system,
		      int (*fn)(void *ctx, const struct store_schema *sc), void *ctx);

void store_schema_free(struct store_schema *sc);

/*
 * store_type_seen - whether a reader of @scope may know of event type @sc
 * (from store_schema_list() or store_schema_get(); its type id and table
 * are used): some host of the scope sent a format of it (host_formats),
 * or, for rows stored before formats were kept per host, has a row of it.
 * A type none of the scope's hosts has is, for that reader, not stored:
 * the query endpoint neither resolves nor suggests it. @scope NULL: every
 * type is seen. *@seen written only on success.
 *
 * Return: 0; TC_ERR_DB; -ENOMEM; -EINVAL.
 */
int store_type_seen(struct store *s, const struct store_schema *sc,
		    const struct store_scope *scope, bool *seen);

struct store_row {
	uint64_t rowid;
	const char *host;	/* hosts.name */
	uint64_t host_id;
	uint32_t cpu;
	int64_t ts;		/* wall clock ns */
	uint64_t trace_ts;	/* trace clock ns */
	int pid;		/* common_pid, -1 if absent */
	const char *comm;	/* from comms; NULL if unknown */
	size_t nvals;		/* == schema ncols */
	const struct store_value *vals;	/* per schema column */
	const bool *null;	/* per schema column: no value (added later) */
};

typedef int (*store_row_fn)(void *ctx, const struct store_row *row);

/*
 * A time range of a query: rows with from_ts <= ts < to_ts (wall clock
 * ns); INT64_MIN and INT64_MAX leave that side open.
 */
struct store_window {
	int64_t from_ts;
	int64_t to_ts;
};

/*
 * struct store_scope - the hosts a reader may see: those whose name matches
 * one of @globs (fnmatch-style *, ?, [...] as SQLite's GLOB takes them).
 * @n 0 means no host at all. Every read that takes a struct store_query
 * applies it (select, count, stats, drops), so what a query identity may
 * read is decided once, at the storage boundary, for every query feature.
 */
#define STORE_SCOPE_MAX	64	/* globs in one scope */

struct store_scope {
	const char *const *globs;
	size_t n;
};

/*
 * struct store_query - what a read asks for: rows of one event type that
 * match a bound filter, from some hosts, in a time range, a page at a
 * time. It says what to find, never how: each backend compiles it to its
 * own query language. Everything it points to is the caller's and must
 * stay valid during the call; the store keeps none of it.
 */
struct store_query {
	/* the event type, from store_schema_get() or store_schema_list() */
	const struct store_schema *schema;
	/*
	 * @filter: rows it matches (NULL: every row). It is bound with
	 * filter_bind() to the fields @field_col lists: filter field i is
	 * schema column @field_col[i] (i < @nfields). FILTER_FIELD_CPU is the
	 * CPU whose buffer held the row; FILTER_FIELD_COMM the name its task
	 * (common_pid) had when the kernel recorded it: the latest
	 * store_comm_change() at or before it, else the name before the
	 * first later one, else the pid's store_cmdlines() name. An event's
	 * own field of that name in another case (sched_wakeup's comm) is
	 * a field index like any other: filter_bind() decides which is meant.
	 */
	const struct filter *filter;
	const size_t *field_col;
	size_t nfields;
	/* only rows of hosts whose name matches this glob (*, ?, [...]); NULL: all */
	const char *host_glob;
	/* and (NULL: all) whose name matches one of these globs (traceq --host, repeated) */
	const struct store_scope *hosts;
	/*
	 * and only of hosts the reader may see (struct store_scope); NULL: every
	 * host. Applied by every read that takes a store_query.
	 */
	const struct store_scope *scope;
	/*
	 * only rows in this time range; NULL: all. The store finds them
	 * through its time index, which a filter cannot name.
	 */
	const struct store_window *win;
	/* only rows of these CPUs (@ncpus 0: every CPU) */
	const uint32_t *cpus;
	size_t ncpus;
	/* only rows stored with this format (store_fmt.id); 0: any */
	int64_t fmt;
	/*
	 * store_select() only: start strictly after this row when after_rowid
	 * != 0 (with @reverse: strictly before it). INT64_MAX as after_rowid
	 * stands for "after every row of after_ts".
	 */
	int64_t after_ts;
	uint64_t after_rowid;
	/* store_select() only: newest first, ordered by (ts, rowid) descending */
	bool reverse;
	/*
	 * store_select() only: per schema column, true for a column the
	 * caller does not need; it is not read and comes as NULL (common_pid
	 * is read all the same: it gives the row's pid and comm). NULL: every
	 * column is read.
	 */
	const bool *skip;
	/* store_select() only: at most this many rows; 0: no limit */
	size_t limit;
};

/*
 * store_select - the rows @q asks for, ordered by (ts, rowid) (descending
 * with q->reverse), passed to @fn one at a time. Keyset paging: pass the
 * last row seen as
 * q->after_ts and q->after_rowid to get the next page. The row and
 * everything it points to are valid only during @fn.
 *
 * Return: the number of rows passed to @fn (>= 0); -EINVAL (no schema, a
 * filter that is not bound, a field_col beyond the schema's columns);
 * TC_ERR_UNKNOWN_FIELD (a filter field with no column); TC_ERR_DB
 * (store_errmsg() says why); -ENOMEM; or @fn's nonzero return.
 */
int store_select(struct store *s, const struct store_query *q, store_row_fn fn, void *ctx);

/*
 * store_count - how many rows store_select() would pass for @q, ignoring
 * its paging and limit. Return: as store_select(), 0 for success.
 */
int store_count(struct store *s, const struct store_query *q, uint64_t *count);

/*
 * store_stats - per host and CPU counters, for `traceq --stats`, of the
 * hosts @q allows (its host_glob and scope; the rest of @q is unused; NULL:
 * every host): calls @fn for each (host, cpu) and key: pages, events, bytes (stored by the
 * collector), agent_pages, agent_events, agent_bytes, overrun, dropped,
 * commit_overrun, dup_pages (resends dropped by the collector), and the
 * agent's resent_pages, lost_pages, lost_events, pages_mmap, pages_splice,
 * pages_read, copied_bytes; bad_pages, bad_events; and what host limits
 * held back (store_cpu_held()): rate_held_pages, rate_held_ms,
 * quota_held_pages, quota_held_ms. A nonzero return from @fn stops and is returned.
 * The calls come host by host (by name, then id), each host's CPUs in
 * order. One name can be several hosts (a reinstalled or cloned machine,
 * an import beside a live host): tell them apart by @h's id, never by name.
 */
struct store_stats_host {
	uint64_t id;			/* the id store_host() gave it */
	const char *name;
	const char *machine_id;
};

int store_stats(struct store *s, const struct store_query *q,
		int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			  const char *key, uint64_t value),
		void *ctx);

/* What the collector knows of a host (the hosts table), for `traceq --hosts`. */
struct store_host_info {
	uint64_t id;			/* the id store_host() gave it */
	const char *name;
	const char *machine_id;
	const char *boot_id;		/* of its latest HELLO; NULL: unknown */
	const char *kernel;
	const char *trace_clock;
	const char *peer_subject;	/* its agent certificate's subject */
	const char *agent;		/* its latest HELLO's agent version; NULL: not told */
	int64_t ncpus, page_size;
	int64_t clock_offset_ns;	/* realtime - trace clock, latest sample */
	int64_t first_seen, last_seen;	/* wall clock ns (HELLO, clock samples) */
};

/*
 * store_hosts - every host the store has seen that @q allows (its host
 * globs and scope, as store_stats(); NULL: every host), by name: calls
 * @fn per host. A nonzero return from @fn stops and is returned.
 * Return: 0; TC_ERR_DB; -EINVAL; or @fn's return.
 */
int store_hosts(struct store *s, const struct store_query *q,
		int (*fn)(void *ctx, const struct store_host_info *h), void *ctx);

/*
 * store_drops - the drop counters, for `traceq --drops`: calls @fn per
 * (host, system, name, reason) with its count; @host is "" for counters
 * not kept per host. Only hosts @q allows (as store_stats()); a @q with a
 * host_glob or a scope also leaves out the counters not kept per host.
 * A nonzero return from @fn stops and is returned.
 */
int store_drops(struct store *s, const struct store_query *q,
		int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			  const char *reason, uint64_t count),
		void *ctx);

/* ---- stopping a read ---- */

/*
 * When a reader's work must stop (per-query limits, a client gone): at
 * @deadline_ms (util_now_ms()'s clock; 0: none), or once *@cancel is true
 * (NULL: never), which another thread may set at any time. A read that
 * runs into either fails with TC_ERR_TIMEOUT or -ECANCELED, and
 * store_errmsg() says which; a read that ends first is not touched.
 */
struct store_stop {
	int64_t deadline_ms;
	const volatile bool *cancel;
};

/*
 * store_set_stop - reads on @s from now on stop as @stop says (copied;
 * the flag it points to must outlive the reads); NULL: they run to the
 * end. Checked every few thousand steps of the engine, so a stop takes
 * effect within about a millisecond of work.
 */
void store_set_stop(struct store *s, const struct store_stop *stop);

/* ---- live tail: rows in the order they were stored (traceq --follow) ---- */

/*
 * Every row the store keeps gets a storage sequence number: 1, 2, ... in
 * the order the rows were stored, across every event type (one writer, so
 * this is commit order; not event time: pages resent after a reconnect
 * are stored, and numbered, late). A reader sees the rows of a commit
 * all at once and never a row without every row of a lower number, so a
 * number is a cursor: "the rows from N on" misses nothing stored later.
 */
struct store_tail {
	/*
	 * in: where to go on from, an earlier call's @next; 0: from the end
	 * (the rows stored from now on) or, when a query's window has a
	 * from_ts, from the first rows that can lie in the window.
	 */
	uint64_t from;
	size_t max_rows;	/* in: rows passed to @fn at most (0: no limit) */
	size_t max_scan;	/* in: rows looked at, of every type, at most (0: no limit) */
	uint64_t next;		/* out: the cursor to go on from */
	/*
	 * out: rows stored at or after @from that are gone (retention removed
	 * them before this read), of every event type: the reader missed them
	 */
	uint64_t missed;
	bool reset;		/* out: @from lies past the store's end: it is another
				 * (or an emptied) database; read from its start */
	bool more;		/* out: stopped at max_rows or max_scan: rows remain */
};

/* Called per row with @i, the index of the query (event type) it matched. */
typedef int (*store_tail_fn)(void *ctx, size_t i, const struct store_row *row);

/*
 * store_tail - the rows stored from t->from on that match one of @qs
 * (@nq queries, one per event type, as store_select() takes them; their
 * paging, limit and order are not used; a window applies to every row),
 * in storage order, passed to @fn. Stops after t->max_rows rows (the
 * cursor may then point inside a block of rows stored together) or before
 * looking at more than t->max_scan rows (at least one block is read), and
 * says where to go on in t->next.
 *
 * Return: 0; -EINVAL; TC_ERR_DB; -ENOMEM; or @fn's nonzero return.
 */
int store_tail(struct store *s, const struct store_query *const *qs, size_t nq,
	       struct store_tail *t, store_tail_fn fn, void *ctx);

/* ---- user SQL: traceq --sql ---- */

/*
 * The one place where SQL text from outside reaches the store: the
 * user-facing SQL surface of `traceq --sql`, like Perfetto's trace
 * processor tables. Everything else in the collector talks to the store
 * through the calls above, never in SQL. The text runs over documented
 * views only (sql/schema.sql, "User SQL views"):
 *   - one per stored event type, named "SYSTEM__NAME" and also plain "NAME"
 *     when no other system has an event of that name (and it is not
 *     hosts, stats or drops): host, cpu, ts (wall clock ns), trace_ts,
 *     then every field (a field named host, cpu, ts or trace_ts is
 *     "field_<name>");
 *   - hosts (one row per host), stats (per host and CPU: the counters of
 *     store_stats()), drops (host, system, event, reason, count).
 * Read-only is enforced by the store, not by reading the text: only one
 * SELECT, reading only those views (and, through them, what they read)
 * and calling only harmless functions, is allowed; any write, ATTACH,
 * PRAGMA, load_extension, a read of a table outside the views or a second
 * statement is refused.
 */
enum store_sql_kind {
	STORE_SQL_NULL,
	STORE_SQL_INT,
	STORE_SQL_REAL,
	STORE_SQL_TEXT,		/* p, len (NUL-ended) */
	STORE_SQL_BLOB,		/* p, len */
};

struct store_sql_value {
	enum store_sql_kind kind;
	int64_t i;
	double d;
	const void *p;
	size_t len;
};

struct store_sql_limits {
	uint64_t max_rows;	/* rows passed to the callback at most; 0: no limit */
	int64_t time_ms;	/* the statement is stopped after this long; 0: no limit */
	uint32_t max_value;	/* bytes of one string or blob value; 0: 1 MiB */
	/*
	 * bytes of one row's strings and blobs; 0: no limit. A statement's N
	 * columns share it: each value may take max_row / N (at least 16 KiB,
	 * at most max_value), so the engine never builds a bigger row.
	 */
	uint64_t max_row;
};

/*
 * store_sql_fn - called once with @vals NULL before any row (the columns:
 * @ncols names), then once per result row with its @ncols values. All of
 * it is valid only during the call. Return 0 to go on; a negative value
 * stops the statement and is store_sql()'s return.
 */
typedef int (*store_sql_fn)(void *ctx, size_t ncols, const char *const *names,
			    const struct store_sql_value *vals);

/*
 * store_sql - run the user's read-only SQL @text (one SELECT over the views
 * above) and pass its rows to @fn. @scope is the asker's (struct
 * store_scope; NULL: every host): the views are not restricted by host, so
 * a scoped asker is refused.
 *
 * Return: 0 (every row passed); 1 (stopped at @lim->max_rows with rows
 * left); -EACCES (refused: a scoped asker, or the statement does something
 * other than read the views: store_errmsg() names what); TC_ERR_SYNTAX (the
 * text is not SQL SQLite can compile, or is not one statement);
 * TC_ERR_TIMEOUT (stopped by @lim->time_ms); TC_ERR_TOO_LONG (a value over
 * @lim->max_value or its share of @lim->max_row, or a row over
 * @lim->max_row: store_errmsg() says which); TC_ERR_DB; -ENOMEM; -EINVAL;
 * or @fn's return.
 */
int store_sql(struct store *s, const char *text, const struct store_scope *scope,
	      const struct store_sql_limits *lim, store_sql_fn fn, void *ctx);

/* ---- histograms: traceq --hist (the kernel's hist triggers) ---- */

struct hist_spec;

#define STORE_HIST_HOST	(-1)	/* a key that is the row's host name */
#define STORE_HIST_CPU	(-2)	/* a key or value that is the row's CPU */
#define STORE_HIST_COMM	(-3)	/* a key that is the filters' COMM of the row */

/*
 * struct store_hist - a histogram of the rows a store_query matches, as
 * the kernel's hist trigger would have kept it (common/hist.h): entries
 * keyed by spec->keys (with .log2 and .buckets=N applied; .hex, .sym and
 * .execname only change how a key prints), each with its hitcount and the
 * u64 sums (wrapping, as the kernel's) of spec->vals.
 * - At most spec->size entries are kept, first come: the keys whose
 *   earliest row is earliest (ties by key); the rows of other keys count
 *   as dropped, as the kernel counts hits it had no room for.
 * - Kept entries are passed sorted by spec->sort (numbers of unsigned
 *   fields and all sums in unsigned order), ties by key, ascending.
 * @key_col[i] and @val_col[i] are schema columns of spec->keys[i] and
 * spec->vals[i] (or STORE_HIST_HOST, STORE_HIST_CPU, STORE_HIST_COMM), resolved and
 * type-checked by the caller (numeric for vals and numeric modifiers).
 * @offset and @limit (0: no limit) page through the sorted entries.
 */
struct store_hist {
	const struct hist_spec *spec;
	const int *key_col;
	const int *val_col;
	uint64_t offset;
	uint32_t limit;
};

struct store_hist_entry {
	const struct store_value *keys;	/* per key: integer, or the host's name */
	const char *const *comm;	/* per key: for .execname, the comm the store
					 * keeps for that pid on @host_id (NULL: none) */
	uint64_t host_id;		/* the lowest host id among its rows */
	int64_t last_ts;		/* the newest ts among its rows */
	uint64_t hitcount;
	const uint64_t *sums;		/* per val */
};

struct store_hist_totals {
	uint64_t hits;		/* rows in kept entries */
	uint64_t entries;	/* kept entries (<= spec->size) */
	uint64_t dropped;	/* rows of keys not kept */
	int64_t max_ts;		/* the newest ts of any row counted */
};

/*
 * store_hist - the histogram @h of @q's rows: totals into *@tot, then the
 * page of entries @h asks for, passed to @fn in order (the entry and what
 * it points to are valid only during @fn). Computed by the store (one read
 * of the rows; its memory bounded by spec->size), not by passing rows out.
 * @q's paging fields are unused.
 *
 * Return: 0; -EINVAL (no schema, a column beyond it, a spec over the
 * limits of common/hist.h); TC_ERR_UNKNOWN_FIELD (a filter field with no
 * column); TC_ERR_DB; -ENOMEM; or @fn's nonzero return.
 */
int store_hist(struct store *s, const struct store_query *q, const struct store_hist *h,
	       int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
	       struct store_hist_totals *tot);

#endif
