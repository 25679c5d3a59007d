/*
 * safedir.h - directories and files only this process's user writes.
 *
 * A daemon that keeps files in a directory someone else can write (a
 * database under /tmp, a journal directory made 0777 in advance) can be
 * handed symlinks to files it must not write, or files it did not write
 * (issue 30). So the directories we keep files in are checked once,
 * through a descriptor: owned by our effective user, writable by nobody
 * else (group and others may read and enter them: --group). Every file
 * made there is made relative to that descriptor (openat), never through
 * a symlink (O_NOFOLLOW), and new (O_EXCL); a file that must exist
 * already (a lock) is checked the same way as its directory.
 *
 * Reasons go into the caller's @why buffer (one line, for a log); codes
 * are -errno, -EPERM for "not only ours".
 */
#ifndef COMMON_SAFEDIR_H
#define COMMON_SAFEDIR_H

#include <stddef.h>

#include <sys/stat.h>

/*
 * safedir_check - is @st, the status of something we keep files in (@dir)
 * or a file we keep, ours alone: of the right type (a directory or a
 * regular file), owned by our effective user, not writable by group or
 * others? Return: 0; -EPERM (not ours alone: the reason in @why); -ENOTDIR,
 * -EINVAL (a file, a directory where the other was wanted).
 */
int safedir_check(const struct stat *st, int dir, char *why, size_t len);

/*
 * safedir_check_fd - safedir_check() of what @fd is open at (fstat). Return:
 * as safedir_check(), or -errno when fstat fails ("fstat: ..." in @why).
 */
int safedir_check_fd(int fd, int dir, char *why, size_t len);

/*
 * safedir_open - open directory @path, made with @mode (masked by the
 * umask) when it is missing and @mode is not 0, and check it. @path may
 * pass through symlinks: what is checked is what the descriptor opens.
 * Return: 0 and *@dfd (close-on-exec); -EPERM with @why; -errno (@why
 * says which call).
 */
int safedir_open(const char *path, mode_t mode, int *dfd, char *why, size_t len);

/*
 * safedir_openat - safedir_open() for entry @name of checked directory
 * @dfd, which must not be a symlink. Return: as safedir_open().
 */
int safedir_openat(int dfd, const char *name, mode_t mode, int *out, char *why, size_t len);

/*
 * safedir_create - a new file @name in checked directory @dfd, mode @mode
 * (masked by the umask), opened with @flags (O_WRONLY or O_RDWR, and
 * O_APPEND...) plus O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC. With
 * @replace, whatever has that name first goes (a leftover, a symlink:
 * the directory is ours, unlinking the name follows nothing); without,
 * an existing name is -EEXIST. Return: a descriptor; -errno.
 */
int safedir_create(int dfd, const char *name, mode_t mode, int flags, int replace);

/*
 * safedir_write - @len bytes @data as file @name in checked directory
 * @dfd, mode @mode (masked by the umask): written to a new file of a
 * random name beside it (O_EXCL, no symlink followed), then renamed
 * over @name, so a reader sees the old file or the whole new one.
 * Return: 0; -errno (the temporary file is gone).
 */
int safedir_write(int dfd, const char *name, const void *data, size_t len, mode_t mode);

/*
 * safedir_split - the directory of @path into @dir (@len bytes; "." for a
 * bare name) and a pointer to its last component into *@base (inside
 * @path). Return: 0; -ENAMETOOLONG; -EINVAL (@path ends in '/' or is empty).
 */
int safedir_split(const char *path, char *dir, size_t len, const char **base);

#endif
