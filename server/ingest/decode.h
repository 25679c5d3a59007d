/*
 * decode.h - the collector's ring-buffer page decoder.
 *
 * One decoder per agent connection. It is built from what the agent sends:
 * the HELLO (page size, sizeof(long), byte order), the events/header_page
 * text and one format file per event. decoder_page() then walks one raw
 * sub-buffer exactly as the kernel (or our user-space ring buffer) laid it
 * out and hands each event to a callback, which reads fields with
 * decode_field_value().
 *
 * Pages come from the network: the page format is read by common/page.h,
 * which validates every length before it reads past it, and fields are
 * bounds-checked here, so a hostile page can only be rejected
 * (TC_ERR_PAGE_MALFORMED), never read out of bounds.
 *
 * Not thread-safe: one decoder belongs to one connection's thread.
 */
#ifndef SERVER_DECODE_H
#define SERVER_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"
#include "server/store/store_types.h"

struct decoder;
struct tep_format_field;

struct decode_field {
	const char *name;
	enum store_kind kind;
	unsigned size;		/* bytes in the record; 0 for dynamic/flexible */
	const char *type;	/* the C type as the format gives it ("char[16]",
				 * "__data_loc char[]", "const char *"): the
				 * kernel's filter decides by it what a string is */
	/* private */
	const struct tep_format_field *tep_field;
	bool dynamic;		/* __data_loc / __rel_loc */
	bool relative;		/* __rel_loc */
	bool swap;		/* the traced host's byte order is not ours */
};

struct decode_type {
	const char *system;
	const char *name;
	int id;			/* the kernel's event id (common_type) */
	unsigned nfields;
	/* ALL fields: the common_* fields first, then the event's own */
	const struct decode_field *fields;
	void *user;		/* free for the caller (the server caches its store type) */
};

struct decode_event {
	const struct decode_type *type;
	uint32_t cpu;
	uint64_t ts;		/* trace clock, ns */
	int pid;		/* common_pid */
	/* private: the record's payload, validated to lie inside the page */
	const uint8_t *data;
	size_t size;
};

struct decode_page_stats {
	uint64_t events;	/* data events handed to the callback */
	uint64_t unknown;	/* data events whose type has no format */
	uint64_t padding;	/* padding (discarded or end-of-page) records */
	bool missed_events;	/* the kernel lost events before this page */
	bool missed_known;	/* it stored how many: @missed */
	uint64_t missed;	/* how many, when the kernel stored the count */
	uint64_t page_ts;	/* the page's timestamp (where trace-cmd prints a loss) */
	bool spanned;		/* the page passed its check: ts_lo and ts_hi are */
	uint64_t ts_lo, ts_hi;	/* the least and greatest of page_ts and the data
				 * records' times (whatever their type) */
	const char *malformed;	/* TC_ERR_PAGE_MALFORMED: why, a static sentence
				 * fit to name a counter; else NULL */
};

/*
 * decoder_new - create a decoder for one agent connection.
 * @hello: the agent's HELLO; page_size, long_size and big_endian are used
 *         (copied; @hello need not outlive the decoder).
 * @out:   receives the decoder.
 *
 * Return: 0; -EINVAL when long_size is not 4 or 8 or page_size is not a
 * multiple of 8 between 64 bytes and FRAME_MAX_PAYLOAD (1 MiB: a page
 * travels in one frame); -ENOMEM.
 */
int decoder_new(const struct proto_hello *hello, struct decoder **out);

/* decoder_free - release @d and every type it described; NULL is allowed. */
void decoder_free(struct decoder *d);

/*
 * decoder_header_page - parse the agent's events/header_page text.
 *
 * Optional (the layout also follows from the HELLO), but when sent it must
 * agree with it: the commit word must be long_size bytes wide.
 *
 * Return: 0; TC_ERR_FORMAT_PARSE when the text does not parse or disagrees
 * with the HELLO; -ENOMEM.
 */
int decoder_header_page(struct decoder *d, const char *text, size_t len);

/*
 * decoder_format - parse one event's format file and describe its fields.
 * @system, @name: the event, as the agent names it; the text's "name:" line
 *                 must match @name.
 * @out: receives the type; it stays owned by @d and valid until
 *       decoder_free(). Sending the same event id again returns the type
 *       already known.
 *
 * The text is checked against the caps of common/format_check.h before
 * libtraceevent parses it (its parser recurses as deep as the text nests).
 *
 * Return: 0; TC_ERR_FORMAT_LIMIT (the text exceeds a cap: too long, or
 * nests or chains operators beyond what any kernel writes; decoder_error()
 * says which); TC_ERR_FORMAT_PARSE (bad text, name mismatch, no ID, a
 * field list that breaks off, a byte that is not printable ASCII, or a
 * common_type field libtraceevent cannot read); -ENOMEM.
 */
int decoder_format(struct decoder *d, const char *system, const char *name,
		   const char *text, size_t len, const struct decode_type **out);

/*
 * decoder_error - why format_check() refused the last decoder_format()
 * on @d: which cap, at which byte (our words only, no byte of the text).
 * "" after any other result. Valid until the next call.
 */
const char *decoder_error(const struct decoder *d);

/*
 * decode_field_value - read field @index (into ev->type->fields) of @ev.
 *
 * Only valid inside the decode_event_fn callback: strings and blobs point
 * into the page being decoded.
 *
 * Return: 0; -EINVAL for an index out of range; TC_ERR_PAGE_MALFORMED when
 * the field (or its __data_loc target) lies outside the record. *@out is
 * written only on success.
 */
int decode_field_value(const struct decode_event *ev, unsigned index,
		       struct store_value *out);

/*
 * decode_event_fn - called once per data event of a known type, in page
 * order. A nonzero return stops decoder_page(), which returns it.
 */
typedef int (*decode_event_fn)(void *ctx, const struct decode_event *ev);

/*
 * decoder_page - decode one whole sub-buffer of CPU @cpu.
 * @page, @len: the raw page: @len bytes, at most the HELLO's page_size
 *              (a page may arrive cut after its last record). Nothing
 *              is allocated or cleared per page.
 * @fn, @ctx:   the per-event callback.
 * @stats:      if not NULL, receives the page's counters (also when @fn
 *              stops the walk; then they cover the events seen so far;
 *              and for a malformed page, with why in stats->malformed).
 *
 * The whole page is validated before the first callback, so a malformed
 * page produces no events at all. Events of a type without a format are
 * counted in stats->unknown and skipped.
 *
 * Return: 0; TC_ERR_PAGE_MALFORMED (wrong length, commit beyond the page
 * or with unknown flags, a record running past the commit, misaligned or
 * impossible lengths: page_check() and page_next_record(); a data record
 * too short for common_type); or the callback's nonzero return.
 */
int decoder_page(struct decoder *d, uint32_t cpu, const void *page, size_t len,
		 decode_event_fn fn, void *ctx, struct decode_page_stats *stats);

/*
 * decoder_page_span - check one sub-buffer as decoder_page() does and
 * walk its records for stats->ts_lo and ts_hi only: no callback, no event
 * decoded (what a page stored before places: server/ingest/clockmap.h).
 * Return: 0; TC_ERR_PAGE_MALFORMED (stats->malformed says why).
 */
int decoder_page_span(const struct decoder *d, const void *page, size_t len,
		      struct decode_page_stats *stats);

#endif
