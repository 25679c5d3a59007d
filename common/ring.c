/*
 * ring.c - the writer side of tracecollect's user-space ring buffer: file
 * creation and mapping, reservation and commit.
 *
 * Algorithm. The page structure is the kernel's lockless ring buffer
 * (Documentation/trace/ring-buffer-design.rst): a ring of pages per CPU
 * plus one reader page outside the ring that the reader swaps in for the
 * oldest page; pages are ftrace sub-buffers. In shared memory the "list"
 * is an array of slots whose link words (tags) hold a physical page index
 * and the virtual page number it carries, and the HEAD/UPDATE protocol
 * becomes one cmpxchg on the slot's tag that the reader's swap and a
 * writer's entry into the next lap race on (see ring_reader.c).
 *
 * The kernel's writer side cannot be reused: it relies on writers nesting
 * like a stack on one CPU (only the outermost writer moves the commit
 * page). Threads are preempted and migrate mid-write, so we use the
 * reservation scheme of LTTng-UST (Desnoyers, "Low-Impact Operating
 * System Tracing", 2009, ch. 5; lttng-ust src/common/ringbuffer/
 * frontend_internal.h): reserve with cmpxchg on the write position, then
 * count committed bytes per slot with an atomic add. A page is complete
 * when its slot's committed byte count reaches the page's data size for
 * that lap; nobody ever waits for anybody. It is correct for every
 * interleaving without kernel support, with nesting signal handlers
 * included (a handler's cmpxchg simply wins and the interrupted one
 * retries), and a writer killed between reserve and commit leaves a
 * well-defined hole: its space was pre-written as padding, so the page
 * stays decodable. The per-CPU buffers run the same scheme with
 * restartable sequences in place of the locked instructions where the
 * kernel and glibc allow (below).
 *
 * Timestamps: the kernel stores each event's delta from the previous one.
 * With concurrent reservers the previous event is whoever reserved just
 * before, so the write position and the last timestamp are one 16-byte
 * pair moved by a single cmpxchg16b: the order of reservations is the
 * order of timestamps, and deltas are exact. Deltas >= 2^27 get a
 * time-extend event in front, as in the kernel.
 *
 * Per-CPU fast path (restartable sequences). The locked path costs ~47
 * ns per 32-byte event on a quiet 2-vCPU KVM guest (rdtsc ~10, lock
 * cmpxchg16b ~14, the commit's lock xadd ~6 ns); LTTng-UST ~75 ns.
 * When every CPU has its own buffer and glibc registered rseq for the
 * process (RING_F_RSEQ, decided at creation; ring_params.locked, or
 * GLIBC_TUNABLES=glibc.pthread.rseq=0 in the traced program, turn it
 * off), a per-CPU buffer's {wpos, last_ts} is changed only by code
 * running on that buffer's CPU, so no locked instruction is needed:
 *  - reserve: an rseq critical section (ring_rseq.h) that checks the CPU,
 *    compares wpos with what was read, stores the timestamp in the res.ts
 *    word that wpos's RING_WPOS_TS_ALT bit does not name, and commits the
 *    new wpos, bit flipped, with one 8-byte store. Preemption, migration
 *    or a signal restart it (a handler's write simply comes first), and a
 *    restarted section has only written the word nobody reads while wpos
 *    is unchanged; so the order of reservations is still the order of
 *    timestamps, and deltas stay exact. wpos only grows, so comparing it
 *    alone proves the timestamp read with it is still the last one. (The
 *    section used to compare both words of {wpos, last_ts} and commit the
 *    pair with one 16-byte SSE store: ~2.5 ns more per event here, on an
 *    AMD EPYC guest, than two 8-byte stores, see "Later" below.) Locked
 *    buffers never flip the bit: their pair is {wpos, ts[0]};
 *  - commit: an unlocked add to the slot's commit_cpu word in a critical
 *    section checking the CPU; a writer that migrated since it reserved
 *    adds to the slot's commit word with lock xadd instead. A slot's
 *    count is the sum of both (ring_slot_commit()); both only grow within
 *    a lap, so a sum that reads complete is complete, and a next-lap
 *    writer always changes the tag first, which the reader's cmpxchg
 *    checks (spin/ring.pml models the two words);
 *  - a thread naming another CPU's buffer, and the reader ending a
 *    partial page (ring_reader_flush(), another process), first move to
 *    that CPU with sched_setaffinity: once they run there no writer of the
 *    buffer is inside a critical section, and their single cmpxchg16b
 *    cannot be interleaved by one. The membarrier(PRIVATE_EXPEDITED_RSEQ)
 *    plan was dropped: it only reaches the caller's own process, and the
 *    reader is traceagent. A dead owner has no writers: no move needed.
 *  - the page switch, time extends and drops stay on the general path
 *    (the same code, with the rseq compare-and-store in place of
 *    cmpxchg16b); the durable buffer, shared by all CPUs, stays locked.
 * A writer killed mid-write still leaves padding (ring_prewrite()) and the
 * reader's recovery is unchanged.
 *
 * Measured (2-vCPU KVM guest shared with other builds, load 3-8, so
 * bench/run reports the writer thread's CPU time per event, median of 20
 * chunks, for us and LTTng-UST alike; wall-time means swing 2x between
 * runs). 32-byte payload, 1 thread, reader draining, same bench code on
 * the old and the new ring, runs interleaved:
 *   locked path (before)          51.7, 51.2 ns; LTTng 105, 104: ratio 2.0
 *   rseq fast path (now)          26.3, 25.2 ns; LTTng 106, 107: ratio 4.0-4.3
 *   plain private array + rdtsc   13.3-14.0 ns (bench/ring.c's floor line)
 * Steps, microbenchmark (thread CPU time, best of 40 x 200k writes):
 * locked 47-60 ns; rseq reserve + commit through the general code 31-47;
 * gcc had expanded the variable-size payload memcpy into rep movsq (~20
 * ns to start): 8-byte moves now; with ring_write's inline fast path 23.
 * Of those 23: rdtsc ~14 (the path depends on the timestamp, so little
 * overlaps it; rdtscp costs 17 alone, and lfence is not used), the rest
 * ~9 (23 -> 8.9 with the clock read removed). Each rseq section costs
 * ~0.5-1.5 ns (22 without the reservation's), the padding prewrite
 * ~0.5; against lock cmpxchg16b ~14 and lock xadd ~6 before. Packing
 * {wpos, ts delta} into 8 bytes for a plain cmpxchg would still pay a
 * locked instruction per event, and per-thread buffers are out (the
 * design is per-CPU; but see own buffers below, for the one writer
 * whose cost had to come down further).
 *
 * Later (a 2-vCPU AMD EPYC guest, rdtsc ~10 ns, no rdtscp): on a quiet
 * machine this path costs 12.2-12.4 ns against the plain array's 10.9-11;
 * the 16-24 ns bench/run had been reporting came from the machine's
 * other load, which a reader draining alongside the writer makes far
 * worse (interleaved runs: 12.5 without a reader, 16-27 with one, the
 * plain array unchanged). What made the writer less sensitive to it
 * (32-byte events, reader draining, interleaved runs under load: 16.5-22
 * ns before, 13-14 after):
 *  - prefetchw of the page RING_PREFETCH bytes ahead of the event: the
 *    store misses of the stream are taken before the writes need them;
 *  - nothing a writer reads shares a cache line with anything the
 *    reader writes: struct ring and bufs[] are cache-line aligned (an
 *    in-process reader's held[] used to sit next to bufs[]), a slot is a
 *    cache line (the reader's swap of the page just completed took the
 *    line of the slot being filled), and the producer-mode room check
 *    reads rpos, which the reader writes per page, once a lap
 *    (rpos_hint: a stale value of a counter that only grows is a
 *    conservative answer, so the check stays exact);
 *  - a write that leaves the fast path does not try the same fast
 *    reservation again (a second rdtsc per page switch and per drop);
 *  - payloads over 112 bytes have an inline path too (write_big(): 128-
 *    byte events 21-22 -> 17 ns), and tc_write() takes the inline path
 *    through ring_write_hdr() instead of reserve + ctx + commit (~15 ->
 *    ~12.7 ns, what ring_write costs).
 * bench/run ring, the old and the new ring alternating (13 minutes):
 * 32 B 1 thread 22.4, 16.7, 24.2 ns (ratio to LTTng-UST 3.3, 4.4, 3.7)
 * before; 12.9, 13.9, 12.7 ns (ratio 5.7, 5.5, 6.8) after; plain array
 * 10.8-11.1 in every run.
 * Then (issue 34, the ring against the same record written to a private
 * array with the same rdtsc, interleaved in one run): the 16-byte SSE
 * store that committed {wpos, last_ts} cost ~2.5 ns per event next to
 * the floor's ~9.7 (microbenchmark, thread CPU time, medians of 60
 * interleaved chunks: the inline path 13.0 ns with it, 11.6-12.0 with two
 * 8-byte stores in the section, 10.5 with plain stores and no section);
 * the compare of last_ts went with it (the RING_WPOS_TS_ALT bit above).
 * What is left at a page switch under load is the first store into the
 * next page (a TLB miss plus a cache miss: the swaps permute the pages);
 * prefetching the next page's first line at the previous switch did not
 * measurably help here.
 * Then (issue 34, bench/run ring's floor_ratio, ring/floor in one run:
 * 1.23-1.24 before, 1.14-1.15 after, on a loaded 2-vCPU EPYC guest):
 * the inline path found its page through dependent loads (CPU number ->
 * bufs[] -> wpos -> the slot's tag -> the page) that the event's stores
 * waited on; a per-thread struct ring_tcache now remembers the buffer
 * and page (as fgraph's exit hook did), guarded against signal handlers
 * (it saves ~1.2 ns, the guard costs ~0.4 of that); the TSC path has no
 * call again (the other clock's clock_gettime had given it a stack frame
 * and spills); one flag replaces the rseq and clock checks. What is left above the floor
 * (~1.4 ns, timed variants in a scratch copy): the reservation's rseq
 * section ~0.6 (against two plain stores: the per-CPU lockless
 * guarantee), the cache guard ~0.4 (signal safety), the prewritten
 * padding ~0-0.3 (crash recovery), the commit's rseq add ~0.1, and the
 * checks (CPU, ring, page, room, delta). Removing prefetchw cost 0.5
 * more; one 8-byte store for the padding, and a copy of the current tag
 * on the wpos line (no thread cache), measured no better.
 *
 * Own buffers (ring.h): a buffer that one thread claims and alone
 * writes, for lib/fgraph.c's exit records (one per traced call). The
 * owner holds a whole page: at entry it moves wpos to the page's end
 * (so nothing else reserves there, and ring_reader_flush() has nothing
 * to end), claims the slot's tag as any writer entering a page does,
 * and sets the page's timestamp. Each event is written at its place and
 * published by a release store of the slot's commit_cpu with the count
 * plus the event (a plain load and store: only the owner adds to it), so
 * the committed bytes are always a prefix of the page; the page ends
 * like any other (its commit word says where the data ends, the rest is
 * counted as committed) and the reader swaps it out unchanged. What the
 * per-CPU protocol needs and this one does not: the rseq or locked
 * reservation, the prewritten padding (a dead owner's page is cut at
 * its committed prefix), and the lap checks of a shared writer position.
 * The reader cannot end a live owner's page; it copies the committed
 * prefix out instead (ring_reader.c), as the kernel's reader does with a
 * partly written commit page.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/ring.h"
#include "common/ring_internal.h"
#include "common/ring_priv.h"
#include "common/ring_inline.h"
#include "common/ring_rseq.h"
#include "common/tc_error.h"

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

static int params_check(const struct ring_params *p, uint32_t *ncpu)
{
	long n = p->nr_cpus ? (long)p->nr_cpus : sysconf(_SC_NPROCESSORS_CONF);

	if (!is_pow2(p->page_size) || p->page_size < 4096 ||
	    p->page_size > 32768 || !is_pow2(p->nr_pages) ||
	    p->nr_pages < 2 || p->nr_pages > (1u << 20) ||
	    p->mode > RING_MODE_FLIGHT || p->clock > RING_CLOCK_MONO ||
	    n < 1 || n > 4096 || p->nr_own > RING_MAX_OWN)
		return -EINVAL;
	*ncpu = (uint32_t)n;
	return 0;
}

/* Byte size of one buffer: control block, slots, then N + 1 pages. */
uint64_t ring_buf_ctl_size(uint32_t nslots, uint32_t page_size)
{
	return round_up(sizeof(struct ring_buf) +
			(uint64_t)nslots * sizeof(struct ring_slot), page_size);
}

static void buf_init(struct ring_buf *b, uint32_t n, uint32_t data_size)
{
	b->res.wpos = ((uint64_t)(n - 1) << RING_WPOS_SHIFT) | data_size;
	b->rpos = n;
	b->rpos_hint = n;
	b->last_taken = n - 1;
	b->reader_phys = n;
	/* Lap 0 is a dummy: every slot looks complete and already taken, so
	 * the first real page, N, enters lap 1. */
	for (uint32_t s = 0; s < n; s++) {
		b->slots[s].tag = ((uint64_t)s << RING_TAG_SEQ_SHIFT) |
				  RING_TAG_TOOK | s;
		b->slots[s].commit = data_size;
	}
}

/* Whether this process may write the per-CPU buffers with rseq: glibc
 * registered it and every CPU has its own buffer (cpu % ncpu == cpu). */
static bool rseq_mode(const struct ring_params *p, uint32_t ncpu)
{
#if RING_HAVE_RSEQ
	long conf = sysconf(_SC_NPROCESSORS_CONF);

	return !p->locked && ring_rseq_usable() && conf > 0 &&
	       ncpu >= (uint32_t)conf;
#else
	(void)p;
	(void)ncpu;
	return false;
#endif
}

static void hdr_init(struct ring_hdr *h, const struct ring_params *p,
		     uint32_t ncpu, uint64_t size)
{
	h->flags = rseq_mode(p, ncpu) ? RING_F_RSEQ : 0;
	h->version = RING_VERSION;
	h->page_size = p->page_size;
	h->nr_slots = p->nr_pages;
	h->nr_bufs = ncpu + 1 + p->nr_own;
	h->nr_own = p->nr_own;
	h->mode = p->mode;
	h->clock = p->clock;
	h->owner_pid = getpid();
	h->file_size = size;
	h->next_event_id = 1000;
}

/* Lay the file out: header, buffers, format table. Returns its size. */
static uint64_t layout(const struct ring_params *p, uint32_t ncpu,
		       struct ring_hdr *h)
{
	uint64_t ps = p->page_size;
	uint32_t nbufs = ncpu + 1 + p->nr_own;
	uint64_t off = round_up(sizeof(*h) + 8ull * nbufs, ps);
	uint64_t ctl = ring_buf_ctl_size(p->nr_pages, p->page_size);
	uint32_t fmt = p->fmt_size ? p->fmt_size : 65536;

	for (uint32_t i = 0; i < nbufs; i++) {
		if (h)
			h->buf_off[i] = off;
		off += ctl + (p->nr_pages + 1ull) * ps;
	}
	if (h) {
		h->fmt_off = off;
		h->fmt_size = round_up(fmt, 8);
	}
	return round_up(off + fmt, ps);
}

/* Map @fd; @populate pre-faults every page so that writers never take a
 * page fault in the buffer (a shmem fault costs ~1 us: 10 ns per event). */
int ring_map_fd(int fd, uint64_t size, bool populate, struct ring **out)
{
	struct ring *r = aligned_alloc(RING_CACHELINE, sizeof(*r));
	void *base;

	if (!r)
		return -ENOMEM;
	memset(r, 0, sizeof(*r));
	base = mmap(NULL, size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
	if (base == MAP_FAILED) {
		int err = -errno;

		free(r);
		return err;
	}
	r->base = base;
	r->size = size;
	r->fd = fd;
	r->hdr = base;
	*out = r;
	return 0;
}

/* Views numbered so far: struct ring_wcache tells rings apart by it. */
static uint32_t ring_gens;

/* Fill the process-local view (buffer pointers, derived constants). */
int ring_view(struct ring *r)
{
	struct ring_hdr *h = r->hdr;
	size_t bsz = round_up(h->nr_bufs * sizeof(*r->bufs), RING_CACHELINE);

	do	/* never 0: an empty cache's */
		r->gen = __atomic_add_fetch(&ring_gens, 1, __ATOMIC_RELAXED);
	while (!r->gen);

	r->bufs = aligned_alloc(RING_CACHELINE, bsz);
	r->held = calloc(h->nr_bufs, sizeof(*r->held));
	r->part = calloc(h->nr_bufs, sizeof(*r->part));
	if (!r->bufs || !r->held || !r->part)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->nr_bufs; i++)
		r->part[i].q = ~0ull;
	for (uint32_t i = 0; i < h->nr_bufs; i++)
		r->bufs[i] = (struct ring_buf *)(r->base + h->buf_off[i]);
	r->nbufs = h->nr_bufs;
	r->ncpu = h->nr_bufs - 1 - h->nr_own;
	r->page_size = h->page_size;
	r->data_size = h->page_size - RING_PAGE_HDR;
	r->nslots = h->nr_slots;
	r->nshift = (uint32_t)__builtin_ctz(h->nr_slots);
	r->page_shift = (uint32_t)__builtin_ctz(h->page_size);
	r->mode = h->mode;
	r->clock = h->clock;
	r->rseq = h->flags & RING_F_RSEQ;
	r->tsc_fast = r->rseq && h->clock == RING_CLOCK_TSC;
	r->ctl_size = ring_buf_ctl_size(h->nr_slots, h->page_size);
	r->fmt_off = h->fmt_off;
	r->fmt_size = h->fmt_size;
	return 0;
}

static int create_fd(const char *path)
{
	int fd;

	if (path)
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	else
		fd = memfd_create("tracecollect-ring", MFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ring_create(const char *path, const struct ring_params *p,
		struct ring **out)
{
	struct ring *r = NULL;
	uint32_t ncpu;
	uint64_t size;
	int fd, ret;

	ret = params_check(p, &ncpu);
	if (ret)
		return ret;
	size = layout(p, ncpu, NULL);
	fd = create_fd(path);
	if (fd < 0)
		return fd;
	if (ftruncate(fd, (off_t)size)) {
		ret = -errno;
		goto out_fd;
	}
	ret = ring_map_fd(fd, size, true, &r);
	if (ret)
		goto out_fd;
	hdr_init(r->hdr, p, ncpu, size);
	layout(p, ncpu, r->hdr);
	ret = ring_view(r);
	if (ret)
		goto out_ring;
	for (uint32_t i = 0; i < r->nbufs; i++)
		buf_init(r->bufs[i], p->nr_pages, r->data_size);
	ring_store_release(&r->hdr->magic, RING_MAGIC);
	*out = r;
	return 0;
out_ring:
	ring_close(r);
	return ret;
out_fd:
	close(fd);
	if (path)
		unlink(path);
	return ret;
}

void ring_close(struct ring *r)
{
	if (!r)
		return;
	if (r->base)
		munmap(r->base, r->size);
	if (r->fd >= 0)
		close(r->fd);
	free(r->bufs);
	free(r->held);
	free(r->part);
	free(r);
}

int ring_fd(const struct ring *r)
{
	return r->fd;
}

unsigned ring_nr_bufs(const struct ring *r)
{
	return r->nbufs;
}

unsigned ring_durable_buf(const struct ring *r)
{
	return r->ncpu;
}

uint32_t ring_gen(const struct ring *r)
{
	return r->gen;
}

bool ring_own_is(const struct ring *r, unsigned buf)
{
	return buf > r->ncpu && buf < r->nbufs;
}

uint32_t ring_page_size(const struct ring *r)
{
	return r->page_size;
}

enum ring_mode ring_get_mode(const struct ring *r)
{
	return (enum ring_mode)r->mode;
}

enum ring_clock_id ring_get_clock(const struct ring *r)
{
	return (enum ring_clock_id)r->clock;
}

bool ring_uses_rseq(const struct ring *r)
{
	return r->rseq;
}

void ring_set_attached(struct ring *r, bool on)
{
	ring_store_release(&r->hdr->attached, on ? 1u : 0u);
}

const volatile uint32_t *ring_attached_word(const struct ring *r)
{
	return &r->hdr->attached;
}

void ring_trigger(struct ring *r)
{
	ring_add_release(&r->hdr->trigger_seq, 1);
}

uint64_t ring_trigger_seq(const struct ring *r)
{
	return ring_load_acquire(&r->hdr->trigger_seq);
}

bool ring_owner_alive(const struct ring *r)
{
	pid_t pid = r->hdr->owner_pid;

	return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

int ring_get_stats(const struct ring *r, unsigned buf, struct ring_stats *out)
{
	const struct ring_buf *b;

	if (buf >= r->nbufs)
		return -EINVAL;
	b = r->bufs[buf];
	out->lost_full = ring_load_relaxed(&b->lost_full);
	out->lost_busy = ring_load_relaxed(&b->lost_busy);
	out->lost_overwritten = ring_load_relaxed(&b->lost_overwritten);
	out->pages_overwritten = ring_load_relaxed(&b->pages_overwritten);
	out->unfinished = ring_load_relaxed(&b->unfinished);
	out->pages_read = ring_load_relaxed(&b->pages_read);
	return 0;
}

/* ------------------------------------------------------------ writing */

int ring_cpu(void)
{
#if defined(__x86_64__) && defined(RSEQ_SIG)
	if (__rseq_size >= 8) {
		const volatile struct rseq *rs = (const volatile struct rseq *)
			((char *)__builtin_thread_pointer() + __rseq_offset);
		int32_t cpu = (int32_t)rs->cpu_id;

		if (cpu >= 0)
			return cpu;
	}
#endif
	return sched_getcpu();
}

int ring_pin(unsigned cpu, cpu_set_t *saved)
{
	cpu_set_t one;

	if (cpu >= CPU_SETSIZE)
		return -EINVAL;
	if (sched_getaffinity(0, sizeof(*saved), saved))
		return -errno;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -errno;
	/* the kernel moved us before returning; make sure */
	if (sched_getcpu() != (int)cpu) {
		ring_unpin(saved);
		return -EAGAIN;
	}
	return 0;
}

void ring_unpin(const cpu_set_t *saved)
{
	sched_setaffinity(0, sizeof(*saved), saved);
}

static inline uint32_t ev_size(uint32_t len)
{
	uint32_t l4 = (len + 3) & ~3u;

	return (len == 0 || l4 > 4 * PAGE_TYPE_DATA_MAX) ? 8 + l4 : 4 + l4;
}

static inline struct ring_buf *pick_buf(const struct ring *r, int buf)
{
	if (buf < 0) {
		int cpu = ring_cpu();

		buf = cpu < 0 ? 0 : (int)((unsigned)cpu % r->ncpu);
	} else if ((unsigned)buf >= r->nbufs) {
		return NULL;
	}
	return r->bufs[buf];
}

/* Lap 0 is the dummy; a slot's byte count after lap L is (L + 1) * D. */
static inline uint64_t lap_bytes(const struct ring *r, uint64_t vpage)
{
	return ((vpage >> r->nshift) * r->data_size) & RING_CC_BYTES_MASK;
}

/* Whether a writer may enter virtual page @q; counts the drop if not. */
static int may_enter(const struct ring *r, struct ring_buf *b, uint64_t q)
{
	struct ring_slot *s = &b->slots[q & (r->nslots - 1)];

	if (r->mode == RING_MODE_PRODUCER) {
		uint64_t rp = ring_load_relaxed(&b->rpos_hint);

		if (q < rp + r->nslots)
			return 0;
		rp = ring_load_acquire(&b->rpos);
		if (q >= rp + r->nslots) {
			ring_add_relaxed(&b->lost_full, 1);
			return -ENOBUFS;
		}
		ring_store_relaxed(&b->rpos_hint, rp);
		return 0;
	}
	if ((ring_slot_commit(s) & RING_CC_BYTES_MASK) != lap_bytes(r, q)) {
		ring_add_relaxed(&b->lost_busy, 1);
		return -ENOBUFS;
	}
	return 0;
}

/* The claim winner's bookkeeping for the lap that slot @s leaves: if the
 * reader never took that page, its events are lost (overwrite modes) and
 * the reader's position moves past it. @ev is the slot's event count read
 * before the claiming cmpxchg: after it, writers of page @q may already
 * commit (found by spin/ring.pml). */
static void lap_change(const struct ring *r, struct ring_buf *b,
		       struct ring_slot *s, uint64_t q, uint64_t oldtag,
		       uint64_t ev)
{
	uint64_t rp;

	if (!(oldtag & RING_TAG_TOOK)) {
		ring_add_relaxed(&b->lost_overwritten,
				 (ev - s->ev_base) & 0xffffff);
		ring_add_relaxed(&b->pages_overwritten, 1);
		rp = ring_load_acquire(&b->rpos);
		while (rp <= q - r->nslots &&
		       !ring_cas(&b->rpos, &rp, q - r->nslots + 1))
			;
	}
	s->ev_base = ev;
}

/* Make slot(@q)'s tag say it carries virtual page @q; return the page,
 * or NULL if the tag names a page outside the buffer (a corrupt file). */
uint8_t *ring_claim_page(const struct ring *r, struct ring_buf *b, uint64_t q)
{
	struct ring_slot *s = &b->slots[q & (r->nslots - 1)];
	uint64_t tag = ring_load_acquire(&s->tag);
	uint64_t nt;

	if (q >> (64 - RING_TAG_SEQ_SHIFT))	/* never reached: 4 EiB */
		return NULL;
	while ((tag >> RING_TAG_SEQ_SHIFT) < q) {
		/* no commit to page q before its tag says q: ev is exact */
		uint64_t ev = ring_slot_commit(s) / RING_CC_EVENT;

		nt = (q << RING_TAG_SEQ_SHIFT) | (tag & RING_TAG_PHYS_MASK);
		if (ring_cas(&s->tag, &tag, nt)) {
			lap_change(r, b, s, q, tag, ev);
			tag = nt;
		}
	}
	if ((tag & RING_TAG_PHYS_MASK) > r->nslots)
		return NULL;
	return ring_page(r, b, tag & RING_TAG_PHYS_MASK);
}

/* End virtual page @p at data offset @off: the rest (@pad bytes) counts
 * as committed and the page's commit word says where the data ends. */
void ring_end_page(const struct ring *r, struct ring_buf *b, uint64_t p,
		   uint32_t off, uint32_t pad)
{
	uint8_t *page = ring_claim_page(r, b, p);

	if (page)
		ring_store_relaxed((uint64_t *)(page + 8), (uint64_t)off);
	ring_add_release(&b->slots[p & (r->nslots - 1)].commit, (uint64_t)pad);
}


/* ------------------------------------------------------ own buffers */

int ring_own_claim(struct ring *r, uint64_t id, struct ring_own *o)
{
	if (r->nbufs == r->ncpu + 1)
		return -ENOENT;
	for (uint32_t i = r->ncpu + 1; i < r->nbufs; i++) {
		uint64_t free_id = 0;

		if (ring_load_relaxed(&r->bufs[i]->owner) == 0 &&
		    ring_cas(&r->bufs[i]->owner, &free_id, id)) {
			*o = (struct ring_own){ .b = r->bufs[i], .gen = r->gen,
						.buf = i };
			return 0;
		}
	}
	return -ENOSPC;
}

/* End the page in hand: the rest of it counts as committed. */
static void own_end_page(struct ring_own *o)
{
	ring_own_end(o, (uint64_t)(o->end - o->next));
}

int ring_own_enter(struct ring *r, struct ring_own *o, uint32_t total,
		   uint64_t now)
{
	struct ring_buf *b = o->b;
	struct ring_slot *s;
	uint8_t *page;
	uint64_t q;
	int ret;

	if (!b || o->gen != r->gen)
		return -EINVAL;
	if (o->next) {
		uint64_t d = now - o->last_ts;
		uint32_t room = (uint32_t)(o->end - o->next);

		if (d < (1u << PAGE_DELTA_BITS) && room >= total)
			return 0;
		if (room >= 8 + total) {	/* a time extend */
			uint32_t ext[2] = {
				PAGE_TYPE_TIME_EXTEND |
				(uint32_t)(d << PAGE_TYPE_LEN_BITS),
				(uint32_t)(d >> PAGE_DELTA_BITS) };

			memcpy(o->next, ext, 8);
			o->next += 8;
			o->last_ts = now;
			ring_store_release(o->ccp, ring_load_relaxed(o->ccp) + 8);
			return 0;
		}
		own_end_page(o);
	}
	q = (ring_load_relaxed(&b->res.wpos) >> RING_WPOS_SHIFT) + 1;
	ret = may_enter(r, b, q);
	if (ret)
		return ret;
	page = ring_claim_page(r, b, q);
	if (!page)
		return -EIO;
	s = &b->slots[q & (r->nslots - 1)];
	ring_store_relaxed((uint64_t *)page, now);
	ring_store_relaxed((uint64_t *)(page + 8), 0);
	/* the whole page is this writer's: ring_reader_flush() ends nothing */
	ring_store_release(&b->res.wpos,
			   (q << RING_WPOS_SHIFT) | r->data_size);
	o->ccp = &s->commit_cpu;
	o->page = page;
	o->q = q;
	o->next = page + RING_PAGE_HDR;
	o->end = o->next + r->data_size;
	o->last_ts = now;
	return 0;
}

void ring_own_release(struct ring *r, struct ring_own *o)
{
	if (o->b && o->gen == r->gen) {
		if (o->next)
			own_end_page(o);
		ring_store_release(&o->b->owner, 0);
	}
	*o = (struct ring_own){ 0 };
}


struct resv {
	uint64_t page;		/* virtual page of the event */
	uint64_t now;
	uint64_t delta;
	uint32_t off, total, ext, pad, enter;
};

/* One attempt's arithmetic: where a @need-byte event goes after @w/@t. */
static void resv_plan(const struct ring *r, uint64_t w, uint64_t t,
		      uint32_t need, struct resv *v)
{
	uint64_t d = v->now - t;
	uint32_t off = (uint32_t)(w & RING_WPOS_OFF_MASK);

	v->ext = d >= (1u << PAGE_DELTA_BITS) ? 8 : 0;
	v->enter = off + need + v->ext > r->data_size;
	if (v->enter) {
		v->page = (w >> RING_WPOS_SHIFT) + 1;
		v->pad = r->data_size - off;
		v->off = 0;
		v->ext = 0;
		v->delta = 0;
	} else {
		v->page = w >> RING_WPOS_SHIFT;
		v->pad = 0;
		v->off = off;
		v->delta = d;
	}
	v->total = need + v->ext;
}

/* The CPU in this thread's rseq area; -1 if it has none. */
static inline int rseq_cpu(void)
{
#if RING_HAVE_RSEQ
	return ring_rseq_cpu();
#else
	return -1;
#endif
}

/* Move buffer @b's write position from *@w (last timestamp *@t) to @nw
 * (without the RING_WPOS_TS_ALT bit), timestamp @now: with rseq on CPU
 * @cpu if @cpu >= 0 (the bit flipped), else cmpxchg16b of {wpos, ts[0]}.
 * Return: 0 moved, else RING_RSEQ_CHANGED or _MOVED with *@w, *@t
 * reloaded. */
static inline int res_move(struct ring_buf *b, int cpu, uint64_t *w,
			   uint64_t *t, uint64_t nw, uint64_t now)
{
#if RING_HAVE_RSEQ
	if (cpu >= 0) {
		uint64_t alt = *w & RING_WPOS_TS_ALT;
		int ret = ring_rseq_reserve((uint32_t)cpu, &b->res.wpos, *w,
					    nw | (alt ^ RING_WPOS_TS_ALT),
					    &b->res.ts[!alt], now);

		if (ret) {
			*w = ring_load_relaxed(&b->res.wpos);
			*t = ring_res_ts(b, *w);
		}
		return ret;
	}
#endif
	return ring_cas16(&b->res.wpos, w, t, nw, now) ? 0 : RING_RSEQ_CHANGED;
}

/*
 * Hand out the reservation at @p (@total bytes, an event of @len and a
 * time extend of @ext) in *@ctx, its bytes fetched for writing. Both
 * reserve paths end here; inline, so the fast one stays a straight line.
 */
static inline __attribute__((always_inline))
void wctx_fill(const struct ring *r, const struct fast_pos *p, uint32_t total, uint32_t len,
	       uint32_t ext, struct ring_wctx *ctx)
{
	ring_prewrite(p->page + RING_PAGE_HDR + p->off, total);
	ctx->page = p->page;
	ctx->slot = p->s;
	ctx->off = p->off;
	ctx->total = total;
	ctx->len = len;
	ctx->cpu = p->cpu;
	ctx->ts = p->now;
	ctx->delta = p->delta;
	ctx->ext = ext;
	ctx->ends_page = p->off + total == r->data_size;
	ctx->data = p->page + RING_PAGE_HDR + p->off + total - ((len + 3) & ~3u);
}

/* The reservation itself, in buffer @b; @cpu as for res_move(). Return:
 * 0; -ENOBUFS (counted); -EIO; RING_RSEQ_MOVED when the thread is no
 * longer on @cpu (nothing reserved). */
static int reserve_in(struct ring *r, struct ring_buf *b, int cpu,
		      uint32_t len, struct ring_wctx *ctx)
{
	uint32_t need = ev_size(len);
	struct resv v;
	uint64_t w, t;
	uint8_t *page;
	int ret;

	w = ring_load_relaxed(&b->res.wpos);
	t = ring_res_ts(b, w);
	for (;;) {
		v.now = ring_clock_read(r->clock);
		if (v.now < t)
			v.now = t;
		resv_plan(r, w, t, need, &v);
		if (v.enter && (ret = may_enter(r, b, v.page)))
			return ret;
		ret = res_move(b, cpu, &w, &t, (v.page << RING_WPOS_SHIFT) |
			       (v.off + v.total), v.now);
		if (!ret)
			break;
		if (ret == RING_RSEQ_MOVED && rseq_cpu() != cpu)
			return RING_RSEQ_MOVED;
	}
	if (v.enter && v.pad)
		ring_end_page(r, b, v.page - 1, r->data_size - v.pad, v.pad);
	page = ring_claim_page(r, b, v.page);
	if (!page)
		return -EIO;
	if (v.enter)
		ring_store_relaxed((uint64_t *)page, v.now);
	wctx_fill(r, &(struct fast_pos){ .s = &b->slots[v.page & (r->nslots - 1)], .page = page,
					.now = v.now, .delta = v.delta, .off = v.off, .cpu = cpu },
		  v.total, len, v.ext, ctx);
	return 0;
}

/* A per-CPU buffer of an rseq ring (@buf < 0: the current CPU's). Only
 * code running on a buffer's CPU may move its reservation: a thread that
 * names another CPU's buffer moves there for the moment. */
static int reserve_percpu(struct ring *r, int buf, uint32_t len,
			  struct ring_wctx *ctx)
{
	cpu_set_t saved;
	int cpu, want, ret;

	for (;;) {
		cpu = rseq_cpu();
		want = buf < 0 ? cpu : buf;
		if (cpu < 0 || (unsigned)want >= r->ncpu) {
			ring_add_relaxed(&r->bufs[r->ncpu]->lost_busy, 1);
			return -ENOBUFS;
		}
		if (want == cpu) {
			ret = reserve_in(r, r->bufs[want], want, len, ctx);
		} else {
			ret = ring_pin((unsigned)want, &saved);
			if (ret)
				return ret;
			ret = reserve_in(r, r->bufs[want], want, len, ctx);
			ring_unpin(&saved);
		}
		if (ret != RING_RSEQ_MOVED)
			return ret;
	}
}


/*
 * The common case on an rseq ring, inline: the current CPU's buffer, the
 * event fits the current page and needs no time extend. Return: 0 and
 * *@ctx; 1 to take the general path (nothing reserved); -EIO.
 */
static inline __attribute__((always_inline))
int reserve_fast(struct ring *r, uint32_t len, struct ring_wctx *ctx)
{
#if RING_HAVE_RSEQ
	uint32_t total = ev_size(len);
	struct fast_pos p;
	int ret = claim_fast(r, NULL, total, false, &p);

	if (ret)
		return ret;
	wctx_fill(r, &p, total, len, 0, ctx);
	return 0;
#else
	(void)r;
	(void)len;
	(void)ctx;
	return 1;
#endif
}

/* ring_reserve() past its fast path: page switches, time extends, drops,
 * a named buffer, the locked path. */
static int reserve_general(struct ring *r, int buf, uint32_t len,
			   struct ring_wctx *ctx)
{
	struct ring_buf *b;

	if (r->rseq && (buf < 0 || (unsigned)buf < r->ncpu))
		return reserve_percpu(r, buf, len, ctx);
	b = pick_buf(r, buf);
	if (!b)
		return -EINVAL;
	return reserve_in(r, b, -1, len, ctx);
}

int ring_reserve(struct ring *r, int buf, uint32_t len, struct ring_wctx *ctx)
{
	int ret;

	if (len > RING_MAX_PAYLOAD)
		return -E2BIG;
	if (buf < 0 && r->rseq && (ret = reserve_fast(r, len, ctx)) <= 0)
		return ret;
	return reserve_general(r, buf, len, ctx);
}

static inline __attribute__((always_inline))
void commit_in(struct ring *r, const struct ring_wctx *ctx)
{
	uint8_t *e = ctx->page + RING_PAGE_HDR + ctx->off;
	uint32_t *h = (uint32_t *)(e + ctx->ext);
	uint32_t l4 = (ctx->len + 3) & ~3u;
	uint32_t type = ev_size(ctx->len) == 4 + l4 ? l4 / 4 : 0;

	if (!type)
		h[1] = l4 + 4;
	if (ctx->ext) {
		h[0] = type;
		((uint32_t *)e)[1] = (uint32_t)(ctx->delta >> PAGE_DELTA_BITS);
		ring_store_relaxed((uint32_t *)e, PAGE_TYPE_TIME_EXTEND |
				   (uint32_t)(ctx->delta << PAGE_TYPE_LEN_BITS));
	} else {
		ring_store_relaxed(&h[0], type |
				   (uint32_t)(ctx->delta << PAGE_TYPE_LEN_BITS));
	}
	if (ctx->ends_page)
		ring_store_relaxed((uint64_t *)(ctx->page + 8),
				   (uint64_t)r->data_size);
#if RING_HAVE_RSEQ
	/* on the buffer's CPU: an unlocked add that only that CPU makes */
	if (ctx->cpu >= 0 && !ring_rseq_add((uint32_t)ctx->cpu,
					    &ctx->slot->commit_cpu,
					    ctx->total + RING_CC_EVENT))
		return;
#endif
	ring_add_release(&ctx->slot->commit, ctx->total + RING_CC_EVENT);
}

void ring_commit(struct ring *r, const struct ring_wctx *ctx)
{
	commit_in(r, ctx);
}



/* ring_write() past write_fast(), same arguments; @fast_failed: it was
 * tried (and a second try of the same fast path, with a second clock
 * read, would only fail again: the page is full, the delta too large, or
 * we moved). */
static __attribute__((noinline))
int write_slow(struct ring *r, int buf, const void *pre, const void *data,
	       uint32_t len, bool fast_failed, int ts_off)
{
	uint32_t plen = len + (pre ? 8 : 0);
	struct ring_wctx ctx;
	int ret = fast_failed ? reserve_general(r, buf, plen, &ctx) :
				ring_reserve(r, buf, plen, &ctx);

	if (ret)
		return ret;
	if (pre)
		memcpy(ctx.data, pre, 8);
	copy_payload((uint8_t *)ctx.data + plen - len, data, len);
	if (ts_off >= 0)
		memcpy((uint8_t *)ctx.data + ts_off, &ctx.ts, 8);
	commit_in(r, &ctx);
	return 0;
}

/* ring_write() to the current CPU's buffer of an rseq ring, past its
 * inline path: a 113..RING_MAX_PAYLOAD-byte payload (8 with @pre), or any
 * payload when the ring's clock is not the TSC. Out of line, so that its
 * calls (memcpy, clock_gettime) do not cost the inline path registers.
 * Return: as ring_write(). */
static __attribute__((noinline))
int write_big(struct ring *r, const void *pre, const void *data,
	      uint32_t len, int ts_off)
{
	int ret;

	if (len + (pre ? 8 : 0) > 4 * PAGE_TYPE_DATA_MAX)
		ret = write_fast(r, pre, data, len, true, -1, false, NULL);
	else
		ret = write_fast(r, pre, data, len, false, ts_off, false,
				 NULL);
	return ret <= 0 ? ret :
			  write_slow(r, -1, pre, data, len, true, ts_off);
}

/* The calling thread's cache of where its last inline fast write went
 * (ring_inline.h): while it stays on that CPU and page, a write loads
 * neither the buffer's address from struct ring nor the slot's tag, and
 * the page's address does not wait on the CPU number and the tag (a chain
 * of dependent loads the write's stores waited on). Initial-exec, as
 * lib/fgraph.c's: no __tls_get_addr call in the fast path. */
static __thread struct ring_tcache ring_tc
	__attribute__((tls_model("initial-exec")));

/* Whether ring_write() and its kin may take their inline fast path: the
 * TSC clock, and the current CPU's buffer of an rseq ring. One flag that
 * ring_view() sets, not the two fields it is made of: one load and
 * branch less per event (~0.3 ns in an A/B of the 32-byte case). */
static inline bool tsc_fast(const struct ring *r)
{
	return r->tsc_fast;
}

/* ring_write() on any but its fast path: four arguments, so that every
 * call ring_write makes is a tail call and its fast path needs no stack
 * frame (pushing and popping six registers cost ~1 ns an event). */
static __attribute__((noinline))
int write_other(struct ring *r, int buf, const void *data, uint32_t len,
		bool fast_failed)
{
	if (!fast_failed && buf < 0 && r->rseq && len - 1 < RING_MAX_PAYLOAD)
		return write_big(r, NULL, data, len, -1);
	return write_slow(r, buf, NULL, data, len, fast_failed, -1);
}

int ring_write(struct ring *r, int buf, const void *data, uint32_t len)
{
	if (buf < 0 && tsc_fast(r) && len - 1 < 4 * PAGE_TYPE_DATA_MAX) {
		if (!write_fast(r, NULL, data, len, false, -1, true, &ring_tc))
			return 0;
		return write_other(r, buf, data, len, true);
	}
	return write_other(r, buf, data, len, false);
}

/* ring_write_hdr() on any but its fast path (four arguments: tail
 * calls, as write_other()). */
static __attribute__((noinline))
int write_hdr_other(struct ring *r, const void *hdr, const void *data,
		    uint32_t len)
{
	if (!r->rseq)
		return write_slow(r, -1, hdr, data, len, false, -1);
	if (len > 4 * PAGE_TYPE_DATA_MAX - 8 || !tsc_fast(r))
		return write_big(r, hdr, data, len, -1);
	return write_slow(r, -1, hdr, data, len, true, -1);
}

int ring_write_hdr(struct ring *r, const void *hdr, const void *data,
		   uint32_t len)
{
	if (len > RING_MAX_PAYLOAD - 8)
		return -E2BIG;
	if (tsc_fast(r) && len <= 4 * PAGE_TYPE_DATA_MAX - 8 &&
	    !write_fast(r, hdr, data, len, false, -1, true, &ring_tc))
		return 0;
	return write_hdr_other(r, hdr, data, len);
}

int ring_write_stamped(struct ring *r, const void *data, uint32_t len,
		       uint32_t ts_off)
{
	int ret;

	if (len < 8 || len > 4 * PAGE_TYPE_DATA_MAX || ts_off > len - 8)
		return -EINVAL;
	if (!r->rseq)
		return write_slow(r, -1, NULL, data, len, false, (int)ts_off);
	if (!tsc_fast(r))
		return write_big(r, NULL, data, len, (int)ts_off);
	if (len == 40 && ts_off == 32)	/* funcgraph_exit: constants */
		ret = write_fast(r, NULL, data, 40, false, 32, true, &ring_tc);
	else
		ret = write_fast(r, NULL, data, len, false, (int)ts_off, true,
				 &ring_tc);
	return ret <= 0 ? ret :
			  write_slow(r, -1, NULL, data, len, true, (int)ts_off);
}
