/*
 * util.h - small helpers every part of tracecollect uses: the monotonic
 * clock in milliseconds, deadlines for timed waits, the blanks and hex digits of the text scanners,
 * and arrays that grow by doubling.
 *
 * Header-only (static inline): common/ is libc only, and these sit on
 * paths (the agent's pump, the collector's ingest) where a call across
 * objects would cost more than the body.
 */
#ifndef COMMON_UTIL_H
#define COMMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* util_now_ms - CLOCK_MONOTONIC in milliseconds. */
static inline int64_t util_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * util_deadline - CLOCK_REALTIME @ms milliseconds from now (0 when @ms is
 * negative), for pthread_cond_timedwait().
 */
static inline struct timespec util_deadline(int64_t ms)
{
	struct timespec ts;

	ms = ms < 0 ? 0 : ms;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* util_is_space - a blank of the filter and query text: space, tab, CR, LF, VT, FF. */
static inline bool util_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/*
 * util_skip_space - where the scan of @s (@len bytes, not NUL-terminated)
 * at @i goes on after blanks (util_is_space): the index of the first
 * non-blank at or after @i, or @len.
 */
static inline size_t util_skip_space(const char *s, size_t len, size_t i)
{
	while (i < len && util_is_space(s[i]))
		i++;
	return i;
}

/* util_hex_digit - the value of hex digit @c (0-9, a-f, A-F), or -1. */
static inline int util_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * util_grow - room for element @n (appended: @n is the count) in array @v
 * of *@cap elements of @size bytes: @v itself while @n < *@cap; else @v
 * moved by realloc() to twice the elements (@first when it has none), and
 * *@cap updated.
 * Return: the array, which the caller stores in place of @v; NULL: no
 * memory (@v and *@cap stay as they were, @v still the caller's).
 */
static inline void *util_grow(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t want = *cap ? *cap * 2 : first;
	void *p;

	if (n < *cap)
		return v;
	if (want < *cap || want > SIZE_MAX / size)
		return NULL;
	p = realloc(v, want * size);
	if (p)
		*cap = want;
	return p;
}

#endif
