/*
 * clickhouse_sql.h - traceq --sql on ClickHouse: refused on 18.16,
 * clickhouse_sql.c says why.
 */
#ifndef SERVER_STORE_CLICKHOUSE_SQL_H
#define SERVER_STORE_CLICKHOUSE_SQL_H

#include "server/store/store_ops.h"

/* ch_sql_reader_ops - put sql into @r. */
void ch_sql_reader_ops(struct store_reader_ops *r);

#endif
