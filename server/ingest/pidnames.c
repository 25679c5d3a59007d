/*
 * pidnames.c - a connection's pid -> task name table and its saved form
 * (pidnames.h). Open addressing with linear probing, grown at half full.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/ingest/pidnames.h"

#define PIDNAMES_SAVE_VERSION	1u

static struct pidname *probe(const struct pidnames *t, int32_t pid)
{
	size_t i = ((uint32_t)pid * 2654435761u) & (t->cap - 1);

	while (t->slots[i].pid && t->slots[i].pid != pid)
		i = (i + 1) & (t->cap - 1);
	return &t->slots[i];
}

struct pidname *pidnames_find(const struct pidnames *t, int32_t pid)
{
	struct pidname *slot;

	if (!t->cap || pid == 0)
		return NULL;
	slot = probe(t, pid);
	return slot->pid ? slot : NULL;
}

/* Room for @n more pids at most half full. Return: 0; -ENOMEM. */
static int reserve(struct pidnames *t, size_t n)
{
	struct pidnames g = { .cap = t->cap ? t->cap : 256 };

	while ((t->count + n) * 2 > g.cap) {
		if (g.cap > SIZE_MAX / 2 / sizeof(*g.slots))
			return -ENOMEM;
		g.cap *= 2;
	}
	if (g.cap == t->cap)
		return 0;
	g.slots = calloc(g.cap, sizeof(*g.slots));
	if (!g.slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].pid)
			*probe(&g, t->slots[i].pid) = t->slots[i];
	g.count = t->count;
	free(t->slots);
	*t = g;
	return 0;
}

struct pidname *pidnames_slot(struct pidnames *t, int32_t pid)
{
	struct pidname *slot;

	if (reserve(t, 1) < 0)
		return NULL;
	slot = probe(t, pid);
	t->count += slot->pid == 0;
	slot->pid = pid;
	return slot;
}

/* ---- saved form: a header, then PIDNAMES_SAVE_SLOT bytes per slot ---- */

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
	return p + 8;
}

static uint8_t *put16b(uint8_t *p, const char s[16])
{
	memcpy(p, s, 16);
	return p + 16;
}

static uint32_t get32(const uint8_t **p)
{
	uint32_t v;

	memcpy(&v, *p, 4);
	*p += 4;
	return le32toh(v);
}

static uint64_t get64(const uint8_t **p)
{
	uint64_t v;

	memcpy(&v, *p, 8);
	*p += 8;
	return le64toh(v);
}

/* A name of 15 bytes at most and its NUL, zero-padded: as the table keeps them. */
static void get16b(const uint8_t **p, char s[16])
{
	size_t n = strnlen((const char *)*p, 15);

	memset(s, 0, 16);
	memcpy(s, *p, n);
	*p += 16;
}

size_t pidnames_save(const struct pidnames *t, size_t *pos, uint8_t *buf)
{
	uint8_t *p = buf + PIDNAMES_SAVE_HDR;
	uint32_t n = 0;

	for (; *pos < t->cap && n < PIDNAMES_SAVE_MAX; ++*pos) {
		const struct pidname *s = &t->slots[*pos];

		if (!s->pid || (!s->learned_ts && !s->since))
			continue;	/* empty, or only the agent's: its CMDLINES */
		p = put32(p, (uint32_t)s->pid);
		p = put16b(p, s->comm);
		p = put64(p, s->learned_ts);
		p = put64(p, s->since);
		p = put16b(p, s->now);
		p = put16b(p, s->before);
		n++;
	}
	if (!n)
		return 0;
	put32(put32(buf, PIDNAMES_SAVE_VERSION), n);
	return (size_t)(p - buf);
}

int pidnames_load(struct pidnames *t, const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t version, n;
	int ret;

	if (len < PIDNAMES_SAVE_HDR)
		return TC_ERR_MSG_MALFORMED;
	version = get32(&p);
	n = get32(&p);
	if (version != PIDNAMES_SAVE_VERSION || n == 0 || n > PIDNAMES_SAVE_MAX ||
	    len != PIDNAMES_SAVE_HDR + (size_t)n * PIDNAMES_SAVE_SLOT)
		return TC_ERR_MSG_MALFORMED;
	for (uint32_t i = 0; i < n; i++)	/* pid 0 marks an empty slot */
		if (!memcmp(p + (size_t)i * PIDNAMES_SAVE_SLOT, "\0\0\0\0", 4))
			return TC_ERR_MSG_MALFORMED;
	ret = reserve(t, n);
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		struct pidname s;

		s.pid = (int32_t)get32(&p);
		get16b(&p, s.comm);
		s.learned_ts = get64(&p);
		s.since = get64(&p);
		get16b(&p, s.now);
		get16b(&p, s.before);
		*pidnames_slot(t, s.pid) = s;	/* room reserved: never NULL */
	}
	return ret;
}

void pidnames_free(struct pidnames *t)
{
	free(t->slots);
	*t = (struct pidnames){ 0 };
}
