/*
 * clickhouse_tail.h - the live tail on ClickHouse (store_tail(), traceq
 * --follow): the cursor is a _tc_row, in the writer's commit order;
 * clickhouse_tail.c says why no row can be skipped.
 */
#ifndef SERVER_STORE_CLICKHOUSE_TAIL_H
#define SERVER_STORE_CLICKHOUSE_TAIL_H

#include "server/store/store_ops.h"

/* ch_tail_reader_ops - put tail into @r. */
void ch_tail_reader_ops(struct store_reader_ops *r);

#endif
