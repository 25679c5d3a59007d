/*
 * refuse_shim.c - TESTS ONLY: an LD_PRELOAD object that makes any kernel
 * refuse chosen tracefs knobs, as some kernels do (issue 29), so that the
 * tests' skip paths and the agent's fallbacks run everywhere. Never linked
 * into the daemons; built as a check library (tests/include.am).
 *
 * TC_REFUSE holds comma-separated rules RULE=ERRNO, ERRNO a name (EPERM,
 * ENOENT, EINVAL, EACCES, ENODEV, EOPNOTSUPP, EBUSY) or a number:
 *
 *   FILE=ERRNO        writes to tracefs file FILE (its last path
 *                     components: buffer_subbuf_size_kb, record-tgid,
 *                     options/record-tgid) fail; with ENOENT the file is
 *                     not there at all (open, stat and access fail)
 *   FILE:VALUE=ERRNO  only writes of VALUE (an fnmatch() pattern, compared
 *                     without the trailing newline): trace_clock:x86-tsc,
 *                     current_tracer:function*
 *   mmap=ERRNO        mmap() of a trace_pipe_raw descriptor fails
 *   ktls=ERRNO        setsockopt(SOL_TCP, TCP_ULP) fails (no kernel TLS)
 *
 * A file is tracefs's when its path has "/tracing/" in it. Writes are
 * matched by the descriptor they were opened on (open*, openat*, and the
 * _FORTIFY_SOURCE __open*_2 forms; close forgets it); stdio writes inside
 * libc are not seen, so probes (tests/tc_probe.c) write with write(2).
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHIM_MAX_RULES	16
#define SHIM_MAX_FDS	4096

struct shim_rule {
	char file[64];		/* "" for mmap/ktls */
	char value[64];		/* "" for any value */
	bool mmap, ktls;
	int err;
};

static struct shim_rule rules[SHIM_MAX_RULES];
static int nrules = -1;		/* -1: TC_REFUSE not read yet */
static unsigned char fd_rule[SHIM_MAX_FDS];	/* rule index + 1 */

static const struct { const char *name; int err; } errnames[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EINVAL", EINVAL },
	{ "EACCES", EACCES }, { "ENODEV", ENODEV }, { "EOPNOTSUPP", EOPNOTSUPP },
	{ "EBUSY", EBUSY },
};

static int parse_errno(const char *s)
{
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (!strcmp(s, errnames[i].name))
			return errnames[i].err;
	return atoi(s) > 0 ? atoi(s) : EPERM;
}

static void parse_rule(char *item)
{
	struct shim_rule *r = &rules[nrules];
	char *eq = strrchr(item, '='), *colon;

	if (!eq || nrules >= SHIM_MAX_RULES)
		return;
	*eq = '\0';
	r->err = parse_errno(eq + 1);
	colon = strchr(item, ':');
	if (colon) {
		*colon = '\0';
		snprintf(r->value, sizeof(r->value), "%s", colon + 1);
	}
	r->mmap = !strcmp(item, "mmap");
	r->ktls = !strcmp(item, "ktls");
	if (!r->mmap && !r->ktls)
		snprintf(r->file, sizeof(r->file), "%s", item);
	nrules++;
}

static void load_rules(void)
{
	const char *env;
	char buf[1024], *item, *save = NULL;

	if (nrules >= 0)
		return;
	nrules = 0;
	env = getenv("TC_REFUSE");
	if (!env)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save))
		parse_rule(item);
}

/* The rule for tracefs file @path (any, or only one refusing it whole). */
static int file_rule(const char *path, bool whole_only)
{
	size_t plen, flen;

	if (!path || !strstr(path, "/tracing/"))
		return -1;
	load_rules();
	plen = strlen(path);
	for (int i = 0; i < nrules; i++) {
		flen = strlen(rules[i].file);
		if (!flen || flen >= plen || path[plen - flen - 1] != '/' ||
		    strcmp(path + plen - flen, rules[i].file))
			continue;
		if (whole_only && (rules[i].err != ENOENT || rules[i].value[0]))
			continue;
		return i;
	}
	return -1;
}

/* Before an open of @path: -1 (errno set) when the file is "not there". */
static int refuse_open(const char *path)
{
	int i = file_rule(path, true);

	if (i < 0)
		return 0;
	errno = rules[i].err;
	return -1;
}

/* After an open: remember the rule of a descriptor opened for writing. */
static int track(int fd, const char *path, int flags)
{
	int i;

	if (fd < 0 || fd >= SHIM_MAX_FDS)
		return fd;
	fd_rule[fd] = 0;
	if ((flags & O_ACCMODE) == O_RDONLY)
		return fd;
	i = file_rule(path, false);
	fd_rule[fd] = (unsigned char)(i + 1);
	return fd;
}

#define REAL(ret, name, ...) \
	static ret (*real_##name)(__VA_ARGS__); \
	if (!real_##name) \
		real_##name = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

static mode_t open_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;
	REAL(int, open, const char *, int, ...);

	va_start(ap, flags);
	m = open_mode(flags, ap);
	va_end(ap);
	if (refuse_open(path) < 0)
		return -1;
	return track(real_open(path, flags, m), path, flags);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;
	REAL(int, open64, const char *, int, ...);

	va_start(ap, flags);
	m = open_mode(flags, ap);
	va_end(ap);
	if (refuse_open(path) < 0)
		return -1;
	return track(real_open64(path, flags, m), path, flags);
}

int openat(int dir, const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;
	REAL(int, openat, int, const char *, int, ...);

	va_start(ap, flags);
	m = open_mode(flags, ap);
	va_end(ap);
	if (refuse_open(path) < 0)
		return -1;
	return track(real_openat(dir, path, flags, m), path, flags);
}

int openat64(int dir, const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;
	REAL(int, openat64, int, const char *, int, ...);

	va_start(ap, flags);
	m = open_mode(flags, ap);
	va_end(ap);
	if (refuse_open(path) < 0)
		return -1;
	return track(real_openat64(dir, path, flags, m), path, flags);
}

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dir, const char *path, int flags);
int __openat64_2(int dir, const char *path, int flags);

int __open_2(const char *path, int flags)
{
	REAL(int, __open_2, const char *, int);

	if (refuse_open(path) < 0)
		return -1;
	return track(real___open_2(path, flags), path, flags);
}

int __open64_2(const char *path, int flags)
{
	REAL(int, __open64_2, const char *, int);

	if (refuse_open(path) < 0)
		return -1;
	return track(real___open64_2(path, flags), path, flags);
}

int __openat_2(int dir, const char *path, int flags)
{
	REAL(int, __openat_2, int, const char *, int);

	if (refuse_open(path) < 0)
		return -1;
	return track(real___openat_2(dir, path, flags), path, flags);
}

int __openat64_2(int dir, const char *path, int flags)
{
	REAL(int, __openat64_2, int, const char *, int);

	if (refuse_open(path) < 0)
		return -1;
	return track(real___openat64_2(dir, path, flags), path, flags);
}

int stat(const char *restrict path, struct stat *restrict st)
{
	REAL(int, stat, const char *restrict, struct stat *restrict);

	if (refuse_open(path) < 0)
		return -1;
	return real_stat(path, st);
}

int stat64(const char *restrict path, struct stat64 *restrict st)
{
	REAL(int, stat64, const char *restrict, struct stat64 *restrict);

	if (refuse_open(path) < 0)
		return -1;
	return real_stat64(path, st);
}

int access(const char *path, int mode)
{
	REAL(int, access, const char *, int);

	if (refuse_open(path) < 0)
		return -1;
	return real_access(path, mode);
}

int close(int fd)
{
	REAL(int, close, int);

	if (fd >= 0 && fd < SHIM_MAX_FDS)
		fd_rule[fd] = 0;
	return real_close(fd);
}

/* Whether @buf (without a trailing newline) matches rule @r's value. */
static bool value_matches(const struct shim_rule *r, const void *buf, size_t n)
{
	char v[128];

	if (!r->value[0])
		return true;
	if (n >= sizeof(v))
		return false;
	memcpy(v, buf, n);
	v[n] = '\0';
	while (n && (v[n - 1] == '\n' || v[n - 1] == ' '))
		v[--n] = '\0';
	return fnmatch(r->value, v, 0) == 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(ssize_t, write, int, const void *, size_t);

	if (fd >= 0 && fd < SHIM_MAX_FDS && fd_rule[fd] &&
	    value_matches(&rules[fd_rule[fd] - 1], buf, n)) {
		errno = rules[fd_rule[fd] - 1].err;
		return -1;
	}
	return real_write(fd, buf, n);
}

/* The rule of kind mmap or ktls, or NULL. */
static const struct shim_rule *kind_rule(bool mmap_kind)
{
	load_rules();
	for (int i = 0; i < nrules; i++)
		if (mmap_kind ? rules[i].mmap : rules[i].ktls)
			return &rules[i];
	return NULL;
}

static bool is_pipe_raw(int fd)
{
	char link[64], target[512];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return strstr(target, "/trace_pipe_raw") != NULL;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	const struct shim_rule *r = fd >= 0 ? kind_rule(true) : NULL;
	REAL(void *, mmap, void *, size_t, int, int, int, off_t);

	if (r && is_pipe_raw(fd)) {
		errno = r->err;
		return MAP_FAILED;
	}
	return real_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	const struct shim_rule *r = fd >= 0 ? kind_rule(true) : NULL;
	REAL(void *, mmap64, void *, size_t, int, int, int, off64_t);

	if (r && is_pipe_raw(fd)) {
		errno = r->err;
		return MAP_FAILED;
	}
	return real_mmap64(addr, len, prot, flags, fd, off);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	const struct shim_rule *r = NULL;
	REAL(int, setsockopt, int, int, int, const void *, socklen_t);

	if (level == SOL_TCP && name == TCP_ULP)
		r = kind_rule(false);
	if (r) {
		errno = r->err;
		return -1;
	}
	return real_setsockopt(fd, level, name, val, len);
}
