/*
 * clickhouse_shards.h - a ClickHouse store over several servers, the
 * shards: clickhouse://HOST:PORT,HOST:PORT,.../DB[?cluster=NAME].
 *
 * Layout. The first server listed holds database DB as one server does:
 * every table but the events' (hosts, formats, commits, marks, counts,
 * names ...), and the readers' view of the events. Every shard, the first
 * too, holds database DB_shard with each event type's table of rows
 * (MergeTree, as clickhouse_schema.c makes it on one server); in DB on
 * the first server, ev_TYPE is a Distributed table of the same columns
 * over DB_shard.ev_TYPE on the cluster NAME (default "tracecollect") of
 * that server's remote_servers, which must list the same servers, one
 * shard each, as many as the address does (checked at open). So every
 * read is the one-server read, through the Distributed tables: the
 * rows' sets of commits (CH_COMMITTED) are GLOBAL IN, read once on the
 * first server and sent to the shards; joins of event rows to names
 * (COMM) run on the first server over the shards' rows.
 *
 * DDL. 18.16 crashes on CREATE DATABASE ... ON CLUSTER (clickhouse.h),
 * and ON CLUSTER needs ZooKeeper: the writer itself runs the event
 * tables' DDL on each shard over HTTP (CREATE, ADD COLUMN, DELETE, DROP
 * PARTITION: ch_shards_exec()), then on the Distributed table. Past
 * migrations touch no event table; a later one that does must go
 * through ch_shards_exec().
 *
 * Writes. The writer INSERTs each batch into the Distributed table with
 * insert_distributed_sync=1, sharding key host_id (a stable hash of the
 * host's name): ClickHouse sends each row to shard host_id modulo the
 * shards' count, and answers only when every shard has written its part
 * (without the setting it would queue them on the first server's disk
 * and answer first). Why by host: a host's rows stay on one shard, so a
 * query of some hosts (-H, a scope) reads few servers' granules and a
 * host's time order is one table's; hosts spread evenly, the hash being
 * uniform. Why through the Distributed table rather than a connection
 * per shard: the batches stay one per event type (the sender thread and
 * the commit as on one server), and the commit's argument stands as it
 * is (clickhouse.h): its `commits` row goes last, on the first server,
 * after every batch was acknowledged by every shard. A failed batch may
 * have landed on some shards: the cleanup of an unfinished commit
 * deletes on each shard (ch_shards_exec()) and waits for every shard's
 * mutations (ch_shards_system()).
 *
 * What it does not do: ?replicated with shards (refused at open: not
 * tested here); a shard added to a store keeps the old rows where they
 * are (reads are right, a host's rows are then on two shards); a shard
 * down makes reads and writes fail (back-pressure, as a server down).
 */
#ifndef SERVER_STORE_CLICKHOUSE_SHARDS_H
#define SERVER_STORE_CLICKHOUSE_SHARDS_H

#include <stdbool.h>

#include "server/store/clickhouse_escape.h"
#include "server/store/clickhouse_int.h"

#define CH_SHARDS_MAX		16
#define CH_SHARD_DB_SUFFIX	"_shard"
#define CH_CLUSTER_DEFAULT	"tracecollect"
/* the writer's setting with shards: a Distributed INSERT answered once every shard wrote */
#define CH_SHARDS_PARAMS	"insert_distributed_sync=1"

struct ch_http_conf;

/*
 * ch_shards_new - @s a store over the @n servers at @bases (the first is
 * @c's) on cluster @cluster: names, and for a writer a connection to
 * each in DB_shard. Return: 0; -ENOMEM; TC_ERR_DB.
 */
int ch_shards_new(struct ch_store *s, const struct ch_http_conf *c, const char *const *bases,
		  unsigned n, const char *cluster);
void ch_shards_free(struct ch_store *s);

/*
 * ch_shards_setup - a writer's check that the cluster has the address's
 * shards, and DB_shard made on each. Nothing without shards.
 * Return: 0; TC_ERR_CONFIG (said in @s); TC_ERR_DB.
 */
int ch_shards_setup(struct ch_store *s);

/*
 * ch_shards_exec - a statement on event tables (@q names them as in DB):
 * on each shard's DB_shard, or on the one server. Return: what ch_exec() returns.
 */
int ch_shards_exec(struct ch_store *s, const struct ch_sql *q);

/*
 * ch_shards_table_ddl - @q, the CREATE TABLE (@create) or ALTER TABLE
 * ADD COLUMN of one column of event table @table, run on each shard, then
 * its Distributed table made or altered alike on the first server (a
 * column there already is done: the writer may have stopped between).
 * Without shards: @q, which may add several columns.
 */
int ch_shards_table_ddl(struct ch_store *s, const char *table, const struct ch_sql *q, bool create);

/*
 * ch_shards_system - " FROM system.@table WHERE database ..." of the
 * store's databases into @q: every shard's (cluster()) when sharded.
 */
void ch_shards_system(struct ch_store *s, struct ch_sql *q, const char *table);

#endif
