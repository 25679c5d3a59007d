/*
 * lockfile.c - an flock(2)ed file that names its holder (lockfile.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string.h>

#include <sys/file.h>
#include <sys/stat.h>

#include "common/lockfile.h"
#include "common/safedir.h"
#include "common/tc_error.h"

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

/* Open, check and flock @name; with @holder, on -EBUSY say who holds it. */
static int lockfile_lock(int dfd, const char *name, int *fd, long *holder, char *why,
			 size_t len)
{
	int f = openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	int ret;

	if (f < 0) {
		tc_seterr(why, len, "%s", strerror(errno));
		return -errno;
	}
	ret = safedir_check_fd(f, 0, why, len);
	if (ret < 0) {
		close(f);
		return ret;
	}
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

int lockfile_take(int dfd, const char *name, int *fd, long *holder, char *why, size_t len)
{
	int ret = lockfile_lock(dfd, name, fd, holder, why, len);

	if (ret == 0)
		lockfile_note_pid(*fd);
	return ret;
}

int lockfile_take_quiet(int dfd, const char *name, int *fd, char *why, size_t len)
{
	return lockfile_lock(dfd, name, fd, NULL, why, len);
}
