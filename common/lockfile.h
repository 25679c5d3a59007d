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
 * lockfile_take - open (creating it, mode 0600) the file @name in
 * directory @dfd (a checked one, safedir.h; AT_FDCWD: @name is a path)
 * and lock it exclusively without waiting; then write this process's pid
 * into it. The descriptor is close-on-exec; closing it releases the lock.
 * A symlink is not followed, and a file that is not ours alone
 * (safedir_check()) is refused: its contents are ours to trust.
 *
 * Return: 0 and *@fd; -EBUSY when another open of the file holds the lock:
 * then *@holder (@holder may be NULL) is the pid written there, 0 when it
 * names none; -EPERM (not ours alone: the reason in @why, @len bytes);
 * -errno.
 */
int lockfile_take(int dfd, const char *name, int *fd, long *holder, char *why, size_t len);

/*
 * lockfile_take_quiet - lockfile_take() that writes nothing into the file:
 * for a lock file whose contents are the holder's own (the receive
 * journal keeps its unit in progress and its key there, which the next
 * run reads). Return: 0 and *@fd; -EBUSY; -EPERM; -errno.
 */
int lockfile_take_quiet(int dfd, const char *name, int *fd, char *why, size_t len);

/*
 * lockfile_note_pid - write this process's pid into the lock file @fd
 * again (after daemon(3) forked). Best effort: the lock is what counts.
 */
void lockfile_note_pid(int fd);

#endif
