/*
 * sqlite_index.h - the SQLite backend's field indexes (store_set_indexes(),
 * sqlite_index.c).
 */
#ifndef SERVER_STORE_SQLITE_INDEX_H
#define SERVER_STORE_SQLITE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store/sqlite_int.h"
#include "server/store/sqlite_util.h"

/* sq_ix_type - create the wanted field indexes that type @type_id lacks. */
int sq_ix_type(struct sq_store *s, int64_t type_id, const char *system, const char *name,
	       const char *table, unsigned *created);
/* sq_ix_usable - whether a promised `column == value` of @b has an index. */
int sq_ix_usable(struct sq_store *s, const struct store_schema *sc,
		 const struct sq_bind *b, size_t nb, bool *usable);

/* sq_index_ops - this part's ops (set_indexes) into the writer's table (sqlite.c). */
void sq_index_ops(struct store_writer_ops *w);

#endif
