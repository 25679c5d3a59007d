/*
 * sqlite_schema.h - the SQLite backend's event types and their tables
 * (sqlite_schema.c).
 */
#ifndef SERVER_STORE_SQLITE_SCHEMA_H
#define SERVER_STORE_SQLITE_SCHEMA_H

#include <stdbool.h>

#include "server/store/sqlite_int.h"

/* sq_schema_find - store_schema_get() on @s's connection as it is. */
int sq_schema_find(struct sq_store *s, const char *system, const char *event,
		   struct store_schema **out);
/*
 * sq_schema_walk - store_schema_list() on @s's connection as it is, with
 * the columns of each schema when @cols.
 */
int sq_schema_walk(struct sq_store *s, const char *system, bool cols,
		   int (*fn)(void *ctx, const struct store_schema *sc), void *ctx);

/* sq_schema_ops - this part's ops into the tables (sqlite.c). */
void sq_schema_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
