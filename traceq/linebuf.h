/*
 * linebuf.h - a line being written into a caller's buffer, cut at its
 * capacity: what render.c (trace-cmd's columns) and fastprint.c (an
 * event's print fmt) write a rendered line with.
 */
#ifndef TRACEQ_LINEBUF_H
#define TRACEQ_LINEBUF_H

#include <stddef.h>
#include <string.h>

struct linebuf {
	char *buf;
	size_t len, cap;
};

/* @n bytes of @p, as many as fit. */
static inline void linebuf_put(struct linebuf *l, const char *p, size_t n)
{
	if (n > l->cap - l->len)
		n = l->cap - l->len;
	memcpy(l->buf + l->len, p, n);
	l->len += n;
}

/* @n times @c, as many as fit. */
static inline void linebuf_fill(struct linebuf *l, char c, size_t n)
{
	if (n > l->cap - l->len)
		n = l->cap - l->len;
	memset(l->buf + l->len, c, n);
	l->len += n;
}

#endif
