/*
 * clickhouse_send.h - a writer's sender: one thread with a connection of
 * its own that runs one event batch's INSERT at a time while the ingest
 * worker goes on decoding (a batch that filled up mid-transaction), or
 * while the writer's own connection sends another batch (at commit).
 *
 * Why: ClickHouse answers an INSERT once the part is written, and the
 * worker waited for each; with the sender the server's writing and the
 * collector's decoding overlap, and at commit two INSERTs run at once
 * (bench/run scale; the figures are in the commit that brought it).
 *
 * What it changes in the design (clickhouse.h): nothing. A batch handed
 * to the sender belongs to the open transaction like any other: the
 * commit waits for it (ch_send_wait()) before it sends the counted rows
 * and the commits row, and a rollback waits for it too, so that no row
 * of a failed commit lands after the writer has deleted them. A failed
 * send is reported by the next ch_send_start() or ch_send_wait(), with
 * the server's sentence in the writer's message, and the writer keeps
 * failing until rollback (store_ops.h: an insert may fail later).
 *
 * Threads: the ch_send_* calls are the writer's (one thread); the sender
 * thread touches only its connection and the rows handed to it. It is
 * started by the first ch_send_start(), from the ingest worker, whose
 * scheduling policy it inherits (SCHED_IDLE with a journal).
 */
#ifndef SERVER_STORE_CLICKHOUSE_SEND_H
#define SERVER_STORE_CLICKHOUSE_SEND_H

#include "server/store/clickhouse_int.h"

/*
 * ch_send_start - hand @b's rows to the sender (after waiting for the
 * batch it had) and leave @b empty. Return: 0; the earlier send's
 * failure (then @b keeps its rows); -ENOMEM, TC_ERR_DB (no sender).
 */
int ch_send_start(struct ch_store *s, struct ch_batch *b);

/* ch_send_idle - whether the sender has no batch now (or is not started). */
bool ch_send_idle(struct ch_store *s);

/*
 * ch_send_wait - wait until the sender has no batch. Return: 0; the
 * failure of the batch it had (its sentence in @s's message).
 */
int ch_send_wait(struct ch_store *s);

/* ch_send_free - stop the sender (after its batch) and free it. */
void ch_send_free(struct ch_store *s);

#endif
