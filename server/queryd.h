/*
 * queryd.h - tracecollectd's query endpoint: an nng REP socket served by a
 * thread of its own with its own read-only store connection, so queries
 * never wait on ingest (WAL lets readers run beside the writer).
 */
#ifndef SERVER_QUERYD_H
#define SERVER_QUERYD_H

#include <stddef.h>

struct queryd;

/*
 * queryd_start - listen on @url (nng; a tcp port of 0 picks a free one)
 * and answer queries against the database at @db_path.
 * @bound: receives the URL actually listened on.
 *
 * Return: 0 and *@out; a negative code (logged) when the URL cannot be
 * listened on or the database cannot be opened. *@out only on success.
 */
int queryd_start(const char *url, const char *db_path, struct queryd **out,
		 char *bound, size_t blen);

/*
 * queryd_set_sync - requests with sync_ms call @fn(@arg, sync_ms) first,
 * which returns 0 once what was received is stored, or -ETIMEDOUT. Call
 * before queries can arrive... or at any time: it is read per request.
 */
void queryd_set_sync(struct queryd *qd, int (*fn)(void *arg, int timeout_ms), void *arg);

/* queryd_stop - stop the thread and free everything; NULL is fine. */
void queryd_stop(struct queryd *qd);

#endif
