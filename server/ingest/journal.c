/*
 * journal.c - the collector's receive journal: one append-only file per
 * connection in a directory of its own (journal.h).
 *
 * Files are named by a number that only grows (%016llx.tcj, the next one
 * after the highest found), so sorting the names gives the order in which
 * the connections came; replay keeps that order, which the stored-page
 * marks need: an agent's later connection resends what its earlier one had
 * received but not acknowledged.
 *
 * Every file is made and opened relative to the checked directory's
 * descriptor, never through a symlink, and authenticated with HMAC-SHA256
 * under the key kept in "lock" (journal.h: only files this collector
 * wrote are replayed).
 */
#include "config.h"

#define LOG_PREFIX "journal"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "common/lockfile.h"
#include "common/log.h"
#include "common/safedir.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "server/ingest/journal.h"

#define FILE_MAGIC_LEN	8
static const uint8_t file_magic[FILE_MAGIC_LEN] = { 'T', 'C', 'J', 'R', 'N', 'L', 0, 2 };
static const uint8_t file_magic_v1[FILE_MAGIC_LEN] = { 'T', 'C', 'J', 'R', 'N', 'L', 0, 1 };

#define PROGRESS_MAGIC	0x50434a54u	/* "TJCP" */
#define PROGRESS_SIZE	4096
#define QUARANTINE_DIR	"quarantine"
#define REFUSED_EXT	".refused"	/* a file not replayed, kept aside */

/* The journal's key in the "lock" file, after the progress record. */
#define KEY_OFF		2048
#define KEY_MAGIC	0x594b4a54u	/* "TJKY" */
#define KEY_LEN		32
#define MAC_LEN		JOURNAL_MAC_LEN

/*
 * The "lock" file's contents, mapped shared: the unit being decoded. Written by
 * the worker only (and the crash flag by a signal handler on its thread);
 * read at the next start. Host byte order: it never leaves the machine.
 */
struct jprogress {
	uint32_t magic;
	uint32_t busy;			/* 1 while a unit is decoded */
	uint64_t file, end;		/* the unit */
	uint32_t page;
	uint32_t strikes;		/* deaths in this unit before this run */
	uint32_t crashed;		/* a fatal signal while busy */
	int32_t tid;			/* the decoding thread */
};

/* The mapping journal_note_crash() marks (the latest journal opened). */
static struct jprogress *_Atomic crash_progress;

struct journal {
	char *dir;
	int dfd;			/* the directory, checked (safedir.h) */
	int qfd;			/* its quarantine/, checked; -1: not yet */
	EVP_MAC_CTX *mac;		/* HMAC-SHA256 with the journal's key */
	uint64_t refused;		/* files and records not ours (not replayed) */
	uint64_t limit;
	_Atomic uint64_t bytes;		/* sizes of the live files */
	_Atomic uint64_t next_no;
	uint64_t *old;			/* files found at open, sorted */
	size_t nold;
	int lock_fd;			/* flock()ed "lock": one collector per directory */
	pthread_mutex_t lock;		/* removed */
	uint64_t *removed;		/* files removed, not yet taken */
	size_t nremoved, cap;
	/* crash quarantine (the worker's once open): */
	struct jprogress *prog;		/* NULL: none (no quarantine) */
	struct journal_unit suspect;	/* in progress when the last run died */
	bool have_suspect, suspect_crashed;
	uint32_t suspect_strikes;	/* deaths in it, the last one included */
	struct journal_unit *quar;	/* quarantined units */
	size_t nquar, quarcap;
};

struct jfile {
	struct journal *j;
	uint64_t no;
	int fd;
	uint64_t size;			/* appended so far (event loop) */
	_Atomic int refs;
	_Atomic bool remove;
};

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static uint32_t get_u32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static void put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

/* For log lines: the file's path. */
static void file_path(const struct journal *j, uint64_t no, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%016" PRIx64 ".tcj", j->dir, no);
}

/* The file's name in the journal's directory. */
static void file_name(uint64_t no, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64 ".tcj", no);
}

/* ---- authentication: HMAC-SHA256 with the journal's key ---- */

/*
 * The MAC of the @n pieces @iov under @j's key into @out. The key's
 * context is only read (duplicated): any thread. Return: 0; -ENOMEM.
 */
static int mac_of(const struct journal *j, const struct iovec *iov, int n, uint8_t *out)
{
	EVP_MAC_CTX *c = EVP_MAC_CTX_dup(j->mac);
	size_t outl = 0;
	int ok = c != NULL;

	for (int i = 0; ok && i < n; i++)
		ok = EVP_MAC_update(c, iov[i].iov_base, iov[i].iov_len);
	ok = ok && EVP_MAC_final(c, out, &outl, MAC_LEN) && outl == MAC_LEN;
	EVP_MAC_CTX_free(c);
	return ok ? 0 : -ENOMEM;
}

/* A file header's MAC: the magic and the file's number (its name). */
static int file_mac(const struct journal *j, uint64_t no, uint8_t *out)
{
	uint8_t num[8];
	struct iovec iov[2] = { { (void *)file_magic, FILE_MAGIC_LEN }, { num, 8 } };

	put_u64(num, no);
	return mac_of(j, iov, 2, out);
}

/*
 * A record's MAC: the file's number, the record's offset in it, its
 * header's first 16 bytes and its payload, so that no record can be
 * moved to another place or file.
 */
static int rec_mac(const struct journal *j, uint64_t no, uint64_t off, const uint8_t *hdr,
		   const void *data, size_t len, uint8_t *out)
{
	uint8_t where[16];
	struct iovec iov[3] = { { where, 16 }, { (void *)hdr, 16 }, { (void *)data, len } };

	put_u64(where, no);
	put_u64(where + 8, off);
	return mac_of(j, iov, 3, out);
}

/*
 * The journal's key from the "lock" file (@fd, ours alone: 0600), made
 * there the first time; kept as long as the lock file is, so files left
 * by an earlier run are still ours. Return: 0; -EPERM (the lock is
 * readable by others: the key would be theirs too); -errno; -ENOMEM.
 */
static int key_load(struct journal *j, int fd)
{
	uint8_t rec[8 + KEY_LEN];
	OSSL_PARAM params[2];
	struct stat st;
	EVP_MAC *mac;
	ssize_t n;
	int ret = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_mode & 077) {
		log_err("%s/lock: mode %04o: it holds the journal's key, which must be this "
			"user's only (chmod 600 it)", j->dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	n = pread(fd, rec, sizeof(rec), KEY_OFF);
	if (n != (ssize_t)sizeof(rec) || get_u32(rec) != KEY_MAGIC || get_u32(rec + 4) != KEY_LEN) {
		put_u32(rec, KEY_MAGIC);
		put_u32(rec + 4, KEY_LEN);
		if (RAND_bytes(rec + 8, KEY_LEN) != 1)
			return -EIO;
		if ((st.st_size < PROGRESS_SIZE && ftruncate(fd, PROGRESS_SIZE) < 0) ||
		    pwrite(fd, rec, sizeof(rec), KEY_OFF) != (ssize_t)sizeof(rec) ||
		    fdatasync(fd) < 0)
			ret = errno ? -errno : -EIO;
	}
	mac = ret == 0 ? EVP_MAC_fetch(NULL, "HMAC", NULL) : NULL;
	if (mac) {
		params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0);
		params[1] = OSSL_PARAM_construct_end();
		j->mac = EVP_MAC_CTX_new(mac);
		if (!j->mac || !EVP_MAC_init(j->mac, rec + 8, KEY_LEN, params))
			ret = -ENOMEM;
		EVP_MAC_free(mac);
	} else if (ret == 0) {
		ret = -ENOMEM;
	}
	OPENSSL_cleanse(rec, sizeof(rec));
	return ret;
}

/*
 * Open journal file @no for replay (@flags: O_RDONLY or O_RDWR): a
 * regular file of ours alone (no symlink followed), with a header whose
 * MAC is ours. Return: the descriptor; -EPERM (not ours: the reason in
 * @why); -errno.
 */
static int file_open_checked(const struct journal *j, uint64_t no, int flags, char *why,
			     size_t wlen)
{
	uint8_t hdr[JOURNAL_FILE_HDR], mac[MAC_LEN];
	char name[32], reason[200];
	struct stat st;
	ssize_t n;
	int fd, ret;

	file_name(no, name, sizeof(name));
	fd = openat(j->dfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		tc_seterr(why, wlen, "%s", errno == ELOOP ? "a symlink" : strerror(errno));
		return ret == -ELOOP ? -EPERM : ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		tc_seterr(why, wlen, "fstat: %s", strerror(errno));
		goto out;
	}
	ret = safedir_check(&st, 0, reason, sizeof(reason));
	if (ret < 0) {
		tc_seterr(why, wlen, "not written by this collector (%s)", reason);
		ret = -EPERM;	/* whatever the reason: set aside */
		goto out;
	}
	n = pread(fd, hdr, sizeof(hdr), 0);
	if (n == (ssize_t)sizeof(hdr) && memcmp(hdr, file_magic, FILE_MAGIC_LEN) == 0) {
		ret = file_mac(j, no, mac);
		if (ret == 0 && CRYPTO_memcmp(mac, hdr + FILE_MAGIC_LEN, MAC_LEN) != 0) {
			tc_seterr(why, wlen, "not written by this collector (its header's MAC "
				  "is not this journal's key's)");
			ret = -EPERM;
		}
	} else if (n >= FILE_MAGIC_LEN && memcmp(hdr, file_magic_v1, FILE_MAGIC_LEN) == 0) {
		tc_seterr(why, wlen, "journal format 1, an earlier tracecollectd's, has no MAC "
			  "to tell whether this collector wrote it");
		ret = -EPERM;
	} else {
		tc_seterr(why, wlen, "%s", n < 0 ? strerror(errno) : "not a journal file (or empty)");
		ret = n < 0 ? -errno : -EPERM;
	}
out:
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * File @no is not one this collector wrote (@why): never replayed; it is
 * renamed NAME.refused (no longer a journal file's name: it is not looked
 * at again) and counted.
 */
static void file_refuse(struct journal *j, uint64_t no, const char *why)
{
	char name[32], aside[48], esc[LOG_ESC_LEN];

	file_name(no, name, sizeof(name));
	snprintf(aside, sizeof(aside), "%s" REFUSED_EXT, name);
	if (renameat(j->dfd, name, j->dfd, aside) < 0 && unlinkat(j->dfd, name, 0) < 0)
		log_err("%s/%s: %s", j->dir, name, strerror(errno));
	log_warn("%s/%s: %s: not replayed, kept as %s",
		 j->dir, name, log_escape(why, esc, sizeof(esc)), aside);
	j->refused++;
}

/*
 * A journal file's number from its name; false for any other name. Only
 * the names file_path() makes count: strtoull() alone would also take
 * " 1", "+1", "-1" or upper case, whose canonical name is another file.
 */
static bool file_no(const char *name, uint64_t *no)
{
	if (strlen(name) != 20 || strcmp(name + 16, ".tcj") != 0)
		return false;
	if (strspn(name, "0123456789abcdef") != 16)
		return false;
	*no = strtoull(name, NULL, 16);
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The entries of directory @dfd from the first, in a stream of their own
 * (over a dup: @dfd stays open; closedir() it). Return: 0; -errno.
 */
static int dir_stream(int dfd, DIR **out)
{
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	int ret;

	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	rewinddir(d);
	*out = d;
	return 0;
}

/*
 * Remember the files in j->dir (sorted), their size, the next number.
 * A file with a journal file's name that is not one this collector wrote
 * (another user's, a symlink, a header without our MAC, the unauthenticated
 * format 1) is refused: set aside, never replayed.
 */
static int journal_scan(struct journal *j)
{
	struct dirent *e;
	size_t cap = 0;
	uint64_t no, next = 1, *old;
	char why[256];
	struct stat st;
	DIR *d;
	int fd, ret = dir_stream(j->dfd, &d);

	if (ret < 0)
		return ret;
	while (ret == 0 && (e = readdir(d))) {
		if (!file_no(e->d_name, &no))
			continue;
		next = no >= next ? no + 1 : next;
		fd = file_open_checked(j, no, O_RDONLY, why, sizeof(why));
		if (fd == -EPERM) {
			file_refuse(j, no, why);
			continue;
		}
		if (fd < 0) {
			log_err("%s/%s: %s", j->dir, e->d_name, why);
			ret = fd;
			break;
		}
		if (fstat(fd, &st) == 0)
			j->bytes += (uint64_t)st.st_size;
		close(fd);
		old = util_grow(j->old, &cap, j->nold, sizeof(*old), 16);
		if (!old) {
			ret = -ENOMEM;
			break;
		}
		j->old = old;
		j->old[j->nold++] = no;
	}
	closedir(d);
	if (j->nold)
		qsort(j->old, j->nold, sizeof(*j->old), cmp_u64);
	j->next_no = next;
	return ret;
}

/*
 * Another collector storing this directory's files while this one appends
 * to them would store them twice: the directory's "lock" file is flock()ed
 * for as long as the journal is open. It holds the journal's key too.
 * Return: 0; -EBUSY; -EPERM (logged); -errno.
 */
static int journal_lock(struct journal *j)
{
	char why[256] = "";
	int ret = lockfile_take_quiet(j->dfd, "lock", &j->lock_fd, why, sizeof(why));

	if (ret < 0 && ret != -EBUSY)
		log_err("%s/lock: %s", j->dir, why[0] ? why : tc_strerror(ret));
	if (ret == 0)
		ret = key_load(j, j->lock_fd);
	return ret;
}

/* ---- crash quarantine ---- */

static bool unit_eq(const struct journal_unit *a, const struct journal_unit *b)
{
	return a->file == b->file && a->end == b->end && a->page == b->page;
}

/* A quarantine entry's name in the quarantine directory. */
static void quarantine_name(const struct journal_unit *u, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64 "-%016" PRIx64 "-%08" PRIx32 ".%s",
		 u->file, u->end, u->page, ext);
}

/*
 * The quarantine directory, checked (ours alone, not a symlink), into
 * j->qfd; made (0700) when missing and @make. Return: 0 (with !@make and
 * no directory: j->qfd stays -1); -EPERM (logged); -errno.
 */
static int quarantine_dir(struct journal *j, bool make)
{
	char why[256];
	int ret;

	if (j->qfd >= 0)
		return 0;
	ret = safedir_openat(j->dfd, QUARANTINE_DIR, make ? 0700 : 0, &j->qfd, why, sizeof(why));
	if (ret == -ENOENT && !make)
		return 0;
	if (ret < 0) {
		j->qfd = -1;
		log_err("%s/" QUARANTINE_DIR ": %s%s", j->dir, why, ret == -EPERM || ret == -ELOOP ?
			"; it must be the collector's user's alone (chown, chmod go-w)" : "");
	}
	return ret == -ELOOP ? -EPERM : ret;
}

static int quarantine_add(struct journal *j, const struct journal_unit *u)
{
	struct journal_unit *v = util_grow(j->quar, &j->quarcap, j->nquar, sizeof(*v), 8);

	if (!v)
		return -ENOMEM;
	j->quar = v;
	j->quar[j->nquar++] = *u;
	return 0;
}

/* A quarantine entry's unit from its .txt name; false for any other name. */
static bool quarantine_unit(const char *name, struct journal_unit *u)
{
	unsigned long long file, end;
	unsigned page;
	int n = 0;

	if (sscanf(name, "%16llx-%16llx-%8x.txt%n", &file, &end, &page, &n) != 3 ||
	    n != (int)strlen(name) || n != 16 + 1 + 16 + 1 + 8 + 4)
		return false;
	*u = (struct journal_unit){ file, end, page };
	return true;
}

/*
 * The units quarantined by earlier runs (skipped from now on); file
 * numbers stay above theirs (*@next), so none names a later file.
 */
static int quarantine_scan(struct journal *j, uint64_t *next)
{
	struct journal_unit u;
	struct dirent *e;
	int ret;
	DIR *d;

	ret = quarantine_dir(j, false);
	if (ret < 0 || j->qfd < 0)
		return ret;
	ret = dir_stream(j->qfd, &d);
	if (ret < 0)
		return ret;
	while (ret == 0 && (e = readdir(d))) {
		if (!quarantine_unit(e->d_name, &u))
			continue;
		ret = quarantine_add(j, &u);
		if (u.file >= *next)
			*next = u.file + 1;
	}
	closedir(d);
	return ret;
}

/*
 * Map the directory's "lock" file, which holds the unit in progress too
 * (one file fewer beside the journal's); what it says about the last run
 * becomes the suspect. Without it the journal works, with no quarantine
 * (logged).
 */
static void progress_open(struct journal *j)
{
	struct jprogress *p = MAP_FAILED;

	if (ftruncate(j->lock_fd, PROGRESS_SIZE) < 0 ||
	    (p = mmap(NULL, PROGRESS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, j->lock_fd, 0)) ==
	    MAP_FAILED) {
		log_err("%s/lock: %s; a record that kills the collector will not be "
			"quarantined", j->dir, strerror(errno));
		return;
	}
	if (p->magic == PROGRESS_MAGIC && p->busy) {
		j->have_suspect = true;
		j->suspect = (struct journal_unit){ p->file, p->end, p->page };
		j->suspect_strikes = p->strikes + 1;
		j->suspect_crashed = p->crashed != 0;
		log_warn("the last run died while decoding record %016" PRIx64 ":%" PRIu64
			 " (page %" PRId32 ")%s", p->file, p->end,
			 p->page == JOURNAL_UNIT_MSG ? -1 : (int32_t)p->page,
			 p->crashed ? " of a fatal signal: it is quarantined" : "");
	}
	memset(p, 0, sizeof(*p));
	p->magic = PROGRESS_MAGIC;
	j->prog = p;
	crash_progress = p;
}

static void progress_close(struct journal *j)
{
	struct jprogress *p = j->prog;

	if (!p)
		return;
	if (atomic_load(&crash_progress) == p)
		crash_progress = NULL;
	munmap(p, PROGRESS_SIZE);
	j->prog = NULL;
}

/* The calling thread's id, asked of the kernel once per thread. */
static int32_t self_tid(void)
{
	static __thread int32_t tid;

	if (!tid)
		tid = (int32_t)syscall(SYS_gettid);
	return tid;
}

enum journal_verdict journal_unit_begin(struct journal *j, const struct journal_unit *u)
{
	struct jprogress *p = j->prog;
	uint32_t strikes = 0;

	for (size_t i = 0; i < j->nquar; i++)
		if (unit_eq(&j->quar[i], u))
			return JOURNAL_QUARANTINED;
	if (!p)
		return JOURNAL_DECODE;
	if (j->have_suspect && unit_eq(&j->suspect, u)) {
		if (j->suspect_crashed || j->suspect_strikes >= JOURNAL_CRASH_STRIKES)
			return JOURNAL_KILLER;
		strikes = j->suspect_strikes;
	}
	p->file = u->file;
	p->end = u->end;
	p->page = u->page;
	p->strikes = strikes;
	p->crashed = 0;
	p->tid = self_tid();
	/* the stores above before busy: a crash sees the unit whole */
	__atomic_store_n(&p->busy, 1, __ATOMIC_RELEASE);
	return JOURNAL_DECODE;
}

void journal_unit_end(struct journal *j)
{
	if (j->prog)
		__atomic_store_n(&j->prog->busy, 0, __ATOMIC_RELEASE);
}

void journal_note_crash(void)
{
	struct jprogress *p = atomic_load(&crash_progress);

	if (p && __atomic_load_n(&p->busy, __ATOMIC_ACQUIRE) &&
	    p->tid == (int32_t)syscall(SYS_gettid))
		__atomic_store_n(&p->crashed, 1, __ATOMIC_RELEASE);
}

/*
 * Write @len bytes of @data to a new file @name (0600) in the quarantine
 * directory; whatever had that name (a leftover of a run that died
 * between the two files of an entry; anything planted) goes first, and
 * no symlink is followed. Return: 0; -errno.
 */
static int write_file(struct journal *j, const char *name, const void *data, size_t len)
{
	int fd = safedir_create(j->qfd, name, 0600, O_WRONLY, 1);
	size_t done = 0;
	ssize_t n;
	int ret = 0;

	if (fd < 0)
		return fd;
	while (done < len && ret == 0) {
		n = write(fd, (const uint8_t *)data + done, len - done);
		if (n < 0 && errno != EINTR)
			ret = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

int journal_quarantine(struct journal *j, const struct journal_unit *u, const void *data,
		       size_t len, const char *text)
{
	char name[64];
	int ret;

	if (j->have_suspect && unit_eq(&j->suspect, u))
		j->have_suspect = false;
	ret = quarantine_add(j, u);
	ret = quarantine_dir(j, true) ?: ret;
	if (j->qfd < 0)
		return ret;
	quarantine_name(u, "rec", name, sizeof(name));
	ret = write_file(j, name, data, len) ?: ret;
	quarantine_name(u, "txt", name, sizeof(name));	/* last: names the entry */
	return write_file(j, name, text, strlen(text)) ?: ret;
}

int journal_open(const char *dir, uint64_t limit, struct journal **out)
{
	struct journal *j = calloc(1, sizeof(*j));
	char why[256];
	int ret;

	if (!j || !(j->dir = strdup(dir))) {
		free(j);
		return -ENOMEM;
	}
	j->limit = limit;
	j->lock_fd = -1;
	j->qfd = -1;
	j->dfd = -1;
	pthread_mutex_init(&j->lock, NULL);
	/* 0750/0640 at most: tracecollectd's umask makes them 0700/0600 without --group */
	ret = safedir_open(dir, 0750, &j->dfd, why, sizeof(why));
	if (ret < 0) {
		j->dfd = -1;
		log_err("%s: %s%s", dir, why, ret == -EPERM ?
			"; it must be the collector's user's alone (chown, chmod go-w)" : "");
		journal_close(j);
		return ret;
	}
	ret = journal_lock(j);
	if (ret == 0)
		ret = journal_scan(j);
	if (ret == 0) {
		uint64_t next = j->next_no;

		ret = quarantine_scan(j, &next);
		j->next_no = next;
	}
	if (ret == 0)
		progress_open(j);
	if (ret < 0) {
		journal_close(j);
		return ret;
	}
	if (j->refused)
		log_warn("%s: %" PRIu64 " file(s) not written by this collector were not replayed",
			 dir, j->refused);
	*out = j;
	return 0;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	progress_close(j);
	free(j->quar);
	if (j->lock_fd >= 0)
		close(j->lock_fd);
	if (j->qfd >= 0)
		close(j->qfd);
	if (j->dfd >= 0)
		close(j->dfd);
	EVP_MAC_CTX_free(j->mac);
	pthread_mutex_destroy(&j->lock);
	free(j->removed);
	free(j->old);
	free(j->dir);
	free(j);
}

uint64_t journal_refused(const struct journal *j)
{
	return j->refused;
}

uint64_t journal_next_no(const struct journal *j)
{
	return j->next_no;
}

/* File @no is gone: remember it for journal_take_removed() (best effort). */
static void journal_removed(struct journal *j, uint64_t no)
{
	uint64_t *v;

	pthread_mutex_lock(&j->lock);
	v = util_grow(j->removed, &j->cap, j->nremoved, sizeof(*v), 16);
	if (v) {	/* else its mark stays: harmless, numbers never return */
		j->removed = v;
		j->removed[j->nremoved++] = no;
	}
	pthread_mutex_unlock(&j->lock);
}

size_t journal_take_removed(struct journal *j, uint64_t *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&j->lock);
	n = j->nremoved < max ? j->nremoved : max;
	if (n)
		memcpy(out, j->removed + j->nremoved - n, n * sizeof(*out));
	j->nremoved -= n;
	pthread_mutex_unlock(&j->lock);
	return n;
}

bool journal_full(const struct journal *j)
{
	return j->bytes > j->limit;
}

uint64_t journal_bytes(const struct journal *j)
{
	return j->bytes;
}

long journal_rec_parse(const uint8_t *p, size_t avail, uint32_t *kind, uint32_t *len)
{
	uint32_t magic, k, n;

	if (avail < JOURNAL_REC_HDR)
		return 0;
	magic = get_u32(p);
	k = get_u32(p + 4);
	n = get_u32(p + 8);
	if (magic != JOURNAL_REC_MAGIC || get_u32(p + 12) != (magic ^ k ^ n ^ 0xffffffffu) ||
	    (k < JREC_MSG || k > JREC_PIDNAMES) || n > JOURNAL_MAX_REC)
		return TC_ERR_MSG_MALFORMED;
	if (avail < JOURNAL_REC_HDR + pad8(n))
		return 0;
	*kind = k;
	*len = n;
	return (long)(JOURNAL_REC_HDR + pad8(n));
}

/* Read exactly @len bytes at @off. Return: bytes read (short at the end); -errno. */
static ssize_t read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* The collector stopped while writing at @off: that record was never acknowledged. */
static void cut_off(const char *name, uint64_t off)
{
	log_warn("%s: cut off at %" PRIu64 " (the collector stopped while writing "
		 "that record, which was never acknowledged)", name, off);
}

typedef int (*rec_fn)(void *arg, uint32_t kind, const uint8_t *data, size_t len,
		      uint64_t end);

/*
 * A record whose MAC is not ours (not written by this collector, or
 * changed since): it and the rest of its file are not replayed.
 */
static void rec_refuse(struct journal *j, const char *name, uint64_t off)
{
	log_warn("%s: the record at %" PRIu64 " is not one this collector wrote (its MAC "
		 "is not this journal's key's): it and the rest of the file are not replayed",
		 name, off);
	j->refused++;
}

/*
 * Every record of journal file @no, open at @fd, to @fn (@buf: a record's
 * room); each record's MAC checked first.
 */
static int replay_fd(struct journal *j, uint64_t no, int fd, const char *name, rec_fn fn,
		     void *arg, uint8_t *buf)
{
	uint64_t off = JOURNAL_FILE_HDR;
	uint8_t mac[MAC_LEN];
	uint32_t kind, len;
	ssize_t n;
	long rec;
	int ret;

	n = read_at(fd, buf, FILE_MAGIC_LEN, 0);
	if (n != FILE_MAGIC_LEN || memcmp(buf, file_magic, FILE_MAGIC_LEN) != 0) {
		log_warn("%s: not a journal file (or empty); skipped", name);
		return n < 0 ? (int)n : 0;
	}
	for (;;) {
		n = read_at(fd, buf, JOURNAL_REC_HDR, off);
		if (n <= 0)
			return (int)n;
		if (n < JOURNAL_REC_HDR) {
			cut_off(name, off);
			return 0;
		}
		if (journal_rec_parse(buf, (size_t)n, &kind, &len) < 0) {
			log_warn("%s: bad record header at %" PRIu64 "; the rest of the "
				 "file is skipped", name, off);
			return 0;
		}
		n = read_at(fd, buf, JOURNAL_REC_HDR + pad8(get_u32(buf + 8)), off);
		if (n < 0)
			return (int)n;
		rec = journal_rec_parse(buf, (size_t)n, &kind, &len);
		if (rec <= 0) {
			cut_off(name, off);
			return 0;
		}
		ret = rec_mac(j, no, off, buf, buf + JOURNAL_REC_HDR, len, mac);
		if (ret < 0)
			return ret;
		if (CRYPTO_memcmp(mac, buf + 16, MAC_LEN) != 0) {
			rec_refuse(j, name, off);
			return 0;
		}
		off += (uint64_t)rec;
		ret = fn(arg, kind, buf + JOURNAL_REC_HDR, len, off);
		if (ret < 0)
			return ret;
	}
}

/* journal_replay()'s callback, with the file's number added. */
struct replay_arg {
	int (*fn)(void *arg, uint64_t file, uint32_t kind, const uint8_t *data, size_t len);
	void *arg;
	uint64_t no;
};

static int replay_rec(void *arg, uint32_t kind, const uint8_t *data, size_t len, uint64_t end)
{
	struct replay_arg *r = arg;

	return r->fn(r->arg, r->no, kind, data, len);
}

/* A jfile of file @no of @j, one reference, not open yet (fd -1). */
static struct jfile *jfile_alloc(struct journal *j, uint64_t no)
{
	struct jfile *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->j = j;
	f->no = no;
	f->fd = -1;
	f->refs = 1;
	return f;
}

/* A jfile for existing file @no (one reference; appends go at its end). */
static int jfile_open(struct journal *j, uint64_t no, struct jfile **out)
{
	struct jfile *f = jfile_alloc(j, no);
	char why[256];
	struct stat st;
	int ret;

	if (!f)
		return -ENOMEM;
	f->fd = file_open_checked(j, no, O_RDWR, why, sizeof(why));
	if (f->fd < 0 || fstat(f->fd, &st) < 0) {
		ret = f->fd < 0 ? f->fd : -errno;
		log_err("%s/%016" PRIx64 ".tcj: %s", j->dir, no,
			f->fd < 0 ? why : strerror(errno));
		if (f->fd >= 0)
			close(f->fd);
		free(f);
		return ret;
	}
	f->size = (uint64_t)st.st_size;	/* already in j->bytes (journal_scan) */
	*out = f;
	return 0;
}

int journal_adopt(struct journal *j, struct jfile ***files, size_t *n)
{
	struct jfile **v = calloc(j->nold ? j->nold : 1, sizeof(*v));
	size_t i;
	int ret;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < j->nold; i++) {
		ret = jfile_open(j, j->old[i], &v[i]);
		if (ret < 0) {
			while (i--)
				jfile_put(v[i], false);
			free(v);
			return ret;
		}
	}
	*files = v;
	*n = j->nold;
	j->nold = 0;
	return 0;
}

int jfile_replay(struct jfile *f, rec_fn fn, void *arg)
{
	uint8_t *buf = malloc(JOURNAL_REC_HDR + JOURNAL_MAX_REC);
	char name[PATH_MAX];
	int ret;

	if (!buf)
		return -ENOMEM;
	file_path(f->j, f->no, name, sizeof(name));
	ret = replay_fd(f->j, f->no, f->fd, name, fn, arg, buf);
	free(buf);
	return ret;
}

uint64_t jfile_no(const struct jfile *f)
{
	return f->no;
}

int journal_replay(struct journal *j,
		   int (*fn)(void *arg, uint64_t file, uint32_t kind,
			     const uint8_t *data, size_t len),
		   void *arg)
{
	struct replay_arg r = { .fn = fn, .arg = arg };
	struct jfile *f;
	int ret = 0;

	for (size_t i = 0; i < j->nold && ret == 0; i++) {
		r.no = j->old[i];
		ret = jfile_open(j, r.no, &f);
		if (ret == 0) {
			ret = jfile_replay(f, replay_rec, &r);
			jfile_put(f, false);
		}
	}
	return ret;
}

void journal_forget_replayed(struct journal *j)
{
	struct jfile *f;

	for (size_t i = 0; i < j->nold; i++)
		if (jfile_open(j, j->old[i], &f) == 0)
			jfile_put(f, true);	/* removes it, counts it removed */
	j->nold = 0;
}

int jfile_new(struct journal *j, struct jfile **out)
{
	struct jfile *f = jfile_alloc(j, j->next_no++);
	uint8_t hdr[JOURNAL_FILE_HDR];
	char name[32];
	int ret;

	if (!f)
		return -ENOMEM;
	memcpy(hdr, file_magic, FILE_MAGIC_LEN);
	ret = file_mac(j, f->no, hdr + FILE_MAGIC_LEN);
	file_name(f->no, name, sizeof(name));
	f->fd = ret < 0 ? ret : safedir_create(j->dfd, name, 0640, O_RDWR, 0);
	if (f->fd < 0) {
		ret = f->fd;
		free(f);
		return ret;
	}
	errno = 0;
	if (write(f->fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr)) {
		ret = errno ? -errno : -EIO;
		close(f->fd);
		unlinkat(j->dfd, name, 0);
		free(f);
		return ret;
	}
	f->size = sizeof(hdr);
	j->bytes += f->size;
	*out = f;
	return 0;
}

int jfile_append(struct jfile *f, uint32_t kind, const void *data, size_t len,
		 uint64_t *off, uint64_t *end)
{
	static const uint8_t zero[8];
	uint8_t hdr[JOURNAL_REC_HDR];
	struct iovec iov[3] = {
		{ hdr, sizeof(hdr) }, { (void *)data, len }, { (void *)zero, pad8(len) - len },
	};
	size_t total = sizeof(hdr) + pad8(len), done = 0;
	ssize_t n;
	int i = 0;

	int ret;

	if (len > JOURNAL_MAX_REC)
		return TC_ERR_TOO_LONG;
	put_u32(hdr, JOURNAL_REC_MAGIC);
	put_u32(hdr + 4, kind);
	put_u32(hdr + 8, (uint32_t)len);
	put_u32(hdr + 12, JOURNAL_REC_MAGIC ^ kind ^ (uint32_t)len ^ 0xffffffffu);
	ret = rec_mac(f->j, f->no, f->size, hdr, data, len, hdr + 16);
	if (ret < 0)
		return ret;
	while (done < total) {
		n = pwritev(f->fd, iov + i, 3 - i, (off_t)(f->size + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? -errno : -EIO;

			/* leave no partial record behind a later one */
			if (ftruncate(f->fd, (off_t)f->size) < 0)
				log_err("truncating journal file %016" PRIx64 ": %s",
					f->no, strerror(errno));
			return err;
		}
		done += (size_t)n;
		while (i < 3 && (size_t)n >= iov[i].iov_len) {
			n -= (ssize_t)iov[i].iov_len;
			i++;
		}
		if (i < 3) {
			iov[i].iov_base = (uint8_t *)iov[i].iov_base + n;
			iov[i].iov_len -= (size_t)n;
		}
	}
	*off = f->size + sizeof(hdr);
	f->size += total;
	if (end)
		*end = f->size;
	f->j->bytes += total;
	return 0;
}

int jfile_read(struct jfile *f, uint64_t off, void *buf, size_t len)
{
	ssize_t n = read_at(f->fd, buf, len, off);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}

uint64_t jfile_size(const struct jfile *f)
{
	return f->size;
}

struct jfile *jfile_ref(struct jfile *f)
{
	f->refs++;
	return f;
}

void jfile_put(struct jfile *f, bool remove)
{
	char name[32];

	if (!f)
		return;
	if (remove)
		f->remove = true;
	if (--f->refs > 0)
		return;
	close(f->fd);
	if (f->remove) {
		file_name(f->no, name, sizeof(name));
		if (unlinkat(f->j->dfd, name, 0) < 0)
			log_err("removing %s/%s: %s", f->j->dir, name, strerror(errno));
		f->j->bytes -= f->size;
		journal_removed(f->j, f->no);
	}
	free(f);
}
