/*
 * snapshot.h - traceq --snapshot-id N for the modes that read events
 * (select, count, --export, ...): the snapshot's hosts and window (op 32),
 * made the query's --host list and --since/--until before the mode runs.
 * An armed recorder ships nothing but its snapshots, so its events in the
 * window are the snapshot's (two snapshots of one host never overlap: the
 * second holds only what came after the first's buffer was read). Prefix
 * tq_snapshot_.
 */
#ifndef TRACEQ_SNAPSHOT_H
#define TRACEQ_SNAPSHOT_H

struct client;
struct traceq_opts;

/*
 * tq_snapshot_narrow - set @o->sel's hosts and window to snapshot
 * @o->snapshot_id's: its hosts whose buffers held events, from the
 * earliest first event to the latest last one. The host names are kept in
 * @o until tq_snapshot_free(). Return: 0; 1 (failed, said); 2 (no such
 * snapshot in the asker's scope, or it holds no events; said).
 */
int tq_snapshot_narrow(struct client *c, struct traceq_opts *o);

/* tq_snapshot_free - the names tq_snapshot_narrow() kept. */
void tq_snapshot_free(struct traceq_opts *o);

#endif
