/*
 * fgraph.c - the function tracer and function graph tracer runtime for
 * user programs (lib/fgraph.h), called by the arch/ trampolines
 * (contract: arch/arch.h) and by the -finstrument-functions hooks.
 *
 * Never built with -pg or -finstrument-functions (it would trace
 * itself). The algorithm is the kernel's function graph tracer
 * (Documentation/trace/ftrace-design.rst, "HAVE_FUNCTION_GRAPH_TRACER"):
 * at entry the hook saves the traced function's return address on a
 * per-thread shadow stack and replaces it with fgraph_arch_return; when
 * the function returns there, the runtime pops the entry, writes the exit
 * event and sends the trampoline on to the saved address.
 *
 * Cost. A traced call writes one event, funcgraph_exit, whose calltime
 * is the TSC read at entry and whose rettime is the event's own
 * timestamp (entry events only with TC_FTRACE_ENTRIES=1): two clock
 * reads and one ring reservation per call, the least a call with both
 * times can cost. The x86_64 hooks push the shadow entry without calling
 * C in the plain case (arch/arch.h, fgraph__fast); the exit is one C
 * call whose common case (the top entry returns) is a few compares
 * before the ring write. Measured on the 2-vCPU KVM guest (bench/run
 * hooks): ~95 ns per call with two events and the C entry, ~30 ns now,
 * of which the two rdtsc are ~22 (11 ns each here) and the ring's
 * reserve + commit most of the rest.
 *
 * Later, on a 2-vCPU Xeon guest under load (issue 19: bench/run hooks
 * now times the floor, two rdtsc and a 40-byte store per call, in the
 * same run; variants of this file timed the same way, ns per call):
 * the shadow stack alone (no clock, no ring) 12, plus both rdtsc 35
 * (floor 24), the whole path ~80. What came off: the hijacked return's
 * misprediction (~10; fgraph_arch_call, arch/arch.h), the exit record
 * written through ring_reserve + ctx + commit with a variable-length
 * copy (~8: ring_write_stamped() with the constant 40-byte record and
 * its rettime stamped in place; inlining it here through ring_inline.h
 * saved the call, within the noise), then exit_due() inlined and the
 * record's constant-size copy as one memcpy (2.85 -> 2.5 times the
 * floor). The same with a filter set (the C entry): 137 -> 123 from the
 * misprediction alone.
 * What is left is the instruction count of reserve, prewrite, copy and
 * commit, which the loaded core pays more for than the floor's few.
 *
 * Then on a 2-vCPU Cascade Lake guest (issue 19 again; variants built
 * with a switch, each run timing untraced, floor and traced chunk by
 * chunk, 5 runs each interleaved, medians of traced - untraced; floor
 * 17.5): entry alone, no clock, nothing hijacked 1.9; plus its rdtsc
 * 10.1; the shadow stack alone (entry, hijack, trampoline, C exit; no
 * clock, no ring) 8.4; plus the entry's rdtsc 16.2; plus the exit's
 * rdtsc 23.9; plus a 40-byte store to a private array 29.5; the whole
 * path 38.5. So each rdtsc ~8, the hooks ~8.5, building and storing the
 * record ~5.5 and the ring over a plain store ~9, of which the two rseq
 * sections ~1 (the reservation's replaced by plain stores: 37.7; the
 * commit's: no change) and prewrite and prefetch nothing measurable.
 * What came off: jumps ending on 32-byte boundaries (the JCC erratum;
 * -Wa,-mbranches-within-32B-boundaries, configure.ac: ~1-2.5), the
 * chain of loads from tc__ring to the page (a per-thread struct
 * ring_wcache) and the record's copy (fields stored in place): 38.7 ->
 * 33.0, 1.86 times the floor. With a filter set the x86_64 hooks read
 * the verdict cache themselves instead of taking the C entry: 53.6 ->
 * 34.1, within a nanosecond of the unfiltered path.
 * The rest is the two rdtsc (the floor's too), the return trampoline
 * and its C call (~6.5 of the 8.5), and the ring's fields; a per-thread
 * buffer of single-writer pages in the ring file would take most of the
 * ring's share, at the price of a reader protocol for them (the per-CPU
 * buffers' flush moves the writer's position under it).
 *
 * Then (a 2-vCPU Xeon guest at 2.5 GHz; bench/run hooks, floor 17.1-17.2
 * ns): own buffers (common/ring.h), one per thread while they last: the
 * exit record is written with plain stores and published with one
 * release store of the slot's commit count, no rseq, no locked
 * instruction: 33.7 -> 30.7; the x86_64 trampoline writing it itself,
 * without calling C or saving vector registers: 27.9; prefetchw ahead of
 * the record, as the per-CPU path does: 25.6; two saved registers
 * instead of five at entry, one store for top and the guard, the
 * sentinel: 25.2-25.6; prefetching 1024 bytes ahead, no separate frame
 * flags (they are the key's low bits) and on x86_64 no return-slot
 * pointer (the key is the slot): 24.3-24.9 (1.40-1.45 times the floor;
 * a thread without an own buffer pays ~37). Variants timed the same
 * way: hooks and hijacked return alone, no clock, no record, 6.5; plus
 * the entry's rdtsc 12.5; plus the record without the exit's rdtsc 19.0
 * (before the prefetch). The costs add up: rdtsc is microcoded, and the
 * rest does not run in its shadow. So what is left over the floor is
 * the hooks' ~6.5 ns of instructions (the entry's checks and shadow
 * entry, the call that re-enters the function, the trampoline's checks
 * and indirect jump) and ~3 ns of record (a variant writing it to the
 * stack instead of the ring costs the same: instructions, not memory).
 * Each instruction off these paths is worth ~0.15 ns, each taken jump
 * ~0.4; tried and measured no better: an 8-byte header making every
 * field aligned, prefetching the next page at page entry, reading the
 * clock before the entry's checks.
 *
 * Then (the same guest; each variant built at four placements of the
 * hooks, 0/16/32/48 bytes into a cache line, since placement alone moved
 * a run by up to 1 ns; floor 16.2-16.7): the start, 23.1 on average
 * over the placements (24.1 as built then), 1.39-1.41 times the floor;
 * __fentry__'s plain path straight through into fgraph_arch_call (no
 * jump; the unusual cases out of line behind one compare, fgraph__gate
 * and top FG_STACK_MAX for a thread without a stack), one test for the
 * guard and the buffer's ring at exit, the hooks starting a cache line:
 * 22.6, 1.36-1.37. Timed variants put the rest where it is: the hooks'
 * mechanism alone (the attach test, the call into the function, the
 * trampoline's jump back) 1.3, and with the two rdtsc 17.05, the floor
 * itself; the shadow entry and its checks add 1.8, the exit's checks,
 * record and commit 3.4, and the page turns (C, once per 92 records)
 * 0.9 of that: with the page in hand reused instead, 21.4. The turn's
 * cost is not its locked instruction, its C call (a lean call from the
 * hook straight to ring_own_enter() measured the same), cold lines or
 * TLB misses (pages follow each other in memory 99.97 % of the time,
 * and a private buffer written the same way costs nothing), nor where
 * the reader runs (both threads on one CPU: the same). Past 1.25 times
 * the floor are ~2 ns: ~30 instructions at ~0.06 ns each (every kind
 * measured alike next to rdtsc, which nothing overlaps), or cheaper page
 * turns. (The 6.5 ns "hooks alone" above included the shadow entry.)
 *
 * Then (bench/run hooks now builds the traced program at four
 * placements and takes the mean: moving the program's code moved a run
 * by up to 1.3 ns; floor 16.7-17.0): 23.15 with 4 KiB pages, 22.11 with
 * 32 KiB ones (the default since: a turn costs ~45 ns in C); the
 * thread's top kept as a pointer to the free entry with the guard in its
 * bit 63 (one load and one compare against the stack's limit at entry,
 * no index arithmetic; the exit's depth word one add of dbias), the
 * fast-path gate folded into that limit, the frame key at the slot + 8
 * (the trampoline's %rsp as it is) and the entry kept in %r11 across
 * rdtsc: 21.2, 1.26 times the floor; the exit reading the clock only
 * after copying what does not need it: 20.7, and with __fentry__ 16
 * bytes into a cache line, 1.23-1.25. Every instruction more on the
 * traced path costs ~0.08 ns; the exit's prefetchw saves 1.6 (distances
 * 512 to 2048 alike). Tried and not kept: calltime stored as two halves
 * (+0.2: the exit's 8-byte load waits for both stores), the top
 * published before the entry's rdtsc (+0.15), the commit's pointer and
 * the pop moved before the exit's rdtsc (+0.1), saving %rax and %rdx in
 * the red zone (the same), calling the function through its shadow
 * entry (the same).
 *
 * User space adds what the kernel does not have to handle:
 *  - longjmp/siglongjmp skip frames without returning through them.
 *    Each shadow entry carries the frame key (arch/arch.h), which is
 *    smaller for deeper frames. At an exit the entry whose key matches is
 *    the one returning; entries above it were skipped and get their exit
 *    now. At an entry, entries whose key is <= the new one are stale if
 *    their return slot no longer holds the trampoline (the stack there
 *    was reused); a slot that still holds it may be a live frame on
 *    another stack (sigaltstack), so it stays until an exit finds it.
 *  - a tail call reaches the callee with the trampoline already in the
 *    return slot: the caller is finished, its exit is written, and the
 *    callee takes over its saved return address.
 *  - the per-thread guard `busy` makes a hook that interrupts the runtime
 *    (a signal handler running traced code) a no-op, so the shadow stack
 *    is only ever changed by one activation at a time.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "lib/fgraph.h"
#include "common/ring.h"
#include "common/ring_inline.h"
#include "common/tc_internal.h"

#define FG_HIDDEN	__attribute__((visibility("hidden")))
#define FG_TLS		__attribute__((tls_model("initial-exec")))
#define FG_CACHE_SIZE	(1u << (64 - FG_CACHE_SHIFT))	/* verdicts */

/* A frame's flags, in the low bits of its key (keys are stack addresses,
 * 8-byte aligned or more; arch/arch.h): so the x86_64 exit hook's match
 * of the key also finds the frame unflagged. */
enum { FG_SILENT = 1, FG_CYG = 2, FG_KEY_FLAGS = 7 };

struct fg_frame {
	uintptr_t ret;		/* original return address */
	uintptr_t func;
	uintptr_t key;		/* frame key, arch/arch.h, | FG_SILENT.. */
	uint64_t calltime;
#if !FG_KEY_IS_SLOT
	uintptr_t *retp;	/* the return slot we overwrote */
#endif
};

/* The frame key of @f, without its flags. */
static inline uintptr_t fkey(const struct fg_frame *f)
{
	return f->key & ~(uintptr_t)FG_KEY_FLAGS;
}

/* The return slot @f's hook overwrote; NULL for -finstrument-functions
 * frames, which overwrite nothing. On x86_64 the key is 8 bytes above
 * that slot. */
static inline uintptr_t *fretp(const struct fg_frame *f)
{
	if (f->key & FG_CYG)
		return NULL;
#if FG_KEY_IS_SLOT
	return (uintptr_t *)fkey(f) - 1;
#else
	return f->retp;
#endif
}

enum { FG_OWN_ASK = 0, FG_OWN_HAVE, FG_OWN_NONE };

struct fg_thread {
	struct fg_frame *stack;
	uintptr_t topw;		/* &stack[top] | FG_BUSY while the guard is
				 * held (arch.h): top_get(), busy_get() */
	uintptr_t limit;	/* &stack[FG_STACK_MAX]; 0 with no stack */
	uintptr_t limit_fast;	/* limit, or 0 when the x86_64 hooks' plain
				 * fast entry may not run (fgraph__fast not
				 * FG_FAST_PLAIN): their one compare */
	uint64_t head;		/* the exit record's first 8 bytes: type,
				 * flags, preempt_count, pid (own buffer) */
	struct ring_own own;	/* the thread's own buffer, if it has one */
	int32_t tid;		/* common_pid of our records; 0: not asked.
				 * Our own copy of tracecollect.c's cache: in
				 * this thread's block beside the stack; reading
				 * that one instead measured +17 ns per call */
	uint32_t own_state;	/* FG_OWN_* */
	uint64_t dbias;		/* the x86_64 exit hook's depth word, less
				 * topw / FG_FRAME_SIZE: set_dbias() */
	struct fgraph_stats st;
	struct ring_wcache wc;	/* where the last exit record went */
};

/* The calling thread's state; the x86_64 hooks read it too (arch.h). */
FG_HIDDEN FG_TLS __thread struct fg_thread fgraph__self;

_Static_assert(offsetof(struct fg_thread, stack) == FG_THREAD_STACK &&
	       offsetof(struct fg_thread, topw) == FG_THREAD_TOPW &&
	       offsetof(struct fg_thread, limit) == FG_THREAD_LIMIT &&
	       offsetof(struct fg_thread, limit_fast) == FG_THREAD_LIMIT_FAST &&
	       offsetof(struct fg_thread, head) == FG_THREAD_HEAD &&
	       offsetof(struct fg_thread, own.next) == FG_THREAD_OWN_NEXT &&
	       offsetof(struct fg_thread, own.end) == FG_THREAD_OWN_END &&
	       offsetof(struct fg_thread, own.last_ts) == FG_THREAD_OWN_TS &&
	       offsetof(struct fg_thread, own.ccp) == FG_THREAD_OWN_CCP &&
	       offsetof(struct fg_thread, own.gen) == FG_THREAD_OWN_GEN &&
	       offsetof(struct fg_thread, dbias) == FG_THREAD_DBIAS,
	       "arch/arch.h thread layout");
_Static_assert(sizeof(struct fg_frame) == FG_FRAME_SIZE &&
	       offsetof(struct fg_frame, ret) == FG_FRAME_RET &&
	       offsetof(struct fg_frame, func) == FG_FRAME_FUNC &&
	       offsetof(struct fg_frame, key) == FG_FRAME_KEY &&
	       offsetof(struct fg_frame, calltime) == FG_FRAME_CALLTIME,
	       "arch/arch.h frame layout");

/* The thread's top (entries in use; 0 without a stack, whose topw is 0
 * too), and its guard: both in topw, which the x86_64 hooks read in one
 * load. */
static inline uint32_t top_get(const struct fg_thread *t)
{
	return (uint32_t)(((t->topw & ~FG_BUSY) - (uintptr_t)t->stack) /
			  sizeof(struct fg_frame));
}

static inline void top_set(struct fg_thread *t, uint32_t top)
{
	t->topw = (uintptr_t)&t->stack[top] | (t->topw & FG_BUSY);
}

static inline bool busy_get(const struct fg_thread *t)
{
	return t->topw & FG_BUSY;
}

static inline void busy_set(struct fg_thread *t, bool busy)
{
	t->topw = (t->topw & ~FG_BUSY) | (busy ? FG_BUSY : 0);
}

/*
 * The recursion guard around a hook's work: guard_hold() takes it,
 * guard_release() sets it back to @busy; the signal fences keep the work
 * between the two.
 */
static inline __attribute__((always_inline)) void guard_hold(struct fg_thread *t)
{
	busy_set(t, true);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline __attribute__((always_inline)) void guard_release(struct fg_thread *t, bool busy)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	busy_set(t, busy);
}

/* guard_busy - whether this thread holds the guard already (counted in st.guarded). */
static inline __attribute__((always_inline)) bool guard_busy(struct fg_thread *t)
{
	if (busy_get(t)) {
		t->st.guarded++;
		return true;
	}
	return false;
}

/* After the stack or the overflow count changed: the x86_64 exit hook
 * adds topw / FG_FRAME_SIZE (the frames are aligned to their size) to
 * this for the record's depth (top - 1) | overrun << 32. */
static void set_dbias(struct fg_thread *t)
{
	t->dbias = ((uint64_t)(uint32_t)t->st.overflow << 32) -
		   (uintptr_t)t->stack / FG_FRAME_SIZE - 1;
}

static struct {
	struct fgraph_config cfg;
	bool filtering;
	uint64_t thresh_ticks;
	unsigned clock;
	struct tc_event *ev_func, *ev_entry, *ev_exit;
	uint16_t exit_id;
	pthread_key_t key;
} fg;

/* Read by every hook; set once by fgraph_start(). */
static volatile enum fgraph_tracer fg_tracer;

/* Nonzero when the x86_64 hooks may push frames themselves (arch.h):
 * FG_FAST_PLAIN, or FG_FAST_FILTER with a glob filter set. Set before
 * any thread has a stack, so each stack's limit_fast follows it. */
FG_HIDDEN uint32_t fgraph__fast;

/* The return trampoline's address, for the x86_64 hooks to compare and
 * store without a register to form it in. */
FG_HIDDEN const uintptr_t fgraph__tramp = (uintptr_t)&fgraph_arch_return;

/* How fgraph_arch_call_whole() keeps the vector registers (x86_64:
 * FG_XSAVE_*, set by fgraph_start(); arch.h). */
FG_HIDDEN uint32_t fgraph__xsave;

/* The filters' verdicts by function address; the x86_64 hooks read them
 * too (arch.h). */
FG_HIDDEN uintptr_t fgraph__cache_key[FG_CACHE_SIZE];
FG_HIDDEN uint8_t fgraph__cache_val[FG_CACHE_SIZE];	/* FG_CACHE_* */

#define TRAMP ((uintptr_t)&fgraph_arch_return)

/* ------------------------------------------------------------- events */

struct fg_ev_entry {
	uint64_t func;
	uint32_t depth;
	uint32_t pad;
};

/* A whole funcgraph_exit record, common fields included. */
struct fg_rec_exit {
	uint16_t type;
	uint8_t flags;
	uint8_t preempt_count;
	int32_t pid;
	uint64_t func;
	uint32_t depth;
	uint32_t overrun;
	uint64_t calltime;
	uint64_t rettime;
};

static int32_t thread_id(struct fg_thread *t)
{
	if (!t->tid)
		t->tid = (int32_t)syscall(SYS_gettid);
	return t->tid;
}

/* The exit record's first 8 bytes: type, flags = 0, preempt_count = 0,
 * pid (the x86_64 exit hook reads a copy in the thread's state). */
static inline uint64_t exit_head(struct fg_thread *t)
{
	return fg.exit_id | (uint64_t)(uint32_t)thread_id(t) << 32;
}

/* The exit record's fields at @e (its payload): @head (exit_head()),
 * rettime @now. */
static inline __attribute__((always_inline))
void put_exit(struct fg_thread *t, uint8_t *e, uint64_t head,
	      const struct fg_frame *f, uint32_t depth, uint64_t now)
{
	uint64_t mid = depth | (uint64_t)(uint32_t)t->st.overflow << 32;

	memcpy(e + offsetof(struct fg_rec_exit, type), &head, 8);
	memcpy(e + offsetof(struct fg_rec_exit, func), &f->func, 8);
	memcpy(e + offsetof(struct fg_rec_exit, depth), &mid, 8);
	memcpy(e + offsetof(struct fg_rec_exit, calltime), &f->calltime, 8);
	memcpy(e + offsetof(struct fg_rec_exit, rettime), &now, 8);
}

static uint64_t ctx_ts(const struct tc_wctx *c)
{
	return ((const struct ring_wctx *)c->priv)->ts;
}

/* Take an own buffer for the thread (ring.h) if one is free; the exit
 * record's first word is made ready for the x86_64 exit hook. */
static bool own_claim(struct fg_thread *t, struct ring *r)
{
	t->own_state = FG_OWN_NONE;
	/* the x86_64 exit hook writes every record its checks let through
	 * (arch/arch.h): not under a threshold, and only on the TSC */
	if (fg.thresh_ticks || fg.clock != RING_CLOCK_TSC ||
	    ring_own_claim(r, (uint64_t)(uint32_t)thread_id(t), &t->own))
		return false;
	t->head = exit_head(t);
	t->own_state = FG_OWN_HAVE;
	return true;
}

/* The exit record into the thread's own buffer. Return: false to write
 * it to the per-CPU buffers instead (no own buffer, or the ring changed). */
static __attribute__((noinline)) bool own_exit_slow(struct fg_thread *t,
						     struct ring *r,
						     const struct fg_frame *f,
						     uint32_t depth,
						     uint64_t now);

/* The exit record at @e in the own buffer, and its commit; the x86_64
 * exit hook writes the same (arch/arch.h). */
static inline __attribute__((always_inline))
void own_record(struct fg_thread *t, uint8_t *e, const struct fg_frame *f,
		uint32_t depth, uint64_t now)
{
	put_exit(t, e + 4, t->head, f, depth, now);
	ring_own_commit(&t->own, FG_EXIT_TOTAL, FG_EXIT_TYPE, now);
}

static inline __attribute__((always_inline))
bool own_exit(struct fg_thread *t, struct ring *r, const struct fg_frame *f,
	      uint32_t depth)
{
	uint64_t now = ring_clock_read(fg.clock);
	uint8_t *e;

	if (__builtin_expect(t->own_state != FG_OWN_HAVE ||
			     t->own.gen != r->gen, 0) ||
	    __builtin_expect(!(e = ring_own_fast(&t->own, FG_EXIT_TOTAL, now)),
			     0))
		return own_exit_slow(t, r, f, depth, now);
	own_record(t, e, f, depth, now);
	return true;
}

/* The same at time @now, read once by own_exit(), when the page in hand
 * has no room (or no page, buffer or ring is in hand yet). */
static bool own_exit_slow(struct fg_thread *t, struct ring *r,
			  const struct fg_frame *f, uint32_t depth,
			  uint64_t now)
{
	const uint32_t total = FG_EXIT_TOTAL;
	int ret;

	if (t->own_state == FG_OWN_HAVE && t->own.gen != r->gen) {
		t->own = (struct ring_own){ 0 };	/* another ring */
		t->own_state = FG_OWN_ASK;
	}
	if (t->own_state == FG_OWN_ASK && !own_claim(t, r))
		return false;
	if (t->own_state != FG_OWN_HAVE)
		return false;
	if (now < t->own.last_ts)
		now = t->own.last_ts;	/* another CPU's TSC, a bit behind */
	if (!ring_own_fast(&t->own, total, now)) {
		ret = ring_own_enter(r, &t->own, total, now);
		if (ret)	/* dropped and counted (full), or broken */
			return ret == -ENOBUFS;
	}
	own_record(t, t->own.next, f, depth, now);
	return true;
}

/* Give the thread's own buffer back (it exits). Later exits go to the
 * per-CPU buffers. */
static void own_release(struct fg_thread *t)
{
	struct ring *r = tc__ring;

	if (t->own_state == FG_OWN_HAVE && r)
		ring_own_release(r, &t->own);
	t->own_state = FG_OWN_NONE;
}

/* Whether this call's exit event is due (the threshold filter). Inline:
 * gcc made it a call on the exit hook's path, for three compares. */
static inline __attribute__((always_inline))
bool exit_due(const struct fg_frame *f)
{
	if (f->key & FG_SILENT || !*tc__on)
		return false;
	return !fg.thresh_ticks ||
	       ring_clock_now(fg.clock) - f->calltime >= fg.thresh_ticks;
}

static void ev_function(uintptr_t ip, uintptr_t parent)
{
	struct tc_wctx c;
	uint64_t v[2] = { ip, parent };

	if (tc_reserve(fg.ev_func, sizeof(v), &c))
		return;
	memcpy(c.data, v, sizeof(v));
	tc_commit(&c);
}

/* Write the entry event; its timestamp is the call time. */
static uint64_t ev_entry(uintptr_t func, uint32_t depth)
{
	struct fg_ev_entry e = { .func = func, .depth = depth };
	struct tc_wctx c;

	if (tc_reserve(fg.ev_entry, sizeof(e), &c))
		return ring_clock_now(fg.clock);
	memcpy(c.data, &e, sizeof(e));
	tc_commit(&c);
	return ctx_ts(&c);
}

/* The exit event past the fast path: built, then written whole. */
static __attribute__((noinline))
void ev_exit_slow(struct fg_thread *t, const struct fg_frame *f,
		  uint32_t depth)
{
	struct fg_rec_exit e = {
		.type = fg.exit_id, .pid = thread_id(t), .func = f->func,
		.depth = depth, .overrun = (uint32_t)t->st.overflow,
		.calltime = f->calltime,
	};

	(void)ring_write_stamped(tc__ring, &e, sizeof(e),
				 offsetof(struct fg_rec_exit, rettime));
}

/* Write the exit event: the call's one record unless entries are on;
 * its timestamp is the return time, stamped into rettime. Straight to
 * the ring's inline path, through the thread's write cache, with each
 * field stored in place; this is most of what a traced call costs. */
static inline __attribute__((always_inline))
void ev_exit(struct fg_thread *t, const struct fg_frame *f, uint32_t depth)
{
	struct ring *r = tc__ring;
	struct ring_fast w;
	int ret;

	if (!r)
		return;
	if (t->own_state != FG_OWN_NONE && own_exit(t, r, f, depth))
		return;
	ret = ring_fast_reserve(r, &t->wc, sizeof(struct fg_rec_exit), &w);
	if (__builtin_expect(ret, 0)) {
		if (ret > 0)
			ev_exit_slow(t, f, depth);
		return;
	}
	put_exit(t, ring_fast_payload(&w), exit_head(t), f, depth, w.p.now);
	ring_fast_commit(r, &w);
}

_Static_assert(sizeof(struct fg_rec_exit) + 4 == FG_EXIT_TOTAL &&
	       sizeof(struct fg_rec_exit) / 4 == FG_EXIT_TYPE &&
	       FG_EXIT_DELTA_MAX == 1u << PAGE_DELTA_BITS &&
	       FG_EXIT_CC == RING_CC_EVENT + FG_EXIT_TOTAL,
	       "arch/arch.h: the exit record the x86_64 hook writes");
_Static_assert(sizeof(struct fg_rec_exit) == 40 &&
	       offsetof(struct fg_rec_exit, pid) == 4 &&
	       offsetof(struct fg_rec_exit, overrun) == 20,
	       "funcgraph_exit: the words put_exit() stores");

/* ------------------------------------------------------------ filters */

static uintptr_t verdict_now(uintptr_t func)
{
	Dl_info info;
	const char *name = NULL;

	if (dladdr((void *)func, &info) && info.dli_sname)
		name = info.dli_sname;
	if (fg.cfg.include &&
	    (!name || !fgraph_glob_list_match(fg.cfg.include, name)))
		return false;
	return !name || !fgraph_glob_list_match(fg.cfg.exclude, name);
}

/* Whether the filters take @func. dladdr and fnmatch run the C library's
 * vector string functions, which may clear the upper bits of the traced
 * function's vector arguments: called through fgraph_arch_call_whole(),
 * which keeps them (arch.h). */
static bool verdict(uintptr_t func)
{
	return fgraph_arch_call_whole(verdict_now, func) != 0;
}

/* Whether @func is traced: resolved once per address, then cached in a
 * lock-free open-addressed table (a lost insert race only costs another
 * lookup later). */
static bool traced(uintptr_t func)
{
	uint32_t h = (uint32_t)((func * (uint64_t)FG_CACHE_MUL) >>
				FG_CACHE_SHIFT);
	bool v;

	if (!fg.filtering)
		return true;
	for (uint32_t i = 0; i < 16; i++) {
		uint32_t s = (h + i) & (FG_CACHE_SIZE - 1);
		uintptr_t k = __atomic_load_n(&fgraph__cache_key[s],
					      __ATOMIC_ACQUIRE);
		uint8_t val;

		if (k == func &&
		    (val = __atomic_load_n(&fgraph__cache_val[s],
					   __ATOMIC_ACQUIRE)))
			return val == FG_CACHE_TRACE;
		if (k == 0 || k == func) {
			uintptr_t zero = 0;

			v = verdict(func);
			if (k == func ||
			    __atomic_compare_exchange_n(&fgraph__cache_key[s],
							&zero, func, false,
							__ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				__atomic_store_n(&fgraph__cache_val[s],
						 v ? FG_CACHE_TRACE :
						     FG_CACHE_SKIP,
						 __ATOMIC_RELEASE);
			return v;
		}
	}
	return verdict(func);
}

/* -------------------------------------------------------- shadow stack */

/* At thread exit: the shadow stack goes, and the own buffer goes back. */
static void stack_free(void *p)
{
	own_release(&fgraph__self);
	/* traced calls from later destructors find no stack, as at start */
	fgraph__self.stack = NULL;
	fgraph__self.topw &= FG_BUSY;
	fgraph__self.limit = fgraph__self.limit_fast = 0;
	munmap(p, (FG_STACK_MAX + 1) * sizeof(struct fg_frame));
}

/* At exit (the main thread's keys have no destructor run): its own
 * buffer's last page is ended, so the agent takes it whole. */
static void fg_atexit(void)
{
	own_release(&fgraph__self);
}

/* The thread's shadow stack, mapped at its first traced call (mmap is
 * async-signal-safe; the first call may be in a signal handler). */
static bool stack_ready(struct fg_thread *t)
{
	void *p;

	if (t->stack)
		return true;
	p = mmap(NULL, (FG_STACK_MAX + 1) * sizeof(struct fg_frame),
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return false;
	/* stack[-1]: a sentinel whose key is above every frame's and
	 * matches no exit, so the x86_64 hooks need no test for top 0 */
	((struct fg_frame *)p)->key = UINTPTR_MAX;
	t->stack = (struct fg_frame *)p + 1;
	top_set(t, 0);
	t->limit = (uintptr_t)&t->stack[FG_STACK_MAX];
	t->limit_fast = fgraph__fast == FG_FAST_PLAIN ? t->limit : 0;
	set_dbias(t);
	(void)pthread_setspecific(fg.key, p);
	return true;
}

/* Pop the top entry, writing its exit event unless it was silent. */
static uintptr_t pop(struct fg_thread *t)
{
	uint32_t top = top_get(t) - 1;
	struct fg_frame *f = &t->stack[top];

	top_set(t, top);
	if (exit_due(f))
		ev_exit(t, f, top);
	return f->ret;
}

/* Pop entries above index @i: frames skipped by longjmp. */
static void unwind_to(struct fg_thread *t, uint32_t i)
{
	while (top_get(t) > i) {
		pop(t);
		t->st.unwound++;
	}
}

/* Index + 1 of the entry with frame key @key, 0 if none. */
static uint32_t find_key(const struct fg_thread *t, uintptr_t key)
{
	uint32_t i = top_get(t);

	while (i > 0 && fkey(&t->stack[i - 1]) != key)
		i--;
	return i;
}

/* Whether the frame whose return slot is @slot lives on the main stack
 * while this thread runs on its alternate signal stack (sigaltstack is
 * async-signal-safe, and asked only when the slot cannot tell). */
static bool other_stack(const void *slot)
{
	stack_t ss;

	if (sigaltstack(NULL, &ss) || !(ss.ss_flags & SS_ONSTACK))
		return false;
	return (const char *)slot < (const char *)ss.ss_sp ||
	       (const char *)slot >= (const char *)ss.ss_sp + ss.ss_size;
}

/*
 * Drop entries a longjmp left behind, before pushing one with frame key
 * @key whose return slot holds @ret. Entries with a larger key are
 * callers: live. Of those with a key <= @key (deeper or equal), one is
 * certainly dead when its slot was reused (same key, @ret not the
 * trampoline: a tail call is the one live case, graph_entry() handles
 * it) or no longer holds the trampoline; one whose slot still holds it
 * is dead unless it is on the main stack while we run on the alternate
 * signal stack. Everything pushed after a dead entry is dead too.
 */
static void drop_stale(struct fg_thread *t, uintptr_t key, uintptr_t ret)
{
	uint32_t i = top_get(t), dead = i;

	while (i > 0 && fkey(&t->stack[i - 1]) <= key) {
		const struct fg_frame *f = &t->stack[--i];

		if (fkey(f) == key && ret == TRAMP)
			break;
		if (fkey(f) == key || (fretp(f) && *fretp(f) != TRAMP))
			dead = i;
		else if (other_stack(fretp(f) ? (const void *)fretp(f) :
						(const void *)fkey(f)))
			break;
		else
			dead = i;
	}
	unwind_to(t, dead);
}

/*
 * Push a frame for @func. @ret is the return address (0 for the
 * -finstrument-functions path, which hijacks nothing).
 * Return: whether the frame was pushed.
 */
static bool push(struct fg_thread *t, uintptr_t func, uintptr_t ret,
		 uintptr_t *retp, uintptr_t key, uint32_t flags)
{
	uint32_t depth = top_get(t);
	struct fg_frame *f;

	if (depth == FG_STACK_MAX) {
		t->st.overflow++;
		set_dbias(t);
		return false;
	}
	f = &t->stack[depth];
	f->ret = ret;
	f->func = func;
#if FG_KEY_IS_SLOT
	(void)retp;		/* the key: fretp() */
#else
	f->retp = retp;
#endif
	if (fg.cfg.max_depth && depth >= fg.cfg.max_depth)
		flags |= FG_SILENT;
	f->key = key | flags;
	if (flags & FG_SILENT)
		f->calltime = 0;
	else if (fg.cfg.entries && !fg.thresh_ticks)
		f->calltime = ev_entry(func, depth);
	else
		f->calltime = ring_clock_now(fg.clock);
	top_set(t, depth + 1);
	return true;
}

/* The graph tracer's entry, with the guard held. */
static void graph_entry(struct fg_thread *t, uintptr_t func, uintptr_t *retp,
			uintptr_t key)
{
	uintptr_t ret = *retp;

	drop_stale(t, key, ret);
	if (ret == TRAMP) {	/* tail call: inherit the caller's return */
		uint32_t i = find_key(t, key);

		if (!i)
			return;	/* cannot happen; hook nothing */
		unwind_to(t, i);
		ret = pop(t);
	}
	if (!traced(func) || !push(t, func, ret, retp, key, 0)) {
		if (ret != *retp)	/* the caller we popped: restore */
			*retp = ret;
		return;
	}
	*retp = TRAMP;
}

FG_HIDDEN void fgraph_arch_entry(uintptr_t func, uintptr_t *retp,
				 uintptr_t key)
{
	struct fg_thread *t = &fgraph__self;
	enum fgraph_tracer tr = fg_tracer;

	if (!tr)
		return;
	if (guard_busy(t))
		return;
	guard_hold(t);
	if (tr == FGRAPH_FUNCTION) {
		if (traced(func))
			ev_function(func, *retp == TRAMP ? 0 : *retp);
	} else if (stack_ready(t)) {
		graph_entry(t, func, retp, key);
	}
	guard_release(t, false);
}

static void __attribute__((noreturn)) lost_return(uintptr_t key)
{
	char msg[128];
	int n = snprintf(msg, sizeof(msg),
			 "tracecollect: function graph: no shadow entry for "
			 "frame %#lx; cannot return\n", (unsigned long)key);

	if (write(STDERR_FILENO, msg, (size_t)n) < 0)
		abort();
	abort();
}

/* An exit that is not the top entry's, or with the guard held. */
static __attribute__((noinline)) uintptr_t exit_slow(struct fg_thread *t,
						      uintptr_t key)
{
	uint32_t i = find_key(t, key);
	bool busy = busy_get(t);
	uintptr_t ret;

	if (!i)
		lost_return(key);
	guard_hold(t);
	unwind_to(t, i);
	ret = pop(t);
	guard_release(t, busy);
	return ret;
}

FG_HIDDEN uintptr_t fgraph_arch_exit(uintptr_t key)
{
	struct fg_thread *t = &fgraph__self;
	uint32_t top = top_get(t);
	struct fg_frame *f;
	uintptr_t ret;

	/* the common case: the top entry returns, nothing interrupted */
	if (__builtin_expect(!top || busy_get(t) ||
			     fkey(&t->stack[top - 1]) != key, 0))
		return exit_slow(t, key);
	f = &t->stack[top - 1];
	ret = f->ret;
	guard_hold(t);
	top_set(t, top - 1);
	if (exit_due(f))
		ev_exit(t, f, top - 1);
	guard_release(t, false);
	return ret;
}

/* ------------------------------------------- -finstrument-functions */

/* The key of a -finstrument-functions frame: our own frame address,
 * just below the instrumented function's frame at both hooks. */
#define CYG_KEY ((uintptr_t)__builtin_frame_address(0))

void __cyg_profile_func_enter(void *fn, void *site)
{
	struct fg_thread *t = &fgraph__self;

	(void)site;
	if (!fg_tracer || !*tc__on)
		return;
	if (guard_busy(t))
		return;
	guard_hold(t);
	if (fg_tracer == FGRAPH_FUNCTION) {
		if (traced((uintptr_t)fn))
			ev_function((uintptr_t)fn, (uintptr_t)site);
	} else if (stack_ready(t) && traced((uintptr_t)fn)) {
		drop_stale(t, CYG_KEY, 0);
		push(t, (uintptr_t)fn, 0, NULL, CYG_KEY, FG_CYG);
	}
	guard_release(t, false);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	struct fg_thread *t = &fgraph__self;
	uintptr_t key = CYG_KEY;
	uint32_t top;

	(void)site;
	if (fg_tracer != FGRAPH_GRAPH || busy_get(t) || !top_get(t))
		return;
	guard_hold(t);
	while ((top = top_get(t)) && fkey(&t->stack[top - 1]) < key &&
	       t->stack[top - 1].func != (uintptr_t)fn) {
		pop(t);
		t->st.unwound++;
	}
	if (top && t->stack[top - 1].func == (uintptr_t)fn)
		pop(t);
	guard_release(t, false);
}

/* -------------------------------------------------------------- setup */

static const char fg_function_fields[] =
	"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long parent_ip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long args[];\toffset:24;\tsize:0;\tsigned:0;\n";
static const char fg_entry_fields[] =
	"\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int depth;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long args[];\toffset:24;\tsize:0;\tsigned:0;\n";
static const char fg_exit_fields[] =
	"\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int depth;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long long calltime;\toffset:24;\tsize:8;"
	"\tsigned:0;\n"
	"\tfield:unsigned long long rettime;\toffset:32;\tsize:8;"
	"\tsigned:0;\n";

static int register_events(void)
{
	int ret;

	ret = tc__event_register_raw("ftrace", "function", fg_function_fields,
		"\" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip",
		16, &fg.ev_func);
	if (!ret)
		ret = tc__event_register_raw("ftrace", "funcgraph_entry",
			fg_entry_fields,
			"\"--> %ps (%u)\", (void *)REC->func, REC->depth",
			16, &fg.ev_entry);
	if (!ret)
		ret = tc__event_register_raw("ftrace", "funcgraph_exit",
			fg_exit_fields,
			"\"<-- %ps (%u) (start: %llx  end: %llx) over: %u\", "
			"(void *)REC->func, REC->depth, REC->calltime, "
			"REC->rettime, REC->overrun", 32, &fg.ev_exit);
	return ret;
}

/* Microseconds to ring clock ticks (the TSC needs calibrating). */
static int thresh_to_ticks(uint64_t us, uint64_t *out)
{
	struct ring_clock_conv c;
	int ret;

	if (fg.clock != RING_CLOCK_TSC) {
		*out = us * 1000;
		return 0;
	}
	ret = ring_clock_calibrate(2000, &c);
	if (ret)
		return ret;
	/* ns = (ticks * mult) >> shift, so ticks = (ns << shift) / mult */
	*out = ((us * 1000) << c.shift) / c.mult;
	return 0;
}

#if defined(__x86_64__)
#include <cpuid.h>

/* How fgraph_arch_call_whole() saves the vector state: nothing to do
 * without AVX (C keeps to SSE, whose registers the hooks save whole);
 * with it, xsavec where the CPU has it, else xsave. */
static uint32_t xsave_kind(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
	    !(c & bit_AVX))
		return FG_XSAVE_NONE;
	if (__get_cpuid_count(0xd, 1, &a, &b, &c, &d) && (a & (1u << 1)))
		return FG_XSAVE_C;
	return FG_XSAVE_STD;
}
#else
static uint32_t xsave_kind(void)
{
	return FG_XSAVE_NONE;
}
#endif

/* A forked child is another thread id. */
static void fg_atfork_child(void)
{
	fgraph__self.tid = 0;
	/* the parent's thread keeps writing its own buffer */
	fgraph__self.own = (struct ring_own){ 0 };
	fgraph__self.own_state = FG_OWN_ASK;
}

int fgraph_start(const struct fgraph_config *c)
{
	int ret;

	if (fg_tracer)
		return -EALREADY;
	fgraph__xsave = xsave_kind();
	fg.clock = tc__clock_id();
	ret = register_events();
	if (ret)
		return ret;
	if (c->thresh_us) {
		ret = thresh_to_ticks(c->thresh_us, &fg.thresh_ticks);
		if (ret)
			return ret;
	}
	ret = -pthread_key_create(&fg.key, stack_free);
	if (ret)
		return ret;
	(void)pthread_atfork(NULL, NULL, fg_atfork_child);
	(void)atexit(fg_atexit);
	fg.cfg = *c;
	fg.filtering = c->include || c->exclude;
	fg.exit_id = fg.ev_exit->id;
	if (c->tracer == FGRAPH_GRAPH && !c->max_depth && !fg.thresh_ticks &&
	    !c->entries && fg.clock == RING_CLOCK_TSC)
		fgraph__fast = fg.filtering ? FG_FAST_FILTER : FG_FAST_PLAIN;
	__atomic_store_n(&fg_tracer, c->tracer, __ATOMIC_RELEASE);
	return 0;
}

void fgraph_thread_stats(struct fgraph_stats *out)
{
	*out = fgraph__self.st;
}

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* How many own buffers the ring gets: @want, or one per CPU (-1). */
static uint32_t own_bufs(int32_t want)
{
	long n = want >= 0 ? want : sysconf(_SC_NPROCESSORS_CONF);

	return n < 0 ? 0 : n > RING_MAX_OWN ? RING_MAX_OWN : (uint32_t)n;
}

/* Wait up to @ms for an agent to set the attach word. */
static void wait_attach(uint32_t ms)
{
	struct timespec d = { 0, 1000000 };

	for (uint32_t i = 0; i < ms && !tc_enabled(); i++)
		nanosleep(&d, NULL);
}

/*
 * The constructor lives here, not in fgraph_config.c, so that a static
 * link that pulls the hooks in (mcount -> this file) gets it too. Runs when libtracecollect is loaded (linked or LD_PRELOADed). With
 * TC_FTRACE set it creates the ring file and starts the tracer; a problem
 * is one line on stderr and the program runs untraced.
 */
__attribute__((constructor)) static void fgraph_ctor(void)
{
	struct fgraph_config c;
	struct tc_options o = { 0 };
	int ret;

	if (!getenv("TC_FTRACE"))
		return;
	ret = fgraph_config_parse(env_get, &c);
	if (ret) {
		fprintf(stderr, "tracecollect: bad TC_FTRACE* setting\n");
		return;
	}
	o.path = c.ring_path;
	o.pages_per_cpu = c.pages_per_cpu;
	o.page_size = c.page_size;
	if (c.tracer == FGRAPH_GRAPH)
		o.thread_bufs = own_bufs(c.own_bufs);
	ret = tc_init(&o);
	if (!ret || ret == -EALREADY)
		ret = fgraph_start(&c);
	if (ret) {
		fprintf(stderr, "tracecollect: function tracer: %s\n",
			strerror(-ret));
		fgraph_config_free(&c);
		return;
	}
	wait_attach(c.wait_ms);
}
