/*
 * clickhouse_boots.h - what an export to trace.dat needs of a host besides
 * its rows, on ClickHouse (issue 33; sql/clickhouse/0003-boots-losses.sql):
 * each boot as its kernel described itself, the formats it sent in that
 * boot, and where its kernel lost events. The same answers as
 * sqlite_boots.c.
 */
#ifndef SERVER_STORE_CLICKHOUSE_BOOTS_H
#define SERVER_STORE_CLICKHOUSE_BOOTS_H

#include "server/store/store_ops.h"

/* ch_boots_ops - put losses_put, boot, losses, boot_get and boot_formats into @w and @r. */
void ch_boots_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
