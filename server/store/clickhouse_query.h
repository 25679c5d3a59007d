/*
 * clickhouse_query.h - a reader's reads of events on ClickHouse through
 * the filter compiler (clickhouse_filter.h): count, for now.
 *
 * A store_query becomes one WHERE over the type's table: the bound filter
 * (schema columns by the query's field_col; CPU is the cpu column), the
 * hosts it may read (their ids: host names are few and matched here, as
 * clickhouse_reader.c does), the window [from_ts, to_ts) as SQLite reads
 * it, the CPUs, the format (_tc_fmt), and only rows of commits that
 * completed (clickhouse.h). A filter that reads COMM is refused, saying
 * why: 18.16 has neither correlated subqueries nor ASOF JOIN to find the
 * name a task had at each event (comm_changes), and an approximation
 * would answer differently from SQLite.
 */
#ifndef SERVER_STORE_CLICKHOUSE_QUERY_H
#define SERVER_STORE_CLICKHOUSE_QUERY_H

#include "server/store/clickhouse_int.h"

/* ch_query_reader_ops - put count into @r (after ch_reader_part_ops()). */
void ch_query_reader_ops(struct store_reader_ops *r);

#endif
