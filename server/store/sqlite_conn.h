/*
 * sqlite_conn.h - a connection of the SQLite backend to its file
 * (sqlite_conn.c).
 */
#ifndef SERVER_STORE_SQLITE_CONN_H
#define SERVER_STORE_SQLITE_CONN_H

#include "server/store/sqlite_int.h"

/*
 * sq_connect - open @q->path into @q->db as the handle is (a reader, or a
 * writer: set up, migrated, with its checkpointer). On failure @q->db may
 * be set: sq_disconnect() it.
 */
int sq_connect(struct sq_store *q);
/* sq_disconnect - stop the checkpointer, finalize every statement, close db. */
void sq_disconnect(struct sq_store *q);

#endif
