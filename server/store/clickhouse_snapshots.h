/*
 * clickhouse_snapshots.h - the flight recorders' snapshots on ClickHouse
 * (issue 38; sql/clickhouse/0009-snapshots.sql).
 */
#ifndef SERVER_STORE_CLICKHOUSE_SNAPSHOTS_H
#define SERVER_STORE_CLICKHOUSE_SNAPSHOTS_H

#include "server/store/clickhouse_int.h"

/* ch_snapshots_ops - the snapshot ops into @w and @r. */
void ch_snapshots_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
