/*
 * sqlite.h - the SQLite backend's constructors, which the front (store.c)
 * calls: the top of the backend (sqlite.c), included from nowhere else.
 */
#ifndef SERVER_STORE_SQLITE_H
#define SERVER_STORE_SQLITE_H

#include <stddef.h>

#include "server/store/store_ops.h"

/*
 * store_sqlite_writer_open, store_sqlite_reader_open - a writer or a
 * reader of the SQLite database at @path (store_writer_open(),
 * store_reader_open()). On failure, why into @errmsg[@len].
 */
int store_sqlite_writer_open(const char *path, struct store_writer **out, char *errmsg,
			     size_t len);
int store_sqlite_reader_open(const char *path, struct store_reader **out, char *errmsg,
			     size_t len);

#endif
