/*
 * ring_priv.h - the process-local view of a mapped ring file, shared by
 * common/ring.c (writer side) and common/ring_reader.c (reader side).
 */
#ifndef COMMON_RING_PRIV_H
#define COMMON_RING_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sched.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "common/ring.h"
#include "common/ring_internal.h"

/*
 * The first cache line holds everything a write reads, and nothing in
 * this struct or in bufs[] is written after ring_view(): both are
 * cache-line aligned so that no other allocation (the reader's held[],
 * which an in-process reader writes per page) shares their lines.
 */
struct ring {
	struct ring_buf **bufs;		/* nbufs pointers into the mapping */
	uint32_t nbufs, ncpu;		/* buffers: ncpu, durable, own */
	uint32_t page_size, data_size;	/* data_size = page_size - 16 */
	uint32_t nslots, nshift;	/* nslots = 1 << nshift */
	uint32_t mode, clock;
	uint32_t page_shift;		/* page_size = 1 << page_shift */
	bool rseq;			/* RING_F_RSEQ: see ring.c */
	bool tsc_fast;			/* rseq and the TSC clock: the inline
					 * write path (ring.c: tsc_fast()) */
	uint32_t gen;			/* this view's number (ring_inline.h) */
	uint64_t ctl_size;		/* buffer control block; pages follow */
	/* cold */
	uint8_t *base;			/* the mapping */
	size_t size;
	int fd;
	struct ring_hdr *hdr;
	bool *held;			/* reader: page out, not yet put */
	struct ring_part *part;		/* reader: own buffers' copies */
	uint64_t fmt_off, fmt_size;	/* format table, checked at open */
} RING_ALIGNED;

/* Reader: what was copied out of an own buffer's page in hand. */
struct ring_part {
	uint64_t q;			/* virtual page; ~0: none */
	uint64_t ts;			/* time of the last copied event */
	uint32_t off;			/* bytes of it copied */
	bool want;			/* ring_reader_flush() asked */
};

/* ring_page - address of physical page @phys of buffer @b. */
static inline uint8_t *ring_page(const struct ring *r,
				 const struct ring_buf *b, uint64_t phys)
{
	return (uint8_t *)b + r->ctl_size + (phys << r->page_shift);
}

/* ring_clock_read - the writers' clock, inline (rdtsc: ~10 ns here). */
static inline uint64_t ring_clock_read(uint32_t clk)
{
	struct timespec ts;

#if defined(__x86_64__)
	if (clk == RING_CLOCK_TSC)
		return __rdtsc();
#endif
	(void)clk;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ring_cpu - the calling thread's CPU: glibc's rseq area when it
 * registered one (a load), else sched_getcpu(). */
int ring_cpu(void);

/* ring_pin - move the calling thread to CPU @cpu, saving its affinity in
 * *@saved for ring_unpin(). Return: 0; -EINVAL; -errno. */
int ring_pin(unsigned cpu, cpu_set_t *saved);
void ring_unpin(const cpu_set_t *saved);

uint8_t *ring_claim_page(const struct ring *r, struct ring_buf *b,
			 uint64_t q);
uint64_t ring_buf_ctl_size(uint32_t nslots, uint32_t page_size);
int ring_view(struct ring *r);
int ring_map_fd(int fd, uint64_t size, bool populate, struct ring **out);
void ring_end_page(const struct ring *r, struct ring_buf *b, uint64_t p,
		   uint32_t off, uint32_t pad);

/* ring_repair_page - make the page (@page_size bytes) a dead writer left
 * decodable, in place (ring_reader_recover()). Return: the events it lost
 * (unfinished ones, and a rest that does not parse). */
uint64_t ring_repair_page(uint8_t *page, uint32_t page_size);

#endif
