/*
 * clickhouse_symbols.h - naming a row's code address on ClickHouse
 * (store_symbol_name()), from the programs and symbols tables, with
 * sqlite_symbols.c's answers.
 */
#ifndef SERVER_STORE_CLICKHOUSE_SYMBOLS_H
#define SERVER_STORE_CLICKHOUSE_SYMBOLS_H

#include "server/store/clickhouse_int.h"

/* ch_symbols_reader_ops - put symbol_name into @r (after ch_reader_part_ops()). */
void ch_symbols_reader_ops(struct store_reader_ops *r);

/* ch_symbols_free - a reader's cache of names (NULL: none). */
void ch_symbols_free(struct ch_store *s);

#endif
