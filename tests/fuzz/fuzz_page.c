/*
 * fuzz_page.c - libFuzzer target for decoder_page(): arbitrary bytes as a
 * ring-buffer page, for a decoder built from the checked-in header_page and
 * formats (tests/data). Each input is tried at its raw length (normally
 * rejected) and padded/trimmed to the page size; every event that decodes
 * has all its fields read.
 *
 * Sources: tests/fuzz/fuzz_page.c server/ingest/decode.c common/page.c
 * common/tc_error.c; libs: -ltraceevent. Run from the source tree or with
 * top_srcdir set.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/ingest/decode.h"
#include "tests/data/capture_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct capture cap;
static struct decoder *dec;

static int read_fields(void *ctx, const struct decode_event *ev)
{
	volatile size_t *sum = ctx;
	struct store_value v;

	for (unsigned i = 0; i < ev->type->nfields; i++) {
		if (decode_field_value(ev, i, &v) != 0)
			continue;
		if (v.kind == STORE_STRING && v.str.len)
			*sum += (uint8_t)v.str.s[v.str.len - 1];
		else if (v.kind == STORE_BLOB && v.blob.len)
			*sum += ((const uint8_t *)v.blob.p)[v.blob.len - 1];
	}
	return 0;
}

static void init(void)
{
	const struct decode_type *types[CAPTURE_NFORMATS];

	if (capture_load(&cap) < 0 || capture_decoder(&cap, &dec, types) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *page;
	volatile size_t sum = 0;
	uint8_t *raw;

	if (!dec) {
		init();
		page = malloc(cap.page_size);
		if (!page)
			abort();
	}
	/* exact-size heap copy so ASan sees any over-read of the input */
	raw = malloc(size ? size : 1);
	if (!raw)
		abort();
	memcpy(raw, data, size);
	decoder_page(dec, 0, raw, size, read_fields, (void *)&sum, NULL);
	free(raw);
	memset(page, 0, cap.page_size);
	memcpy(page, data, size < cap.page_size ? size : cap.page_size);
	decoder_page(dec, 1, page, cap.page_size, read_fields, (void *)&sum, NULL);
	return 0;
}
