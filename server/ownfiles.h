/*
 * ownfiles.h - the collector's own files at start: the directories it
 * keeps them in are its own alone (common/safedir.h), its database's lock,
 * and the ready file (module-private to server/).
 *
 * A directory someone else may write (a database under /tmp, a journal
 * directory made 0777 before the collector first ran) would let a local
 * user plant journal files, or symlinks the collector (often root) then
 * writes through (issue 30). So the collector refuses, at start, with the
 * reason: the database's directory, the journal directory and its
 * quarantine/ must be owned by the collector's user and writable by no one
 * else; so must the database file, its -wal and -shm where they exist.
 */
#ifndef SERVER_OWNFILES_H
#define SERVER_OWNFILES_H

/*
 * ownfiles_check - check the directory of database @db (into *@db_dfd,
 * for ownfiles_lock_db()), the database's files that exist, and the
 * journal directory @journal_dir (NULL: none; made when missing) with its
 * quarantine/ when it has one. @db NULL (a database on a server): only
 * the journal, *@db_dfd -1. Each refusal is logged with its reason.
 * Return: 0 and *@db_dfd; -EPERM; -errno.
 */
int ownfiles_check(const char *db, const char *journal_dir, int *db_dfd);

/*
 * ownfiles_lock_db - one collector per database: "DB.lock" in @dfd (the
 * database's checked directory) stays flock()ed for the process's life
 * (lockfile.h). Logged. Return: 0 and *@fd; -EBUSY; -EPERM; -errno.
 */
int ownfiles_lock_db(int dfd, const char *db, int *fd);

/* A ready file: its directory, its name there. */
struct ownfiles_ready {
	int dfd;		/* -1: none written */
	const char *name;	/* in the path given to ownfiles_ready_write() */
};

/*
 * ownfiles_ready_write - write @text as ready file @path: into a new file
 * of a random name in its directory (O_EXCL, no symlink followed), renamed
 * over @path (safedir_write()). @path stays the caller's until
 * ownfiles_ready_remove(). Return: 0 and *@r; -errno.
 */
int ownfiles_ready_write(const char *path, const char *text, struct ownfiles_ready *r);

/* ownfiles_ready_remove - remove the ready file @r wrote (none: nothing). */
void ownfiles_ready_remove(struct ownfiles_ready *r);

#endif
