/*
 * symbols.c - write and parse the symbol lines of MSG_SYMBOLS (see
 * symbols.h). The parser reads untrusted bytes: it checks every character
 * and length before converting anything, and never reads past @len.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/tc_error.h"
#include "proto/symbols.h"

/* @n bytes of @s at @dst, bytes outside '!'..'~' made '?'. */
static void copy_printable(char *dst, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		dst[i] = c > ' ' && c < 0x7f ? (char)c : '?';
	}
}

int proto_sym_append(struct proto_buf *b, uint64_t addr, uint64_t size, const char *name,
		     const char *module)
{
	char line[64 + PROTO_SYM_MAX_NAME + 1 + PROTO_SYM_MAX_MODULE];
	size_t nlen = strlen(name), mlen = module ? strlen(module) : 0, at;
	int n;

	if (!nlen)
		return -EINVAL;
	if (nlen > PROTO_SYM_MAX_NAME)
		nlen = PROTO_SYM_MAX_NAME;
	if (mlen > PROTO_SYM_MAX_MODULE)
		mlen = PROTO_SYM_MAX_MODULE;
	n = snprintf(line, sizeof(line), "%" PRIx64 " %" PRIx64 " ", addr, size);
	at = (size_t)n;
	copy_printable(line + at, name, nlen);
	at += nlen;
	if (mlen) {
		line[at++] = ' ';
		copy_printable(line + at, module, mlen);
		at += mlen;
	}
	line[at] = '\n';
	return proto_buf_append(b, line, at + 1);
}

/* Parse 1..16 lower-case hex digits of @s[0..@n). Return: 0 or -1. */
static int parse_hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 16)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t field_len(const char *s, size_t n, char stop)
{
	const char *e = memchr(s, stop, n);

	return e ? (size_t)(e - s) : n;
}

/* Whether @s[0..@n) is 1..@max bytes of '!'..'~'. */
static bool printable_word(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/*
 * One line (without its '\n') into @sym, its name copied to @name, its
 * module (if any) to @module.
 */
static int parse_line(const char *s, size_t n, struct proto_sym *sym, char *name, char *module)
{
	size_t a = field_len(s, n, ' '), z, m;

	if (a == n || parse_hex(s, a, &sym->addr) < 0)
		return -1;
	s += a + 1;
	n -= a + 1;
	z = field_len(s, n, ' ');
	if (z == n || parse_hex(s, z, &sym->size) < 0)
		return -1;
	s += z + 1;
	n -= z + 1;
	m = field_len(s, n, ' ');	/* the name; a module after it */
	if (!printable_word(s, m, PROTO_SYM_MAX_NAME) ||
	    (m < n && !printable_word(s + m + 1, n - m - 1, PROTO_SYM_MAX_MODULE)))
		return -1;
	memcpy(name, s, m);
	name[m] = '\0';
	sym->name = name;
	sym->name_len = m;
	sym->module = NULL;
	if (m < n) {
		memcpy(module, s + m + 1, n - m - 1);
		module[n - m - 1] = '\0';
		sym->module = module;
	}
	return 0;
}

int proto_sym_parse(const char *text, size_t len,
		    int (*fn)(void *ctx, const struct proto_sym *sym), void *ctx,
		    size_t *bad_line)
{
	char name[PROTO_SYM_MAX_NAME + 1], module[PROTO_SYM_MAX_MODULE + 1];
	struct proto_sym sym;
	size_t line = 0, n;
	int ret;

	while (len) {
		line++;
		n = field_len(text, len, '\n');
		if (n == len || parse_line(text, n, &sym, name, module) < 0) {
			if (bad_line)
				*bad_line = line;
			return TC_ERR_MSG_MALFORMED;
		}
		ret = fn(ctx, &sym);
		if (ret)
			return ret;
		text += n + 1;
		len -= n + 1;
	}
	return 0;
}

/*
 * The module column of a kallsyms line, @rest being what follows the
 * symbol's name: "\t[MODULE]" into @mod[PROTO_SYM_MAX_MODULE + 1], without
 * the brackets and cut to PROTO_SYM_MAX_MODULE bytes; "" when there is
 * none (nor a closing bracket).
 */
static void kallsyms_module(const char *rest, char *mod)
{
	size_t n;

	rest += strspn(rest, " \t");
	n = *rest == '[' ? strcspn(rest + 1, "]\n") : 0;
	if (n && rest[1 + n] != ']')
		n = 0;	/* no closing bracket: not a module column */
	if (n > PROTO_SYM_MAX_MODULE)
		n = PROTO_SYM_MAX_MODULE;
	if (n)
		memcpy(mod, rest + 1, n);
	mod[n] = '\0';
}

bool proto_sym_kallsyms_line(const char *line, uint64_t *addr, char *name, char *mod)
{
	char type;
	int end = 0;

	if (sscanf(line, "%" SCNx64 " %c %511s%n", addr, &type, name, &end) != 3 || !end ||
	    !strchr("tTwW", type))
		return false;
	kallsyms_module(line + end, mod);
	return true;
}

void proto_sym_format(char *buf, size_t len, const char *name, uint64_t off)
{
	if (!len)
		return;
	if (off)
		snprintf(buf, len, "%s+0x%" PRIx64, name, off);
	else
		snprintf(buf, len, "%s", name);
}

void proto_sym_format_sized(char *buf, size_t len, const char *name, uint64_t off,
			    uint64_t size, const char *module)
{
	int n;

	if (!len)
		return;
	if (size)
		n = snprintf(buf, len, "%s+0x%" PRIx64 "/0x%" PRIx64, name, off, size);
	else
		n = snprintf(buf, len, "%s+0x%" PRIx64, name, off);
	if (module && *module && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " [%s]", module);
}
