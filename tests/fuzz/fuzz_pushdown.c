/*
 * fuzz_pushdown.c - libFuzzer target for the push-down messages (FILTER,
 * FILTER_STATUS) of proto_msg_decode(), whose names an agent uses as path
 * components of its tracefs instance.
 *
 * Input byte 0 picks the mode. Odd: the rest is a payload for the decoder;
 * whatever decodes as FILTER or FILTER_STATUS must have names that are
 * safe path components ([A-Za-z0-9_.-], no leading '.') and a text of at
 * most PROTO_MAX_FILTER bytes, and survive encode -> decode unchanged.
 * Even: the rest, split at '\n', gives system, name and text of a FILTER;
 * the encoder must accept it exactly when the decoder accepts what it
 * produced would be valid, and the round trip must keep every string.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "proto/frame.h"
#include "proto/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool name_safe(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= PROTO_MAX_EVENT_NAME && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") == n;
}

/* The fields FILTER and FILTER_STATUS share. */
static void fields(const struct proto_msg *m, const char **sys, const char **name,
		   const char **text)
{
	if (m->type == MSG_FILTER) {
		*sys = m->filter.system, *name = m->filter.name, *text = m->filter.text;
	} else {
		*sys = m->filter_status.system, *name = m->filter_status.name;
		*text = m->filter_status.text;
	}
}

static void check_decoded(const struct proto_msg *m)
{
	struct proto_buf b;
	struct proto_msg m2;
	const char *s1, *n1, *t1, *s2, *n2, *t2;

	fields(m, &s1, &n1, &t1);
	if (!name_safe(s1) || !name_safe(n1) || strlen(t1) > PROTO_MAX_FILTER)
		abort();
	proto_buf_init(&b);
	if (proto_msg_encode(m, &b) != 0 ||
	    proto_msg_decode(b.data + FRAME_HDR_SIZE, b.len - FRAME_HDR_SIZE, &m2) != 0)
		abort();
	fields(&m2, &s2, &n2, &t2);
	if (m2.type != m->type || strcmp(s1, s2) || strcmp(n1, n2) || strcmp(t1, t2) ||
	    (m->type == MSG_FILTER_STATUS && (m->filter_status.ok != m2.filter_status.ok ||
					      strcmp(m->filter_status.error,
						     m2.filter_status.error))))
		abort();
	proto_msg_free(&m2);
	proto_buf_free(&b);
}

static void raw(const uint8_t *data, size_t size)
{
	struct proto_msg m;
	int rc = proto_msg_decode(data, size, &m);

	if (rc < 0) {
		if (rc != TC_ERR_MSG_MALFORMED && rc != TC_ERR_MSG_MISSING &&
		    rc != TC_ERR_MSG_UNKNOWN && rc != -ENOMEM)
			abort();
		return;
	}
	if (m.type == MSG_FILTER || m.type == MSG_FILTER_STATUS)
		check_decoded(&m);
	proto_msg_free(&m);
}

/* Cut @p..@end at the next '\n' into a NUL-terminated copy. */
static char *part(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n = (size_t)((nl ? nl : end) - *p);
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memcpy(s, *p, n);
	s[n] = '\0';
	*p = nl ? nl + 1 : end;
	return s;
}

static void built(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct proto_msg m = { .type = MSG_FILTER };
	struct proto_buf b;
	bool valid;
	int rc;

	m.filter.system = part(&p, end);
	m.filter.name = part(&p, end);
	m.filter.text = part(&p, end);
	valid = name_safe(m.filter.system) && name_safe(m.filter.name) &&
		strlen(m.filter.text) <= PROTO_MAX_FILTER;
	proto_buf_init(&b);
	rc = proto_msg_encode(&m, &b);
	if (valid != (rc == 0) || (rc < 0 && rc != TC_ERR_MSG_MALFORMED))
		abort();
	if (rc == 0)
		raw(b.data + FRAME_HDR_SIZE, b.len - FRAME_HDR_SIZE);
	proto_buf_free(&b);
	free(m.filter.system);
	free(m.filter.name);
	free(m.filter.text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		raw(data + 1, size - 1);
	else
		built(data + 1, size - 1);
	return 0;
}
