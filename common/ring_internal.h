/*
 * ring_internal.h - the shared-memory layout of the user-space ring buffer
 * and the one small wrapper around every atomic and barrier it uses.
 *
 * Only common/ring*.c and tests include this. Everything here lives in a
 * file mapped by the traced program (writer) and traceagent (reader), so
 * it holds offsets and indices, never pointers; all fields are fixed width.
 *
 * Words (see ring.c for the algorithm):
 *   wpos   = virtual page number << 16 | RING_WPOS_TS_ALT bit | offset of
 *            the next free byte in that page's data area (0..data_size,
 *            15 bits: pages are at most 32 KiB). The bit says which of
 *            res.ts[] holds the last reservation's timestamp; only rseq
 *            writers flip it (ring.c), so locked buffers keep ts[0].
 *   tag    = virtual page number << RING_TAG_SEQ_SHIFT | TOOK bit |
 *            physical page index: which physical page holds which virtual
 *            page, and whether the reader swapped it out (took it).
 *   commit = bytes committed into a slot over all its laps (low 40 bits)
 *            + events committed (high 24 bits), moved with one atomic add;
 *            the slot's count is the sum of commit and commit_cpu (the
 *            part added without a lock by rseq on the buffer's own CPU).
 */
#ifndef COMMON_RING_INTERNAL_H
#define COMMON_RING_INTERNAL_H

#include <stdint.h>

#include "common/page.h"

#define RING_MAGIC		0x31474e4952435454ULL	/* "TTCRING1" */
#define RING_VERSION		5
/* Our pages (common/page.h) have a 64-bit commit word on every host. */
#define RING_PAGE_HDR		PAGE_HDR_SIZE(8)
#define RING_CACHELINE		64

#define RING_WPOS_SHIFT		16
#define RING_WPOS_OFF_MASK	0x7fffULL
#define RING_WPOS_TS_ALT	0x8000ULL	/* bit 15: ring_inline.h */

#define RING_TAG_PHYS_MASK	0x7fffffULL
#define RING_TAG_TOOK		(1ULL << 23)
#define RING_TAG_SEQ_SHIFT	24

#define RING_CC_BYTES_MASK	((1ULL << 40) - 1)
#define RING_CC_EVENT		(1ULL << 40)

/* time_delta of the padding a writer puts over its event between reserve
 * and commit; a dead writer leaves it behind and the reader counts it. */
#define RING_UNFINISHED_MARK	0x5a5a5a

#define RING_ALIGNED __attribute__((aligned(RING_CACHELINE)))

/* One slot of a buffer's ring: which page it holds and what is committed.
 * One cache line each: the reader's swap of the page just completed must
 * not take the line of the slot the writers are filling. */
struct ring_slot {
	uint64_t tag;
	uint64_t commit;
	uint64_t ev_base;	/* commit's event count when this lap began */
	uint64_t commit_cpu;	/* like commit; only rseq on the buffer's CPU */
} RING_ALIGNED;

/* Header flags. RING_F_RSEQ: the per-CPU buffers' {wpos, last_ts} are
 * changed only by code running on that buffer's CPU (ring.c). */
#define RING_F_RSEQ		1u

/* Per-CPU, durable or own buffer control block, followed by its slots. */
struct ring_buf {
	/* written by every writer: the locked path moves {wpos, ts[0]} with
	 * one cmpxchg16b; rseq writers store ts[the other one] and then
	 * wpos, flipping its RING_WPOS_TS_ALT bit (ring.c) */
	struct {
		uint64_t wpos;
		uint64_t ts[2];
	} __attribute__((aligned(16))) res RING_ALIGNED;
	/* writers only, producer mode: a value rpos once had (rpos only
	 * grows), so a page switch reads the reader's line once a lap */
	uint64_t rpos_hint;
	/* own buffers (ring.h): the id of the thread that writes it, 0 when
	 * free; claimed with cmpxchg, given back with a release store */
	uint64_t owner;
	/* reader side */
	uint64_t rpos RING_ALIGNED;	/* next virtual page the reader takes */
	uint64_t reader_phys;		/* the reader's page, outside the ring */
	uint64_t last_taken;		/* virtual page last taken */
	uint64_t lost_seen;		/* lost count at the last page taken */
	uint64_t pages_read;
	uint64_t unfinished;		/* events a dead writer left behind */
	/* counters, added to by writers on slow paths only */
	uint64_t lost_full RING_ALIGNED;	/* producer/consumer: newest dropped */
	uint64_t lost_busy;		/* slot still being committed: dropped */
	uint64_t lost_overwritten;	/* overwrite: oldest dropped (events) */
	uint64_t pages_overwritten;
	struct ring_slot slots[] RING_ALIGNED;
};

/* One format-table record: header, then the NUL-terminated text. */
struct ring_fmt_entry {
	uint32_t size;			/* whole record, 8-byte multiple */
	uint32_t ready;			/* 1 once the text is written */
	char text[];
};

/* File header: page 0 of the mapping. */
struct ring_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t page_size;
	uint32_t nr_slots;		/* ring pages per buffer (power of 2) */
	uint32_t nr_bufs;		/* CPUs, 1 durable buffer, nr_own */
	uint32_t mode;			/* enum ring_mode */
	uint32_t clock;			/* enum ring_clock_id */
	int32_t owner_pid;
	uint32_t attached;		/* set by the reader: writes enabled */
	uint64_t trigger_seq;		/* flight recorder: bumped per trigger */
	uint64_t file_size;
	uint64_t fmt_off;		/* format table: struct ring_fmt_entry */
	uint64_t fmt_size;		/* ... records, 8-byte aligned */
	uint64_t fmt_used;		/* bytes reserved (cmpxchg) */
	uint64_t next_event_id;
	uint32_t flags;			/* RING_F_* */
	uint32_t nr_own;		/* own buffers: the last nr_own */
	uint64_t buf_off[];		/* offset of each struct ring_buf */
};

/* ---- atomics: the only place the memory model is spelled out ---- */
#define ring_load_relaxed(p)	__atomic_load_n((p), __ATOMIC_RELAXED)
#define ring_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ring_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ring_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define ring_add_release(p, v)	__atomic_fetch_add((p), (v), __ATOMIC_RELEASE)
#define ring_add_relaxed(p, v)	__atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define ring_cas(p, oldp, v) \
	__atomic_compare_exchange_n((p), (oldp), (v), 0, __ATOMIC_ACQ_REL, \
				    __ATOMIC_ACQUIRE)

/* ring_prefetch_w - fetch the line at @p for writing (x86 prefetchw:
 * AMD64 and Intel since Broadwell; a NOP on older Intel). */
static inline void ring_prefetch_w(const void *p)
{
#if defined(__x86_64__)
	__asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* ring_res_ts - the last reservation's timestamp in buffer @b, whose
 * wpos was @w (loaded before). */
static inline uint64_t ring_res_ts(const struct ring_buf *b, uint64_t w)
{
	return ring_load_relaxed(&b->res.ts[(w & RING_WPOS_TS_ALT) != 0]);
}

/* ring_slot_commit - a slot's committed count: both parts, summed per
 * field (each part's byte field wraps on its own). */
static inline uint64_t ring_slot_commit(const struct ring_slot *s)
{
	uint64_t a = ring_load_acquire(&s->commit);
	uint64_t b = ring_load_acquire(&s->commit_cpu);

	return (((a >> 40) + (b >> 40)) << 40) |
	       ((a + b) & RING_CC_BYTES_MASK);
}

/* ring_cas16 - compare and swap the 16-byte pair at @p (16-byte aligned):
 * if it equals {*o0, *o1} store {n0, n1} and return 1; else load the
 * current value into *o0, *o1 and return 0. Full barrier. */
static inline int ring_cas16(uint64_t *p, uint64_t *o0, uint64_t *o1,
			     uint64_t n0, uint64_t n1)
{
#if defined(__x86_64__)
	unsigned char ok;

	__asm__ __volatile__("lock cmpxchg16b %1\n\tsetz %0"
			     : "=q"(ok), "+m"(*(volatile unsigned __int128 *)p),
			       "+a"(*o0), "+d"(*o1)
			     : "b"(n0), "c"(n1)
			     : "memory", "cc");
	return ok;
#else
	unsigned __int128 old = ((unsigned __int128)*o1 << 64) | *o0;
	unsigned __int128 nw = ((unsigned __int128)n1 << 64) | n0;
	int ok = __atomic_compare_exchange_n((unsigned __int128 *)p, &old, nw,
					     0, __ATOMIC_ACQ_REL,
					     __ATOMIC_ACQUIRE);

	*o0 = (uint64_t)old;
	*o1 = (uint64_t)(old >> 64);
	return ok;
#endif
}

#endif
