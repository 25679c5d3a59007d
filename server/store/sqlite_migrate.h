/*
 * sqlite_migrate.h - the SQLite backend's schema migrations (sql/),
 * applied when a writer opens its file (sqlite_migrate.c).
 */
#ifndef SERVER_STORE_SQLITE_MIGRATE_H
#define SERVER_STORE_SQLITE_MIGRATE_H

#include "server/store/sqlite_int.h"

/* sq_user_version - the file's schema version (PRAGMA user_version). */
int sq_user_version(struct sq_store *s, int *version);
/*
 * sq_migrate - apply the migrations newer than the file's user_version.
 * Return: 0; TC_ERR_DB_SCHEMA (the file is newer than this program, or a
 * migration failed: rolled back); TC_ERR_DB.
 */
int sq_migrate(struct sq_store *s);

#endif
