/*
 * mcount.S - aarch64 function-tracer hooks: _mcount (gcc -pg) and the
 * return trampoline of the function graph tracer. The contract with the
 * C runtime is arch/arch.h.
 *
 * Calling convention (AAPCS64). Arguments: x0-x7, x8 = indirect result
 * address, v0-v7 float/vector arguments. Return values: x0-x7 (x0/x1 for
 * scalars and small structs), v0-v3 (homogeneous float aggregates).
 * x16/x17 (IP0/IP1) are scratch between procedures, so the trampoline
 * jumps through x16. The C runtime may clobber any caller-saved register,
 * so everything an argument or a return value can live in is saved.
 *
 * What gcc -pg emits at a function's start (after the frame record is
 * pushed and x29 set up):
 *     stp  x29, x30, [sp, #-N]!
 *     mov  x29, sp
 *     mov  x0, x30          <- gcc passes the return address in x0
 *     bl   _mcount
 * so on entry to _mcount:
 *     x30        return address into the traced function
 *     x29        the traced function's frame record:
 *     [x29]      the caller's frame pointer     <- the frame key
 *     [x29, #8]  the traced function's saved lr <- the parent slot
 * The function's epilogue reloads x30 from the parent slot and returns,
 * so writing the trampoline's address there makes it return to us, with
 * x29 restored to the caller's frame pointer: the same frame key.
 *
 * _mcount's save area (sp aligned to 16 throughout):
 *     [sp, #0]    x29 x30 (our frame record)
 *     [sp, #16]   x0 .. x8 (72 bytes, padded to 80)
 *     [sp, #96]   q0 .. q7 (128 bytes)             total 224
 */
#include "arch/asm.h"

#define SAVE_SIZE 224

/* Fast path: return unless an agent is attached (*tc__on != 0). */
.macro TRACING_OFF_RETURN
	adrp	x16, :got:tc__on
	ldr	x16, [x16, #:got_lo12:tc__on]
	ldr	x16, [x16]
	ldr	w16, [x16]
	cbnz	w16, 1f
	ret
1:
.endm

/*
 * ARG_REGS pair, one: store (stp, str) or load (ldp, ldr) the argument
 * registers x0-x8 at sp+16 and q0-q3 at sp+96; Q_HIGH pair: q4-q7 at
 * sp+160 (only _mcount saves them: the return path holds at most q0-q3).
 */
.macro ARG_REGS pair, one
	\pair	x0, x1, [sp, #16]
	\pair	x2, x3, [sp, #32]
	\pair	x4, x5, [sp, #48]
	\pair	x6, x7, [sp, #64]
	\one	x8, [sp, #80]
	\pair	q0, q1, [sp, #96]
	\pair	q2, q3, [sp, #128]
.endm

.macro Q_HIGH pair
	\pair	q4, q5, [sp, #160]
	\pair	q6, q7, [sp, #192]
.endm

/* void _mcount(unsigned long ret) */
GLOBAL(_mcount)
	TRACING_OFF_RETURN
	stp	x29, x30, [sp, #-SAVE_SIZE]!
	.cfi_def_cfa_offset SAVE_SIZE
	.cfi_offset x29, -SAVE_SIZE
	.cfi_offset x30, -SAVE_SIZE + 8
	ARG_REGS stp, str
	Q_HIGH stp
	mov	x0, x30			/* func: return address into it */
	add	x1, x29, #8		/* retp: the parent slot */
	ldr	x2, [x29]		/* key: the caller's frame pointer */
	mov	x29, sp
	bl	fgraph_arch_entry
	ARG_REGS ldp, ldr
	Q_HIGH ldp
	ldp	x29, x30, [sp], #SAVE_SIZE
	.cfi_def_cfa_offset 0
	ret
END(_mcount)

/*
 * fgraph_arch_return: a hijacked function returned here. x29 is the
 * caller's frame pointer again (the key), sp the function's entry sp.
 * Save area: x29 x30, x0-x8 (+pad), q0-q3: 160 bytes.
 */
ENTRY(fgraph_arch_return)
	.cfi_undefined x30		/* unwinders stop here */
	stp	x29, x30, [sp, #-160]!
	ARG_REGS stp, str
	mov	x0, x29			/* key */
	bl	fgraph_arch_exit
	mov	x16, x0			/* the original return address */
	ARG_REGS ldp, ldr
	ldp	x29, x30, [sp], #160
	mov	x30, x16
	br	x16
END(fgraph_arch_return)

/* uintptr_t fgraph_arch_call_whole(uintptr_t (*fn)(uintptr_t),
 *                                  uintptr_t arg): a tail call here; the
 * hook saves q0-q7, which are the vector argument registers whole. */
ENTRY(fgraph_arch_call_whole)
	mov	x16, x0
	mov	x0, x1
	br	x16
END(fgraph_arch_call_whole)

	.section .note.GNU-stack, "", %progbits
