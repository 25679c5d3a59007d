/*
 * lockfile.h - one process at a time on a resource: an flock(2)ed file
 * beside it (a receive journal's "DIR/lock", a database's "DB.lock"),
 * which may name the process holding it.
 *
 * flock() locks belong to the open file description: the lock is held
 * while the descriptor (or a copy made by fork) stays open, is released
 * when the process dies however it dies, and does not interfere with the
 * POSIX record locks SQLite takes on the database itself.
 */
#ifndef COMMON_LOCKFILE_H
#define COMMON_LOCKFILE_H

/*
 * lockfile_take - open (creating it, mode 0600) the file @path and lock it
 * exclusively without waiting; then write this process's pid into it.
 * The descriptor is close-on-exec; closing it releases the lock.
 *
 * Return: 0 and *@fd; -EBUSY when another open of the file holds the lock:
 * then *@holder (@holder may be NULL) is the pid written there, 0 when it
 * names none; -errno.
 */
int lockfile_take(const char *path, int *fd, long *holder);

/*
 * lockfile_take_quiet - lockfile_take() that writes nothing into the file:
 * for a lock file whose contents are the holder's own (the receive
 * journal keeps its unit in progress there, which the next run reads).
 * Return: 0 and *@fd; -EBUSY; -errno.
 */
int lockfile_take_quiet(const char *path, int *fd);

/*
 * lockfile_note_pid - write this process's pid into the lock file @fd
 * again (after daemon(3) forked). Best effort: the lock is what counts.
 */
void lockfile_note_pid(int fd);

#endif
