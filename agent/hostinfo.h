/*
 * hostinfo.h - facts about the traced host that the agent reports in its
 * HELLO (names, ids, kernel, word size, byte order) and the clock sample
 * that ties the trace clock to wall-clock time.
 */
#ifndef AGENT_HOSTINFO_H
#define AGENT_HOSTINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ring.h"
#include "proto/msg.h"

#define HOSTINFO_STR_MAX	256

struct hostinfo {
	char host[HOSTINFO_STR_MAX];		/* gethostname() or override */
	char machine_id[HOSTINFO_STR_MAX];	/* /etc/machine-id, "" if absent */
	char boot_id[HOSTINFO_STR_MAX];		/* kernel boot id, "" if absent */
	char kernel[HOSTINFO_STR_MAX];		/* uname -r */
	uint32_t ncpus;				/* online CPUs */
	uint32_t long_size;			/* sizeof(long) */
	bool big_endian;
};

/*
 * hostinfo_get - collect the host facts.
 * @name: host name to report instead of gethostname()'s, or NULL.
 *
 * A missing machine-id or boot_id file leaves that field empty (containers
 * often lack them); everything else is required.
 *
 * Return: 0 and *@out filled; -errno when gethostname() or uname() fail;
 * TC_ERR_TOO_LONG when @name does not fit. *@out only on success.
 */
int hostinfo_get(const char *name, struct hostinfo *out);

/*
 * hostinfo_clock_sample - pair the trace clock with CLOCK_REALTIME: reads
 * the trace clock, realtime, the trace clock again and reports the midpoint
 * of the two trace clock readings, so the pair's error is at most half
 * their distance. The trace clock is CLOCK_MONOTONIC (the "mono" trace
 * clock) when @tsc is NULL, else the TSC (the "x86-tsc" trace clock)
 * converted to ns with @tsc, as the collector converts the events' TSC:
 * each sample then also corrects the conversion's drift.
 *
 * Return: 0 and *@out; -errno from clock_gettime(). *@out only on success.
 */
int hostinfo_clock_sample(struct proto_clock *out, const struct ring_clock_conv *tsc);

/*
 * hostinfo_trace_now - the trace clock now, in ns, as hostinfo_clock_sample()
 * reads it (CLOCK_MONOTONIC with @tsc NULL, else the TSC through @tsc): the
 * agent's answers to the collector's clock probes. Reads no kernel clock
 * state but clock_gettime()'s (ProtectClock= keeps working).
 */
uint64_t hostinfo_trace_now(const struct ring_clock_conv *tsc);

/*
 * hostinfo_read_line - read the first line of the text file @path into
 * @buf without its newline (a helper for /etc/machine-id and the like).
 *
 * Return: 0; -errno from open/read; TC_ERR_TOO_LONG when the line does
 * not fit in @len bytes. @buf is written only on success.
 */
int hostinfo_read_line(const char *path, char *buf, size_t len);

#endif
