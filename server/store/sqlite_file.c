/*
 * sqlite_file.c - the SQLite backend keeps to the database file at its
 * path: removed (rm) or replaced (mv) under a running store, that is
 * noticed and the path opened again (store.h, "the database removed or
 * replaced").
 *
 * Noticing. SQLite keeps its descriptors to itself, so the file a
 * connection has open is known by what its name led to right after it was
 * opened (device and inode; while the connection holds the file, no other
 * file can take that inode number). A writer stats the path after every
 * COMMIT (sq_file_check()): another file there, or none, and the commit
 * fails, its rows being in a file no one will read. A reader stats it
 * before every read (sq_reader_enter()).
 *
 * Reopening safely. SQLite finds a database's WAL and shared memory by
 * name, "PATH-wal" and "PATH-shm", and in one process two database files
 * must never share them: opening an -shm again resets the memory other
 * connections have mapped (the POSIX locks that would stop it are per
 * process), and an old WAL would be replayed into the new file
 * (https://www.sqlite.org/howtocorrupt.html, "Unlinking or renaming a
 * database file while in use"). So a lost writer
 *   1. copies what its WAL holds into the old file (a PASSIVE checkpoint:
 *      a file moved elsewhere keeps its last commits),
 *   2. retires its event types and statements and closes its connections
 *      with SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, so closing touches no name,
 *   3. removes PATH-wal and PATH-shm if they are still its old file's (not
 *      when they came with a replacement),
 *   4. opens the path: the file there, or a new one, migrated.
 * A reader opens a replacement only once PATH-shm is no longer the one it
 * has mapped, that is after a writer's step 3, and its connections never
 * checkpoint on close either. A retired event type stays allocated (the
 * sinks of failed connections may still hold it) and fails every insert.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_ckpt.h"
#include "server/store/sqlite_conn.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_util.h"
#include "server/store/sqlite_write.h"

#define SQ_GONE "database %s was removed or replaced; "
#define SQ_WRITER_WAITS "not storing until it is back"
#define SQ_READER_WAITS "not back yet"

/* Where @path leads now into *@id. Return: 0; -errno (then id->set is false). */
static int sq_file_id(const char *path, struct sq_file_id *id)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		id->set = false;
		return -errno;
	}
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->set = true;
	return 0;
}

static bool sq_file_same(const struct sq_file_id *a, const struct sq_file_id *b)
{
	return a->set && b->set && a->dev == b->dev && a->ino == b->ino;
}

/* The database's @suffix file ("-wal", "-shm") into @buf; false: too long. */
static bool sq_side_path(const struct sq_store *q, const char *suffix, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", q->path, suffix);

	return n > 0 && (size_t)n < len;
}

static void sq_side_note(struct sq_store *q)
{
	char side[PATH_MAX];

	if (sq_side_path(q, "-wal", side, sizeof(side)))
		sq_file_id(side, &q->wal_id);
	if (sq_side_path(q, "-shm", side, sizeof(side)))
		sq_file_id(side, &q->shm_id);
}

void sq_file_note(struct sq_store *q)
{
	sq_file_id(q->path, &q->db_id);
	sq_side_note(q);
}

static int sq_lost(struct sq_store *s)
{
	return sq_errf(s, TC_ERR_DB, SQ_GONE SQ_WRITER_WAITS, s->path);
}

int sq_file_check(struct sq_store *s)
{
	struct sq_file_id now;
	int ret;

	if (!s->db_id.set)
		return 0;	/* nothing to compare with */
	ret = sq_file_id(s->path, &now);
	if (ret == 0 && sq_file_same(&now, &s->db_id)) {
		if (!s->wal_id.set || !s->shm_id.set)
			sq_side_note(s);	/* made after the open */
		return 0;
	}
	if (ret < 0 && ret != -ENOENT && ret != -ENOTDIR)
		return 0;	/* cannot tell (EACCES...): not a loss */
	s->lost = true;
	return sq_lost(s);
}

/* Step 3: remove the side file @suffix if it is still the one noted in @id. */
static void sq_side_remove(const struct sq_store *q, const char *suffix,
			   const struct sq_file_id *id)
{
	char side[PATH_MAX];
	struct sq_file_id now;

	if (sq_side_path(q, suffix, side, sizeof(side)) && sq_file_id(side, &now) == 0 &&
	    sq_file_same(&now, id))
		unlink(side);
}

/* Steps 1 to 3 (the file's header comment): let go of the lost file. */
static void sq_let_go(struct sq_store *q)
{
	sq_sync(q);		/* the writer thread is idle */
	pthread_mutex_lock(&q->lock);
	q->werr = 0;		/* what it failed on was the old file's */
	pthread_mutex_unlock(&q->lock);
	sq_ckpt_stop(q);
	if (!sqlite3_get_autocommit(q->db))
		sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	sq_types_retire(q);	/* step 2 */
	sqlite3_db_config(q->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	sq_disconnect(q);
	sq_side_remove(q, "-wal", &q->wal_id);
	sq_side_remove(q, "-shm", &q->shm_id);
	q->db_id.set = q->wal_id.set = q->shm_id.set = false;
	q->in_txn = false;
	q->wal_frames = 0;
}

/* The path could not be opened: say so, with why (@s's message so far). */
static int sq_lost_because(struct sq_store *s, const char *waits)
{
	char why[STORE_ERRMSG_MAX];

	memcpy(why, s->h->errmsg, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	return sq_errf(s, TC_ERR_DB, SQ_GONE "%s (opening it: %s)", s->path, waits, why);
}

/* Step 4: open the path again; on failure stay lost (db NULL). */
static int sq_reopen_writer(struct sq_store *q)
{
	struct sq_file_id there;
	bool existed;
	int ret;

	if (q->db)
		sq_let_go(q);
	existed = sq_file_id(q->path, &there) == 0;
	ret = sq_connect(q);
	if (ret < 0) {
		sq_disconnect(q);
		return sq_lost_because(q, SQ_WRITER_WAITS);
	}
	sq_file_note(q);
	q->lost = false;
	q->h->generation++;
	snprintf(q->h->note, sizeof(q->h->note), existed ?
		 "database %s reopened: another database file is at its path now" :
		 "database %s re-created: it was removed", q->path);
	return 0;
}

/*
 * A reader whose path leads elsewhere opens it anew; on failure it keeps
 * the old connection (a read fails, the next one tries again).
 */
static int sq_follow_reader(struct sq_store *q)
{
	struct sq_file_id now = { 0 }, shm = { 0 };
	sqlite3 *old = q->db;
	sqlite3_stmt *prog = q->prog_find, *sym = q->sym_find, *sized = q->sym_find_sized;
	char side[PATH_MAX];
	int ret;

	if (!q->db_id.set || (sq_file_id(q->path, &now) == 0 && sq_file_same(&now, &q->db_id)))
		return 0;	/* the same file (or nothing to compare with) */
	if (!now.set || (q->shm_id.set && sq_side_path(q, "-shm", side, sizeof(side)) &&
			 sq_file_id(side, &shm) == 0 && sq_file_same(&shm, &q->shm_id)))
		return sq_errf(q, TC_ERR_DB, SQ_GONE SQ_READER_WAITS, q->path);
	sq_cache_free(q);	/* statements of the old file: none is out between ops */
	q->db = NULL;
	q->prog_find = q->sym_find = q->sym_find_sized = NULL;
	ret = sq_connect(q);
	if (ret < 0) {
		sq_disconnect(q);
		q->db = old;
		q->prog_find = prog;
		q->sym_find = sym;
		q->sym_find_sized = sized;
		return sq_lost_because(q, SQ_READER_WAITS);
	}
	sq_file_note(q);
	sqlite3_finalize(prog);
	sqlite3_finalize(sym);
	sqlite3_finalize(sized);
	sqlite3_close(old);
	q->h->generation++;
	snprintf(q->h->note, sizeof(q->h->note), "database %s reopened", q->path);
	return 0;
}

int sq_writer_enter(struct sq_store *s)
{
	return s->lost ? sq_lost(s) : sq_sync(s);
}

int sq_writer_reopen(struct sq_store *s)
{
	return s->lost ? sq_reopen_writer(s) : 0;
}

int sq_reader_enter(struct sq_store *s)
{
	return sq_follow_reader(s);
}
