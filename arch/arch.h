/*
 * arch.h - the contract between the per-architecture function-tracer
 * trampolines (arch/x86_64/mcount.S, arch/aarch64/mcount.S) and the
 * function-graph runtime (lib/fgraph.c).
 *
 * Each architecture provides, in assembly:
 *   - the hooks the compiler calls (x86_64: mcount for -pg, __fentry__
 *     for -pg -mfentry; aarch64: _mcount for -pg). Each first checks the
 *     attach word (*tc__on) and returns at once when nobody traces: one
 *     load, one compare, one branch. Otherwise it saves the argument
 *     registers and calls fgraph_arch_entry() (x86_64 first tries to
 *     push the shadow entry itself: below).
 *   - fgraph_arch_return, the return trampoline: the address the runtime
 *     writes over a traced function's return address. It saves the
 *     return-value registers, calls fgraph_arch_exit() with the frame key
 *     and jumps to the original return address that call gives back.
 *     On x86_64 it directly follows fgraph_arch_call (`call *%r11`):
 *     __fentry__ goes on into a function it hooked by calling it from
 *     there, which writes fgraph_arch_return into the parent slot and
 *     tells the CPU's return-stack predictor where the function will
 *     return (a `ret` into a hijacked slot is otherwise mispredicted on
 *     every traced call). Two return-stack entries go stale per hooked
 *     call; measured, a leaf's return gains more than deeper frames'
 *     returns lose (they were mispredicted before too).
 *
 * Frame key: a value that identifies one activation of a traced function,
 * known both at entry and at the trampoline, and smaller for deeper
 * frames (stacks grow down on both architectures):
 *   x86_64:  the address just above the slot holding the return address
 *            (at the trampoline: %rsp, since `ret` just popped that
 *            slot);
 *   aarch64: the caller's frame pointer (at entry: the x29 saved in the
 *            function's frame record; at the trampoline: x29, which the
 *            function's epilogue just restored).
 * The runtime matches exits to entries by key, which is what lets it see
 * through longjmp (frames skipped have smaller keys than the target).
 */
#ifndef ARCH_ARCH_H
#define ARCH_ARCH_H

/*
 * The x86_64 __fentry__ and mcount push a frame themselves, without
 * calling C, when the runtime allows it (fgraph__fast != 0: the graph
 * tracer with no depth limit, threshold or entry events, on the TSC
 * clock; FG_FAST_FILTER when a glob filter is set, whose verdicts they
 * then read from the runtime's cache, fgraph__cache_key/_val: a
 * function whose hash's first slot holds it with FG_CACHE_TRACE goes
 * on, anything else takes the C path), so they read the runtime's
 * per-thread state, the
 * initial-exec TLS variable fgraph__self (struct fg_thread), and its
 * shadow stack (struct fg_frame[FG_STACK_MAX]) at these offsets;
 * lib/fgraph.c checks them at compile time. Anything unusual (the guard
 * held, no stack yet, stack full, stale entries, a tail call) takes the
 * C path, fgraph_arch_entry(). The first three take one compare: the
 * word at FG_THREAD_TOPW (the address of the next free entry,
 * &stack[top], with the guard busy in bit 63: FG_BUSY) against the word
 * at FG_THREAD_LIMIT_FAST: &stack[FG_STACK_MAX] when fgraph__fast is
 * FG_FAST_PLAIN, else 0 (so every call goes out of line, where a filter
 * set, FG_FAST_FILTER, compares with FG_THREAD_LIMIT, the stack's true
 * end); a thread without a stack has all three 0. The hooks take the guard by
 * storing FG_BUSY's byte alone, and give it back with the new top. The
 * shadow stack has a sentinel entry below its first (stack[-1], key
 * UINTPTR_MAX), so an empty stack needs no test of its own.
 *
 * The x86_64 trampoline likewise writes the exit record itself (no C
 * call, no vector registers saved: at a return only %rax and %rdx hold
 * values it would touch) when the guard is free, the top entry's key is
 * the returning frame's, its flags are 0, the thread has a page of its
 * own buffer in hand (struct ring_own, in fgraph__self at the
 * FG_THREAD_OWN_* offsets, for the ring whose view number is tc__gen)
 * with room for FG_EXIT_TOTAL bytes, and the time since the page's last
 * event needs no time extend (and the record does not fill the page to
 * its end, which C ends). Unlike C, the hook does not read the attach
 * word: the exits of calls entered while an agent was attached are
 * written even if it has gone since. A thread gets an own buffer only
 * where the hook may write every such record: on the TSC clock, with no
 * threshold (a silent frame, beyond TC_FTRACE_DEPTH, has flags set).
 * The record is the one lib/fgraph.c's own_exit() writes, checked at
 * compile time there.
 */
#define FG_FAST_PLAIN		1	/* fgraph__fast: no filter */
#define FG_FAST_FILTER		2	/* ... a glob filter: its cache */
#define FG_CACHE_SHIFT		52	/* slot = (func * MUL) >> SHIFT */
#define FG_CACHE_MUL		0x9e3779b97f4a7c15
#define FG_CACHE_TRACE		1	/* fgraph__cache_val: traced */
#define FG_CACHE_SKIP		2	/* ... not traced; 0: not known */
#define FG_XSAVE_NONE		0	/* fgraph__xsave: no AVX state */
#define FG_XSAVE_STD		1	/* ... xsave, standard form */
#define FG_XSAVE_C		2	/* ... xsavec, compacted form */
#define FG_STACK_MAX		4096	/* shadow entries per thread */
#define FG_BUSY			0x8000000000000000 /* the guard, in topw */
#define FG_THREAD_STACK		0	/* struct fg_frame *stack */
#define FG_THREAD_TOPW		8	/* &stack[top] | FG_BUSY if held */
#define FG_THREAD_LIMIT		16	/* &stack[FG_STACK_MAX] */
#define FG_THREAD_LIMIT_FAST	24	/* the same, or 0: fast path shut */
#define FG_THREAD_HEAD		32	/* uint64_t: exit record's 1st word */
#define FG_THREAD_OWN_NEXT	40	/* struct ring_own (common/ring.h) */
#define FG_THREAD_OWN_END	48
#define FG_THREAD_OWN_TS	56
#define FG_THREAD_OWN_CCP	64
#define FG_THREAD_OWN_GEN	96	/* uint32_t, against tc__gen */
#define FG_THREAD_DBIAS		112	/* uint64_t: topw / FG_FRAME_SIZE +
					 * this is the exit record's
					 * depth | overrun << 32 */
#define FG_EXIT_TOTAL		44	/* funcgraph_exit, header included */
#define FG_EXIT_TYPE		10	/* its header's type_len */
#define FG_EXIT_DELTA_MAX	0x8000000	/* 1 << PAGE_DELTA_BITS */
#define FG_EXIT_CC		0x1000000002c	/* RING_CC_EVENT + 44 */
#define FG_FRAME_RET		0	/* original return address */
#define FG_FRAME_FUNC		8
#define FG_FRAME_KEY		16	/* | flags in the low 3 bits */
#define FG_FRAME_CALLTIME	24
#if defined(__x86_64__)
#define FG_KEY_IS_SLOT		1	/* the key is the return slot + 8 */
#define FG_FRAME_SIZE		32
#else
#define FG_KEY_IS_SLOT		0	/* a return slot pointer follows */
#define FG_FRAME_SIZE		40
#endif

#ifndef __ASSEMBLER__
#include <stdint.h>

/*
 * fgraph_arch_entry - a traced function was entered.
 * @func:  an address inside the function (the hook call's return
 *         address: symbol lookup by address finds the function)
 * @retp:  where the function's return address lives (the parent slot);
 *         the runtime may replace *@retp with fgraph_arch_return
 * @key:   the frame key (see above)
 * Context: called from the hooks with argument registers saved; never
 * from code built with -pg.
 */
void fgraph_arch_entry(uintptr_t func, uintptr_t *retp, uintptr_t key);

/*
 * fgraph_arch_exit - a hijacked function returned to the trampoline.
 * @key: the frame key.
 * Return: the original return address, where the trampoline jumps.
 * Never fails: if no shadow entry matches @key the runtime aborts with a
 * message, since there is no correct address to go back to.
 */
uintptr_t fgraph_arch_exit(uintptr_t key);

/* The return trampoline; only its address is used from C. */
void fgraph_arch_return(void);

/*
 * fgraph_arch_call_whole - @fn(@arg) with every vector register kept
 * whole across the call. The hooks' C path saves the vector argument
 * registers' low 128 bits (x86_64: xmm0-7; C built for the baseline ISA
 * leaves the upper bits alone), but the C library's AVX2 string
 * functions end in vzeroupper, which clears the upper bits of all of
 * them: a 256- or 512-bit argument would reach the traced function with
 * its upper lanes zeroed. So the runtime calls the C library through
 * this (the filters' first verdict for a function: dladdr, fnmatch).
 * x86_64: xsavec (or xsave) and xrstor of the SSE, AVX and AVX-512
 * state, as fgraph__xsave says (FG_XSAVE_*; NONE without AVX); aarch64:
 * a plain call.
 * Return: what @fn returned.
 */
uintptr_t fgraph_arch_call_whole(uintptr_t (*fn)(uintptr_t), uintptr_t arg);

#endif /* __ASSEMBLER__ */

#endif
