/*
 * fuzz_agent.c - libFuzzer target for the agent's parsers of text and
 * pages it does not control: per_cpu stats, saved_cmdlines, ring-buffer
 * pages (the event walk) and --connect HOST:PORT. The first input byte
 * picks the parser; the rest is its input.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/reader.h"
#include "agent/ship.h"
#include "agent/tracing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_cmdlines(const char *s, size_t n)
{
	struct proto_cmdline *c;
	uint32_t i, count;
	void *items;

	if (tracing_table_parse(TRACING_CMDLINES, s, n, &items, &count) < 0)
		return;
	c = items;
	for (i = 0; i < count; i++)
		if (strlen(c[i].comm) >= sizeof(c[i].comm))
			abort();
	free(items);
}

static void fuzz_hostport(const char *s, size_t n)
{
	char host[SHIP_HOST_MAX], port[SHIP_PORT_MAX], *z;

	z = strndup(s, n);
	if (!z)
		return;
	if (ship_parse_hostport(z, host, port) == 0 &&
	    (!host[0] || atoi(port) < 1 || atoi(port) > 65535))
		abort();
	free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tracing_cpu_stats st;
	const char *s = (const char *)data + 1;
	uint64_t ts = 0;
	size_t used;

	if (size < 1)
		return 0;
	switch (data[0] % 5) {
	case 0:
		tracing_parse_stats(s, size - 1, &st);
		break;
	case 1:
		fuzz_cmdlines(s, size - 1);
		break;
	case 2:
		if (reader_page_events_used(data + 1, size - 1, &used) > (int)size ||
		    used > size - 1)
			abort();
		break;
	case 3:
		/* the mmap path's record walker: at most one event per 4 bytes */
		if (reader_walk_events(data + 1, size - 1, 4096, &ts) > (int)size / 4)
			abort();
		break;
	default:
		fuzz_hostport(s, size - 1);
		break;
	}
	return 0;
}
