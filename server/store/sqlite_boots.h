/*
 * sqlite_boots.h - each host's boots as their kernels described them, the
 * formats they sent, and where they lost events (sqlite_boots.c).
 */
#ifndef SERVER_STORE_SQLITE_BOOTS_H
#define SERVER_STORE_SQLITE_BOOTS_H

#include "server/store/sqlite_int.h"

/* sq_boots_ops - this part's ops into the tables (sqlite.c). */
void sq_boots_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
