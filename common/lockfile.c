/*
 * lockfile.c - an flock(2)ed file that names its holder (lockfile.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <sys/file.h>

#include "common/lockfile.h"

void lockfile_note_pid(int fd)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

	if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, (size_t)n, 0) != n)
		(void)ftruncate(fd, 0);	/* a torn pid is worse than none */
}

/* The pid the holder of @fd's lock wrote there; 0: none. */
static long lockfile_holder(int fd)
{
	char buf[32], *end;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	return pid > 0 && (*end == '\n' || *end == '\0') ? pid : 0;
}

/* Open and flock @path; with @holder, on -EBUSY say who holds it. */
static int lockfile_lock(const char *path, int *fd, long *holder)
{
	int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	int ret = 0;

	if (f < 0)
		return -errno;
	if (flock(f, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (ret == -EBUSY && holder)
			*holder = lockfile_holder(f);
		close(f);
		return ret;
	}
	*fd = f;
	return 0;
}

int lockfile_take(const char *path, int *fd, long *holder)
{
	int ret = lockfile_lock(path, fd, holder);

	if (ret == 0)
		lockfile_note_pid(*fd);
	return ret;
}

int lockfile_take_quiet(const char *path, int *fd)
{
	return lockfile_lock(path, fd, NULL);
}
