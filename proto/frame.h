/*
 * frame.h - the framing of tracecollect's wire protocol.
 *
 * Every frame is a fixed 16-byte header in network byte order followed by
 * `len` payload bytes:
 *
 *   0  u8   type     FRAME_MSG (msgpack control message) or FRAME_PAGE
 *   1  u8   flags    FRAME_F_* (pages only)
 *   2  u16  stream   CPU number for kernel pages (user-space streams later)
 *   4  u32  len      payload length, at most FRAME_MAX_PAYLOAD
 *   8  u64  seq      per-stream page sequence number (0 for messages)
 *
 * A page frame's payload is one whole ring-buffer sub-buffer exactly as the
 * kernel lays it out (timestamp, commit word, events). proto/PROTOCOL.md
 * documents every frame and message.
 */
#ifndef PROTO_FRAME_H
#define PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HDR_SIZE		16
#define FRAME_MAX_PAYLOAD	(1u << 20)

enum frame_type {
	FRAME_MSG = 1,
	FRAME_PAGE = 2,
};

enum frame_flags {
	FRAME_F_MISSED_EVENTS = 1 << 0,	/* kernel lost events before this page */
};

struct frame_hdr {
	uint8_t type;
	uint8_t flags;
	uint16_t stream;
	uint32_t len;
	uint64_t seq;
};

/* frame_hdr_pack - write @h to @out in wire byte order. */
void frame_hdr_pack(const struct frame_hdr *h, uint8_t out[FRAME_HDR_SIZE]);

/*
 * frame_hdr_parse - read a frame header from the first @len bytes of @buf.
 *
 * Return: 0 and *@out filled; TC_ERR_FRAME_TRUNCATED when @len is shorter
 * than a header; TC_ERR_FRAME_BAD_TYPE for an unknown type or flags that do
 * not belong to it; TC_ERR_FRAME_TOO_LARGE when len exceeds
 * FRAME_MAX_PAYLOAD. *@out is written only on success.
 */
int frame_hdr_parse(const uint8_t *buf, size_t len, struct frame_hdr *out);

#endif
