/*
 * clickhouse_retain.h - retention on ClickHouse (store_retain()): rounds
 * counted in a commit and removed after it, whole days by DROP PARTITION,
 * the rest by ALTER TABLE DELETE; clickhouse_retain.c says why each event
 * is counted exactly once.
 */
#ifndef SERVER_STORE_CLICKHOUSE_RETAIN_H
#define SERVER_STORE_CLICKHOUSE_RETAIN_H

#include "server/store/store_ops.h"

void ch_retain_ops(struct store_writer_ops *w);

#endif
