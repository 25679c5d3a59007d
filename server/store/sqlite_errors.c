/*
 * sqlite_errors.c - SQLite's failures in words a person can act on: its
 * result code (extended) and the system errno it saw, mapped to what is
 * wrong with the file and what to do (sq_explain(), sqlite_errors.h), so that
 * the collector never says only "database error". SQLite's own message
 * follows in parentheses for the rest.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "server/store/sqlite_errors.h"

/* CANTOPEN, READONLY, IOERR: what the errno says of the file or its directory. */
static const char *errno_words(int err)
{
	switch (err) {
	case ENOENT: return "its directory does not exist";
	case EACCES: case EPERM: return "permission denied";
	case EROFS: return "the file system is read-only";
	case ENOSPC: case EDQUOT: return "disk full: no space left on its file system";
	case EISDIR: return "it is a directory";
	case ENOTDIR: return "a part of its path is not a directory";
	case EMFILE: case ENFILE: return "too many open files";
	default: return NULL;
	}
}

/* The sentence for @rc (primary code) and @err (errno; 0: none). */
static const char *code_words(int rc, int err, char *buf, size_t len)
{
	const char *e = errno_words(err);

	switch (rc & 0xff) {
	case SQLITE_NOTADB:
		return "not an SQLite database (is it the right file?)";
	case SQLITE_CORRUPT:
		return "the database is damaged (corrupt): restore it, or move it away "
		       "and start with a new one";
	case SQLITE_FULL:
		return "disk full: no space left on its file system";
	case SQLITE_BUSY: case SQLITE_LOCKED:
		return "locked by another process (not a tracecollectd, which would hold "
		       "DB.lock): stop it, or wait for it";
	case SQLITE_PERM: case SQLITE_AUTH:
		return "permission denied";
	case SQLITE_READONLY:
		snprintf(buf, len, "read-only: %s (uid %d)",
			 e ? e : "the file, its directory or its file system cannot be written",
			 (int)geteuid());
		return buf;
	case SQLITE_CANTOPEN:
		snprintf(buf, len, "cannot open it: %s%s", e ? e : err ? strerror(err) :
			 "no such file, or its directory cannot be written",
			 err == EACCES || err == EPERM ? " (check its owner and mode)" : "");
		return buf;
	case SQLITE_IOERR:
		if (e)
			return e;
		snprintf(buf, len, "I/O error%s%s", err ? ": " : "", err ? strerror(err) : "");
		return buf;
	case SQLITE_NOMEM:
		return "out of memory";
	default:
		return NULL;
	}
}

void sq_explain(sqlite3 *db, int rc, char *buf, size_t len)
{
	int err = db ? sqlite3_system_errno(db) : 0;
	const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
	char words[256];
	const char *w = code_words(rc, err, words, sizeof(words));

	if (w)
		snprintf(buf, len, "%s (SQLite: %s)", w, msg);
	else
		snprintf(buf, len, "%s", msg);
}
