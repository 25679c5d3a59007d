/*
 * linebuf.h - a line being written into a caller's buffer, cut at its
 * capacity: what render.c (trace-cmd's columns) and fastprint.c (an
 * event's print fmt) write a rendered line with.
 */
#ifndef TRACEQ_LINEBUF_H
#define TRACEQ_LINEBUF_H

#include <stdbool.h>
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

/*
 * A field as printf pads it: @n bytes at @p (a string, or a number's
 * digits after a '-' when @neg), @width wide with the sign: spaces
 * before it, or with @zero '0's between the sign and the digits, or with
 * @left spaces after it.
 */
static inline void linebuf_padded(struct linebuf *l, const char *p, size_t n, bool neg,
			       unsigned width, bool left, bool zero)
{
	size_t fill = width > n + neg ? width - (n + neg) : 0;

	if (!left && !zero)
		linebuf_fill(l, ' ', fill);
	if (neg)
		linebuf_put(l, "-", 1);
	if (zero)
		linebuf_fill(l, '0', fill);
	linebuf_put(l, p, n);
	if (left)
		linebuf_fill(l, ' ', fill);
}

#endif
