/*
 * store.h - where the collector keeps hosts, counters and decoded events,
 * and where the query endpoint reads them: the calls of the storage layer.
 *
 * Two roles, two handles. The ingest worker writes through a struct
 * store_writer (store_writer_open()); each query worker reads through a
 * struct store_reader of its own (store_reader_open()). A writer has the
 * write calls (and the few reads the write path needs), a reader the read
 * calls; no call takes both. The data they pass is in store_types.h.
 *
 * Behind the calls, one interface and several possible backends
 * (server/store/store_ops.h holds a table of ops per role and says what
 * the front, store.c, adds); SQLite is the first and the only one the
 * open calls pick today. The layout - one typed table per event type - is
 * described in sql/schema.sql. Most calls below are inline: they check
 * their arguments and call the backend's op.
 *
 * Threads: a handle is used by one thread at a time. Open one per thread
 * (the SQLite backend runs in WAL mode, so one writer and any number of
 * readers work on the same file concurrently).
 *
 * Errors: every function returns 0 or a negative code (tc_error.h):
 * TC_ERR_DB for a database failure, TC_ERR_DB_SCHEMA for a database this
 * binary cannot use, -ENOMEM, -EINVAL for bad arguments. store_errmsg()
 * then says more.
 */
#ifndef SERVER_STORE_STORE_H
#define SERVER_STORE_STORE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"
#include "server/store/store_ops.h"
#include "server/store/store_types.h"

/* ---- opening, errors ---- */

/*
 * store_writer_open - open (creating if needed) the database at @path for
 * writing: applies pending schema migrations, WAL journal,
 * synchronous=NORMAL. A @path clickhouse://... is a ClickHouse database
 * instead (store_remote_setup()).
 *
 * Return: 0; TC_ERR_DB (cannot open or write); TC_ERR_DB_SCHEMA (the file
 * is newer than this binary or a migration failed); -ENOMEM; -EINVAL.
 */
int store_writer_open(const char *path, struct store_writer **out);

/*
 * store_reader_open - open an existing database for reading.
 *
 * Return: 0; TC_ERR_DB (no such file or not a database); TC_ERR_DB_SCHEMA
 * (schema version differs from this binary's); -ENOMEM; -EINVAL.
 */
int store_reader_open(const char *path, struct store_reader **out);

/*
 * store_remote_collector - this collector among those that share a remote
 * store (issue 35): its name @name (NULL: its host's; at most 255 bytes),
 * shown by traceq --hosts and keyed on by its journal's marks, and its
 * number @id (< STORE_COLLECTOR_IDS), unique among them: its commit ids
 * are @id modulo STORE_COLLECTOR_IDS (clickhouse_txn.c). Once, before any
 * open or thread. Return: 0; -EINVAL; -ENOMEM.
 */
int store_remote_collector(const char *name, unsigned id);

/*
 * store_remote_retain_lease - how long the retention lease lasts that
 * collectors sharing a remote store take to run retention one at a time
 * (--retain-lease; server/store/clickhouse_lease.c): a holder that dies
 * is replaced this long after its last renewal. 0: the backend's default.
 * Once, before any open or thread.
 */
void store_remote_retain_lease(unsigned seconds);

/*
 * store_path_is_remote - whether @path names a store that is a server
 * (clickhouse://[USER@]HOST:PORT/DB, server/store/clickhouse.h) rather
 * than an SQLite file: no file, lock or directory of ours to check.
 */
bool store_path_is_remote(const char *path);

/*
 * store_remote_setup - for a remote @db (nothing to do otherwise): take
 * the password out of @db (USER:PASSWORD@ becomes USER@, in place), so
 * that the path a program logs and hands to its query workers holds none,
 * or read it from the first line of @password_file (not both); keep it,
 * and the TLS client certificate @cert, key @key and CA @ca (each may be
 * NULL; with a certificate or a CA the connection is https), for every
 * open from then on. Once, before any open or thread.
 * Return: 0; TC_ERR_CONFIG or -errno with a sentence in @err; -ENOMEM.
 */
int store_remote_setup(char *db, const char *password_file, const char *cert, const char *key,
		       const char *ca, char *err, size_t errlen);

/*
 * store_open_errmsg - why this thread's last store_writer_open() or
 * store_reader_open() failed, @ret being what it returned: a sentence a
 * person can act on (not an SQLite database, permission denied, disk full,
 * read-only, locked by another process...). Valid until the next open.
 */
const char *store_open_errmsg(int ret);

/*
 * store_writer_close, store_reader_close - close the handle; a writer's
 * open transaction is rolled back, and every store_type it handed out is
 * freed. NULL is allowed.
 */
static inline void store_writer_close(struct store_writer *w)
{
	if (w)
		w->ops->close(w);
}

static inline void store_reader_close(struct store_reader *r)
{
	if (r)
		r->ops->close(r);
}

/*
 * store_errmsg - a sentence about the last failure on @s, a writer or a
 * reader (database message, the systems of an ambiguous event name...);
 * "database error" when the last failure left none. Valid until the next
 * call on @s.
 */
const char *store_writer_errmsg(const struct store_writer *w);
const char *store_reader_errmsg(const struct store_reader *r);
#define store_errmsg(s) _Generic((s), \
	struct store_writer *: store_writer_errmsg, \
	const struct store_writer *: store_writer_errmsg, \
	struct store_reader *: store_reader_errmsg, \
	const struct store_reader *: store_reader_errmsg)(s)

/* ---- the database removed or replaced under a running store ---- */

/*
 * A database removed (rm) or replaced (mv) while a store has it open would
 * otherwise go on taking rows into a file no one will read again. So:
 *
 * - A writer compares the file at its path with the one it has open after
 *   every COMMIT (one stat(2)). When they differ, store_commit() fails
 *   with TC_ERR_DB, "database PATH was removed or replaced; not storing
 *   until it is back": the rows went into the old file, so for the caller
 *   they are not stored (it must not acknowledge them). From then on
 *   every call fails the same way, but store_rollback(), store_begin()
 *   and store_writer_close(), until the store is back.
 * - Back: store_rollback() and store_begin() reopen the path - the
 *   database file found there (migrated if older), or a new, empty one
 *   when there is none - and store_generation() moves. The rows of the
 *   old file are not copied; what the caller still holds (a receive
 *   journal, agents' unacknowledged pages) it stores again. When the path
 *   cannot be opened (its directory is gone, the file is newer than this
 *   binary...), the store stays lost and the next of those calls tries
 *   again.
 * - A reader checks the path before each read and reopens it when it
 *   holds another file; until the writer has made the new file (its -shm
 *   is still the old one's), or while there is none, reads fail with
 *   TC_ERR_DB.
 */

/*
 * store_generation - how many times @s, a writer or a reader, reopened
 * its path; *@note (@note may be NULL) then says what it found ("database
 * PATH re-created ..."). When it moves, everything the caller learnt from
 * the store - host ids, stream and journal marks - belonged to the old
 * file.
 */
uint64_t store_writer_generation(const struct store_writer *w, const char **note);
uint64_t store_reader_generation(const struct store_reader *r, const char **note);
#define store_generation(s, note) _Generic((s), \
	struct store_writer *: store_writer_generation, \
	const struct store_writer *: store_writer_generation, \
	struct store_reader *: store_reader_generation, \
	const struct store_reader *: store_reader_generation)(s, note)

/* ---- the writer (the ingest worker) ---- */

/*
 * store_thread_policy - run the threads the store keeps (the SQLite
 * backend's writer and checkpointer) at scheduling @policy, e.g. SCHED_IDLE.
 * Return: 0 (also for a backend without threads); -errno.
 */
static inline int store_thread_policy(struct store_writer *w, int policy)
{
	return w->ops->thread_policy ? w->ops->thread_policy(w, policy) : 0;
}

/*
 * store_set_indexes - keep exactly the field indexes @ix names
 * (store_index_parse()), on the tables there are and on every table and
 * column made later: creates the missing ones (reading each such table
 * once: seconds for millions of rows) and drops those of earlier
 * settings. *@created and *@dropped (may be NULL) say how many. Outside a
 * transaction.
 *
 * Return: 0; TC_ERR_DB; -ENOMEM.
 */
static inline int store_set_indexes(struct store_writer *w, const struct store_indexes *ix,
				    unsigned *created, unsigned *dropped)
{
	unsigned c = 0, d = 0;
	int ret = ix ? w->ops->set_indexes(w, ix, &c, &d) : -EINVAL;

	if (created)
		*created = c;
	if (dropped)
		*dropped = d;
	return ret;
}

/*
 * store_host - insert or update the host (keyed by machine_id + host name)
 * from its HELLO: boot id, kernel, CPUs, page size, clock; @peer_subject
 * (may be NULL) is the agent certificate's subject. Sets last_seen to now
 * and, for a new host, first_seen too.
 *
 * Return: 0 and *@host_id; TC_ERR_DB.
 */
static inline int store_host(struct store_writer *w, const struct proto_hello *h,
			     const char *peer_subject, uint64_t *host_id)
{
	if (!h || !h->host || !h->machine_id || !host_id)
		return -EINVAL;
	return w->ops->host(w, h, peer_subject, host_id);
}

/*
 * store_host_clock - record the latest clock offset of @host_id:
 * @offset_ns = CLOCK_REALTIME - trace clock, both in ns.
 *
 * Return: 0; TC_ERR_DB; -ENOENT for an unknown host.
 */
static inline int store_host_clock(struct store_writer *w, uint64_t host_id, int64_t offset_ns)
{
	return w->ops->host_clock(w, host_id, offset_ns);
}

/*
 * store_clock_point - keep measurement @p of @host_id's trace clock in its
 * history (one row per host, boot and trace time: a replay stores it
 * once) and as the host's latest.
 *
 * Return: 0; TC_ERR_DB; -EINVAL for a NULL @p or boot_id.
 */
static inline int store_clock_point(struct store_writer *w, uint64_t host_id,
				    const struct store_clock_point *p)
{
	if (!p || !p->boot_id)
		return -EINVAL;
	return w->ops->clock_point(w, host_id, p);
}

/*
 * store_type - make the table for @t exist with a column per field (one
 * CREATE TABLE for a new type; a column for each field whose (name, kind)
 * the table lacks), record t->format as a format of the type and as the
 * one @o's host sent in its boot, and make it the type's latest format.
 *
 * The returned handle holds the prepared INSERT for @t's field order, of
 * rows stored with this format; it is owned by @w (valid until
 * store_writer_close()) and shared by every type described with the same
 * format text, so the caller may cache it with its own description of the
 * type.
 *
 * Return: 0; TC_ERR_FORMAT_LIMIT (store_errmsg() says which cap: the
 * host's types, the format's fields, the table's columns, the host's
 * formats of the type; nothing is stored); TC_ERR_DB; -ENOMEM.
 */
static inline int store_type(struct store_writer *w, const struct store_type_desc *t,
			     const struct store_origin *o, struct store_type **out)
{
	if (!t || !t->system || !t->name || !t->format || (t->nfields && !t->fields) || !o ||
	    !out)
		return -EINVAL;
	return w->ops->type(w, t, o, out);
}

/*
 * store_begin, store_commit - bracket a batch of inserts in one transaction;
 * a failed commit rolls it back. store_rollback - drop the open transaction
 * (nothing of it is stored); 0 also when none is open. A commit also fails
 * when the database file was removed or replaced meanwhile; store_begin()
 * and store_rollback() then reopen it ("the database removed or replaced"
 * above).
 */
static inline int store_begin(struct store_writer *w)
{
	return w->ops->begin(w);
}

static inline int store_commit(struct store_writer *w)
{
	return w->ops->commit(w);
}

static inline int store_rollback(struct store_writer *w)
{
	return w->ops->rollback(w);
}

/*
 * store_insert - insert @ev into @t's table: its values (read through
 * ev->value, ev->nvals of them, one per field of the format @t was made
 * for: struct store_event) in the format's columns. @t must come from
 * store_type().
 *
 * Return: 0; TC_ERR_DB; -EINVAL (@ev's values are not @t's fields);
 * -E2BIG (a value longer than the engine takes; the row is not inserted);
 * what ev->value returned when it failed.
 */
static inline int store_insert(struct store_writer *w, struct store_type *t,
			       const struct store_event *ev)
{
	if (!t || !ev || !ev->value)
		return -EINVAL;
	return w->ops->insert(w, t, ev);
}

/* store_cpu_received - add what the collector received and stored for one CPU. */
static inline int store_cpu_received(struct store_writer *w, uint64_t host_id, uint32_t cpu,
				     uint64_t pages, uint64_t events, uint64_t bytes)
{
	return w->ops->cpu_received(w, host_id, cpu, pages, events, bytes);
}

/*
 * store_snapshot_asked - record that host @sn->host_id was told to freeze
 * for snapshot @sn->id (asked_ns, reason, who): the snapshot's row once,
 * the host's row once (a replay adds nothing). Return: 0; TC_ERR_DB.
 */
static inline int store_snapshot_asked(struct store_writer *w, const struct store_snapshot *sn)
{
	if (!sn || !sn->id)
		return -EINVAL;
	return w->ops->snapshot_asked(w, sn);
}

/*
 * store_snapshot_done - what host @sn->host_id shipped of snapshot @sn->id
 * (pages, events, lost, the window): its row, made if it was not asked
 * here (a collector that restarted between). Return: 0; TC_ERR_DB.
 */
static inline int store_snapshot_done(struct store_writer *w, const struct store_snapshot *sn)
{
	if (!sn || !sn->id)
		return -EINVAL;
	return w->ops->snapshot_done(w, sn);
}

/* store_cpu_stats - set the agent-reported counters of one CPU. */
static inline int store_cpu_stats(struct store_writer *w, uint64_t host_id,
				  const struct proto_cpu_stats *st)
{
	return st ? w->ops->cpu_stats(w, host_id, st) : -EINVAL;
}

/*
 * store_cpu_duplicates - add @n to the pages of one CPU received again and
 * dropped. Return: 0; TC_ERR_DB.
 */
static inline int store_cpu_duplicates(struct store_writer *w, uint64_t host_id, uint32_t cpu,
				       uint64_t n)
{
	return w->ops->cpu_duplicates(w, host_id, cpu, n);
}

/*
 * store_cpu_not_stored - add to the pages of one CPU received and not
 * stored (malformed, after a failure, quarantined) and the events of
 * stored pages not stored (no format, malformed); the reasons go to
 * store_dropped(). Return: 0; TC_ERR_DB.
 */
static inline int store_cpu_not_stored(struct store_writer *w, uint64_t host_id, uint32_t cpu,
				       uint64_t pages, uint64_t events)
{
	return w->ops->cpu_not_stored(w, host_id, cpu, pages, events);
}

/* store_cpu_held - add @h to the counters of one CPU. Return: 0; TC_ERR_DB. */
static inline int store_cpu_held(struct store_writer *w, uint64_t host_id, uint32_t cpu,
				 const struct store_held *h)
{
	return h ? w->ops->cpu_held(w, host_id, cpu, h) : -EINVAL;
}

/*
 * store_stream_marks - for the agent session (@host_id, @boot_id, @session),
 * the spans of stored pages of streams 0..@n-1, each handed to @fn (in no
 * order, overlapping or not), by every collector that shares the store
 * (issue 35: a collector that takes a session over learns what another
 * stored). Reads through the open transaction, so marks set but not yet
 * committed count. A backend that keeps one high-water mark per stream
 * (SQLite: one collector) gives 0..mark.
 *
 * Return: 0; TC_ERR_DB; -EINVAL; what @fn returned when negative.
 */
static inline int store_stream_marks(struct store_writer *w, uint64_t host_id,
				     const char *boot_id, uint64_t session, uint32_t n,
				     store_span_fn fn, void *ctx)
{
	if (!boot_id || !fn)
		return -EINVAL;
	return w->ops->stream_marks(w, host_id, boot_id, session, n, fn, ctx);
}

/*
 * store_stream_mark - record that pages @lo..@hi of @stream of that agent
 * session are stored; call it in the transaction that inserts the pages'
 * events, so the mark and the events commit (or vanish) together.
 *
 * Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_stream_mark(struct store_writer *w, uint64_t host_id,
				    const char *boot_id, uint64_t session, uint32_t stream,
				    uint64_t lo, uint64_t hi)
{
	if (!boot_id || lo > hi)
		return -EINVAL;
	return w->ops->stream_mark(w, host_id, boot_id, session, stream, lo, hi);
}

/*
 * store_journal_mark - journal file @file is stored up to byte @pos; call it
 * in the transaction that stores those pages (sql/0006-journal.sql).
 * store_journal_mark_get - that position (0: none), through the open
 * transaction. store_journal_forget - drop the marks of files @from..@to
 * (removed files).
 * Return: 0; TC_ERR_DB.
 */
static inline int store_journal_mark(struct store_writer *w, uint64_t file, uint64_t pos)
{
	return w->ops->journal_mark(w, file, pos);
}

static inline int store_journal_mark_get(struct store_writer *w, uint64_t file, uint64_t *pos)
{
	return pos ? w->ops->journal_mark_get(w, file, pos) : -EINVAL;
}

static inline int store_journal_forget(struct store_writer *w, uint64_t from, uint64_t to)
{
	return w->ops->journal_forget(w, from, to);
}

/*
 * store_live_hosts - the hosts connected to this collector now (@ids, @n
 * of them), for a store several collectors share (issue 35): traceq
 * --hosts on any of them says which collector each host is connected to
 * (struct store_host_info .collector). The ingest worker calls it every
 * few seconds, outside its transactions; a backend for one collector has
 * no op, and it returns 0.
 * Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_live_hosts(struct store_writer *w, const uint64_t *ids, size_t n)
{
	if (n && !ids)
		return -EINVAL;
	return w->ops->live_hosts ? w->ops->live_hosts(w, ids, n) : 0;
}

/*
 * store_host_usage - the bytes each host name has stored, for quotas: the
 * page bytes of its stored pages (the "bytes" of store_stats(), over its
 * CPUs and every host id of that name) less what store_retain() gave back
 * (each row it removes gives back its host's page bytes per stored event).
 * Calls @fn per name; a nonzero return from @fn stops and is returned.
 * Return: 0; TC_ERR_DB; or @fn's return.
 */
static inline int store_host_usage(struct store_writer *w,
				   int (*fn)(void *ctx, const char *host, uint64_t bytes),
				   void *ctx)
{
	return fn ? w->ops->host_usage(w, fn, ctx) : -EINVAL;
}

/*
 * store_cmdlines - remember pid -> comm pairs, and pid -> tgid pairs
 * (@c->tgids), of @host_id (replacing older ones).
 */
static inline int store_cmdlines(struct store_writer *w, uint64_t host_id,
				 const struct proto_cmdlines *c)
{
	if (!c || (c->count && !c->items) || (c->tgids.count && !c->tgids.items))
		return -EINVAL;
	return w->ops->cmdlines(w, host_id, c);
}

/*
 * store_comm_change - remember that task @c->pid of @host_id is named
 * @c->comm from @c->trace_ts on (fork, exec, prctl(PR_SET_NAME)): what the
 * filters' COMM reads for events of that task (store_query.field_col).
 * Return: 0; -EINVAL (no name); TC_ERR_DB.
 */
static inline int store_comm_change(struct store_writer *w, uint64_t host_id,
				    const struct store_comm_change *c)
{
	return c && c->comm ? w->ops->comm_change(w, host_id, c) : -EINVAL;
}

/*
 * store_program - record program @p of @host_id, or find the row an
 * earlier connection of the same agent run (same boot, session != 0 and
 * group) made, keeping that row's facts.
 *
 * Return: 0 and *@program_id; TC_ERR_DB; -EINVAL.
 */
static inline int store_program(struct store_writer *w, uint64_t host_id,
				const struct store_program *p, uint64_t *program_id)
{
	if (!p || !p->boot_id || !p->comm || !program_id)
		return -EINVAL;
	return w->ops->program(w, host_id, p, program_id);
}

/*
 * store_symbol - add one function symbol of @program_id, of kernel module
 * @module (NULL or "": none); one already there (same address and name: a
 * resend after a reconnect) is left as it is.
 * Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_symbol(struct store_writer *w, uint64_t program_id, uint64_t addr,
			       uint64_t size, const char *name, const char *module)
{
	return name ? w->ops->symbol(w, program_id, addr, size, name, module) : -EINVAL;
}

/*
 * store_kallsyms_held - whether the kernel symbols (group 0) of boot
 * @boot_id of @host_id are stored, from any agent run: an agent then need
 * not send them again (WELCOME's kallsyms). Return: 0; TC_ERR_DB.
 */
static inline int store_kallsyms_held(struct store_writer *w, uint64_t host_id,
				      const char *boot_id, bool *held)
{
	return boot_id && held ? w->ops->kallsyms_held(w, host_id, boot_id, held) : -EINVAL;
}

/*
 * store_printk_put - one line of the kernel's printk_formats of boot
 * @boot_id of @host_id: the string @fmt[0..@len) (the kernel's text,
 * quotes included) at @addr. @since is the wall-clock ns of the
 * connection that sends it. A line already there (a resend) is left as it
 * is. Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_printk_put(struct store_writer *w, uint64_t host_id,
				   const char *boot_id, int64_t since, uint64_t addr,
				   const char *fmt, size_t len)
{
	if (!boot_id || !fmt || len > INT32_MAX)
		return -EINVAL;
	return w->ops->printk_put(w, host_id, boot_id, since, addr, fmt, len);
}

/*
 * store_printk_held - whether the printk_formats of boot @boot_id of
 * @host_id are stored: an agent then need not send them (WELCOME's
 * printk_formats). Return: 0; TC_ERR_DB.
 */
static inline int store_printk_held(struct store_writer *w, uint64_t host_id,
				    const char *boot_id, bool *held)
{
	return boot_id && held ? w->ops->printk_held(w, host_id, boot_id, held) : -EINVAL;
}

/*
 * store_dropped - add @n to the count of events of @system:@name the
 * collector did not keep for @reason: "filter" (a server-side filter
 * dropped them at ingest; @host_id is their host) or "retention" (rows
 * removed by store_retain(); @host_id 0).
 *
 * Return: 0; TC_ERR_DB.
 */
static inline int store_dropped(struct store_writer *w, uint64_t host_id, const char *system,
				const char *name, const char *reason, uint64_t n)
{
	if (!system || !name || !reason)
		return -EINVAL;
	return w->ops->dropped(w, host_id, system, name, reason, n);
}

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
static inline int store_retain(struct store_writer *w, int64_t before_ts, uint64_t max_bytes,
			       uint64_t *removed)
{
	return removed ? w->ops->retain(w, before_ts, max_bytes, removed) : -EINVAL;
}

/* ---- a reader (the query endpoint's workers) ---- */

/*
 * store_set_stop - reads on @r from now on stop as @stop says (struct
 * store_stop, copied; the flag it points to must outlive the reads);
 * NULL: they run to the end. Checked every few thousand steps of the
 * engine, so a stop takes effect within about a millisecond of work.
 */
static inline void store_set_stop(struct store_reader *r, const struct store_stop *stop)
{
	if (r && r->ops->set_stop)
		r->ops->set_stop(r, stop);
}

/*
 * store_schema_get - describe event @event of @system. @system may be NULL:
 * then the name must be unique across systems.
 *
 * Return: 0 and *@out (free with store_schema_free()); TC_ERR_UNKNOWN_EVENT;
 * TC_ERR_AMBIGUOUS (store_errmsg() lists the systems); TC_ERR_DB; -ENOMEM.
 */
static inline int store_schema_get(struct store_reader *r, const char *system,
				   const char *event, struct store_schema **out)
{
	return event && out ? r->ops->schema_get(r, system, event, out) : -EINVAL;
}

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
static inline int store_schema_list(struct store_reader *r, const char *system,
				    int (*fn)(void *ctx, const struct store_schema *sc),
				    void *ctx)
{
	return fn ? r->ops->schema_list(r, system, fn, ctx) : -EINVAL;
}

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
int store_type_seen(struct store_reader *r, const struct store_schema *sc,
		    const struct store_scope *scope, bool *seen);

/*
 * store_host_find - the id of the host named @name (of the machines that
 * share the name, the one seen last), if @scope (NULL: every host) lets
 * the reader see it: a host outside the scope is not found, as an unknown
 * one. Return: 0; -ENOENT; TC_ERR_DB.
 */
int store_host_find(struct store_reader *r, const char *name, const struct store_scope *scope,
		    uint64_t *host_id);

/*
 * store_import_check - before an import (traceq --import) of the file whose
 * host row would have @machine_id ("import:DIGEST") under host name @name:
 * *@live, whether an agent's host (not an import) has that name; *@stored,
 * whether that file is stored already. Return: 0; TC_ERR_DB.
 */
static inline int store_import_check(struct store_reader *r, const char *name,
				     const char *machine_id, bool *live, bool *stored)
{
	if (!name || !machine_id || !live || !stored)
		return -EINVAL;
	return r->ops->import_check(r, name, machine_id, live, stored);
}

/*
 * store_symbol_name - name @addr as seen by a row of @host_id with
 * common_pid @pid at wall-clock @ts: "NAME" or "NAME+0xOFF" into
 * @buf[@len]. Programs announced no later than @ts are tried, the one
 * whose pid is @pid first, then the latest few; the first with a symbol
 * at or below @addr that covers it (a sized symbol must contain it) names
 * it. Rows carry thread ids, not programs, so for another thread of a
 * program the search is by address: see server/store/sqlite_symbols.c.
 * Called per row of a select, it does not look for the file reopened.
 *
 * Return: 0; -ENOENT (no program or symbol); TC_ERR_DB; -EINVAL.
 */
static inline int store_symbol_name(struct store_reader *r, uint64_t host_id, int32_t pid,
				    int64_t ts, uint64_t addr, char *buf, size_t len)
{
	if (!buf || !len)
		return -EINVAL;
	return r->ops->symbol_name(r, host_id, pid, ts, addr, 0, buf, len);
}

/*
 * store_symbol_sized - store_symbol_name()'s symbol, printed as the
 * kernel's %pS does: "NAME+0xOFF/0xSIZE" (+0x0 too). SIZE is the
 * distance from the symbol's address to the next greater address in the
 * same table (that program's symbols, the boot's kallsyms for the
 * kernel), as kallsyms_lookup_size_offset() measures a core kernel
 * symbol; computed at query time, whatever size the symbol was stored
 * with. The table's last symbol has no next: "NAME+0xOFF", no size
 * rather than a guess (the kernel ends it at _etext or _end, which
 * kallsyms does not list). A module's symbol is measured like any other
 * (the kernel ends it at its module's next symbol or text end), and
 * " [MODULE]" follows, as sprint_symbol() writes it, when its agent sent
 * the module (kallsyms' column).
 *
 * Return: as store_symbol_name().
 */
static inline int store_symbol_sized(struct store_reader *r, uint64_t host_id, int32_t pid,
				     int64_t ts, uint64_t addr, char *buf, size_t len)
{
	if (!buf || !len)
		return -EINVAL;
	return r->ops->symbol_name(r, host_id, pid, ts, addr, STORE_SYM_SIZED, buf, len);
}

/*
 * store_printk_list - call @fn for each printk_formats string of
 * @host_id's boot that was up at wall-clock @ts (the boot whose table came
 * last at or before @ts; before any, the first), in address order, at most
 * @max. @fmt is valid during the call. @fn's nonzero return stops the walk
 * and is returned. Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_printk_list(struct store_reader *r, uint64_t host_id, int64_t ts,
				    uint32_t max,
				    int (*fn)(void *ctx, uint64_t addr, const char *fmt),
				    void *ctx)
{
	return fn ? r->ops->printk_list(r, host_id, ts, max, fn, ctx) : -EINVAL;
}

/*
 * store_tgids_list - call @fn for each pid -> tgid pair of @host_id
 * (store_cmdlines()) with pid > @after_pid, in pid order, at most @max.
 * @fn's nonzero return stops the walk and is returned.
 * Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_tgids_list(struct store_reader *r, uint64_t host_id,
				   int32_t after_pid, uint32_t max,
				   int (*fn)(void *ctx, int32_t pid, int32_t tgid), void *ctx)
{
	return fn ? r->ops->tgids_list(r, host_id, after_pid, max, fn, ctx) : -EINVAL;
}

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
int store_select(struct store_reader *r, const struct store_query *q, store_row_fn fn,
		 void *ctx);

/*
 * store_count - how many rows store_select() would pass for @q, ignoring
 * its paging and limit. Return: as store_select(), 0 for success.
 */
int store_count(struct store_reader *r, const struct store_query *q, uint64_t *count);

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
int store_stats(struct store_reader *r, const struct store_query *q,
		int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			  const char *key, uint64_t value),
		void *ctx);

/*
 * store_hosts - every host the store has seen that @q allows (its host
 * globs and scope, as store_stats(); NULL: every host), by name: calls
 * @fn per host (struct store_host_info, for `traceq --hosts`). A nonzero
 * return from @fn stops and is returned.
 * Return: 0; TC_ERR_DB; -EINVAL; or @fn's return.
 */
int store_hosts(struct store_reader *r, const struct store_query *q,
		int (*fn)(void *ctx, const struct store_host_info *h), void *ctx);

/*
 * store_snapshots - the flight-recorder snapshots (`traceq --snapshots`):
 * calls @fn per (snapshot, host) of snapshot @id (0: every one), of the
 * hosts @q allows (its host globs and scope, as store_stats()), by id
 * then host name. A nonzero return from @fn stops and is returned.
 * Return: 0; TC_ERR_DB; -EINVAL; or @fn's return.
 */
int store_snapshots(struct store_reader *r, const struct store_query *q, uint64_t id,
		    int (*fn)(void *ctx, const struct store_snapshot *sn), void *ctx);

/*
 * store_snapshot_max - the highest snapshot id stored (0: none), so that
 * a collector numbers new ones past it. Return: 0; TC_ERR_DB.
 */
static inline int store_snapshot_max(struct store_reader *r, uint64_t *id)
{
	if (!id)
		return -EINVAL;
	return r->ops->snapshot_max(r, id);
}

/*
 * store_drops - the drop counters, for `traceq --drops`: calls @fn per
 * (host, system, name, reason) with its count; @host is "" for counters
 * not kept per host. Only hosts @q allows (as store_stats()); a @q with a
 * host_glob or a scope also leaves out the counters not kept per host.
 * A nonzero return from @fn stops and is returned.
 */
int store_drops(struct store_reader *r, const struct store_query *q,
		int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			  const char *reason, uint64_t count),
		void *ctx);

/*
 * store_size - the bytes the store's data takes now, into *@bytes: for
 * SQLite the database's used pages (what --retain-size holds under), for
 * tracecollectd's /metrics.
 * Return: 0; TC_ERR_DB; -ENOSYS (a backend that does not say).
 */
static inline int store_size(struct store_reader *r, uint64_t *bytes)
{
	if (!r || !bytes)
		return -EINVAL;
	return r->ops->size ? r->ops->size(r, bytes) : -ENOSYS;
}

/*
 * store_tail - the rows stored from t->from on (struct store_tail: the
 * storage order, traceq --follow) that match one of @qs
 * (@nq queries, one per event type, as store_select() takes them; their
 * paging, limit and order are not used; a window applies to every row),
 * in storage order, passed to @fn. Stops after t->max_rows rows (the
 * cursor may then point inside a block of rows stored together) or before
 * looking at more than t->max_scan rows (at least one block is read), and
 * says where to go on in t->next.
 *
 * Return: 0; -EINVAL; TC_ERR_DB; -ENOMEM; or @fn's nonzero return.
 */
int store_tail(struct store_reader *r, const struct store_query *const *qs, size_t nq,
	       struct store_tail *t, store_tail_fn fn, void *ctx);

/*
 * store_sql - run the user's read-only SQL @text (one SELECT over the
 * views store_types.h lists, traceq --sql) and pass its rows to @fn.
 * @scope is the asker's (struct store_scope; NULL: every host): the views
 * are not restricted by host, so a scoped asker is refused.
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
int store_sql(struct store_reader *r, const char *text, const struct store_scope *scope,
	      const struct store_sql_limits *lim, store_sql_fn fn, void *ctx);

/*
 * store_hist - the histogram @h (struct store_hist: traceq --hist, the
 * kernel's hist triggers) of @q's rows: totals into *@tot, then the
 * page of entries @h asks for, passed to @fn in order (the entry and what
 * it points to are valid only during @fn). Computed by the store (one read
 * of the rows; its memory bounded by spec->size), not by passing rows out.
 * @q's paging fields are unused.
 *
 * Return: 0; -EINVAL (no schema, a column beyond it, a spec over the
 * limits of common/hist.h); TC_ERR_UNKNOWN_FIELD (a filter field with no
 * column); TC_ERR_DB; -ENOMEM; or @fn's nonzero return.
 */
int store_hist(struct store_reader *r, const struct store_query *q, const struct store_hist *h,
	       int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
	       struct store_hist_totals *tot);

/* ---- issue 33: what an export needs of a host ---- */

/*
 * store_losses_put - @n pages of @host_id's boot @boot_id whose headers
 * said the kernel lost events before them (struct store_loss), stored in
 * the open transaction with the pages' events, so as exactly once as
 * they are; a loss already stored (same CPU and page timestamp) is left
 * as it is. Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_losses_put(struct store_writer *w, uint64_t host_id,
				   const char *boot_id, const struct store_loss *l, size_t n)
{
	if (!boot_id || (n && !l))
		return -EINVAL;
	return n ? w->ops->losses_put(w, host_id, boot_id, l, n) : 0;
}

/*
 * store_boot - what HELLO and HEADER_PAGE say of @host_id's boot
 * @b->boot_id (struct store_boot), kept per host and boot: fields @b
 * leaves NULL or 0 keep what was stored; @b->since only counts the
 * first time. Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_boot(struct store_writer *w, uint64_t host_id, const struct store_boot *b)
{
	if (!b || !b->boot_id || b->header_page_len > INT32_MAX ||
	    b->header_event_len > INT32_MAX)
		return -EINVAL;
	return w->ops->boot(w, host_id, b);
}

/*
 * store_losses - call @fn for each loss @q allows: its host globs, scope,
 * CPUs and window (win), in (ts, id) order (@q->reverse: descending),
 * after (@q->after_ts, @q->after_rowid) when after_rowid is not 0, at
 * most @q->limit (0: all); @q->schema and filter are unused. What @fn is
 * passed is valid during the call; its nonzero return stops the walk and
 * is returned. Return: 0; TC_ERR_DB; -EINVAL.
 */
int store_losses(struct store_reader *r, const struct store_query *q,
		 int (*fn)(void *ctx, const struct store_loss_row *x), void *ctx);

/*
 * store_boot_get - @fn once with @host_id's boot that was up at wall-clock
 * @ts (the boot first seen last at or before @ts; before any, the first;
 * INT64_MAX: the latest), as store_boot() kept it; a host stored before
 * boots were kept answers with what its hosts row holds (long_size 0,
 * no headers). @host_id comes from store_host_find(), which applied the
 * asker's scope. Return: 0 (or @fn's nonzero return); -ENOENT (no such
 * host); TC_ERR_DB; -EINVAL.
 */
static inline int store_boot_get(struct store_reader *r, uint64_t host_id, int64_t ts,
				 int (*fn)(void *ctx, const struct store_boot *b), void *ctx)
{
	if (!fn)
		return -EINVAL;
	return r->ops->boot_get(r, host_id, ts, fn, ctx);
}

/*
 * store_boot_formats - call @fn for each format @host_id sent in boot
 * @boot_id (every event type's, kernel's and programs' rings'), the text
 * as the agent sent it, in format id order after @after_id, at most @max.
 * Strings are valid during the call; @fn's nonzero return stops the walk
 * and is returned. Return: 0; TC_ERR_DB; -EINVAL.
 */
static inline int store_boot_formats(struct store_reader *r, uint64_t host_id,
				     const char *boot_id, int64_t after_id, uint32_t max,
				     int (*fn)(void *ctx, int64_t id, const char *system,
					       const char *name, const char *text),
				     void *ctx)
{
	if (!fn || !boot_id)
		return -EINVAL;
	return r->ops->boot_formats(r, host_id, boot_id, after_id, max, fn, ctx);
}

/*
 * store_boot_programs - call @fn for each program (a MSG_GROUP: its
 * ring's streams, first_stream and nstreams; its pid, comm and since_ns)
 * @host_id announced in boot @boot_id, once each, in since_ns order, at
 * most @max: what maps a program's stream (its rows' and losses' CPU)
 * to its buffer (traceq --export). Strings are valid during the call;
 * @fn's nonzero return stops the walk and is returned. Return: 0;
 * TC_ERR_DB; -EINVAL.
 */
static inline int store_boot_programs(struct store_reader *r, uint64_t host_id,
				      const char *boot_id, uint32_t max,
				      int (*fn)(void *ctx, const struct store_program *p),
				      void *ctx)
{
	if (!fn || !boot_id)
		return -EINVAL;
	return r->ops->boot_programs(r, host_id, boot_id, max, fn, ctx);
}

#endif
