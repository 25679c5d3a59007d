/*
 * safedir.c - directories and files only this process's user writes
 * (safedir.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/random.h>

#include "common/safedir.h"
#include "common/tc_error.h"

int safedir_check(const struct stat *st, int dir, char *why, size_t len)
{
	uid_t me = geteuid();

	if (dir && !S_ISDIR(st->st_mode)) {
		tc_seterr(why, len, "not a directory");
		return -ENOTDIR;
	}
	if (!dir && !S_ISREG(st->st_mode)) {
		tc_seterr(why, len, "not a regular file");
		return -EINVAL;
	}
	if (st->st_uid != me) {
		tc_seterr(why, len, "owned by uid %u, not by this process's user (uid %u)",
			  (unsigned)st->st_uid, (unsigned)me);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		tc_seterr(why, len, "mode %04o: writable by %s", (unsigned)(st->st_mode & 07777),
			  st->st_mode & S_IWOTH ? "others" : "its group");
		return -EPERM;
	}
	return 0;
}

int safedir_check_fd(int fd, int dir, char *why, size_t len)
{
	struct stat st;
	int ret = fstat(fd, &st) < 0 ? -errno : 0;

	if (ret < 0) {
		tc_seterr(why, len, "fstat: %s", strerror(-ret));
		return ret;
	}
	return safedir_check(&st, dir, why, len);
}

/* Check the directory open at @fd; close it unless it passes. */
static int check_fd(int fd, int *out, char *why, size_t len)
{
	int ret = safedir_check_fd(fd, 1, why, len);

	if (ret < 0) {
		close(fd);
		return ret;
	}
	*out = fd;
	return 0;
}

/* openat(@dfd, @name) a directory; made first when missing and @mode. */
static int open_dir(int dfd, const char *name, int nofollow, mode_t mode, char *why, size_t len)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
	int fd = openat(dfd, name, flags);

	if (fd < 0 && errno == ENOENT && mode) {
		if (mkdirat(dfd, name, mode) < 0 && errno != EEXIST) {
			tc_seterr(why, len, "cannot make it: %s", strerror(errno));
			return -errno;
		}
		fd = openat(dfd, name, flags);
	}
	if (fd < 0) {
		int err = errno;

		/* O_NOFOLLOW on a symlink: ELOOP; with O_DIRECTORY, ENOTDIR too */
		if (nofollow && (err == ELOOP || err == ENOTDIR)) {
			struct stat st;

			if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
				tc_seterr(why, len, "a symlink, not a directory");
				return -ELOOP;
			}
		}
		tc_seterr(why, len, "%s", strerror(err));
		return -err;
	}
	return fd;
}

int safedir_open(const char *path, mode_t mode, int *dfd, char *why, size_t len)
{
	int fd = open_dir(AT_FDCWD, path, 0, mode, why, len);

	return fd < 0 ? fd : check_fd(fd, dfd, why, len);
}

int safedir_openat(int dfd, const char *name, mode_t mode, int *out, char *why, size_t len)
{
	int fd = open_dir(dfd, name, 1, mode, why, len);

	return fd < 0 ? fd : check_fd(fd, out, why, len);
}

int safedir_create(int dfd, const char *name, mode_t mode, int flags, int replace)
{
	int fd;

	if (replace && unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(dfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	return fd < 0 ? -errno : fd;
}

/* Write all of @data to @fd. Return: 0; -errno. */
static int write_all(int fd, const void *data, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write(fd, (const char *)data + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

int safedir_write(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
	char tmp[512];
	uint32_t r[2];
	int fd = -EEXIST, ret;

	for (int i = 0; i < 16 && fd == -EEXIST; i++) {
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return errno ? -errno : -EIO;
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%08x%08x.tmp", name, r[0], r[1]) >=
		    sizeof(tmp))
			return -ENAMETOOLONG;
		fd = safedir_create(dfd, tmp, mode, O_WRONLY, 0);
	}
	if (fd < 0)
		return fd;
	ret = write_all(fd, data, len);
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && renameat(dfd, tmp, dfd, name) < 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(dfd, tmp, 0);
	return ret;
}

int safedir_split(const char *path, char *dir, size_t len, const char **base)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!*path || (slash && !slash[1]))
		return -EINVAL;
	if (!slash) {
		if (len < 2)
			return -ENAMETOOLONG;
		strcpy(dir, ".");
		*base = path;
		return 0;
	}
	n = slash == path ? 1 : (size_t)(slash - path);	/* "/x": the root */
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = '\0';
	*base = slash + 1;
	return 0;
}
