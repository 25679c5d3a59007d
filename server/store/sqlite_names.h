/*
 * sqlite_names.h - the host name and comm of each row a read passes on,
 * from a per-connection cache (sqlite_names.c).
 */
#ifndef SERVER_STORE_SQLITE_NAMES_H
#define SERVER_STORE_SQLITE_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "server/store/sqlite_int.h"

/*
 * The host names and comms of the rows of one read: sq_names_new() starts
 * a read on @s's connection's cache (nothing to free: sq_names_free() when
 * the connection closes), sq_names_host() and sq_names_comm() (NULL: none
 * known; valid until the next lookup of a comm).
 */
struct sq_names;
int sq_names_new(struct sq_store *s, struct sq_names **out);
const char *sq_names_host(struct sq_names *n, uint64_t host_id);
const char *sq_names_comm(struct sq_names *n, uint64_t host_id, int64_t pid);
void sq_names_free(struct sq_names *n);

/*
 * A select's row as a struct store_row: its values live in the arrays of
 * struct sq_rowbuf (one per schema column and one more, allocated by the
 * reader: sqlite_read.c, sqlite_window.c).
 */
struct sq_rowbuf {
	struct store_value *vals;
	bool *null;
	int pid;	/* schema index of common_pid, or -1 */
	struct sq_names *names;
};

/* sq_row_names - finish @r, whose values are in @rb: its pid, host name and comm. */
void sq_row_names(const struct store_schema *sc, struct sq_rowbuf *rb, struct store_row *r);

#endif
