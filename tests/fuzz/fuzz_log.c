/*
 * fuzz_log.c - libFuzzer target for log_escape() (common/log.c): whatever
 * bytes a peer sends, the escaped text fits its buffer and is safe for a
 * log line: escaping it again only doubles its backslashes (so it holds no
 * control character, ESC, C1 or bidi control, and only valid UTF-8), and
 * a cut one ends in the "...[+N bytes]" marker.
 *
 * Input: a size byte (the buffer is 1 + byte * 2 bytes, up to 511), then
 * the string (cut at its first NUL, as a C string from the decoder is).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether @again is @out with every backslash doubled. */
static int only_backslashes_doubled(const char *out, const char *again)
{
	for (; *out; out++, again++) {
		if (*again != *out)
			return 0;
		if (*out == '\\' && *++again != '\\')
			return 0;
	}
	return *again == '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in, *full, buf[512], again[2048];
	size_t len, n;

	if (size < 1)
		return 0;
	len = 1 + (size_t)data[0] * 2;
	in = malloc(size);
	full = malloc(size * 4 + 64);
	if (!in || !full)
		abort();
	memcpy(in, data + 1, size - 1);
	in[size - 1] = '\0';
	log_escape(in, buf, len);
	log_escape(in, full, size * 4 + 64);	/* never cut: 4 bytes an input byte */
	n = strlen(buf);
	if (n >= len)
		abort();
	log_escape(buf, again, sizeof(again));
	if (!only_backslashes_doubled(buf, again))
		abort();
	/* all of it, or a cut that says so (where the marker fits) */
	if (strcmp(buf, full) && len > 32 &&
	    (!strstr(buf, "...[+") || strcmp(buf + n - 7, " bytes]")))
		abort();
	free(in);
	free(full);
	return 0;
}
