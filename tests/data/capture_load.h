/*
 * capture_load.h - load what tests/data/capture.sh recorded, for the decode
 * and store tests and the page fuzz target (static functions, test-only).
 *
 * The directory is $top_srcdir/tests/data (make check exports top_srcdir),
 * else ./tests/data. Every loader returns 0 or -1; a failed load is a test
 * failure, so the callers assert on it.
 */
#ifndef TESTS_DATA_CAPTURE_LOAD_H
#define TESTS_DATA_CAPTURE_LOAD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/msg.h"
#include "server/ingest/decode.h"

#define CAPTURE_MAX_CPUS 64
#define CAPTURE_NFORMATS 3

struct capture_format {
	const char *system;
	const char *name;
	char *text;
	size_t len;
};

struct capture {
	int pid;			/* common_pid of the markers */
	unsigned page_size, long_size, ncpus, markers;
	uint64_t entries[CAPTURE_MAX_CPUS];	/* kernel's per-CPU 'entries' */
	char *header_page;
	size_t header_page_len;
	struct capture_format formats[CAPTURE_NFORMATS];
	uint8_t *raw[CAPTURE_MAX_CPUS];	/* cpuN.raw, whole pages */
	size_t raw_len[CAPTURE_MAX_CPUS];
	struct proto_hello hello;
};

static inline const char *capture_dir(void)
{
	static char dir[4096];
	const char *top = getenv("top_srcdir");

	snprintf(dir, sizeof(dir), "%s/tests/data", top ? top : ".");
	return dir;
}

/* Read a whole file; *len excludes the NUL appended for text use. */
static inline char *capture_slurp(const char *name, size_t *len)
{
	char path[4200];
	char *buf = NULL;
	long n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", capture_dir(), name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

static inline int capture_meta(struct capture *c)
{
	size_t len;
	char *text = capture_slurp("capture.txt", &len), *line, *save = NULL;
	unsigned cpu;
	unsigned long long v;

	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "cpu%u_entries=%llu", &cpu, &v) == 2 && cpu < CAPTURE_MAX_CPUS)
			c->entries[cpu] = v;
		else if (sscanf(line, "pid=%llu", &v) == 1)
			c->pid = (int)v;
		else if (sscanf(line, "page_size=%llu", &v) == 1)
			c->page_size = (unsigned)v;
		else if (sscanf(line, "long_size=%llu", &v) == 1)
			c->long_size = (unsigned)v;
		else if (sscanf(line, "ncpus=%llu", &v) == 1)
			c->ncpus = (unsigned)v;
		else if (sscanf(line, "markers=%llu", &v) == 1)
			c->markers = (unsigned)v;
	}
	free(text);
	return c->page_size && c->long_size && c->ncpus && c->ncpus <= CAPTURE_MAX_CPUS ? 0 : -1;
}

static inline int capture_load(struct capture *c)
{
	static const char *const ev[CAPTURE_NFORMATS][2] = {
		{ "sched", "sched_switch" }, { "sched", "sched_wakeup" }, { "ftrace", "print" },
	};
	char name[64];

	memset(c, 0, sizeof(*c));
	if (capture_meta(c) < 0)
		return -1;
	c->header_page = capture_slurp("header_page", &c->header_page_len);
	if (!c->header_page)
		return -1;
	for (unsigned i = 0; i < CAPTURE_NFORMATS; i++) {
		c->formats[i].system = ev[i][0];
		c->formats[i].name = ev[i][1];
		snprintf(name, sizeof(name), "%s.format", ev[i][1]);
		c->formats[i].text = capture_slurp(name, &c->formats[i].len);
		if (!c->formats[i].text)
			return -1;
	}
	for (unsigned cpu = 0; cpu < c->ncpus; cpu++) {
		snprintf(name, sizeof(name), "cpu%u.raw", cpu);
		c->raw[cpu] = (uint8_t *)capture_slurp(name, &c->raw_len[cpu]);
		if (!c->raw[cpu])
			return -1;
	}
	c->hello = (struct proto_hello){
		.version = PROTO_VERSION, .host = (char *)"capture-host",
		.machine_id = (char *)"0123456789abcdef0123456789abcdef",
		.boot_id = (char *)"boot-1", .kernel = (char *)"6.18-test",
		.trace_clock = (char *)"mono", .ncpus = c->ncpus,
		.page_size = c->page_size, .long_size = c->long_size,
		.big_endian = false,
	};
	return 0;
}

static inline void capture_free(struct capture *c)
{
	free(c->header_page);
	for (unsigned i = 0; i < CAPTURE_NFORMATS; i++)
		free(c->formats[i].text);
	for (unsigned cpu = 0; cpu < CAPTURE_MAX_CPUS; cpu++)
		free(c->raw[cpu]);
}

/* A decoder that knows the captured header_page and formats. */
static inline int capture_decoder(const struct capture *c, struct decoder **out,
				  const struct decode_type *types[CAPTURE_NFORMATS])
{
	struct decoder *d;

	if (decoder_new(&c->hello, &d) < 0)
		return -1;
	if (decoder_header_page(d, c->header_page, c->header_page_len) < 0)
		goto err;
	for (unsigned i = 0; i < CAPTURE_NFORMATS; i++)
		if (decoder_format(d, c->formats[i].system, c->formats[i].name,
				   c->formats[i].text, c->formats[i].len, &types[i]) < 0)
			goto err;
	*out = d;
	return 0;
err:
	decoder_free(d);
	return -1;
}

#endif
