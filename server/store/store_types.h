/*
 * store_types.h - what the store's callers and its backends say to each
 * other: the values it keeps, what it is told of event types and hosts,
 * and what a read asks for and gets. Data only (and the few functions that
 * parse or free it); the calls are in store.h (callers) and store_ops.h
 * (backends).
 *
 * The store owns these types, and the dependency runs one way: the page
 * decoder (server/ingest/decode.h) reads fields into struct store_value and
 * describes them with enum store_kind, the ingest path hands those values
 * to the writer already decoded (store_insert()), and nothing in
 * server/store/ includes the decoder.
 */
#ifndef SERVER_STORE_STORE_TYPES_H
#define SERVER_STORE_STORE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct filter;
struct hist_spec;

/* What a field's value is; a column has the kind of the values it holds. */
enum store_kind {
	STORE_SIGNED,		/* integer of 1, 2, 4 or 8 bytes, sign-extended */
	STORE_UNSIGNED,		/* integer of 1, 2, 4 or 8 bytes (also pointers) */
	STORE_STRING,		/* char[N], char[] or __data_loc/__rel_loc char[] */
	STORE_BLOB,		/* any other array, dynamic array or odd-sized field */
};

/* One value of a field, as the decoder reads it and a read passes it on. */
struct store_value {
	enum store_kind kind;
	union {
		int64_t i;	/* STORE_SIGNED */
		uint64_t u;	/* STORE_UNSIGNED */
		struct {	/* STORE_STRING: not NUL-terminated; len excludes any NUL */
			const char *s;
			size_t len;
		} str;
		struct {	/* STORE_BLOB */
			const void *p;
			size_t len;
		} blob;
	};
};

/* store_kind_name - "signed", "unsigned", "string", "blob" (or "?"). */
const char *store_kind_name(enum store_kind kind);

/*
 * store_field_is_stack - whether field @field of event @system:@name is a
 * kernel stack record's frames (ftrace:kernel_stack's and user_stack's
 * caller[]): an array that runs to the end of its record, which the
 * store keeps once per distinct stack (sql/0016-stacks.sql).
 */
bool store_field_is_stack(const char *system, const char *name, const char *field);

/* One field of an event's format. */
struct store_field {
	const char *name;
	enum store_kind kind;
	unsigned size;		/* bytes in the record; 0 for dynamic/flexible */
	const char *type;	/* the C type as the format gives it; NULL: not known */
};

/*
 * An event type as an agent sent it (store_type()): the format text and
 * its fields, all of them, the common_* fields first.
 */
struct store_type_desc {
	const char *system;
	const char *name;
	const char *format;	/* the format file's text, as sent */
	unsigned nfields;
	const struct store_field *fields;
};

/*
 * One event for store_insert(): where and when it happened, and how to
 * read its fields: @value(@src, i, out) gives field i's value, i in the
 * order of its type's fields (@nvals of them). The store asks, during
 * store_insert() and once each, only for the fields it keeps (not one
 * whose name an earlier field of the type has), so the caller decodes
 * nothing twice and nothing the store drops. Strings and blobs may point
 * into the caller's page: the store copies what it keeps. A negative
 * return from @value is store_insert()'s (the row is not inserted).
 */
struct store_event {
	uint64_t host_id;
	uint32_t cpu;
	uint64_t trace_ts;	/* trace clock, ns */
	int64_t ts;		/* wall clock, ns */
	unsigned nvals;
	int (*value)(const void *src, unsigned i, struct store_value *out);
	const void *src;
};

/* ---- what the writer is told ---- */

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
 * What a host limit held back of one CPU (tracecollectd --host-rate,
 * --host-quota): pages whose reading waited, and for how long (ms).
 */
struct store_held {
	uint64_t rate_pages, rate_ms;	/* over its events/s */
	uint64_t quota_pages, quota_ms;	/* over its bytes stored */
};

/*
 * Where a kernel lost events (sql/0014-losses.sql): a page whose header
 * carried the missed-events flag, so events were dropped on @cpu before
 * its first one; stored with the page's events (store_losses_put()).
 */
struct store_loss {
	uint32_t cpu;		/* the kernel's CPU, or a program ring's stream (>= 32768) */
	int64_t ts;		/* the page's timestamp on the wall clock, ns */
	uint64_t trace_ts;	/* the page's timestamp as the page has it (trace clock) */
	int64_t count;		/* events lost before the page; -1: the kernel did not say */
};

/* A loss as store_losses() reads it back: the strings valid during the callback. */
struct store_loss_row {
	int64_t id;		/* the row's key: paging continues after (ts, id) */
	const char *host;
	const char *boot_id;
	struct store_loss l;
};

/*
 * A host's boot as its kernel describes itself (sql/0014-losses.sql,
 * host_boots): what a trace.dat of that host carries in its header. A
 * NULL string (and 0 number) is not known: store_boot() keeps what was
 * stored before for it.
 */
struct store_boot {
	const char *boot_id;
	int64_t since;		/* wall-clock ns of its first connection */
	const char *kernel;
	const char *trace_clock;
	uint32_t long_size;	/* 4 or 8 */
	bool big_endian;
	uint32_t page_size;
	const char *header_page;	/* events/header_page, verbatim */
	size_t header_page_len;
	const char *header_event;	/* events/header_event */
	size_t header_event_len;
};

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
 * and EVENT), or "none", which empties @ix. In store_index.c, with
 * store_indexes_free().
 *
 * Return: 0; TC_ERR_CONFIG with a sentence in @err (and @ix as it was);
 * -ENOMEM.
 */
int store_index_parse(struct store_indexes *ix, const char *spec, char *err, size_t errlen);

/* store_indexes_free - free what @ix holds and empty it. */
void store_indexes_free(struct store_indexes *ix);

/* ---- what a read asks for and gets ---- */

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
 * store_stack_hash - where a writer's table of the stacks it stored
 * (sqlite_stacks.c, clickhouse_stacks.c) looks @len bytes of frames at @p
 * up: FNV-1a, seeded with store_stack_seed() (random: frames crafted to
 * collide cannot be made in advance; a collision costs a probe, never a
 * merge of two stacks, as the frames are compared).
 */
uint64_t store_stack_hash(uint64_t seed, const void *p, size_t len);

/* store_stack_seed - a random seed for store_stack_hash(); @fallback's address without one. */
uint64_t store_stack_seed(const void *fallback);

/* store_col_is_stack - whether @sc's column @c holds stacks (a stack's id
 * or reference, or an older row's frames). */
bool store_col_is_stack(const struct store_schema *sc, size_t c);

/* store_schema_free - free @sc (from store_schema_get()); NULL is allowed. */
void store_schema_free(struct store_schema *sc);

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
	/*
	 * and (NULL: all) only rows inside one of these (host, time) spans: a
	 * flight-recorder snapshot's hosts and their windows (@nspans 0: no row)
	 */
	const struct store_hostspan *spans;
	size_t nspans;
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
	/*
	 * store_select() with a @limit only: the read may pass more rows than
	 * @limit, the rest of what it had to read anyway (the SQLite store's
	 * time window), still in order, for a caller that keeps them (the
	 * select merge: queryd_sel.c). A backend may ignore it.
	 */
	bool limit_soft;
};

/* A host as store_stats() names it. */
struct store_stats_host {
	uint64_t id;			/* the id store_host() gave it */
	const char *name;
	const char *machine_id;
};

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
	/* the collector's latest measurement (store_clock_point()); clock_source NULL: none */
	const char *clock_source;	/* "host" or "measured": what places its events */
	int64_t clock_measured_ns;	/* the collector's realtime - trace clock */
	int64_t clock_uncertainty_ns, clock_drift_ppb, clock_disagree_ns;
	const char *collector;		/* the collector it is connected to, from a
					 * shared store's live set (store_live_hosts());
					 * NULL: none, or a store of one collector */
};

/*
 * A host's rows with trace_ts in [trace_from, trace_to] and ts in
 * [from_ts, to_ts] (struct store_query's spans: the trace clock is exact,
 * the wall clock, a little wider, finds them through the time index).
 */
struct store_hostspan {
	uint64_t host_id;
	int64_t from_ts, to_ts;
	uint64_t trace_from, trace_to;
};

/*
 * One host of a flight-recorder snapshot (the snapshots and snapshot_hosts
 * tables): store_snapshot_asked() writes the snapshot and the host as
 * asked (done false), store_snapshot_done() what the host's buffer held;
 * store_snapshots() reads them back with its name.
 */
struct store_snapshot {
	uint64_t id;			/* >= 1 */
	int64_t asked_ns;		/* the collector's realtime when asked */
	const char *reason;		/* the asker's words or the trigger */
	const char *who;		/* an identity or the triggering host */
	uint64_t host_id;
	const char *host;		/* store_snapshots(): its name */
	bool done;			/* the host said what it shipped */
	uint64_t pages, events, lost;	/* what it shipped; events overwritten before */
	bool window;			/* first_ts, last_ts hold its events' span */
	int64_t first_ts, last_ts;	/* wall clock ns, as its events are stored */
	uint64_t first_trace, last_trace;	/* the same as their trace_ts */
};

/*
 * A measurement of a host's trace clock by the collector (the clock
 * exchange, PROTOCOL.md "Clock measurement"), as the sink judged it.
 */
struct store_clock_point {
	const char *boot_id;
	uint64_t trace_ns;		/* the host's trace clock */
	int64_t realtime_ns;		/* the collector's realtime at that instant */
	uint64_t uncertainty_ns;	/* +- */
	int64_t drift_ppb;		/* offset change per trace second, ppb */
	bool have_disagree;		/* the host has sent a sample */
	int64_t disagree_ns;		/* its realtime less the measured, then */
	bool measured;			/* its events are placed by the measurement */
};

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
	/*
	 * in/out: NULL, or STORE_TAIL_WRITERS cursors, one per collector
	 * number of a store several collectors write (issue 35): each is a
	 * @from and @next of that collector's rows alone, whose commits are in
	 * storage order among themselves and not with another's. With
	 * @writers_set false, every one starts where @from says.
	 */
	uint64_t *writers;
	bool writers_set;
};
#define STORE_TAIL_WRITERS	64	/* STORE_COLLECTOR_IDS (store_ops.h) */

/* Called per row with @i, the index of the query (event type) it matched. */
typedef int (*store_tail_fn)(void *ctx, size_t i, const struct store_row *row);

/*
 * The one place where SQL text from outside reaches the store: the
 * user-facing SQL surface of `traceq --sql`, like Perfetto's trace
 * processor tables. Everything else in the collector talks to the store
 * through the calls of store.h, never in SQL. The text runs over documented
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

#define STORE_HIST_HOST	(-1)	/* a key that is the row's host name */
#define STORE_HIST_CPU	(-2)	/* a key or value that is the row's CPU */
#define STORE_HIST_COMM	(-3)	/* a key that is the filters' COMM of the row */
#define STORE_HIST_TS	(-4)	/* a key that is the row's ts (wall-clock ns) */
#define STORE_HIST_STACK (-5)	/* a key that is the row's kernel stack (below) */

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
 * spec->vals[i] (or STORE_HIST_HOST, STORE_HIST_CPU, STORE_HIST_COMM,
 * STORE_HIST_TS), resolved and
 * type-checked by the caller (numeric for vals and numeric modifiers).
 * @offset and @limit (0: no limit) page through the sorted entries.
 *
 * A STORE_HIST_STACK key (common_stacktrace) is the row's kernel stack:
 * the stack record (@stacks, ftrace:kernel_stack, its caller[] column
 * @stack_col) that follows the row on its host and CPU, as the kernel
 * writes a stack record right after its event (options/stacktrace, a
 * stacktrace trigger). In the merge of the event's rows (all of them,
 * whatever the filter) and the stack records of a host and CPU, ordered
 * by ts, an event row before a stack record at the same ts, a stack
 * record is the row's when the row comes right before it. Rows with no
 * stack record are not counted (the kernel's histogram has a stack for
 * every event; ours counts those whose stack was recorded). The key is
 * the first @stack_bytes bytes of the frames (the kernel's
 * HIST_STACKTRACE_DEPTH longs), passed as a STORE_BLOB; keys compare as
 * their bytes.
 */
struct store_hist {
	const struct hist_spec *spec;
	const int *key_col;
	const int *val_col;
	const struct store_schema *stacks;
	size_t stack_col;
	uint32_t stack_bytes;
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

/*
 * store_hist_check - whether @h fits @q (its counts within common/hist.h's
 * limits, its columns @q's schema's or the STORE_HIST_* ones a key or a
 * value may be, its sorts naming a key or value): 0 or -EINVAL. A
 * backend's hist calls it first.
 */
int store_hist_check(const struct store_query *q, const struct store_hist *h);

struct store_hist_totals {
	uint64_t hits;		/* rows in kept entries */
	uint64_t entries;	/* kept entries (<= spec->size) */
	uint64_t dropped;	/* rows of keys not kept */
	int64_t max_ts;		/* the newest ts of any row counted */
};

#endif
