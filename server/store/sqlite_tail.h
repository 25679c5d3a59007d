/*
 * sqlite_tail.h - the SQLite backend's rows in storage order
 * (store_tail(), traceq --follow; sqlite_tail.c).
 */
#ifndef SERVER_STORE_SQLITE_TAIL_H
#define SERVER_STORE_SQLITE_TAIL_H

#include "server/store/sqlite_int.h"

/* sq_tail_ops - this part's op (tail) into the reader's table (sqlite.c). */
void sq_tail_ops(struct store_reader_ops *r);

#endif
