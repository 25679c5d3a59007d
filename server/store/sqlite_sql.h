/*
 * sqlite_sql.h - the user SQL surface of the SQLite backend (store_sql(),
 * traceq --sql; sqlite_sql.c).
 */
#ifndef SERVER_STORE_SQLITE_SQL_H
#define SERVER_STORE_SQLITE_SQL_H

#include "server/store/sqlite_int.h"

/* sq_sql_ops - this part's op (sql) into the reader's table (sqlite.c). */
void sq_sql_ops(struct store_reader_ops *r);

#endif
