/*
 * frame.c - pack and parse the fixed 16-byte frame header (see frame.h).
 *
 * All multi-byte fields are big-endian (network byte order). Parsing is the
 * first thing a collector does with bytes from an agent, so it checks
 * everything the header can get wrong before anyone trusts `len`.
 */
#include "config.h"

#include <string.h>

#include "common/tc_error.h"
#include "proto/frame.h"

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return ((uint32_t)get_be16(p) << 16) | get_be16(p + 2);
}

static uint64_t get_be64(const uint8_t *p)
{
	return ((uint64_t)get_be32(p) << 32) | get_be32(p + 4);
}

void frame_hdr_pack(const struct frame_hdr *h, uint8_t out[FRAME_HDR_SIZE])
{
	out[0] = h->type;
	out[1] = h->flags;
	put_be16(out + 2, h->stream);
	put_be32(out + 4, h->len);
	put_be64(out + 8, h->seq);
}

/* The flags each frame type may carry; anything else is a corrupt header. */
static int frame_flags_valid(uint8_t type, uint8_t flags)
{
	switch (type) {
	case FRAME_MSG:
		return flags == 0;
	case FRAME_PAGE:
		return (flags & ~FRAME_F_MISSED_EVENTS) == 0;
	default:
		return 0;
	}
}

int frame_hdr_parse(const uint8_t *buf, size_t len, struct frame_hdr *out)
{
	struct frame_hdr h;

	if (len < FRAME_HDR_SIZE)
		return TC_ERR_FRAME_TRUNCATED;
	h.type = buf[0];
	h.flags = buf[1];
	h.stream = get_be16(buf + 2);
	h.len = get_be32(buf + 4);
	h.seq = get_be64(buf + 8);
	if (!frame_flags_valid(h.type, h.flags))
		return TC_ERR_FRAME_BAD_TYPE;
	if (h.len > FRAME_MAX_PAYLOAD)
		return TC_ERR_FRAME_TOO_LARGE;
	*out = h;
	return 0;
}
