/*
 * sqlite_snapshots.h - the SQLite backend's flight-recorder snapshots
 * (sqlite_snapshots.c): the snapshots and snapshot_hosts tables.
 */
#ifndef SERVER_STORE_SQLITE_SNAPSHOTS_H
#define SERVER_STORE_SQLITE_SNAPSHOTS_H

#include "server/store/sqlite_int.h"

/* sq_snapshots_ops - this part's ops into the tables (sqlite.c). */
void sq_snapshots_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
