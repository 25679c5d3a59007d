/*
 * fuzz_hist.c - libFuzzer target for the hist-trigger spec parser
 * (common/hist.*), which reads traceq's --hist text on the collector.
 *
 * Input: a spec. It goes through hist_parse(); a spec that parses is
 * printed back with hist_spec_format(), and that text must parse again to
 * the same text (the trigger line is a fixed point), unless it sorts on a
 * key with a modifier: the kernel prints that sort field with the
 * modifier ("sort=pid.log2") and refuses it so written; a spec that fails
 * must name a position inside the text, and filter_error_format() must
 * take its error.
 *
 * Sources: tests/fuzz/fuzz_hist.c common/hist.c common/filter.c
 *          common/tc_error.c.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/hist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct filter_error err = { 0 };
	struct hist_spec h, h2;
	char *text = malloc(size + 1), line[8192], again[8192], shown[8192];

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (hist_parse(text, &h, &err) == 0) {
		if ((size_t)hist_spec_format(&h, line, sizeof(line)) >= sizeof(line))
			abort();
		for (size_t i = 0; i < h.nsort; i++)
			if (h.sort[i].by == HIST_SORT_KEY && h.keys[h.sort[i].i].mod != HIST_MOD_NONE)
				goto out;
		if (hist_parse(line, &h2, NULL) != 0)
			abort();
		hist_spec_format(&h2, again, sizeof(again));
		if (strcmp(line, again))
			abort();
	} else {
		if (err.pos > strlen(text) || err.pos + err.len > strlen(text) + 1 || !err.msg[0])
			abort();
		filter_error_format(text, &err, shown, sizeof(shown));
	}
out:
	free(text);
	return 0;
}
