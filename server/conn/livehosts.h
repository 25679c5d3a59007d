/*
 * livehosts.h - which hosts have an agent connected now: a small table of
 * host ids with a count of their welcomed connections (an agent may hold
 * more than one), kept by the event loop (conn.c: +1 at WELCOME, -1 when
 * that connection ends) and read by the query threads (traceq --hosts,
 * column `connected`). Every function takes the table's mutex, so any
 * thread may call any of them.
 */
#ifndef SERVER_LIVEHOSTS_H
#define SERVER_LIVEHOSTS_H

#include <stdbool.h>
#include <stdint.h>

struct livehosts;

/* livehosts_new - an empty table. Return: 0 and *@out; -ENOMEM. */
int livehosts_new(struct livehosts **out);

/* livehosts_free - free @l; NULL is fine. No thread may use it any more. */
void livehosts_free(struct livehosts *l);

/*
 * livehosts_add - one more connection of @host_id (0 and a NULL @l are
 * ignored). Return: 0; -ENOMEM (the host then reads as not connected).
 */
int livehosts_add(struct livehosts *l, uint64_t host_id);

/* livehosts_del - one connection of @host_id less (one that livehosts_add() took). */
void livehosts_del(struct livehosts *l, uint64_t host_id);

/* livehosts_connected - whether @host_id has a connection now; NULL @l: no. */
bool livehosts_connected(struct livehosts *l, uint64_t host_id);

/*
 * livehosts_ids - the hosts connected now, at most @max of them, into
 * @ids[]. Return: how many (0 for a NULL @l).
 */
size_t livehosts_ids(struct livehosts *l, uint64_t *ids, size_t max);

#endif
