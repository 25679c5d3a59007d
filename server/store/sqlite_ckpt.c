/*
 * sqlite_ckpt.c - the SQLite backend's checkpointer.
 *
 * Checkpoints (copying committed pages from the WAL into the database
 * file) run on a thread and connection of their own, so the writes and
 * fsyncs they make are off the ingest path (PRAGMA wal_autocheckpoint
 * would run them inside COMMIT). After a commit that left SQ_CKPT_FRAMES
 * or more frames in the WAL, the checkpointer is asked for a PASSIVE
 * checkpoint. The WAL starts over from its beginning only when a
 * transaction starts with every frame copied, which a writer that never
 * pauses would rarely see: a commit that leaves SQ_WAL_FRAMES or more
 * waits for a checkpoint of everything, so the WAL stays bounded.
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_ckpt.h"
#include "server/store/sqlite_util.h"

#define SQ_CKPT_FRAMES	1000		/* WAL frames that start a checkpoint */
#define SQ_WAL_FRAMES	16384		/* WAL frames a commit waits below */

static void *sq_ckpt_main(void *arg)
{
	struct sq_store *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		unsigned req;

		while (q->ckpt_ran == q->ckpt_req && !q->ckpt_stop)
			pthread_cond_wait(&q->ckpt_wake, &q->lock);
		if (q->ckpt_stop)
			break;
		req = q->ckpt_req;
		pthread_mutex_unlock(&q->lock);
		/*
		 * A failure loses nothing (the frames stay in the WAL for the
		 * next one) and has no caller to go to; a full disk shows at
		 * the next COMMIT.
		 */
		sqlite3_wal_checkpoint_v2(q->ckdb, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_lock(&q->lock);
		q->ckpt_ran = req;
		pthread_cond_broadcast(&q->ckpt_done);
	}
	q->ckpt_ran = q->ckpt_req;
	pthread_cond_broadcast(&q->ckpt_done);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* The WAL hook: how many frames the WAL holds after a commit. */
static int sq_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct sq_store *q = arg;

	(void)db;
	(void)name;
	q->wal_frames = frames;
	return SQLITE_OK;
}

void sq_ckpt_after_commit(struct sq_store *q)
{
	unsigned req;

	if (!q->ckpt_started || q->wal_frames < SQ_CKPT_FRAMES)
		return;
	pthread_mutex_lock(&q->lock);
	req = ++q->ckpt_req;
	pthread_cond_signal(&q->ckpt_wake);
	while (q->wal_frames >= SQ_WAL_FRAMES && q->ckpt_ran - req > (~0u >> 1))
		pthread_cond_wait(&q->ckpt_done, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

int sq_ckpt_start(struct sq_store *q, const char *path)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
	int ret;

	if (sqlite3_open_v2(path, &q->ckdb, flags, NULL) != SQLITE_OK)
		return sq_errf(q, TC_ERR_DB, "checkpointer: %s",
			       q->ckdb ? sqlite3_errmsg(q->ckdb) : "out of memory");
	sqlite3_busy_timeout(q->ckdb, 5000);
	/* closing it never touches PATH-wal by name (sqlite_file.c) */
	sqlite3_db_config(q->ckdb, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	q->ckpt_stop = false;	/* started again after a reopen */
	if (sqlite3_exec(q->ckdb, "PRAGMA synchronous=NORMAL; PRAGMA cache_size=16",
			 NULL, NULL, NULL) != SQLITE_OK)
		return sq_errf(q, TC_ERR_DB, "checkpointer: %s",
			       sqlite3_errmsg(q->ckdb));
	ret = -pthread_create(&q->ckpt, NULL, sq_ckpt_main, q);
	q->ckpt_started = ret == 0;
	if (ret == 0)
		sqlite3_wal_hook(q->db, sq_wal_hook, q);	/* replaces autocheckpoint */
	return ret;
}

void sq_ckpt_stop(struct sq_store *q)
{
	if (q->ckpt_started) {
		pthread_mutex_lock(&q->lock);
		q->ckpt_stop = true;
		pthread_cond_signal(&q->ckpt_wake);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->ckpt, NULL);
		q->ckpt_started = false;
	}
	sqlite3_close(q->ckdb);
	q->ckdb = NULL;
}
