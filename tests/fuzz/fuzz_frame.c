/*
 * fuzz_frame.c - libFuzzer target for frame_hdr_parse(): any bytes either
 * parse into a header that packs back to the same 16 bytes, or fail with
 * one of the documented errors.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "proto/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frame_hdr h;
	uint8_t back[FRAME_HDR_SIZE];
	int rc = frame_hdr_parse(data, size, &h);

	if (rc == 0) {
		frame_hdr_pack(&h, back);
		if (memcmp(back, data, FRAME_HDR_SIZE) != 0 ||
		    h.len > FRAME_MAX_PAYLOAD)
			abort();
	} else if (rc != TC_ERR_FRAME_TRUNCATED &&
		   rc != TC_ERR_FRAME_BAD_TYPE &&
		   rc != TC_ERR_FRAME_TOO_LARGE) {
		abort();
	}
	return 0;
}
