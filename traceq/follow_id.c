/*
 * follow_id.c - a follower's position as text and back (follow.h): what
 * serve_live.c sends as each event's SSE id and takes back from a
 * reconnecting browser's Last-Event-ID. The position is the last row's
 * id and, against a store that several collectors write (issue 35), one
 * cursor per collector number; an id of the cursor alone would restart a
 * fleet follower from one number and skip or repeat the others' rows.
 * The header is the browser's to send, so anything else is refused whole.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "traceq/follow.h"

size_t tq_follow_id(const struct tq_follow *f, char *buf, size_t len)
{
	size_t at;

	if (!len)
		return 0;
	at = (size_t)snprintf(buf, len, "%" PRIu64, f->cursor);
	for (uint32_t i = 0; i < f->req.ncursors && i < QMSG_MAX_CURSORS && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%c%" PRIu64, i ? ',' : ':',
				       f->req.cursors[i]);
	return at < len ? at : len - 1;
}

/* A decimal uint64_t at *@p (digits only, no sign or space), *@p past it. */
static int id_number(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t n = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*v = n;
	*p = s;
	return 0;
}

int tq_follow_resume(struct tq_follow *f, const char *id)
{
	uint64_t cursor, cursors[QMSG_MAX_CURSORS];
	uint32_t n = 0;
	const char *p = id;

	if (!id || id_number(&p, &cursor) < 0)
		return -EINVAL;
	if (*p == ':') {
		do {
			p++;
			if (n == QMSG_MAX_CURSORS || id_number(&p, &cursors[n++]) < 0)
				return -EINVAL;
		} while (*p == ',');
	}
	if (*p)
		return -EINVAL;
	f->cursor = cursor;
	for (uint32_t i = 0; i < n; i++)
		f->req.cursors[i] = cursors[i];
	f->req.ncursors = n;
	return 0;
}
