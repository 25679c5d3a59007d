/*
 * sqlite_errors.h - SQLite's failures in words a person can act on
 * (sqlite_errors.c); below every other part of the SQLite backend.
 */
#ifndef SERVER_STORE_SQLITE_ERRORS_H
#define SERVER_STORE_SQLITE_ERRORS_H

#include <stddef.h>

#include <sqlite3.h>

/*
 * sq_explain - SQLite's failure @rc (extended) on @db (NULL: none) as words
 * a person can act on (not an SQLite database, permission denied, disk
 * full, read-only, locked by another process...), SQLite's message in
 * parentheses, into @buf.
 */
void sq_explain(sqlite3 *db, int rc, char *buf, size_t len);

#endif
