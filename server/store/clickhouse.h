/*
 * clickhouse.h - the ClickHouse backend (issue 32): its constructors,
 * which the front (store.c) calls for a path "clickhouse://...", and the
 * design, which every part follows.
 *
 * Where. --db clickhouse://[USER@]HOST:PORT/DB (or several HOST:PORT,
 * the shards: clickhouse_shards.h): ClickHouse's HTTP
 * interface at HOST:PORT (https when a client certificate or a CA is
 * given), database DB (made when missing). The password and TLS files
 * come from the front (struct store_remote_auth), never in the path.
 *
 * Layout (the .sql files of sql/clickhouse/; the per-event tables from
 * clickhouse_schema.c). One table per event type, each field a typed
 * column (Int64, UInt64, String), a new field a new column, as with
 * SQLite; every event table is MergeTree PARTITION BY day ORDER BY
 * (host_id, ts), the event type being the table: so a query of one type
 * reads only that type's columns, and of one host and time range only
 * that range's granules. Why not one wide table (a column per field of
 * every type): measured on Debian's 18.16 on this project's 2-core
 * machine, 50 types of 6 fields, 12 commits 250 ms apart each inserting
 * 500 rows of 20 types (120,000 rows): per-event tables took 8.6 s of
 * inserts and left 124 active parts (240 inserted, merged behind),
 * 4.4 MB; the wide table 16.9 s (each insert writes all 307 columns),
 * 7 parts, 5.8 MB; a count of one type with a field filter took 3.2 ms
 * against 4.2 ms. With 200 types (1,207 columns) the wide table's insert
 * of 10,000 rows failed: 18.16 keeps a compression buffer per column and
 * hit its 1.86 GiB memory limit. A fleet sends hundreds of types, so
 * per-event tables; their cost is a part per type per commit (the
 * collector commits to ClickHouse every second), which merges keep far below 18.16's
 * limit of 300 parts per partition.
 * Hosts, formats per host and boot, per-CPU counts, drops, symbols,
 * printk formats, tgids and comms, journal and stream marks, each boot's
 * headers (host_boots: long size, byte order, header_page, header_event),
 * where kernels lost events (losses) and the collector's measurements of
 * each host's clock (clock_points) are tables there too: a second
 * collector needs nothing from this one's disk to answer a query or
 * write an export.
 * host_id, type_id, format_id and program_id are stable hashes
 * (SHA-256, 63 bits) of what names them, the same on every collector.
 *
 * Nothing lost, nothing twice (clickhouse_txn.c). ClickHouse has no
 * transactions, and 18.16 no insert_deduplication_token. A writer's
 * transaction is a commit id: every counted row it adds (events,
 * per-CPU counts, drops, freed bytes, stream and journal marks) carries
 * it in _tc_commit and is sent in RowBinary batches (one INSERT per
 * table, never a row per request); its commit sends the batches and
 * then, last, one row into `commits`. So:
 *  - a commit whose `commits` row exists has every row it sent (they
 *    were acknowledged before), and the marks in it say how far the
 *    journal and each agent stream are stored;
 *  - rows with a _tc_commit above the last `commits` row belong to a
 *    commit that did not complete (collector killed mid-insert,
 *    ClickHouse killed or unreachable, an error): the writer gives
 *    those ids up (a row of void_ids, acknowledged) and deletes their
 *    rows (ALTER TABLE DELETE, waited for) at open and at the begin
 *    after a failure, before it stores anything again; reads of events,
 *    marks and counters ignore them meanwhile and after (CH_COMMITTED:
 *    a commits row, no void row);
 *  - when the `commits` insert fails without an answer (the server
 *    died after writing it), the writer asks whether the row is there;
 *    if it cannot tell, the commit fails, its id is given up and its
 *    rows are deleted before the next begin (should that row land or be
 *    there, it makes no commit), and the ingest worker stores the
 *    transaction again from the journal (ingest.c) with a new id;
 *  - an id is never used twice, not even after a restart that follows a
 *    deleted commit: before a row carries a commit id, the id is reserved
 *    by an acknowledged row in `commit_ids` (hw >= id, blocks of ids),
 *    a table nothing deletes from; a writer opens numbering above max(hw)
 *    and max(id) of `commits`. That needs no mutation to be done (18.16
 *    runs DELETE asynchronously) nor any deleted row to be seen.
 * Every event thus ends up stored once, on a plain MergeTree with no
 * ZooKeeper; what it cannot promise is under "What is still open"
 * below. Several collectors may share one database (issue 35): each
 * numbers its commits in a residue of its own (--collector-id,
 * clickhouse_txn.c), cleans up and gives up only its own, and reads
 * "completed" as "has a commits row and no void row"; the live-host
 * set and the id check are clickhouse_fleet.c's. Facts (hosts, formats, names,
 * symbols) are idempotent rows (ReplacingMergeTree), kept across a
 * rollback and written again harmlessly.
 *
 * Replicated (clickhouse://...?replicated). With ZooKeeper and the
 * macros shard and replica in the server's config.xml, every table is
 * made Replicated* (ReplicatedMergeTree, ReplicatedReplacingMergeTree on
 * ZooKeeper path /clickhouse/tables/{shard}/DB/TABLE, replica {replica}:
 * ch_sql_engine(); the .sql files write {{ENGINE TABLE X(...)}}, which
 * clickhouse.c expands as it loads them), and the server keeps one copy
 * of a block INSERTed twice (per table, among its last
 * replicated_deduplication_window blocks: CH_DEDUP_WINDOW, where 18.16's
 * default is 100). The writer leans on it: an INSERT (a batch, the
 * commits row) whose answer was lost to the connection is sent again
 * with the same rows, up to CH_RESENDS times a second apart,
 * before its commit fails; the first copy, should it land late (a server
 * stalled with the request queued), and the resend are one block, so the
 * commit completes without a cleanup. Dedup never drops a row sent once:
 * every counted or event row carries its commit's id (and an event its
 * _tc_row), the commits and commit_ids rows their id and time; facts
 * sent twice are idempotent anyway. A database keeps the engines it was
 * made with (its commits table decides); ?replicated on one made without
 * it, or on a server without ZooKeeper or the macros, is refused at open.
 * Exactly once across a restart (issue 32's open note, gone through
 * again with shards). Every read of events and counted rows takes a
 * commit's rows only when its id has a `commits` row and no row of
 * void_ids covers it (CH_COMMITTED), and ch_send_all() sends that row
 * only after every batch of the commit was acknowledged (the sender
 * waited for). A writer gives commits up before it deletes their rows:
 * at open, its ids after the last of its own that completed (read
 * first) up to the last it reserved; at the begin after a failed commit,
 * those up to that commit; one row of void_ids, acknowledged, then the
 * DELETEs. So after a kill -9 of the collector during commit X, on
 * either engine, sharded or not:
 *  - X's row was not sent: no row of X is ever read, whether its last
 *    batch landed before the next start's cleanup or after it (a request
 *    the server held): X gets no commits row, and its id is never used
 *    again (commit_ids); the journal stores the events again as Y;
 *  - X's row lands before the restarted writer reads its last commit: X
 *    is complete, its journal marks with it, and the journal goes on
 *    after;
 *  - X's row lands after that read: X is void whenever its row lands, so
 *    none of its rows is read, before the cleanup's DELETE (sent and
 *    waited for, on each shard) is done or after, and Y stores the events
 *    once; a retention round counts none of them (clickhouse_retain.c)
 *    and removes those of a late batch with the events before its cut;
 *  - the same in a running writer whose commit X failed with its
 *    commits row sent (the answer lost, the row not seen): X is given up
 *    at the next begin.
 * test_ch_replicated.sh and test_ch_shards.sh kill -9 the collector
 * mid-stream and count every row on the server(s), not only committed
 * ones: stored == shipped, distinct == stored; test_ch_retain.sh lands a
 * commits row, and rows, of an id a restart gave up, and reads none of
 * them, and stores rows of no commit below the retention cut, which go
 * uncounted. What is still open:
 *  - ?replicated: a batch whose answer was lost is resent; should the
 *    first copy land after the table took more than its dedup window of
 *    other blocks, it is a block of its own, in a completed commit:
 *    twice. Every Replicated table made from migration 0012's release
 *    on (a new database's, an old one's new event tables and void_ids)
 *    has replicated_deduplication_window = CH_DEDUP_WINDOW (1240: the
 *    HTTP timeout and the resends, at up to 10 blocks a second;
 *    clickhouse_util.h), which 18.16 takes at CREATE
 *    (tried here with ZooKeeper), so only a first copy the server holds
 *    past that (a server stalled for minutes with the request queued)
 *    is still twice. Tables made before keep the window they were made
 *    with (18.16's default, 100, about 100 s at one commit a second, or
 *    what the server's <merge_tree> config says): 18.16 has no ALTER
 *    TABLE ... MODIFY SETTING, so raising it there takes the server's
 *    config. Closing it for good: insert_deduplication_token (22.2);
 *  - a late commits row of X that lands between the read of the last
 *    commit and the void row's acknowledgement (at a restart: the
 *    writer's first statements, milliseconds apart), or between X's
 *    failure and the next begin (in a running writer: the ingest
 *    worker's next try) makes X complete for that moment: a reader then
 *    sees X's rows (Y is not stored yet: early, not twice), and with
 *    several collectors, another one's retention round counting in that
 *    moment counts them as dropped, and Y's later again. Closing it
 *    would take reading and voiding in one step, which ClickHouse has
 *    not; a newer server's insert_deduplication_token would not help.
 *
 * Shards (clickhouse://H1:P1,H2:P2/DB?cluster=NAME): the event rows
 * spread over several servers by host, read through Distributed tables
 * on the first, which holds everything else; clickhouse_shards.h has the
 * layout, why by host, and how a commit stays exactly once. What Debian's
 * 18.16 did when tried here (two servers on loopback as the two shards
 * of one cluster, each shard one replica with <internal_replication>true,
 * one standalone ZooKeeper, a distributed_ddl queue):
 *  - CREATE DATABASE ... ON CLUSTER crashed the server (SIGSEGV, three
 *    runs of three): databases must be made on each shard by itself;
 *  - CREATE TABLE ... ON CLUSTER made the Replicated local tables and
 *    the Distributed tables over them (sharding key host_id, already a
 *    hash) on both shards; ALTER ... ON CLUSTER ADD COLUMN, DELETE and
 *    DROP PARTITION worked on the local tables, but ADD COLUMN on the
 *    Distributed table was refused ("isn't replicated, but shard is"):
 *    without ON CLUSTER, on the one server that has it, it is taken;
 *  - an INSERT into the Distributed table with insert_distributed_sync=1
 *    was acknowledged with both shards' parts written (without it,
 *    ClickHouse documents, it is queued on the local disk and
 *    acknowledged before: a commits row could land before its rows), and
 *    the same INSERT twice was kept once (each shard's block dedup);
 *  - with one shard down, reads and synchronous INSERTs through the
 *    Distributed table fail (back-pressure, as a server down), and an ON
 *    CLUSTER statement waits distributed_ddl_task_timeout and stays queued
 *    for the missing shard; cluster('NAME', system.mutations) reads
 *    every shard's mutations (the cleanup's wait);
 *  - a subquery IN (SELECT ... FROM commits) in a read of a Distributed
 *    table runs on each shard, which has no commits ("Table ...commits
 *    doesn't exist"): CH_COMMITTED is GLOBAL IN.
 *
 * Queries give SQLite's answers: the filter compiles to ClickHouse SQL
 * (clickhouse_filter.h), count and select page on (ts, _tc_row)
 * (clickhouse_query.h), histograms group there (clickhouse_hist.c),
 * --follow goes in commit order (clickhouse_tail.c). COMM, the name a
 * task had at each event, is a join of each event to its task's names as
 * arrays, picked by time with array functions (clickhouse_comm.h): 18.16
 * has no ASOF JOIN and no correlated subquery; only a query that reads
 * COMM pays for it. --sql is refused (clickhouse_sql.c says why).
 *
 * A newer server. The backend writes and reads the subset 18.16 takes,
 * whatever the server. At connect the writer asks SELECT version() and
 * logs once which of these the server has and what each would change
 * (clickhouse_version.c); it uses none of them, so every server answers
 * alike, and taking one up is left for later:
 *  - ASOF JOIN (19.5): COMM, the name a task had at each event, found
 *    by a join on time instead of per-pid arrays (clickhouse_comm.h);
 *  - query parameters (19.11): values bound instead of literals escaped
 *    by ch_sql_str() (clickhouse_escape.h);
 *  - DateTime64 (20.1): ts as a time type rather than Int64 ns;
 *  - insert_deduplication_token (22.2), and ReplicatedMergeTree's block
 *    dedup on any release (used with ?replicated, above): a resent batch
 *    a no-op instead of a delete;
 *  - lightweight DELETE (22.8): the cleanup of an unfinished commit cheap.
 * Not detected, because not needed by what we store: TTL (19.6; retention
 * drops day partitions), codecs (19.x), LowCardinality (stable in 19.x).
 *
 * Back-pressure. A server that is down or slow (past the HTTP timeout)
 * makes the writer's ops fail with TC_ERR_DB, as a locked SQLite does:
 * the ingest worker keeps the journal, which holds agents back when full,
 * and stores again; it says once in the log that storing is held up and
 * once that it resumed, and traceq --stats says since when meanwhile
 * (ingest_stalled(), for every store). clickhouse_util.c notes the
 * outage at debug level only.
 *
 * Retention (clickhouse_retain.c). Event tables are partitioned by day:
 * a day wholly before the cut goes by DROP PARTITION, a partial day by
 * ALTER TABLE DELETE (a mutation, done in the background in 18.16, which
 * rewrites the day's parts: so the age cut moves by the hour). A round
 * counts the rows before its cut of completed commits (drops, freed bytes
 * per host for the quotas) and writes its (cut, upto) in retain_cuts in
 * the same commit; the rows are removed only after that commit, and no
 * round counts while one is not done: each event is counted exactly once
 * across kill -9 (the argument is in that file). The size limit sums
 * bytes_on_disk of the database's active parts (system.parts). A newer
 * server could do better, left for later: TTL (19.6) would age rows out
 * by itself (but uncounted), lightweight DELETE (22.8) would make the
 * partial day cheap.
 *
 * The SQLite machinery does not apply: no DB.lock (tracecollectd skips
 * ownfiles' database checks for a remote store), no WAL checkpointer, no
 * file to lose and reopen. One thread of its own, the sender
 * (clickhouse_send.h), started by the ingest worker, whose policy it
 * inherits (thread_policy is NULL).
 *
 * The parts, from the top down; each includes only the headers below it:
 *   clickhouse.c         open, close, migrations, the ops tables
 *   clickhouse_retain.c  retention: rounds, counted once        (writer)
 *   clickhouse_meta.c    hosts, counters, marks, names, programs,
 *                        printk formats, usage                (writer)
 *   clickhouse_schema.c  event tables, columns, formats, insert;
 *                        schemas                              (both)
 *   clickhouse_hist.c    histograms                          (reader)
 *   clickhouse_tail.c    --follow                            (reader)
 *   clickhouse_query.c   count, select, the rows' WHERE      (reader)
 *   clickhouse_comm.c    COMM: each row's task name          (reader)
 *   clickhouse_filter.c  bound filters as SQL (fuzzed)
 *   clickhouse_reader.c  hosts, stats, drops, host_find, printk ... (reader)
 *   clickhouse_boots.c   boots, their formats, losses, clocks  (both)
 *   clickhouse_symbols.c names of addresses, a reader's cache  (reader)
 *   clickhouse_version.c what a newer server would do better   (writer)
 *   clickhouse_stacks.c  stacks stored once each: references in the
 *                        rows, their frames per page          (both)
 *   clickhouse_fleet.c   the live-host set, the --collector-id check (writer)
 *   clickhouse_txn.c     commit ids, commit, rollback, cleanup (writer)
 *   clickhouse_shards.c  several servers: the event tables' DDL on each,
 *                        the Distributed tables, system tables of all (both)
 *   clickhouse_send.c    the sender thread: one batch's INSERT at a
 *                        time beside the writer's own          (writer)
 *   clickhouse_util.c    errors, statements, RowBinary, batches, ids
 *   clickhouse_http.c    libcurl: statements, queries, INSERT bodies
 *   clickhouse_reply.c   TabSeparated replies (untrusted: fuzzed)
 *   clickhouse_escape.c  literals and identifiers (fuzzed)
 */
#ifndef SERVER_STORE_CLICKHOUSE_H
#define SERVER_STORE_CLICKHOUSE_H

#include <stdbool.h>
#include <stddef.h>

#include "server/store/store_ops.h"

/* The scheme a path names this backend by. */
#define CH_SCHEME	"clickhouse://"

/*
 * store_clickhouse_writer_open, store_clickhouse_reader_open - a writer
 * (migrating the schema) or a reader of the ClickHouse database @url
 * names, authenticated as @auth says (may be NULL). On failure, why into
 * @errmsg[@len].
 */
int store_clickhouse_writer_open(const char *url, const struct store_remote_auth *auth,
				 struct store_writer **out, char *errmsg, size_t len);
int store_clickhouse_reader_open(const char *url, const struct store_remote_auth *auth,
				 struct store_reader **out, char *errmsg, size_t len);

#endif
