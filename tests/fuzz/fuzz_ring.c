/*
 * fuzz_ring.c - libFuzzer target for the reader side of the ring buffer
 * (common/ring_reader.c): the ring file is written by the traced program,
 * which traceagent does not trust. The input either is the whole file, or
 * (first byte odd) is XORed over a freshly created valid ring so the
 * checks past the header get exercised; with the first byte's low four
 * bits 0011 that ring also has two own buffers (ring.h), one with a
 * writer still in its page (the reader copies its committed prefix), one
 * given back. The owner is this process, alive, unless the input changes
 * owner_pid (then ring_reader_recover() runs). Every reader entry point
 * must return an error, never crash, hang or touch memory outside the map.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/ring.h"
#include "common/ring_inline.h"

/* @n 40-byte events into own buffer @o, at fixed times (one gap needs a
 * time extend), written as lib/fgraph.c writes its exit records. */
static void own_events(struct ring *r, struct ring_own *o, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t now = 1000 + (uint64_t)i * 100 +
			       (i >= n / 2 ? 1ull << 28 : 0);

		if (!ring_own_fast(o, 44, now) && ring_own_enter(r, o, 44, now))
			return;
		memset(o->next + 4, 'a' + i % 26, 40);
		ring_own_commit(o, 44, 10, now);
	}
}

static int valid_ring_fd(bool own)
{
	struct ring_params p = { .page_size = 4096, .nr_pages = 2,
				 .nr_cpus = 1, .mode = RING_MODE_OVERWRITE,
				 .nr_own = own ? 2 : 0 };
	struct ring_own o[2];
	struct ring *r;
	int fd;

	if (ring_create(NULL, &p, &r))
		return -1;
	for (int i = 0; i < 300; i++)
		ring_write(r, i % 2, "0123456789abcdef0123", 20);
	if (own && !ring_own_claim(r, 1, &o[0]) &&
	    !ring_own_claim(r, 2, &o[1])) {
		own_events(r, &o[0], 150);	/* a page and a half */
		own_events(r, &o[1], 20);
		ring_own_release(r, &o[1]);
	}
	fd = dup(ring_fd(r));
	ring_close(r);
	return fd;
}

static void xor_into(int fd, const uint8_t *data, size_t size)
{
	off_t len = lseek(fd, 0, SEEK_END);
	uint8_t *m;

	if (len <= 0)
		return;
	m = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return;
	/* spread the input over the file: 4 bytes of offset, 1 of value */
	for (size_t i = 0; i + 5 <= size; i += 5) {
		uint32_t off;

		memcpy(&off, data + i, 4);
		m[off % (uint64_t)len] ^= data[i + 4];
	}
	munmap(m, (size_t)len);
}

static void read_all(struct ring *r)
{
	struct ring_page_ref pg;
	uint64_t cur = 0;
	const char *t;

	for (unsigned b = 0; b < ring_nr_bufs(r); b++) {
		ring_reader_flush(r, b);
		for (int i = 0; i < 8 && ring_reader_get(r, b, &pg) == 0; i++)
			ring_reader_put(r, b);
		ring_reader_recover(r, b);
		for (int i = 0; i < 8 && ring_reader_get(r, b, &pg) == 0; i++)
			ring_reader_put(r, b);
	}
	while (ring_format_next(r, &cur, &t) == 1)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ring *r;
	int fd;

	if (size < 1 || size > (1 << 20))
		return 0;
	if (data[0] & 1) {
		fd = valid_ring_fd((data[0] & 0x0f) == 3);
		if (fd < 0)
			return 0;
		xor_into(fd, data + 1, size - 1);
	} else {
		fd = memfd_create("fuzz", 0);
		if (fd < 0 || write(fd, data + 1, size - 1) < 0) {
			close(fd);
			return 0;
		}
	}
	if (ring_open_fd(fd, &r) == 0) {
		read_all(r);
		ring_close(r);
	}
	close(fd);
	return 0;
}
