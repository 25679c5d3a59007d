/*
 * sqlite_hosts.h - the SQLite backend's fixed tables about the agents:
 * hosts, per-CPU counters, marks, comms and tgids, drop counters
 * (sqlite_hosts.c).
 */
#ifndef SERVER_STORE_SQLITE_HOSTS_H
#define SERVER_STORE_SQLITE_HOSTS_H

#include <stdint.h>

#include "server/store/sqlite_int.h"

/*
 * sq_host_freed - retention removed @rows rows of @host_id: give back its
 * page bytes per stored event for each (store_host_usage()).
 */
int sq_host_freed(struct sq_store *s, uint64_t host_id, uint64_t rows);
/* sq_drop_add - store_dropped() on @s's connection as it is (retention's). */
int sq_drop_add(struct sq_store *s, uint64_t host_id, const char *system, const char *name,
		const char *reason, uint64_t n);

/*
 * sq_prepare_hosts - @head, the hosts' conditions on column @col that @q
 * makes (its host globs and scope; NULL: none), @tail: prepared on @s and
 * bound. Return: 0; TC_ERR_DB; -ENOMEM.
 */
int sq_prepare_hosts(struct sq_store *s, const char *head, const char *tail,
		     const struct store_query *q, const char *col, sqlite3_stmt **st);
/* sq_text - text column @i of @st's row (NULL for NULL). */
const char *sq_text(sqlite3_stmt *st, int i);

/* sq_hosts_ops - this part's ops into the tables (sqlite.c). */
void sq_hosts_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
