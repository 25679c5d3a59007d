/*
 * sqlite_import.h - what an import asks the store before it begins
 * (store_import_check(), sqlite_import.c).
 */
#ifndef SERVER_STORE_SQLITE_IMPORT_H
#define SERVER_STORE_SQLITE_IMPORT_H

#include "server/store/sqlite_int.h"

/* sq_import_ops - this part's op (import_check) into the reader's table (sqlite.c). */
void sq_import_ops(struct store_reader_ops *r);

#endif
