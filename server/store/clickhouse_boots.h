/*
 * clickhouse_boots.h - what an export to trace.dat needs of a host besides
 * its rows, on ClickHouse (issue 33; sql/clickhouse/0003-boots-losses.sql):
 * each boot as its kernel described itself, the formats it sent in that
 * boot, and where its kernel lost events. The same answers as
 * sqlite_boots.c.
 */
#ifndef SERVER_STORE_CLICKHOUSE_BOOTS_H
#define SERVER_STORE_CLICKHOUSE_BOOTS_H

#include <stdint.h>

#include "server/store/clickhouse_int.h"

/*
 * ch_boots_ops - put losses_put, boot, losses, boot_get, boot_formats and
 * boot_programs into @w and @r.
 */
void ch_boots_ops(struct store_writer_ops *w, struct store_reader_ops *r);

/*
 * ch_losses_retain - retention's part of the losses: the days before
 * @before_ts's day dropped whole, as the event tables' (clickhouse_meta.c),
 * so a loss goes with the rows of its time (SQLite: sqlite_retain.c).
 * Return: 0; TC_ERR_DB.
 */
int ch_losses_retain(struct ch_store *s, int64_t before_ts);

#endif
