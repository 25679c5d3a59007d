/*
 * hostinfo.c - host facts for the agent's HELLO and the trace clock /
 * CLOCK_REALTIME samples (see hostinfo.h).
 *
 * The agent's tracefs instance runs on the "x86-tsc" trace clock where
 * the TSC is invariant (cheapest for the traced CPUs: no clocksource read
 * per event), else on "mono", which is CLOCK_MONOTONIC. A sample pairs that
 * clock, in ns, with CLOCK_REALTIME: for the TSC through the conversion
 * the agent sends in its HELLO (ring_clock.c), for mono directly.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "agent/hostinfo.h"
#include "common/tc_error.h"

int hostinfo_read_line(const char *path, char *buf, size_t len)
{
	char line[HOSTINFO_STR_MAX * 4];
	FILE *f;
	int ret = 0;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f)) {
		ret = ferror(f) ? -EIO : 0;
		line[0] = '\0';
		if (ret)
			goto out;
	}
	line[strcspn(line, "\n")] = '\0';
	if (strlen(line) >= len) {
		ret = TC_ERR_TOO_LONG;
		goto out;
	}
	strcpy(buf, line);
out:
	fclose(f);
	return ret;
}

/* An absent id file is not an error: the field stays empty. */
static void read_optional(const char *path, char *buf, size_t len)
{
	if (hostinfo_read_line(path, buf, len) < 0)
		buf[0] = '\0';
}

static int host_name(const char *name, char *buf, size_t len)
{
	if (name) {
		if (strlen(name) >= len)
			return TC_ERR_TOO_LONG;
		strcpy(buf, name);
		return 0;
	}
	if (gethostname(buf, len - 1) < 0)
		return -errno;
	buf[len - 1] = '\0';
	return 0;
}

int hostinfo_get(const char *name, struct hostinfo *out)
{
	struct hostinfo h;
	struct utsname u;
	long n;
	int ret;

	memset(&h, 0, sizeof(h));
	ret = host_name(name, h.host, sizeof(h.host));
	if (ret < 0)
		return ret;
	if (uname(&u) < 0)
		return -errno;
	snprintf(h.kernel, sizeof(h.kernel), "%s", u.release);
	read_optional("/etc/machine-id", h.machine_id, sizeof(h.machine_id));
	read_optional("/proc/sys/kernel/random/boot_id", h.boot_id,
		      sizeof(h.boot_id));
	n = sysconf(_SC_NPROCESSORS_ONLN);
	h.ncpus = n > 0 ? (uint32_t)n : 1;
	h.long_size = sizeof(long);
	h.big_endian = __BYTE_ORDER == __BIG_ENDIAN;
	*out = h;
	return 0;
}

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

uint64_t hostinfo_trace_now(const struct ring_clock_conv *tsc)
{
	struct timespec m;

	if (tsc)
		return ring_clock_to_ns(tsc, ring_clock_now(RING_CLOCK_TSC));
	clock_gettime(CLOCK_MONOTONIC, &m);
	return (uint64_t)ts_ns(&m);
}

int hostinfo_clock_sample(struct proto_clock *out, const struct ring_clock_conv *tsc)
{
	struct timespec m1, rt, m2;
	uint64_t a, b;

	if (tsc) {
		a = ring_clock_now(RING_CLOCK_TSC);
		if (clock_gettime(CLOCK_REALTIME, &rt) < 0)
			return -errno;
		b = ring_clock_now(RING_CLOCK_TSC);
		out->trace_ns = ring_clock_to_ns(tsc, a + (b - a) / 2);
		out->realtime_ns = ts_ns(&rt);
		return 0;
	}
	if (clock_gettime(CLOCK_MONOTONIC, &m1) < 0 ||
	    clock_gettime(CLOCK_REALTIME, &rt) < 0 ||
	    clock_gettime(CLOCK_MONOTONIC, &m2) < 0)
		return -errno;
	out->trace_ns = (uint64_t)(ts_ns(&m1) + (ts_ns(&m2) - ts_ns(&m1)) / 2);
	out->realtime_ns = ts_ns(&rt);
	return 0;
}
