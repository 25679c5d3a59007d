/*
 * fuzz_journal.c - libFuzzer target for journal_rec_parse(), walking the
 * input as a journal file's records the way replay does: every record it
 * accepts lies inside the buffer, is a whole number of 8-byte units that
 * covers its header and payload, and moves the walk forward; anything
 * else is a cut-off tail (0) or TC_ERR_MSG_MALFORMED, where the walk ends.
 * A JREC_CLOCKMAP record's payload goes through clocksrc_load(), a
 * JREC_PIDNAMES record's through pidnames_load(): taken or refused, never
 * read past; what they take saves and loads back the same.
 * No file I/O: replay itself reads with pread() around this same parser.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "common/tc_error.h"
#include <string.h>

#include "server/ingest/clockmap.h"
#include "server/ingest/journal.h"
#include "server/ingest/pidnames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A header the parser accepted must say what the bytes say. */
static void check_hdr(const uint8_t *p, uint32_t kind, uint32_t len)
{
	uint32_t v[4];

	for (int i = 0; i < 4; i++)
		v[i] = p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
		       (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
	if (v[0] != JOURNAL_REC_MAGIC || v[1] != kind || v[2] != len ||
	    v[3] != (v[0] ^ v[1] ^ v[2] ^ 0xffffffffu))
		abort();
	if (kind < JREC_MSG || kind > JREC_PIDNAMES || len > JOURNAL_MAX_REC)
		abort();
}

/* A clock map's bytes: loaded or refused; loaded, its save is a fixed point. */
static void check_clockmap(const uint8_t *p, size_t len)
{
	static uint8_t a[CLOCKSRC_SAVE_MAX], b[CLOCKSRC_SAVE_MAX];
	struct clocksrc c;
	size_t na, nb;

	clocksrc_init(&c, 1000000);
	if (clocksrc_load(&c, p, len) != 0)
		return;
	na = clocksrc_save(&c, a);
	if (na != len || clocksrc_load(&c, a, na) != 0)
		abort();
	nb = clocksrc_save(&c, b);
	if (nb != na || memcmp(a, b, na))
		abort();
}

/*
 * Task names' bytes: loaded or refused (a refusal changes nothing); loaded,
 * saved and loaded again, each pid with more than an agent's name holds
 * what the bytes gave its last slot, and no other pid is saved.
 */
static void check_pidnames(const uint8_t *p, size_t len)
{
	static uint8_t a[PIDNAMES_SAVE_HDR + PIDNAMES_SAVE_MAX * PIDNAMES_SAVE_SLOT];
	struct pidnames t = { 0 }, u = { 0 };
	size_t pos = 0, na, saved = 0;

	if (pidnames_load(&t, p, len) != 0) {
		if (t.count)
			abort();
		pidnames_free(&t);
		return;
	}
	while ((na = pidnames_save(&t, &pos, a)))
		if (pidnames_load(&u, a, na) != 0)
			abort();
	for (size_t i = 0; i < t.cap; i++) {
		const struct pidname *x = &t.slots[i], *y = pidnames_find(&u, x->pid);

		if (!x->pid)
			continue;
		if (!x->learned_ts && !x->since) {	/* an agent's name: not saved */
			if (y)
				abort();
			continue;
		}
		saved++;
		if (!y || memcmp(x->comm, y->comm, 16) || x->learned_ts != y->learned_ts ||
		    x->since != y->since || memcmp(x->now, y->now, 32))
			abort();
	}
	if (u.count != saved)
		abort();
	pidnames_free(&t);
	pidnames_free(&u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	uint32_t kind, len;
	long rec;

	while (off < size) {
		rec = journal_rec_parse(data + off, size - off, &kind, &len);
		if (rec == 0 || rec == TC_ERR_MSG_MALFORMED)
			break;
		if (rec < JOURNAL_REC_HDR || (size_t)rec > size - off || rec % 8 ||
		    (size_t)rec < JOURNAL_REC_HDR + (size_t)len ||
		    (size_t)rec >= JOURNAL_REC_HDR + (size_t)len + 8)
			abort();
		check_hdr(data + off, kind, len);
		if (kind == JREC_CLOCKMAP)
			check_clockmap(data + off + JOURNAL_REC_HDR, len);
		if (kind == JREC_PIDNAMES)
			check_pidnames(data + off + JOURNAL_REC_HDR, len);
		off += (size_t)rec;
	}
	return 0;
}
