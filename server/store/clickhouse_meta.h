/*
 * clickhouse_meta.h - the writer's facts and counters besides events:
 * hosts, per-CPU counts and reports, drops, stream and journal marks,
 * names (cmdlines, renames), programs and symbols, printk formats, the
 * bytes each host stored and the ops ClickHouse has nothing to do for
 * (indexes, thread policy). Retention is clickhouse_retain.c's.
 */
#ifndef SERVER_STORE_CLICKHOUSE_META_H
#define SERVER_STORE_CLICKHOUSE_META_H

#include "server/store/clickhouse_int.h"

/* ch_meta_init - the fixed tables' batches of a writer. Return: 0; -ENOMEM. */
int ch_meta_init(struct ch_store *s);
/* ch_meta_free - those batches, the hosts and marks the writer keeps. */
void ch_meta_free(struct ch_store *s);

void ch_meta_writer_ops(struct store_writer_ops *w);

#endif
