/*
 * fuzz_format_page.c - libFuzzer target for what an agent controls on the
 * collector's decode path together: the header_page text, the event
 * formats (MSG_FORMAT, through format_check() and decoder_format() as the
 * collector takes them) and the pages decoded with them.
 *
 * Input: one flags byte (bit 0: long_size 4 instead of 8, bit 1: big
 * endian), then NUL-terminated texts: the header_page (empty: none sent),
 * then formats up to an empty text; the rest are pages of 4096 bytes (the
 * last one padded with zeroes), each also tried at its raw length. A
 * format's event name is read from its "name:" line, as the agent would
 * name it; its system is "ftrace" for print, bprint and function (which
 * libtraceevent treats apart) and for kernel_stack and user_stack (whose
 * caller[] the decoder reads to the record's end), else "fuzz". Every
 * event that decodes has all its fields read. tests/fuzz/corpus/format_page holds inputs built
 * from tests/data (real formats, real pages).
 *
 * Sources: tests/fuzz/fuzz_format_page.c server/ingest/decode.c
 * common/format_check.c common/page.c common/tc_error.c; libs:
 * -ltraceevent.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "common/tc_error.h"
#include "proto/msg.h"
#include "server/ingest/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_PAGE_SIZE	4096
#define FUZZ_MAX_FORMATS 16

struct input {
	const uint8_t *p;
	size_t left;
};

/* The next NUL-terminated text (not counting the NUL); false at the end. */
static bool next_text(struct input *in, const char **text, size_t *len)
{
	const uint8_t *nul = memchr(in->p, '\0', in->left);

	if (!nul)
		return false;
	*text = (const char *)in->p;
	*len = (size_t)(nul - in->p);
	in->left -= *len + 1;
	in->p = nul + 1;
	return true;
}

/* The word after "name:" in @text, into @name (at most 63 bytes). */
static void event_name(const char *text, size_t len, char *name)
{
	const char *p = memmem(text, len, "name:", 5), *end = text + len;
	size_t n = 0;

	strcpy(name, "x");
	if (!p)
		return;
	for (p += 5; p < end && (*p == ' ' || *p == '\t'); p++)
		;
	while (p + n < end && n < 63 && p[n] != '\n' && p[n] != ' ' && p[n] != '\t')
		n++;
	if (n) {
		memcpy(name, p, n);
		name[n] = '\0';
	}
}

static const char *event_system(const char *name)
{
	return !strcmp(name, "print") || !strcmp(name, "bprint") ||
	       !strcmp(name, "function") || !strcmp(name, "kernel_stack") ||
	       !strcmp(name, "user_stack") ? "ftrace" : "fuzz";
}

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
		else
			*sum += (size_t)v.u;
	}
	return 0;
}

/* Every format text of @in into @d, each an exact-size heap copy. */
static void load_formats(struct decoder *d, struct input *in)
{
	const struct decode_type *t;
	const char *text;
	char name[64];
	size_t len;

	for (int i = 0; i < FUZZ_MAX_FORMATS && next_text(in, &text, &len) && len; i++) {
		char *copy = malloc(len ? len : 1);

		if (!copy)
			abort();
		memcpy(copy, text, len);
		event_name(copy, len, name);
		decoder_format(d, event_system(name), name, copy, len, &t);
		free(copy);
	}
}

static void decode_pages(struct decoder *d, const uint8_t *p, size_t left)
{
	static uint8_t page[FUZZ_PAGE_SIZE];
	volatile size_t sum = 0;
	uint32_t cpu = 0;

	while (left) {
		size_t n = left < FUZZ_PAGE_SIZE ? left : FUZZ_PAGE_SIZE;
		uint8_t *raw = malloc(n);

		if (!raw)
			abort();
		memcpy(raw, p, n);
		if (n < FUZZ_PAGE_SIZE)	/* the wrong length: refused whole */
			decoder_page(d, cpu, raw, n, read_fields, (void *)&sum, NULL);
		memset(page, 0, sizeof(page));
		memcpy(page, raw, n);
		decoder_page(d, cpu++, page, sizeof(page), read_fields, (void *)&sum, NULL);
		free(raw);
		p += n;
		left -= n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_hello h = { .page_size = FUZZ_PAGE_SIZE };
	struct input in = { data + 1, size ? size - 1 : 0 };
	struct decoder *d;
	const char *text;
	size_t len;

	if (size < 1)
		return 0;
	tep_set_loglevel(TEP_LOG_NONE);
	h.long_size = data[0] & 1 ? 4 : 8;
	h.big_endian = (data[0] & 2) != 0;
	if (decoder_new(&h, &d) < 0)
		abort();
	if (next_text(&in, &text, &len)) {
		char *copy = malloc(len + 1);

		if (!copy)
			abort();
		memcpy(copy, text, len);
		if (len)
			decoder_header_page(d, copy, len);
		free(copy);
		load_formats(d, &in);
	}
	decode_pages(d, in.p, in.left);
	decoder_free(d);
	return 0;
}
