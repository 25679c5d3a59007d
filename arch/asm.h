/*
 * asm.h - macros for the function-tracer trampolines (arch/STAR/mcount.S).
 *
 * ENTRY(name) starts a function that only the runtime and the other
 * trampolines use: it is .hidden, so it never ends up in the dynamic
 * symbol table or goes through the PLT. GLOBAL(name) starts one that
 * instrumented code calls (mcount, __fentry__, _mcount): visible, so a
 * preloaded libtracecollect.so overrides the C library's profiling stub.
 * END(name) closes either with .size and the CFI end. Both open a CFI
 * procedure, so debuggers and unwinders can walk through the trampolines.
 */
#ifndef ARCH_ASM_H
#define ARCH_ASM_H

#if defined(__x86_64__)
#define ASM_ALIGN	.p2align 4
#elif defined(__aarch64__)
#define ASM_ALIGN	.p2align 3
#endif

#define GLOBAL(name)			\
	.text;				\
	.globl name;			\
	.type name, %function;		\
	ASM_ALIGN;			\
name:					\
	.cfi_startproc

#define ENTRY(name)			\
	.text;				\
	.globl name;			\
	.hidden name;			\
	.type name, %function;		\
	ASM_ALIGN;			\
name:					\
	.cfi_startproc

#define END(name)			\
	.cfi_endproc;			\
	.size name, .-name

#endif
