/*
 * clickhouse_reader.h - a reader's simple ops on ClickHouse: hosts,
 * per-CPU stats, drops, finding a host, an import's checks, tgids and
 * printk formats (select, count and hist are clickhouse_query.c's and
 * clickhouse_hist.c's, names of addresses clickhouse_symbols.c's).
 */
#ifndef SERVER_STORE_CLICKHOUSE_READER_H
#define SERVER_STORE_CLICKHOUSE_READER_H

#include <stdbool.h>

#include "server/store/clickhouse_int.h"

void ch_reader_part_ops(struct store_reader_ops *r);

/*
 * ch_host_allowed - whether host @name passes @q's host glob, host list
 * and scope (@q NULL: yes), globs as SQLite's GLOB (fnmatch, no escapes).
 */
bool ch_host_allowed(const struct store_query *q, const char *name);

#endif
