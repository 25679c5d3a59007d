/*
 * sqlite_retain.h - the SQLite backend's retention (store_retain(),
 * sqlite_retain.c).
 */
#ifndef SERVER_STORE_SQLITE_RETAIN_H
#define SERVER_STORE_SQLITE_RETAIN_H

#include "server/store/sqlite_int.h"

/* sq_retain_ops - this part's ops (retain; size) into the tables (sqlite.c). */
void sq_retain_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
