/*
 * serve_export.c - /api/export (serve_export.h): traceq --export run as
 * a child of this traceq (/proc/self/exe), which holds the export's
 * machinery (mode_export.c, a mode of its own that no other calls),
 * into a directory made private for it (mkdtemp, 0700). The answer is
 * the file it wrote, sent from its descriptor (evbuffer_add_file()) and
 * unlinked first; the child's stderr is the error an export that fails
 * answers with. The page's requests are answered one at a time, so the
 * loop waits for the child as a command line would.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/http.h>

#include "traceq/output.h"
#include "traceq/serve_api.h"
#include "traceq/serve_export.h"
#include "traceq/traceq.h"

#define EXPORT_ARGS	32	/* the child's argv */
#define EXPORT_ERR_MAX	4096	/* bytes of its stderr answered */

struct xargs {
	const char *argv[EXPORT_ARGS];
	size_t n;
	char timeout[16];
};

static void add(struct xargs *x, const char *a, const char *b)
{
	if (x->n + 3 > EXPORT_ARGS)
		return;		/* cannot happen: the calls below are counted */
	x->argv[x->n++] = a;
	if (b)
		x->argv[x->n++] = b;
}

/* Argument @name (serve_api_arg()); an empty one is none. */
static const char *get(const struct evkeyvalq *args, const char *name, bool *bad)
{
	const char *v = serve_api_arg(args, name, bad);

	return v && *v ? v : NULL;
}

/* The child's command line. Return: 0; -1 (a wrong argument: @why). */
static int make_args(const struct traceq_opts *o, const struct evkeyvalq *args, const char *path,
		     struct xargs *x, const char **why)
{
	bool bad = false;
	const char *fmt = get(args, "format", &bad), *since = get(args, "since", &bad);
	const char *until = get(args, "until", &bad), *host = get(args, "host", &bad);
	const char *q = get(args, "q", &bad);

	if (bad || !fmt || (strcmp(fmt, "tracedat") && strcmp(fmt, "perfetto"))) {
		*why = bad ? "an argument is longer than 8192 bytes" :
		       "format: expected tracedat or perfetto";
		return -1;
	}
	x->n = 0;
	snprintf(x->timeout, sizeof(x->timeout), "%d", o->timeout_ms);
	add(x, "traceq", NULL);
	add(x, "--server", o->server);
	if (o->cert)
		add(x, "--cert", o->cert);
	if (o->key)
		add(x, "--key", o->key);
	if (o->ca)
		add(x, "--ca", o->ca);
	add(x, "--timeout", x->timeout);
	add(x, "--export", path);
	add(x, "-f", fmt);
	if (since)
		add(x, "--since", since);
	if (until)
		add(x, "--until", until);
	if (host)
		add(x, "--host", host);
	add(x, "--", q);	/* q NULL: the argv ends after "--" */
	x->argv[x->n] = NULL;
	return 0;
}

/* Run the child; its stderr into memory file @errfd. Return: its exit status; -1. */
static int run(struct xargs *x, int errfd)
{
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(errfd, 2) < 0)
			_exit(127);
		execv("/proc/self/exe", (char *const *)x->argv);
		fprintf(stderr, "traceq: cannot run traceq --export: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The answer {"ok":false,"error":@msg} of @len bytes into @out (say_error(): a C string). */
static void say_bytes(struct evbuffer *out, const char *msg, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return;
	fputs("{\"ok\":false,\"error\":", f);
	out_json_str(f, msg, len);
	fputs("}\n", f);
	if (fclose(f) == 0)
		evbuffer_add(out, buf, n);
	free(buf);
}

static void say_error(struct evbuffer *out, const char *msg)
{
	say_bytes(out, msg, strlen(msg));
}

/* The child's stderr as the error. */
static void say_child(struct evbuffer *out, int errfd)
{
	char buf[EXPORT_ERR_MAX];
	ssize_t n = pread(errfd, buf, sizeof(buf), 0);

	if (n <= 0)
		n = snprintf(buf, sizeof(buf), "traceq --export failed");
	say_bytes(out, buf, (size_t)n);
}

/*
 * The file the child wrote at @path into @out (unlinked; a directory, the
 * trace.dat of several hosts, is refused); a zip (Perfetto's of several
 * hosts) changes @f. Return: the status.
 */
static int take(const char *path, struct evbuffer *out, struct serve_file *f)
{
	unsigned char magic[4] = { 0 };
	static const char several[] = "trace.dat is a file per host: pick one host";
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;

	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		bool dir = fd >= 0;

		if (fd >= 0)
			close(fd);
		say_error(out, dir ? several : "the export wrote no file");
		return dir ? 400 : 502;
	}
	unlink(path);
	if (pread(fd, magic, sizeof(magic), 0) == sizeof(magic) &&
	    !memcmp(magic, "PK\3\4", sizeof(magic))) {
		f->type = "application/zip";	/* Perfetto's, of several hosts */
		snprintf(f->name, sizeof(f->name), "trace.zip");
	}
	if (evbuffer_add_file(out, fd, 0, sb.st_size) < 0) {	/* owns fd, even on failure */
		say_error(out, "out of memory");
		return 500;
	}
	return 200;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* Remove @dir and what an export left in it (a directory of per-host files). */
static void remove_dir(const char *dir)
{
	nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

int serve_export(const struct traceq_opts *o, const struct evkeyvalq *args,
		 struct evbuffer *out, struct serve_file *f)
{
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	const char *fmt = evhttp_find_header(args, "format"), *why = NULL;
	char dir[PATH_MAX / 2], path[PATH_MAX];
	struct xargs x;
	int errfd, rc, code;

	f->type = fmt && !strcmp(fmt, "perfetto") ? "application/json" : "application/octet-stream";
	snprintf(f->name, sizeof(f->name), fmt && !strcmp(fmt, "perfetto") ? "trace.json" :
		 "trace.dat");
	if (snprintf(dir, sizeof(dir), "%s/traceq-export.XXXXXX", tmp) >= (int)sizeof(dir) ||
	    !mkdtemp(dir)) {
		say_error(out, "no temporary directory");
		return 500;
	}
	snprintf(path, sizeof(path), "%s/%.63s", dir, f->name);
	if (make_args(o, args, path, &x, &why) < 0) {
		say_error(out, why);
		code = 400;
		goto out;
	}
	errfd = memfd_create("traceq-export", MFD_CLOEXEC);
	rc = errfd < 0 ? -1 : run(&x, errfd);
	if (rc == 0) {
		code = take(path, out, f);
	} else {
		if (errfd >= 0)
			say_child(out, errfd);
		code = rc == 2 ? 400 : 502;
	}
	if (errfd >= 0)
		close(errfd);
out:
	remove_dir(dir);
	return code;
}
