/*
 * sqlite_symbols.h - the SQLite backend's programs and their function
 * symbols (sqlite_symbols.c).
 */
#ifndef SERVER_STORE_SQLITE_SYMBOLS_H
#define SERVER_STORE_SQLITE_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/store/sqlite_int.h"

/*
 * sq_host_boot_exists - whether @sql, with host_id and boot_id as its two
 * parameters, returns a row; @what names it in an error.
 */
int sq_host_boot_exists(struct sq_store *s, const char *sql, uint64_t host_id,
			const char *boot_id, const char *what, bool *found);

/* sq_symbols_ops - this part's ops into the tables (sqlite.c). */
void sq_symbols_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
