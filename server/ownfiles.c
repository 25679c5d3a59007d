/*
 * ownfiles.c - the collector's own files at start (ownfiles.h).
 */
#include "config.h"

/* the daemon's start-up lines, as tracecollectd.c's: they say what (database, journal) */
#define LOG_PREFIX NULL

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "common/lockfile.h"
#include "common/log.h"
#include "common/safedir.h"
#include "common/tc_error.h"
#include "server/ownfiles.h"

/* The database's files, checked where they exist (no symlink followed). */
static int check_db_files(int dfd, const char *db, const char *base)
{
	static const char *const ext[] = { "", "-wal", "-shm" };
	char name[NAME_MAX + 1], why[256];
	struct stat st;
	int ret;

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		if ((size_t)snprintf(name, sizeof(name), "%s%s", base, ext[i]) >= sizeof(name))
			return -ENAMETOOLONG;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			log_err("database %s: %s: %s", db, name, strerror(errno));
			return -errno;
		}
		ret = safedir_check(&st, 0, why, sizeof(why));
		if (ret < 0) {
			log_err("database %s: %s is %s: the collector's files must be its own, "
				"writable by no other user", db, name,
				S_ISLNK(st.st_mode) ? "a symlink" : why);
			return S_ISLNK(st.st_mode) ? -EPERM : ret;
		}
	}
	return 0;
}

/* The journal directory @dir (made when missing) and its quarantine/. */
static int check_journal(const char *dir)
{
	char why[256];
	int dfd, qfd, ret;

	ret = safedir_open(dir, 0750, &dfd, why, sizeof(why));
	if (ret < 0) {
		log_err("receive journal %s: %s%s", dir, why, ret == -EPERM ?
			"; it must be the collector's user's alone (chown, chmod go-w)" : "");
		return ret;
	}
	ret = safedir_openat(dfd, "quarantine", 0, &qfd, why, sizeof(why));
	if (ret == 0)
		close(qfd);
	else if (ret == -ENOENT)
		ret = 0;
	else
		log_err("receive journal %s: quarantine: %s%s", dir, why, ret == -EPERM ?
			"; it must be the collector's user's alone (chown, chmod go-w)" : "");
	close(dfd);
	return ret;
}

int ownfiles_check(const char *db, const char *journal_dir, int *db_dfd)
{
	char dir[PATH_MAX], why[256];
	const char *base;
	int dfd, ret;

	if (!db) {		/* a server's database: only the journal is ours */
		*db_dfd = -1;
		return journal_dir ? check_journal(journal_dir) : 0;
	}
	ret = safedir_split(db, dir, sizeof(dir), &base);
	if (ret < 0) {
		log_err("database %s: %s", db, tc_strerror(ret));
		return ret;
	}
	ret = safedir_open(dir, 0, &dfd, why, sizeof(why));
	if (ret < 0) {
		log_err("database %s: its directory %s: %s%s", db, dir, why, ret == -EPERM ?
			"; it must be the collector's user's alone (chown, chmod go-w)" : "");
		return ret;
	}
	ret = check_db_files(dfd, db, base);
	if (ret == 0 && journal_dir)
		ret = check_journal(journal_dir);
	if (ret < 0) {
		close(dfd);
		return ret;
	}
	*db_dfd = dfd;
	return 0;
}

int ownfiles_lock_db(int dfd, const char *db, int *fd)
{
	char dir[PATH_MAX], name[NAME_MAX + 1], why[256] = "";
	const char *base;
	long pid = 0;
	int ret;

	ret = safedir_split(db, dir, sizeof(dir), &base);
	if (ret == 0 && (size_t)snprintf(name, sizeof(name), "%s.lock", base) >= sizeof(name))
		ret = -ENAMETOOLONG;
	if (ret == 0)
		ret = lockfile_take(dfd, name, fd, &pid, why, sizeof(why));
	if (ret == -EBUSY && pid)
		log_err("database %s is in use by another tracecollectd (pid %ld, lock %s.lock)",
			db, pid, db);
	else if (ret == -EBUSY)
		log_err("database %s is in use by another tracecollectd (lock %s.lock)", db, db);
	else if (ret < 0)
		log_err("database %s: lock %s.lock: %s", db, db, why[0] ? why : tc_strerror(ret));
	return ret;
}

int ownfiles_ready_write(const char *path, const char *text, struct ownfiles_ready *r)
{
	char dir[PATH_MAX];
	const char *base;
	int dfd, ret;

	ret = safedir_split(path, dir, sizeof(dir), &base);
	if (ret < 0)
		return ret;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	ret = safedir_write(dfd, base, text, strlen(text), 0644);
	if (ret < 0) {
		close(dfd);
		return ret;
	}
	r->dfd = dfd;
	r->name = base;
	return 0;
}

void ownfiles_ready_remove(struct ownfiles_ready *r)
{
	if (r->dfd < 0)
		return;
	unlinkat(r->dfd, r->name, 0);
	close(r->dfd);
	r->dfd = -1;
}
