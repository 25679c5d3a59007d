/*
 * queryd.h - tracecollectd's query endpoint: an nng REP socket served by a
 * thread of its own with its own read-only store connection, so queries
 * never wait on ingest (WAL lets readers run beside the writer).
 */
#ifndef SERVER_QUERYD_H
#define SERVER_QUERYD_H

#include <stddef.h>
#include <stdint.h>

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

/* What the endpoint asks the collector's ingest (any thread may call it). */
struct queryd_ingest {
	/* 0 once what was received before the call is stored; -ETIMEDOUT */
	int (*wait_stored)(void *arg, int timeout_ms);
	/* batches received but not yet stored; bytes of the receive journal */
	void (*backlog)(void *arg, uint64_t *unstored, uint64_t *journal_bytes);
	void *arg;
};

/*
 * queryd_set_ingest - requests with sync_ms wait through @in first, and
 * every reply carries the backlog; NULL: neither (no ingest). Read per
 * request: any time is fine.
 */
void queryd_set_ingest(struct queryd *qd, const struct queryd_ingest *in);

/* queryd_stop - stop the thread and free everything; NULL is fine. */
void queryd_stop(struct queryd *qd);

#endif
