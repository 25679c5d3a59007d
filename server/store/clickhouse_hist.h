/*
 * clickhouse_hist.h - histograms on ClickHouse (store_hist(), traceq
 * --hist), with SQLite's keys, values, sort and size: clickhouse_hist.c
 * says how, and which keys are refused and why.
 */
#ifndef SERVER_STORE_CLICKHOUSE_HIST_H
#define SERVER_STORE_CLICKHOUSE_HIST_H

#include "server/store/store_ops.h"

/* ch_hist_reader_ops - put hist into @r. */
void ch_hist_reader_ops(struct store_reader_ops *r);

#endif
