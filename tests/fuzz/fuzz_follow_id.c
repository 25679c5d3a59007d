/*
 * fuzz_follow_id.c - libFuzzer target for tq_follow_resume()
 * (traceq/follow_id.c), which reads a browser's Last-Event-ID: any text
 * is taken whole or refused leaving the follower as it was, and one taken
 * is written back by tq_follow_id() as the same position (so an id the
 * stream sends and the one a browser returns mean one thing).
 *
 * Input: the header's text (cut at its first NUL).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "traceq/follow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tq_follow f = { .cursor = 7 }, g = { 0 };
	char *in = malloc(size + 1), id[TQ_FOLLOW_ID_MAX];

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	f.req.cursors[0] = 9;
	f.req.ncursors = 1;
	if (tq_follow_resume(&f, in) < 0) {
		if (f.cursor != 7 || f.req.ncursors != 1 || f.req.cursors[0] != 9)
			abort();	/* refused, yet changed */
	} else {
		if (f.req.ncursors > QMSG_MAX_CURSORS)
			abort();
		tq_follow_id(&f, id, sizeof(id));
		if (strlen(id) >= sizeof(id) - 1 || tq_follow_resume(&g, id) < 0 ||
		    g.cursor != f.cursor || g.req.ncursors != f.req.ncursors ||
		    memcmp(g.req.cursors, f.req.cursors, f.req.ncursors * sizeof(f.req.cursors[0])))
			abort();	/* written back as another position */
	}
	free(in);
	return 0;
}
