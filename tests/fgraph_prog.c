/*
 * fgraph_prog.c - a program with a known call tree for the function graph
 * tracer test (tests/test_fgraph.c): recursion, two threads each taking a
 * signal on an alternate signal stack, a signal handler on the main
 * stack, longjmp and siglongjmp out of traced frames, a tail call, fork
 * (the child returns through frames hooked before the fork) and exit
 * with traced frames on the stack.
 *
 * With the argument "vec" it instead calls traced functions that take
 * and return floating-point and vector values in registers (double,
 * long double, a pair of doubles, SSE, AVX and AVX-512 where the CPU has
 * them; NEON on aarch64), eight of each kind so that every argument
 * register is used, and checks every lane of every result: the hooks
 * run between the caller and the function and between the function's
 * return and the caller, and must leave all of these unharmed. It
 * prints "sym" lines for the ones it called and exits 1 on a mismatch.
 *
 * With "pages N" two threads each call a traced leaf N times, moving
 * between the CPUs every 500 calls: the exit records cross many ring
 * pages and buffers (the writer's cache of where it wrote last must
 * follow them); the test counts them call by call.
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
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* ------------------------------------------- values in registers */

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#define VEC_ARGS(T) T a, T b, T c, T d, T e, T f, T g, T h
#define VEC_SUM (a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h)

struct dpair { double x, y; };

double vec_d(VEC_ARGS(double));
long double vec_ld(long double a, long double b);
struct dpair vec_dd(double a, double b, int i);

volatile double vin[8] = { 1, 10, 100, 1000, 3, 30, 300, 3000 };
volatile long double vin_ld = 1e300L;	/* beyond double's range */
static int vec_bad;

TRACED double vec_d(VEC_ARGS(double)) { return VEC_SUM; }

TRACED long double vec_ld(long double a, long double b) { return a * b; }

TRACED struct dpair vec_dd(double a, double b, int i)
{
	return (struct dpair){ a * i, b * i };
}

/* Expected lane value of VEC_SUM over vin[] shifted by @k. */
PLAIN static double vsum(double k)
{
	double r = 0;

	for (int i = 0; i < 8; i++)
		r += (i + 1) * (vin[i] + k);
	return r;
}

PLAIN static void vcheck(const char *what, double got, double want)
{
	if (got != want) {
		fprintf(stderr, "fgraph_prog: %s: %.17g, want %.17g\n", what,
			got, want);
		vec_bad = 1;
	}
}

#define SYM(f) printf("sym %s %#lx\n", #f, (unsigned long)(uintptr_t)&f)

#if defined(__x86_64__)
__m128d vec_sse(VEC_ARGS(__m128d));
TRACED __m128d vec_sse(VEC_ARGS(__m128d)) { return VEC_SUM; }

#define AVX __attribute__((target("avx")))
#define AVX512 __attribute__((target("avx512f")))
AVX __m256d vec_avx(VEC_ARGS(__m256d));
AVX TRACED __m256d vec_avx(VEC_ARGS(__m256d)) { return VEC_SUM; }
AVX512 __m512d vec_avx512(VEC_ARGS(__m512d));
AVX512 TRACED __m512d vec_avx512(VEC_ARGS(__m512d)) { return VEC_SUM; }

/* The lanes of argument i are vin[i] + lane. */
PLAIN static void vec_sse_check(void)
{
	__m128d v[8];
	double out[2];

	for (int i = 0; i < 8; i++)
		v[i] = _mm_set_pd(vin[i] + 1, vin[i]);
	_mm_storeu_pd(out, vec_sse(v[0], v[1], v[2], v[3], v[4], v[5], v[6],
				   v[7]));
	for (int l = 0; l < 2; l++)
		vcheck("vec_sse", out[l], vsum(l));
}

AVX PLAIN static void vec_avx_check(void)
{
	__m256d v[8];
	double out[4];

	for (int i = 0; i < 8; i++)
		v[i] = _mm256_set_pd(vin[i] + 3, vin[i] + 2, vin[i] + 1,
				     vin[i]);
	_mm256_storeu_pd(out, vec_avx(v[0], v[1], v[2], v[3], v[4], v[5],
				      v[6], v[7]));
	for (int l = 0; l < 4; l++)
		vcheck("vec_avx", out[l], vsum(l));
}

AVX512 PLAIN static void vec_avx512_check(void)
{
	__m512d v[8];
	double out[8];

	for (int i = 0; i < 8; i++)
		v[i] = _mm512_set_pd(vin[i] + 7, vin[i] + 6, vin[i] + 5,
				     vin[i] + 4, vin[i] + 3, vin[i] + 2,
				     vin[i] + 1, vin[i]);
	_mm512_storeu_pd(out, vec_avx512(v[0], v[1], v[2], v[3], v[4], v[5],
					 v[6], v[7]));
	for (int l = 0; l < 8; l++)
		vcheck("vec_avx512", out[l], vsum(l));
}

PLAIN static void vec_arch(void)
{
	SYM(vec_sse);
	vec_sse_check();
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx")) {
		SYM(vec_avx);
		vec_avx_check();
	}
	if (__builtin_cpu_supports("avx512f")) {
		SYM(vec_avx512);
		vec_avx512_check();
	}
}
#elif defined(__aarch64__)
float64x2_t vec_neon(VEC_ARGS(float64x2_t));
TRACED float64x2_t vec_neon(VEC_ARGS(float64x2_t)) { return VEC_SUM; }

/* A homogeneous aggregate of four vectors: returned in v0-v3. */
struct neon4 { float64x2_t v[4]; };
struct neon4 vec_neon4(float64x2_t a, float64x2_t b);
TRACED struct neon4 vec_neon4(float64x2_t a, float64x2_t b)
{
	return (struct neon4){ { a, b, a + b, a - b } };
}

PLAIN static void vec_arch(void)
{
	float64x2_t v[8];
	struct neon4 q;
	double out[2];

	SYM(vec_neon);
	SYM(vec_neon4);
	for (int i = 0; i < 8; i++) {
		double l[2] = { vin[i], vin[i] + 1 };

		v[i] = vld1q_f64(l);
	}
	vst1q_f64(out, vec_neon(v[0], v[1], v[2], v[3], v[4], v[5], v[6],
				v[7]));
	for (int l = 0; l < 2; l++)
		vcheck("vec_neon", out[l], vsum(l));
	q = vec_neon4(v[1], v[2]);
	for (int k = 0; k < 4; k++) {
		vst1q_f64(out, q.v[k]);
		for (int l = 0; l < 2; l++) {
			double x = vin[1] + l, y = vin[2] + l;

			vcheck("vec_neon4", out[l],
			       k == 0 ? x : k == 1 ? y : k == 2 ? x + y : x - y);
		}
	}
}
#else
PLAIN static void vec_arch(void)
{
}
#endif

PLAIN static int vec_main(void)
{
	long double ld;
	struct dpair p;

	SYM(vec_d);
	SYM(vec_ld);
	SYM(vec_dd);
	vcheck("vec_d", vec_d(vin[0], vin[1], vin[2], vin[3], vin[4], vin[5],
			      vin[6], vin[7]), vsum(0));
	ld = vec_ld(vin_ld, vin_ld);
	if (ld != vin_ld * vin_ld || ld / vin_ld != vin_ld) {
		fprintf(stderr, "fgraph_prog: vec_ld: %Lg\n", ld);
		vec_bad = 1;
	}
	p = vec_dd(vin[1], vin[2], 3);
	vcheck("vec_dd.x", p.x, vin[1] * 3);
	vcheck("vec_dd.y", p.y, vin[2] * 3);
	vec_arch();
	fflush(stdout);
	return vec_bad;
}

/* ------------------------------------------- many pages, two CPUs */

void pg_leaf(long i);
TRACED void pg_leaf(long i) { fg_sink += (int)i; }

/* Call pg_leaf (long)@arg times, hopping CPUs every 500 calls. */
PLAIN static void *pages_loop(void *arg)
{
	long n = (long)arg, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t s;

	for (long i = 0; i < n; i++) {
		if (i % 500 == 0 && ncpu > 1) {
			CPU_ZERO(&s);
			CPU_SET((int)((i / 500) % 2), &s);
			sched_setaffinity(0, sizeof(s), &s);
		}
		pg_leaf(i);
	}
	return NULL;
}

static volatile int hold_done;

/* pages_loop, then stay: the worker thread of "hold". */
PLAIN static void *hold_loop(void *arg)
{
	pages_loop(arg);
	__atomic_store_n(&hold_done, 1, __ATOMIC_RELEASE);
	for (;;)
		pause();
	return NULL;
}

/* Two threads call pg_leaf @n times each; with @hold they then stay
 * (their own buffers' pages in hand, partly filled) until killed, and
 * "held" says when. */
PLAIN static int pages_main(long n, bool hold)
{
	pthread_t th;

	SYM(pg_leaf);
	fflush(stdout);
	if (pthread_create(&th, NULL, hold ? hold_loop : pages_loop, (void *)n))
		return 1;
	pages_loop((void *)n);
	if (!hold) {
		pthread_join(th, NULL);
		return 0;
	}
	while (!__atomic_load_n(&hold_done, __ATOMIC_ACQUIRE))
		usleep(1000);
	printf("held\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* "pause": SLOW_ROUNDS bursts of SLOW_CALLS calls of pg_leaf, 150 ms
 * apart: more than 2^27 ticks of any TSC faster than 895 MHz, so the
 * first exit after each pause needs a time extend. */
#define SLOW_ROUNDS 4
#define SLOW_CALLS 100

PLAIN static int pause_main(void)
{
	SYM(pg_leaf);
	fflush(stdout);
	for (int r = 0; r < SLOW_ROUNDS; r++) {
		if (r)
			usleep(150000);
		for (long i = 0; i < SLOW_CALLS; i++)
			pg_leaf(i);
	}
	return 0;
}

/* ------------------------------- calls from a thread's key destructors */

void dtor_leaf(long i);
TRACED void dtor_leaf(long i) { fg_sink += (int)i; }

static pthread_key_t dtor_key;

/* Calls dtor_leaf, and re-arms the key twice: the destructor runs in
 * three rounds, each after the runtime's own (its key is older), which
 * gives the thread's shadow stack back. */
PLAIN static void dtor_fn(void *p)
{
	long n = (long)p;

	dtor_leaf(n);
	if (n < 3)
		(void)pthread_setspecific(dtor_key, (void *)(n + 1));
}

PLAIN static void *dtor_thread(void *arg)
{
	(void)arg;
	dtor_leaf(0);
	(void)pthread_setspecific(dtor_key, (void *)1);
	return NULL;
}

/* "dtor": a thread whose key destructors call a traced function after
 * the runtime's destructor ran; four calls of dtor_leaf in all. */
PLAIN static int dtor_main(void)
{
	pthread_t th;

	SYM(dtor_leaf);
	fflush(stdout);
	if (pthread_key_create(&dtor_key, dtor_fn) ||
	    pthread_create(&th, NULL, dtor_thread, NULL))
		return 1;
	return pthread_join(th, NULL) ? 1 : 0;
}

/* "overflow": recurse(OVERFLOW_DEPTH) runs deeper than the shadow stack
 * holds (FG_STACK_MAX, 4096): tests/test_fgraph.c counts what it gets. */
#define OVERFLOW_DEPTH 4100

PLAIN static int overflow_main(void)
{
	SYM(recurse);
	SYM(leaf);
	fflush(stdout);
	recurse(OVERFLOW_DEPTH);
	return 0;
}

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

PLAIN int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "vec"))
		return vec_main();
	if (argc > 2 && !strcmp(argv[1], "pages"))
		return pages_main(atol(argv[2]), false);
	if (argc > 2 && !strcmp(argv[1], "hold"))
		return pages_main(atol(argv[2]), true);
	if (argc > 1 && !strcmp(argv[1], "dtor"))
		return dtor_main();
	if (argc > 1 && !strcmp(argv[1], "overflow"))
		return overflow_main();
	if (argc > 1 && !strcmp(argv[1], "pause"))
		return pause_main();
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
