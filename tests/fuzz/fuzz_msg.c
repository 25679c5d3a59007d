/*
 * fuzz_msg.c - libFuzzer target for proto_msg_decode(): hostile payloads
 * must be rejected cleanly, and whatever decodes must survive
 * encode -> decode -> encode with identical bytes (the encoding is
 * deterministic, so equal bytes mean every field came back unchanged).
 * A decoded printk_formats message's text also goes through the
 * collector's line parser (proto/printk.h).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "proto/frame.h"
#include "proto/msg.h"
#include "proto/printk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rc(int rc)
{
	if (rc != TC_ERR_MSG_MALFORMED && rc != TC_ERR_MSG_MISSING &&
	    rc != TC_ERR_MSG_UNKNOWN && rc != -ENOMEM)
		abort();
}

/* Encode @m; a payload near the frame limit may legitimately not fit. */
static int encode(const struct proto_msg *m, struct proto_buf *b, size_t size)
{
	int rc = proto_msg_encode(m, b);

	if (rc == TC_ERR_TOO_LONG && size > FRAME_MAX_PAYLOAD - 4096)
		return rc;
	if (rc < 0)
		abort();
	return 0;
}

static int printk_line(void *ctx, uint64_t addr, const char *fmt, size_t len)
{
	size_t *sum = ctx;

	*sum += (size_t)addr + len + (len ? (unsigned char)fmt[len - 1] : 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_buf b1, b2;
	struct proto_msg m1, m2;
	int rc = proto_msg_decode(data, size, &m1);

	if (rc < 0) {
		check_rc(rc);
		return 0;
	}
	if (m1.type == MSG_PRINTK) {
		size_t sum = 0;
		int prc = proto_printk_parse(m1.printk.text, m1.printk.len, printk_line, &sum,
					     NULL);

		if (prc != 0 && prc != TC_ERR_MSG_MALFORMED)
			abort();
	}
	proto_buf_init(&b1);
	proto_buf_init(&b2);
	if (encode(&m1, &b1, size) == 0) {
		if (proto_msg_decode(b1.data + FRAME_HDR_SIZE,
				     b1.len - FRAME_HDR_SIZE, &m2) != 0)
			abort();
		if (m2.type != m1.type || encode(&m2, &b2, size) != 0 ||
		    b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0)
			abort();
		proto_msg_free(&m2);
	}
	proto_msg_free(&m1);
	proto_buf_free(&b1);
	proto_buf_free(&b2);
	return 0;
}
