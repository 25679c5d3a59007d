/*
 * mcount.S - x86_64 function-tracer hooks: mcount (gcc -pg), __fentry__
 * (gcc -pg -mfentry) and the return trampoline of the function graph
 * tracer. The contract with the C runtime is arch/arch.h.
 *
 * Calling convention (System V AMD64). Arguments: rdi rsi rdx rcx r8 r9,
 * al = number of vector registers for varargs, r10 = static chain, xmm0-7
 * float/vector arguments. Return values: rax rdx, xmm0 xmm1 (and st0 for
 * long double, which the C runtime never touches). r11 is scratch for
 * everyone, so the hooks use it freely. The C runtime may clobber any
 * caller-saved register, hence everything an argument or return value
 * can live in is saved around the call. The stack is aligned to 16 by
 * hand before calling C (the hooks can be called with any alignment the
 * traced code happens to have).
 *
 * Stack on entry to __fentry__ (called as the function's first
 * instruction, before its prologue):
 *     0(%rsp)  return address into the traced function
 *     8(%rsp)  the traced function's return address  <- the parent slot
 *
 * Stack on entry to mcount (called after `push %rbp; mov %rsp,%rbp`):
 *     0(%rsp)  return address into the traced function
 *     0(%rbp)  the caller's %rbp
 *     8(%rbp)  the traced function's return address  <- the parent slot
 *
 * Frame of the save area both hooks build (after push %rbp / mov):
 *     8(%rbp)  return address into the traced function
 *     0(%rbp)  saved %rbp
 *   ... aligned down to 16, then 192 bytes:
 *     0..56    rdi rsi rdx rcx r8 r9 rax r10
 *     64..184  xmm0..xmm7
 *
 * At fgraph_arch_return (reached by the traced function's `ret`) %rsp
 * points just above the parent slot it popped: that is the frame key,
 * the slot's address + 8 (arch/arch.h).
 *
 * Entering a hooked function (__fentry__): rather than `ret` with the
 * trampoline in the parent slot, the hook pops its return address into
 * %r11, drops the parent slot (FENTRY_DROP) and calls the function from
 * fgraph_arch_call, a `call *%r11` right in front of fgraph_arch_return:
 * the call pushes fgraph_arch_return into the very same slot, and the
 * return-stack predictor now expects it (arch/arch.h). The fast path
 * falls through into fgraph_arch_call, which directly follows
 * __fentry__; the C path jumps there (FENTRY_CALL). mcount cannot: the
 * function's frame is already built over the slot.
 *
 * Fast entry (FAST_ENTRY; arch/arch.h): the hook pushes the shadow entry
 * itself, saving only %rax and %rdx (rdtsc writes them) and calling
 * nothing: after the pushes
 *     16(%rsp)  return address into the traced function
 *     24(%rsp)  __fentry__ only: the parent slot
 * Thread state is fgraph__self, initial-exec TLS: %fs:(offset from the
 * GOT). The plain case runs straight through; one compare sends every
 * other out of line (FAST_ENTRY_COLD): topw at or past the stack's
 * limit_fast, which is the guard held, no shadow stack yet (both 0) or
 * a full one, or the plain fast path shut (limit_fast 0). Out of line,
 * with a filter set (fgraph__fast == FG_FAST_FILTER), the hook reads the
 * filters' verdict for the function from the runtime's cache, the first
 * slot the function's hash names, and comes back only when that slot
 * says "traced" and the stack takes an entry; anything else is C's to
 * give. Back in line, with the runtime's guard (FG_BUSY's byte in topw)
 * taken before the entry is written, the C entry takes over (the
 * registers restored first) when the top entry's key is not above the
 * new one (a longjmp may have left entries behind) or the slot already
 * holds the trampoline (a tail call).
 */
#include "arch/arch.h"
#include "arch/asm.h"

#define SAVE_SIZE 192

/* Fast path: return unless an agent is attached (*tc__on != 0). */
.macro TRACING_OFF_RETURN
	movq	tc__on@GOTPCREL(%rip), %r11
	movq	(%r11), %r11
	cmpl	$0, (%r11)
	jne	1f
	ret
1:
.endm

.macro SAVE_ARGS
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	subq	$SAVE_SIZE, %rsp
	movq	%rdi, 0(%rsp)
	movq	%rsi, 8(%rsp)
	movq	%rdx, 16(%rsp)
	movq	%rcx, 24(%rsp)
	movq	%r8, 32(%rsp)
	movq	%r9, 40(%rsp)
	movq	%rax, 48(%rsp)
	movq	%r10, 56(%rsp)
	movdqa	%xmm0, 64(%rsp)
	movdqa	%xmm1, 80(%rsp)
	movdqa	%xmm2, 96(%rsp)
	movdqa	%xmm3, 112(%rsp)
	movdqa	%xmm4, 128(%rsp)
	movdqa	%xmm5, 144(%rsp)
	movdqa	%xmm6, 160(%rsp)
	movdqa	%xmm7, 176(%rsp)
.endm

.macro RESTORE_ARGS
	movq	0(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdx
	movq	24(%rsp), %rcx
	movq	32(%rsp), %r8
	movq	40(%rsp), %r9
	movq	48(%rsp), %rax
	movq	56(%rsp), %r10
	movdqa	64(%rsp), %xmm0
	movdqa	80(%rsp), %xmm1
	movdqa	96(%rsp), %xmm2
	movdqa	112(%rsp), %xmm3
	movdqa	128(%rsp), %xmm4
	movdqa	144(%rsp), %xmm5
	movdqa	160(%rsp), %xmm6
	movdqa	176(%rsp), %xmm7
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
.endm

.macro SAVEQ reg
	pushq	\reg
	.cfi_adjust_cfa_offset 8
.endm

.macro LOADQ reg
	popq	\reg
	.cfi_adjust_cfa_offset -8
.endm

/* Push the shadow entry for the parent slot SLOT (an address computed
 * from %rsp after the two pushes, or from %rbp; its frame key is 8
 * bytes above it), storing the trampoline into the slot if STORE
 * (__fentry__'s is written by the `call` in fgraph_arch_call), and fall
 * through with %rax and %rdx restored. One compare takes every
 * case but the common one out of line, to COLD: the guard held, the
 * stack full or not there yet (arch.h), or the plain fast path shut
 * (limit_fast 0); COLD asks the filters' cache when a filter is set and
 * comes back to COLD_back, or goes on to RESTORE, which pops %rax and
 * %rdx and jumps to SLOW with every register as the hook found it
 * (RESTORE_BUSY gives the guard back first).
 * Only %rax, %rdx (saved: rdtsc writes them) and %r11 are used. */
.macro FAST_ENTRY cold, restore, restore_busy, store, slot
	SAVEQ	%rax
	SAVEQ	%rdx
	movq	fgraph__self@gottpoff(%rip), %rdx
	movq	%fs:FG_THREAD_TOPW(%rdx), %r11	/* &stack[top] | busy */
	cmpq	%fs:FG_THREAD_LIMIT_FAST(%rdx), %r11
	jae	\cold
\cold\()_back:				/* %rdx TLS, %r11 the entry */
	leaq	8+\slot, %rax			/* the key: the slot + 8 */
	cmpq	%rax, FG_FRAME_KEY-FG_FRAME_SIZE(%r11)
	jbe	\restore			/* key below ours: C checks */
	movb	$0x80, %fs:FG_THREAD_TOPW+7(%rdx) /* the guard: FG_BUSY */
	movq	%rax, FG_FRAME_KEY(%r11)
	movq	-8(%rax), %rax			/* the parent's return address */
	cmpq	fgraph__tramp(%rip), %rax
	je	\restore_busy			/* tail call: C handles it */
	movq	%rax, FG_FRAME_RET(%r11)
.if \store
	movq	fgraph__tramp(%rip), %rax
	movq	%rax, \slot			/* hijack the parent slot */
.endif
	movq	16(%rsp), %rax
	movq	%rax, FG_FRAME_FUNC(%r11)
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	movq	%rax, FG_FRAME_CALLTIME(%r11)
	leaq	FG_FRAME_SIZE(%r11), %rax
	movq	fgraph__self@gottpoff(%rip), %rdx
	movq	%rax, %fs:FG_THREAD_TOPW(%rdx)	/* top + 1, the guard free */
	LOADQ	%rdx
	LOADQ	%rax
.endm

/* The fast entry's cases out of line (FAST_ENTRY), with %rax and %rdx
 * pushed (and RESTORE_BUSY: %rdx the TLS offset, the guard held). */
.macro FAST_ENTRY_COLD slow, restore, restore_busy, cold
ENTRY(\restore_busy)
	.cfi_adjust_cfa_offset 16
	movb	$0, %fs:FG_THREAD_TOPW+7(%rdx)
	jmp	\restore
END(\restore_busy)
ENTRY(\restore)
	.cfi_adjust_cfa_offset 16
	LOADQ	%rdx
	LOADQ	%rax
	jmp	\slow
END(\restore)
	/* With a filter set, the filters' verdict for this function, from
	 * the first slot its hash names in the runtime's cache (fgraph.c,
	 * traced()): go on only if that slot holds this function, marked
	 * traced; anything else (a miss, another probe, skip, not yet
	 * known) is C's, as is every other case here. */
ENTRY(\cold)
	.cfi_adjust_cfa_offset 16
	cmpl	$FG_FAST_FILTER, fgraph__fast(%rip)
	jne	\restore
	movq	16(%rsp), %rax			/* func */
	movabsq	$FG_CACHE_MUL, %rdx
	imulq	%rax, %rdx
	shrq	$FG_CACHE_SHIFT, %rdx		/* the hash: the first slot */
	leaq	fgraph__cache_key(%rip), %r11
	cmpq	%rax, (%r11,%rdx,8)
	jne	\restore
	leaq	fgraph__cache_val(%rip), %r11
	cmpb	$FG_CACHE_TRACE, (%r11,%rdx)
	jne	\restore
	movq	fgraph__self@gottpoff(%rip), %rdx
	movq	%fs:FG_THREAD_TOPW(%rdx), %r11	/* &stack[top] | busy */
	cmpq	%fs:FG_THREAD_LIMIT(%rdx), %r11
	jae	\restore
	jmp	\cold\()_back
END(\cold)
.endm

/*
 * Fast exit (FAST_EXIT): the top shadow entry returns, the guard is
 * free, the entry records its exit (flags 0), and the thread's own buffer
 * (common/ring.h; only where the hook may write, arch/arch.h) has room
 * in its page for the 44-byte funcgraph_exit with no time extend: the
 * hook writes the record
 * and its commit there itself, pops the entry and jumps to the original
 * return address, calling nothing. At a return only %rax and %rdx (and
 * xmm0, xmm1, st0, which it does not touch) hold values: every other
 * caller-saved register is free. Anything else falls through to the C
 * exit, with %rax and %rdx as they came.
 * The record is the one lib/fgraph.c's own_exit() writes: header (type
 * FG_EXIT_TYPE, time delta from the page's last event), the thread's
 * head word (type, pid), func, depth | overrun << 32, calltime, rettime
 * (the event's time); then the commit count, stored (x86 stores are
 * ordered: a release), then the entry popped. Everything that does not
 * need the time comes before rdtsc (the fields it copies, the page's
 * next free byte: given back when a time extend sends the record to C
 * after all), and only what needs it after: 0.4 ns per call less than
 * reading the clock first (bench/run hooks). Nothing past the commit
 * count is read, by the agent or by recovery.
 */
.macro FAST_EXIT
	movq	fgraph__self@gottpoff(%rip), %r11
	movl	%fs:FG_THREAD_OWN_GEN(%r11), %ecx
	cmpl	tc__gen(%rip), %ecx
	jne	9f				/* another view's buffer */
	movq	%fs:FG_THREAD_TOPW(%r11), %rdi	/* &stack[top] | busy */
	testq	%rdi, %rdi
	js	9f				/* the guard held */
	/* the guard first: a handler that ran before it has put everything
	 * back; none runs after it, until the state is read and written */
	movb	$0x80, %fs:FG_THREAD_TOPW+7(%r11)
	movq	%rax, %r10			/* the return value */
	movq	%rdx, %rsi
	movq	%fs:FG_THREAD_OWN_NEXT(%r11), %r8
	leaq	FG_EXIT_TOTAL(%r8), %r9		/* none: next and end 0 */
	cmpq	%fs:FG_THREAD_OWN_END(%r11), %r9
	jae	8f				/* no room (or no buffer, nor a
						 * stack then), or the record
						 * would end the page: C's */
	cmpq	%rsp, FG_FRAME_KEY-FG_FRAME_SIZE(%rdi) /* the key: above
						 * the slot `ret` popped */
	jne	8f				/* or flags set: C's */
	prefetchw	1024(%r8)
	movq	%fs:FG_THREAD_HEAD(%r11), %rdx
	movq	%rdx, 4(%r8)
	movq	FG_FRAME_FUNC-FG_FRAME_SIZE(%rdi), %rdx
	movq	%rdx, 12(%r8)
	movq	%rdi, %rdx
	shrq	$5, %rdx			/* / FG_FRAME_SIZE */
	addq	%fs:FG_THREAD_DBIAS(%r11), %rdx	/* depth | overrun << 32 */
	movq	%rdx, 20(%r8)
	movq	FG_FRAME_CALLTIME-FG_FRAME_SIZE(%rdi), %rdx
	movq	%rdx, 28(%r8)
	movq	FG_FRAME_RET-FG_FRAME_SIZE(%rdi), %rcx
	movq	%r9, %fs:FG_THREAD_OWN_NEXT(%r11)
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax			/* now */
	movq	%rax, %rdx
	subq	%fs:FG_THREAD_OWN_TS(%r11), %rdx
	cmpq	$FG_EXIT_DELTA_MAX, %rdx
	jae	7f				/* a time extend: C's */
	shlq	$5, %rdx			/* PAGE_TYPE_LEN_BITS */
	orl	$FG_EXIT_TYPE, %edx
	movl	%edx, (%r8)
	movq	%rax, 36(%r8)			/* rettime */
	movq	%rax, %fs:FG_THREAD_OWN_TS(%r11)
	movabsq	$FG_EXIT_CC, %rdx
	movq	%fs:FG_THREAD_OWN_CCP(%r11), %rax
	addq	%rdx, (%rax)			/* the commit: ours alone */
	subq	$FG_FRAME_SIZE, %rdi
	movq	%rdi, %fs:FG_THREAD_TOPW(%r11)	/* top - 1, the guard free */
	movq	%r10, %rax
	movq	%rsi, %rdx
	jmp	*%rcx
7:	movq	%r8, %fs:FG_THREAD_OWN_NEXT(%r11)
8:	movq	%r10, %rax
	movq	%rsi, %rdx
	movb	$0, %fs:FG_THREAD_TOPW+7(%r11)
9:
.endm

/* The return address into the traced function to %r11, and the parent
 * slot dropped: fgraph_arch_call's `call` writes it again. */
.macro FENTRY_DROP
	popq	%r11
	.cfi_adjust_cfa_offset -8
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
.endm

/* Go on into the traced function through fgraph_arch_call, which calls
 * it, writing the trampoline's address into the parent slot with a
 * `call`: the CPU's return-stack predictor then expects the function
 * to return to the trampoline, where a `ret` to the hijacked slot would
 * be mispredicted on every traced call. */
.macro FENTRY_CALL
	FENTRY_DROP
	jmp	fgraph_arch_call
	.cfi_adjust_cfa_offset 16
.endm

/* void __fentry__(void): the parent slot is 8(%rsp) at entry. Its fast
 * path falls through into fgraph_arch_call, right below it. It starts
 * 16 bytes into a cache line: with the trampoline, the traced call's
 * whole path is in the next few lines. Where it starts matters: at the
 * line's start it measured 0.1 ns per call slower, and placed anywhere,
 * up to 1 ns (bench/run hooks). */
	.text
	.p2align 6
	.skip	16, 0xcc
GLOBAL(__fentry__)
	TRACING_OFF_RETURN
	FAST_ENTRY fentry_cold, fentry_restore, fentry_restore_busy, 0, 24(%rsp)
	FENTRY_DROP
END(__fentry__)

/*
 * fgraph_arch_call: `call *%r11`, the hooked function, from right here:
 * the call writes fgraph_arch_return, its return address, into the
 * parent slot. No alignment before it: __fentry__ falls through.
 * fgraph_arch_return: a hijacked function returned here instead of to
 * its caller. Not called: no return address on the stack. Writes the
 * exit record itself or saves the return registers, asks the runtime
 * for the original return address, jumps.
 */
	.globl	fgraph_arch_call
	.hidden	fgraph_arch_call
	.type	fgraph_arch_call, %function
fgraph_arch_call:
	.cfi_startproc
	call	*%r11
	/* the return address of that call: no alignment padding */
	.globl	fgraph_arch_return
	.hidden	fgraph_arch_return
	.type	fgraph_arch_return, %function
fgraph_arch_return:
	.cfi_undefined %rip		/* unwinders stop here */
	FAST_EXIT
	movq	%rsp, %r11		/* key: above the slot `ret` popped */
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	subq	$48, %rsp
	movq	%rax, 0(%rsp)
	movq	%rdx, 8(%rsp)
	movdqa	%xmm0, 16(%rsp)
	movdqa	%xmm1, 32(%rsp)
	movq	%r11, %rdi
	call	fgraph_arch_exit
	movq	%rax, %r11		/* the original return address */
	movq	0(%rsp), %rax
	movq	8(%rsp), %rdx
	movdqa	16(%rsp), %xmm0
	movdqa	32(%rsp), %xmm1
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	jmp	*%r11
	.size	fgraph_arch_return, .-fgraph_arch_return
END(fgraph_arch_call)

/* __fentry__'s C path: the hook as it was entered. */
ENTRY(fentry_slow)
	SAVE_ARGS
	movq	8(%rbp), %rdi		/* func: return address into it */
	leaq	16(%rbp), %rsi		/* retp: the parent slot */
	leaq	24(%rbp), %rdx		/* key: just above it */
	call	fgraph_arch_entry
	RESTORE_ARGS
	leaq	fgraph_arch_return(%rip), %r11
	cmpq	%r11, 8(%rsp)
	jne	3f			/* not hooked */
	FENTRY_CALL
3:	ret
END(fentry_slow)

/* void mcount(void): the parent slot is 8(%rbp) of the traced frame. */
GLOBAL(mcount)
	TRACING_OFF_RETURN
	FAST_ENTRY mcount_cold, mcount_restore, mcount_restore_busy, 1, 8(%rbp)
	ret
END(mcount)

/* mcount's C path: the hook as it was entered. */
ENTRY(mcount_slow)
	SAVE_ARGS
	movq	8(%rbp), %rdi		/* func: return address into it */
	movq	0(%rbp), %rsi		/* the traced function's %rbp */
	addq	$8, %rsi		/* retp: the parent slot */
	leaq	8(%rsi), %rdx		/* key: just above it */
	call	fgraph_arch_entry
	RESTORE_ARGS
	ret
END(mcount_slow)

FAST_ENTRY_COLD fentry_slow, fentry_restore, fentry_restore_busy, fentry_cold
FAST_ENTRY_COLD mcount_slow, mcount_restore, mcount_restore_busy, mcount_cold

/* The xsave area: SSE, AVX and ZMM_Hi256 (the upper halves of zmm0-15),
 * in the standard form 1664 bytes (ZMM_Hi256 at 1152), less compacted. */
#define XSAVE_MASK	0x46
#define XSAVE_AREA	1664

/* uintptr_t fgraph_arch_call_whole(uintptr_t (*fn)(uintptr_t),
 *                                  uintptr_t arg); arch/arch.h */
ENTRY(fgraph_arch_call_whole)
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-64, %rsp
	subq	$XSAVE_AREA, %rsp
	movq	%rdi, %r11		/* fn */
	movl	fgraph__xsave(%rip), %ecx
	testl	%ecx, %ecx
	jz	2f
	xorl	%eax, %eax		/* the xsave header must be zero */
	movq	%rax, 512(%rsp)
	movq	%rax, 520(%rsp)
	movq	%rax, 528(%rsp)
	movq	%rax, 536(%rsp)
	movq	%rax, 544(%rsp)
	movq	%rax, 552(%rsp)
	movq	%rax, 560(%rsp)
	movq	%rax, 568(%rsp)
	movl	$XSAVE_MASK, %eax
	xorl	%edx, %edx
	cmpl	$FG_XSAVE_C, %ecx
	jne	1f
	xsavec	(%rsp)
	jmp	2f
1:	xsave	(%rsp)
2:	movq	%rsi, %rdi
	call	*%r11
	cmpl	$0, fgraph__xsave(%rip)
	je	3f
	movq	%rax, %rcx		/* fn's answer */
	movl	$XSAVE_MASK, %eax
	xorl	%edx, %edx
	xrstor	(%rsp)
	movq	%rcx, %rax
3:	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
END(fgraph_arch_call_whole)

	.section .note.GNU-stack, "", %progbits
