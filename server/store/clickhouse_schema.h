/*
 * clickhouse_schema.h - event tables and their columns, the formats of
 * each type per host and boot (writer: type, insert), and the schemas a
 * reader hands out (schema_get, schema_list, type_seen).
 */
#ifndef SERVER_STORE_CLICKHOUSE_SCHEMA_H
#define SERVER_STORE_CLICKHOUSE_SCHEMA_H

#include "server/store/clickhouse_int.h"

/* The fixed columns every event table starts with, in order. */
#define CH_EV_FIXED	"host_id", "cpu", "ts", "trace_ts", "_tc_fmt", "_tc_commit", "_tc_row"
#define CH_EV_NFIXED	7

/* An event table's partition key: its day (retention drops whole days). */
#define CH_PARTITION	"toYYYYMMDD(toDateTime(intDiv(ts, 1000000000)))"

/* Sending the rows of every type past this many bytes happens at insert. */
#define CH_TYPE_FLUSH_BYTES	(16u << 20)

void ch_schema_writer_ops(struct store_writer_ops *w);
void ch_schema_reader_ops(struct store_reader_ops *r);

/* ch_schema_free - the writer's tables and types. */
void ch_schema_free(struct ch_store *s);

/* ch_table_name - the table of type @system:@name into @buf (@len >= 128). */
void ch_table_name(const char *system, const char *name, uint64_t type_id, char *buf,
		   size_t len);

#endif
