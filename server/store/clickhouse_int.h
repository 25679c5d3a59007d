/*
 * clickhouse_int.h - the ClickHouse backend's handle, struct ch_store,
 * which every part of the backend uses: data only. Functions are declared
 * by the part that defines them (clickhouse_rows.h at the bottom ...
 * clickhouse.h at the top); clickhouse.h says which part does what.
 *
 * One handle serves either role: a writer (struct store_writer first) or
 * a reader (struct store_reader first).
 */
#ifndef SERVER_STORE_CLICKHOUSE_INT_H
#define SERVER_STORE_CLICKHOUSE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store/store_ops.h"

/*
 * The ids of completed commits, of any collector: those with a row in
 * `commits` that no row of void_ids covers (ids a writer gave up before
 * it deleted their rows: a commits row that lands after that does not
 * make a commit; clickhouse_txn.c). 64 is STORE_COLLECTOR_IDS. One
 * array of (lo, hi, slot) rows: three groupArray() of one column each
 * need not list the rows in one order (parts read by several threads).
 */
#define CH_COMMIT_IDS	"(SELECT id FROM commits WHERE NOT arrayExists(_tc_v -> id >" \
			" tupleElement(_tc_v, 1) AND id <= tupleElement(_tc_v, 2) AND" \
			" modulo(id, 64) = tupleElement(_tc_v, 3)," \
			" (SELECT groupArray((lo, hi, slot)) FROM void_ids)))"

/*
 * Rows of completed commits, of any collector: commit ids interleave
 * (clickhouse_txn.c), so "up to the last commit" would take a slower
 * collector's unfinished commit. GLOBAL: on a sharded store the event
 * tables are Distributed and `commits` and void_ids are on the first
 * shard only; the set is read there once and sent to every shard
 * (clickhouse_shards.h). On a plain table GLOBAL IN is IN.
 */
#define CH_COMMITTED	"_tc_commit GLOBAL IN " CH_COMMIT_IDS

struct ch_http;
struct ch_symcache;
struct ch_sender;
struct ch_stacks;

/* A growable byte buffer (RowBinary rows); oom is sticky until reset. */
struct ch_bytes {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

/*
 * The rows of one INSERT statement, in RowBinary. counted: its rows carry
 * _tc_commit and belong to the open transaction (dropped at rollback);
 * else they are idempotent facts (hosts, formats, names), kept across a
 * rollback and sent with the next commit.
 */
struct ch_batch {
	char *insert;		/* "INSERT INTO `t` (`a`,...) FORMAT RowBinary" */
	struct ch_bytes rows;
	size_t nrows;
	bool counted;
};

/* The fixed tables' batches (clickhouse_meta.c fills them, commit sends them). */
enum ch_fixed {
	/* idempotent facts first: a commit sends them before the events */
	CH_B_HOSTS, CH_B_EVENT_TYPES, CH_B_EVENT_FIELDS, CH_B_FORMATS, CH_B_FORMAT_FIELDS,
	CH_B_HOST_FORMATS, CH_B_COMMS, CH_B_TGIDS, CH_B_COMM_CHANGES, CH_B_PROGRAMS,
	CH_B_SYMBOLS, CH_B_PRINTK, CH_B_CPU_AGENT,
	CH_B_HOST_BOOTS,	/* clickhouse_boots.c */
	CH_B_CLOCK_POINTS,	/* clickhouse_boots.c */
	CH_B_STACKS,		/* clickhouse_stacks.c */
	/* counted: after the events, before the commit's row */
	CH_B_CPU_COUNTS, CH_B_DROPS, CH_B_FREED, CH_B_STREAM_MARKS, CH_B_JOURNAL_MARKS,
	CH_B_LOSSES,		/* clickhouse_boots.c */
	CH_NFIXED,
	CH_FIRST_COUNTED = CH_B_CPU_COUNTS,
};

/* One column of an event table: a field name of one kind. */
struct ch_col {
	char *name;		/* the field's name */
	char *column;		/* its column */
	enum store_kind kind;
};

/* An event table as the writer knows it (its columns, loaded once). */
struct ch_table {
	struct ch_table *next;
	char *system, *name;
	char *table;
	int64_t type_id;
	struct ch_col *cols;
	size_t ncols, cap;
};

/* One format of an event type (store_type()'s handle). */
struct store_type {
	struct store_type *next;
	struct ch_table *tab;
	int64_t format_id;
	unsigned nfields;
	enum store_kind *kinds;	/* per field of the format */
	bool *keep;		/* per field: stored (no earlier field has its name) */
	int stack_field;	/* the field that is a stack (clickhouse_stacks.h); -1: none */
	struct ch_batch batch;
};

/* A host the writer has seen: its row, to write again with a new clock or time. */
struct ch_host {
	struct ch_host *next;
	uint64_t id;
	char *name, *machine_id, *boot_id, *kernel, *trace_clock, *peer, *agent;
	uint32_t ncpus, page_size;
	int64_t offset_ns, first_seen, last_seen;
	int64_t *types;		/* event types it sent formats of (max-event-types) */
	size_t ntypes, types_cap;
	bool types_read;	/* types holds the server's too */
};

/* Marks of the open transaction, read through it (stream_marks, journal_mark_get). */
struct ch_smark {
	uint64_t host_id, session, lo, seq;	/* pages lo..seq */
	uint32_t stream;
	char *boot_id;
};

struct ch_jmark {
	uint64_t file, pos;
};

/* What the writer's open transaction holds besides rows (held checks). */
struct ch_boot {
	uint64_t host_id;
	char *boot_id;
	bool kallsyms, printk;
};

struct ch_store {
	union {			/* first: the handle the front holds */
		struct store_writer w;
		struct store_reader r;
	} base;
	struct store_handle *h;
	bool reader;
	struct ch_http *http;
	struct ch_sender *sender;	/* the writer's, started on first use (clickhouse_send.h) */
	char *db;		/* the database's name */
	char *collector;	/* this collector's name in journal_marks and commits */
	/* shards (clickhouse_shards.h); nshards 0: one server */
	char *cluster;		/* the cluster of remote_servers the Distributed tables name */
	char *shard_db;		/* the database of the shards' event tables: DB_shard */
	struct ch_http **shards;	/* a writer's connection to each, in shard_db */
	unsigned nshards;
	bool replicated;	/* the writer's tables are Replicated*: block dedup (clickhouse.h) */
	unsigned slot;		/* its --collector-id: its commit ids are = slot
				 * modulo STORE_COLLECTOR_IDS (clickhouse_txn.c) */
	const struct store_stop *stop;	/* a reader's (store_set_stop()) */
	struct ch_symcache *syms;	/* a reader's names of addresses (clickhouse_symbols.c) */
	/* the writer's */
	struct ch_table *tables;
	struct store_type *types;
	struct ch_host *hosts;
	struct ch_batch fixed[CH_NFIXED];
	struct ch_stacks *stacks;	/* the stacks written (clickhouse_stacks.c) */
	struct ch_smark *smarks;
	size_t nsmarks, smarks_cap;
	struct ch_jmark *jmarks;
	size_t njmarks, jmarks_cap;
	struct ch_boot *boots;
	size_t nboots, boots_cap;
	uint64_t last_ok;	/* the last commit that completed */
	uint64_t commit_id;	/* the open transaction's (> last_ok) */
	uint64_t reserved;	/* the highest id acknowledged in commit_ids */
	uint64_t row_seq;	/* rows of it so far (_tc_row) */
	int64_t begun_ms;	/* when it began (util_now_ms(), read once a commit) */
	bool in_txn;
	bool sent;		/* rows of the open transaction went to the server */
	bool dirty;		/* rows past last_ok may be on the server: clean first */
	int failed;		/* a failed insert: every op fails so until rollback/begin */
	bool down;		/* the server was unreachable (said once) */
	/* retention (clickhouse_retain.c; all zero: unknown, look first) */
	int64_t retain_cut;	/* the cut of the last round that counted */
	uint64_t retain_commit;	/* the commit that round counted in */
	bool retain_started;	/* a round counted since open */
	bool retain_idle;	/* every committed round's rows are gone */
	int64_t seen_low;	/* lowest ts of rows of completed commits since that round */
	bool stacks_orphaned;	/* event rows removed since the stacks' last sweep */
	int64_t stacks_swept_ms;	/* its util_now_ms(); 0: none yet */
	int64_t txn_low;	/* lowest ts of the rows of commit txn_low_id */
	uint64_t txn_low_id;
	/* the retention lease (clickhouse_lease.c) */
	unsigned lease_s;	/* its length (--retain-lease) */
	uint64_t lease_term;	/* the term held; 0: none */
	uint64_t lease_nonce;	/* our claim's */
	int64_t lease_until;	/* held until (util_now_ms()) */
	int64_t lease_next;	/* not holding: look again then (util_now_ms()) */
	bool lease_skipping;	/* "another holds it" was said */
};

static inline struct ch_store *ch_writer_of(struct store_writer *w)
{
	return (struct ch_store *)w;
}

static inline struct ch_store *ch_reader_of(struct store_reader *r)
{
	return (struct ch_store *)r;
}

#endif
