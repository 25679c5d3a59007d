/*
 * tc_probe.c - TESTS ONLY: does this kernel (as tests/refuse_shim.so lets
 * it seem, when preloaded) offer a tracefs capability? tests/lib.sh's
 * tc_can_* ask it before a test uses one.
 *
 *   tc_probe subbuf|mmap|tsc|function|ktls
 *
 * Each probe runs in a tracefs instance of its own (tc-probe-PID, removed
 * before exit) and touches nothing else. It writes with write(2), as
 * libtracefs does, so that the shim sees it. Exit 0: the capability is
 * there; 1: it is not, and stdout has one line saying why.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRACING "/sys/kernel/tracing"

static char inst[256];

/* Say why not: @what, then @err's text. Return: 1. */
static int no(const char *what, int err)
{
	printf("%s: %s\n", what, strerror(err));
	return 1;
}

/* Write @value to the instance's @file. Return: 0 or errno. */
static int put(const char *file, const char *value)
{
	char path[512];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", inst, file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write(fd, value, strlen(value)) < 0)
		err = errno;
	close(fd);
	return err;
}

/* A sub-buffer size other than the instance's own is taken. */
static int probe_subbuf(void)
{
	char path[512], buf[32] = "";
	long kb;
	int fd, err;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/buffer_subbuf_size_kb", inst);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return no("no buffer_subbuf_size_kb (Linux < 6.8?)", errno);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	kb = n > 0 ? strtol(buf, NULL, 10) : 0;
	err = put("buffer_subbuf_size_kb", kb == 8 ? "16" : "8");
	return err ? no("the kernel refuses a new buffer_subbuf_size_kb",
			err) : 0;
}

/* trace_pipe_raw's meta page maps (Linux >= 6.10). */
static int probe_mmap(void)
{
	char path[512];
	long psz = sysconf(_SC_PAGESIZE);
	void *m;
	int fd, err;

	snprintf(path, sizeof(path), "%s/per_cpu/cpu0/trace_pipe_raw", inst);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return no("cannot open per_cpu/cpu0/trace_pipe_raw", errno);
	m = mmap(NULL, (size_t)psz, PROT_READ, MAP_SHARED, fd, 0);
	err = errno;
	if (m != MAP_FAILED)
		munmap(m, (size_t)psz);
	close(fd);
	return m == MAP_FAILED ?
	       no("the kernel refuses mmap of trace_pipe_raw", err) : 0;
}

static int probe_tsc(void)
{
	int err = put("trace_clock", "x86-tsc");

	return err ? no("the kernel refuses trace_clock x86-tsc", err) : 0;
}

static int probe_function(void)
{
	int err = put("current_tracer", "function");

	if (err)
		return no("the kernel refuses the function tracer", err);
	put("current_tracer", "nop");
	return 0;
}

/* TCP_ULP "tls" on a connected loopback socket (the ULP wants one). */
static int probe_ktls(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int l, c, s = -1, err = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(l, 1) < 0 || getsockname(l, (struct sockaddr *)&a, &alen) < 0 ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    (s = accept(l, NULL, NULL)) < 0)
		err = errno;
	if (!err && setsockopt(c, SOL_TCP, TCP_ULP, "tls", 3) < 0)
		err = errno;
	close(l);
	close(c);
	if (s >= 0)
		close(s);
	return err ? no("no kernel TLS (TCP_ULP tls)", err) : 0;
}

static const struct {
	const char *name;
	int (*probe)(void);
	int needs_instance;
} probes[] = {
	{ "subbuf", probe_subbuf, 1 },
	{ "mmap", probe_mmap, 1 },
	{ "tsc", probe_tsc, 1 },
	{ "function", probe_function, 1 },
	{ "ktls", probe_ktls, 0 },
};

int main(int argc, char **argv)
{
	int ret;

	for (size_t i = 0; argc == 2 && i < sizeof(probes) / sizeof(probes[0]); i++) {
		if (strcmp(argv[1], probes[i].name))
			continue;
		if (!probes[i].needs_instance)
			return probes[i].probe();
		snprintf(inst, sizeof(inst), TRACING "/instances/tc-probe-%d",
			 (int)getpid());
		if (mkdir(inst, 0755) < 0)
			return no("cannot create a tracefs instance", errno);
		ret = probes[i].probe();
		if (rmdir(inst) < 0)
			fprintf(stderr, "tc_probe: cannot remove %s: %s\n", inst,
				strerror(errno));
		return ret;
	}
	fprintf(stderr, "usage: tc_probe subbuf|mmap|tsc|function|ktls\n");
	return 2;
}
