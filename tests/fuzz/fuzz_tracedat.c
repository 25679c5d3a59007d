/*
 * fuzz_tracedat.c - libFuzzer target for traceq's trace.dat reader
 * (traceq/tracedat.c): any bytes either open, with metadata in the shape
 * tracedat.h promises, and give pages no longer than the page size, or
 * are refused with a reason; nothing is read out of bounds, and memory
 * stays under the reader's caps.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traceq/tracedat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size ? size : 1, "r");
	struct tracedat *td = NULL;
	const struct tracedat_info *in;
	const uint8_t *page;
	char err[512];
	uint32_t cpu;
	size_t len;

	if (!f)
		return 0;
	if (size && tracedat_open(f, "fuzz.dat", &td, err, sizeof(err)) == 0) {
		in = tracedat_info(td);
		if (!in->header_page || strlen(in->clock) > TRACEDAT_MAX_NAME)
			abort();
		for (size_t i = 0; i < in->nformats; i++)
			if (strlen(in->formats[i].text) > in->formats[i].len ||
			    !in->formats[i].name[0])
				abort();
		for (int n = 0; n < 100000; n++) {
			if (tracedat_next_page(td, &cpu, &page, &len, err, sizeof(err)) <= 0)
				break;
			if (len == 0 || len > in->page_size || cpu >= in->ncpus)
				abort();
		}
		tracedat_close(td);
	}
	fclose(f);
	return 0;
}
