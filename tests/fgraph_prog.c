/*
 * fgraph_prog.c - a program with a known call tree for the function graph
 * tracer test (tests/test_fgraph.c): recursion, two threads each taking a
 * signal on an alternate signal stack, a signal handler on the main
 * stack, longjmp and siglongjmp out of traced frames, a tail call, fork
 * (the child returns through frames hooked before the fork) and exit
 * with traced frames on the stack.
 *
 * Built with -pg, -pg -mfentry or -finstrument-functions (the test build
 * does each), linked with libtracecollect, run with TC_FTRACE set. main()
 * is not instrumented: it prints the address of every traced function
 * ("sym NAME ADDR") so the test can name the addresses it reads back,
 * then calls run(). The expected graph is in tests/test_fgraph.c; keep
 * the two in step.
 */
#include "config.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACED __attribute__((noinline, noclone))
#define PLAIN __attribute__((no_instrument_function))

volatile int fg_sink;
static jmp_buf jb;
static sigjmp_buf sjb;
static void *altstk[2];

/* Non-static, so dladdr and -rdynamic can name them too. */
void leaf(void);
void recurse(int n);
void on_sig(int sig);
void sig_caller(void);
void deep2(void);
void deep1(void);
void jmp_caller(void);
void sig_deep(void);
void on_sig2(int sig);
void sigjmp_caller(void);
void on_alt(int sig);
void alt_caller(void);
int tail_b(int x);
int tail_a(int x);
int fork_caller(void);
void *worker(void *arg);
void run(void);

TRACED void leaf(void) { fg_sink++; }

TRACED void recurse(int n)
{
	if (n > 0)
		recurse(n - 1);
	leaf();
	fg_sink++;
}

TRACED void on_sig(int sig) { (void)sig; leaf(); fg_sink++; }

TRACED void sig_caller(void) { raise(SIGUSR1); fg_sink++; }

TRACED void deep2(void) { longjmp(jb, 1); }

TRACED void deep1(void) { deep2(); fg_sink++; }

TRACED void jmp_caller(void)
{
	if (!setjmp(jb))
		deep1();
	leaf();
	fg_sink++;
}

TRACED void sig_deep(void) { siglongjmp(sjb, 1); }

TRACED void on_sig2(int sig) { (void)sig; sig_deep(); fg_sink++; }

TRACED void sigjmp_caller(void)
{
	if (!sigsetjmp(sjb, 1))
		raise(SIGUSR2);
	leaf();
	fg_sink++;
}

TRACED void on_alt(int sig) { (void)sig; leaf(); fg_sink++; }

TRACED void alt_caller(void) { raise(SIGURG); fg_sink++; }

TRACED int tail_b(int x) { leaf(); return x + fg_sink; }

TRACED int tail_a(int x) { fg_sink++; return tail_b(x + 1); }

TRACED int fork_caller(void) { return fork(); }

TRACED void *worker(void *arg)
{
	stack_t ss = { .ss_sp = arg, .ss_size = 65536 };

	sigaltstack(&ss, NULL);
	recurse(1);
	alt_caller();
	return NULL;
}

TRACED void run(void)
{
	pthread_t th[2];
	pid_t pid;

	recurse(2);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, altstk[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	sig_caller();
	jmp_caller();
	sigjmp_caller();
	fg_sink += tail_a(1);
	pid = fork_caller();
	if (pid == 0) {
		leaf();
		exit(0);	/* with run() still on the stack */
	}
	waitpid(pid, NULL, 0);
}

#define SYM(f) printf("sym %s %#lx\n", #f, (unsigned long)(uintptr_t)&f)

PLAIN static void print_syms(void)
{
	SYM(leaf); SYM(recurse); SYM(on_sig); SYM(sig_caller); SYM(deep2);
	SYM(deep1); SYM(jmp_caller); SYM(sig_deep); SYM(on_sig2);
	SYM(sigjmp_caller); SYM(on_alt); SYM(alt_caller); SYM(tail_b);
	SYM(tail_a); SYM(fork_caller); SYM(worker); SYM(run);
	fflush(stdout);
}

PLAIN static void handle(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa = { .sa_handler = fn, .sa_flags = flags };

	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

PLAIN int main(void)
{
	print_syms();
	handle(SIGUSR1, on_sig, 0);
	handle(SIGUSR2, on_sig2, 0);
	handle(SIGURG, on_alt, SA_ONSTACK);
	/* Mapped before the threads' stacks, so (mmap going down) above
	 * them: the hard case for telling live frames from stale ones. */
	for (int i = 0; i < 2; i++)
		altstk[i] = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	run();
	return 0;
}
