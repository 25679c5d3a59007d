/*
 * ring_rseq.h - the two restartable-sequence (rseq) critical sections of
 * the ring buffer's per-CPU write path, on the rseq area glibc registers
 * for every thread (<sys/rseq.h>: __rseq_offset, __rseq_size).
 *
 * A critical section runs from its start label to its post-commit label
 * and ends with one store instruction (the commit). If the thread is
 * preempted, migrated or signalled inside it, the kernel resumes it at the
 * abort label instead, before the commit happened. So a section that
 * checks the thread runs on CPU c and then commits acts on CPU c's data
 * as if it were atomic with respect to every other thread on that CPU, in
 * any process: shared memory included. It is only sound for data nobody
 * on another CPU modifies; ring.c keeps that rule (its header says how).
 *
 * Only for x86-64 with a glibc that registers rseq; RING_HAVE_RSEQ is 0
 * elsewhere and the callers use the locked path.
 */
#ifndef COMMON_RING_RSEQ_H
#define COMMON_RING_RSEQ_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <sys/rseq.h>
#endif

/* Return values of the sections besides 0 (committed). */
#define RING_RSEQ_CHANGED	1	/* the data was not what was expected */
#define RING_RSEQ_MOVED		2	/* not on that CPU, or aborted */

#if defined(__x86_64__) && defined(__GNUC__) && defined(RSEQ_SIG)
#define RING_HAVE_RSEQ 1

/* The kernel's struct rseq_cs, one per section, in section __rseq_cs;
 * then the signature the kernel checks in front of the abort label. */
#define RING_RSEQ_CS_TABLE						\
	".pushsection __rseq_cs, \"aw\"\n\t"				\
	".balign 32\n"							\
	".Lring_cs%=:\n\t"						\
	".long 0, 0\n\t"						\
	".quad .Lring_start%=, .Lring_post%= - .Lring_start%=, "	\
	".Lring_abort%=\n\t"						\
	".popsection\n\t"						\
	".pushsection __rseq_failure, \"ax\"\n\t"			\
	".byte 0x0f, 0xb9, 0x3d\n\t"					\
	".long %c[sig]\n"						\
	".Lring_abort%=:\n\t"						\
	"jmp %l[moved]\n\t"						\
	".popsection\n\t"						\
	"leaq .Lring_cs%=(%%rip), %%rax\n\t"				\
	"movq %%rax, 8(%[rs])\n"					\
	".Lring_start%=:\n\t"						\
	"cmpl %[cpu], 4(%[rs])\n\t"					\
	"jnz %l[moved]\n\t"

/* ring_rseq_area - this thread's struct rseq (glibc registered it). */
static inline struct rseq *ring_rseq_area(void)
{
	return (struct rseq *)((char *)__builtin_thread_pointer() +
			       __rseq_offset);
}

/* ring_rseq_usable - whether glibc registered rseq for this process. */
static inline bool ring_rseq_usable(void)
{
	return __rseq_size >= 16 && __rseq_offset != 0;
}

/* ring_rseq_cpu - the CPU this thread runs on, or -1 if unregistered. */
static inline int ring_rseq_cpu(void)
{
	return (int32_t)__atomic_load_n(&ring_rseq_area()->cpu_id,
					__ATOMIC_RELAXED);
}

/*
 * ring_rseq_reserve - on CPU @cpu: if the word at @p is @o, store @now at
 * @ts and then @n at @p (the commit). Aborted before the commit, only
 * *@ts was written: the caller points @ts where the value at @p, while it
 * is @o, says nobody reads (ring.c: the RING_WPOS_TS_ALT bit).
 * Return: 0 stored; RING_RSEQ_CHANGED; RING_RSEQ_MOVED.
 */
static inline int ring_rseq_reserve(uint32_t cpu, uint64_t *p, uint64_t o,
				    uint64_t n, uint64_t *ts, uint64_t now)
{
	__asm__ goto(RING_RSEQ_CS_TABLE
		     "cmpq %[o], 0(%[p])\n\t"
		     "jnz %l[changed]\n\t"
		     "movq %[now], 0(%[ts])\n\t"
		     "movq %[n], 0(%[p])\n"
		     ".Lring_post%=:\n\t"
		     : /* no outputs */
		     : [rs] "r"(ring_rseq_area()), [cpu] "r"(cpu),
		       [p] "r"(p), [o] "r"(o), [n] "r"(n), [ts] "r"(ts),
		       [now] "r"(now), [sig] "i"(RSEQ_SIG)
		     : "rax", "memory", "cc"
		     : moved, changed);
	return 0;
changed:
	return RING_RSEQ_CHANGED;
moved:
	return RING_RSEQ_MOVED;
}

/*
 * ring_rseq_add - on CPU @cpu: add @v to *@p with one unlocked add.
 * Return: 0 added; RING_RSEQ_MOVED (nothing added).
 */
static inline int ring_rseq_add(uint32_t cpu, uint64_t *p, uint64_t v)
{
	__asm__ goto(RING_RSEQ_CS_TABLE
		     "addq %[v], 0(%[p])\n"
		     ".Lring_post%=:\n\t"
		     : /* no outputs */
		     : [rs] "r"(ring_rseq_area()), [cpu] "r"(cpu),
		       [p] "r"(p), [v] "r"(v), [sig] "i"(RSEQ_SIG)
		     : "rax", "memory", "cc"
		     : moved);
	return 0;
moved:
	return RING_RSEQ_MOVED;
}

#else
#define RING_HAVE_RSEQ 0
#endif

#endif
