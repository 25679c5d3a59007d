/*
 * printk.c - MSG_PRINTK's text, the kernel's printk_formats lines (see
 * printk.h): parse them as the collector must (hostile input: bounded
 * lengths, no control bytes), and cut them into messages as the agent does.
 */
#include "config.h"

#include <string.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "proto/printk.h"

/* One line without its '\n': "0xADDR : FORMAT". */
static int parse_line(const char *p, size_t n, uint64_t *addr, const char **fmt,
		      size_t *fmt_len)
{
	size_t i = 2, digits = 0;
	uint64_t a = 0;

	if (n < 2 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
		return -1;
	for (; i < n && util_hex_digit(p[i]) >= 0 && digits < 17; i++, digits++)
		a = a << 4 | (uint64_t)util_hex_digit(p[i]);
	if (digits == 0 || digits > 16 || n - i < 4 || memcmp(p + i, " : ", 3))
		return -1;
	i += 3;
	if (n - i > PROTO_PRINTK_MAX_FMT)
		return -1;
	for (size_t j = i; j < n; j++)
		if ((unsigned char)p[j] < 0x20 || p[j] == 0x7f)
			return -1;
	*addr = a;
	*fmt = p + i;
	*fmt_len = n - i;
	return 0;
}

int proto_printk_parse(const char *text, size_t len,
		       int (*fn)(void *ctx, uint64_t addr, const char *fmt, size_t fmt_len),
		       void *ctx, size_t *bad_line)
{
	const char *nl, *fmt;
	size_t line = 0, n, flen;
	uint64_t addr;
	int ret;

	while (len) {
		line++;
		nl = memchr(text, '\n', len);
		n = nl ? (size_t)(nl - text) : len;
		if (!nl || parse_line(text, n, &addr, &fmt, &flen) < 0) {
			if (bad_line)
				*bad_line = line;
			return TC_ERR_MSG_MALFORMED;
		}
		ret = fn(ctx, addr, fmt, flen);
		if (ret)
			return ret;
		text += n + 1;
		len -= n + 1;
	}
	return 0;
}

size_t proto_printk_clean(char *text, size_t len)
{
	size_t in = 0, out = 0, n, flen;
	const char *nl, *fmt;
	uint64_t addr;

	while (in < len) {
		nl = memchr(text + in, '\n', len - in);
		if (!nl)
			break;
		n = (size_t)(nl - (text + in));
		if (parse_line(text + in, n, &addr, &fmt, &flen) == 0) {
			memmove(text + out, text + in, n + 1);
			out += n + 1;
		}
		in += n + 1;
	}
	return out;
}

size_t proto_printk_chunk(const char *text, size_t len)
{
	size_t end = 0;
	const char *nl;

	while (end < len) {
		nl = memchr(text + end, '\n', len - end);
		if (!nl || (size_t)(nl - text) + 1 > PROTO_PRINTK_CHUNK)
			break;
		end = (size_t)(nl - text) + 1;
	}
	return end;
}
