/*
 * fuzz_symbols.c - libFuzzer target for the MSG_SYMBOLS text parser
 * (proto/symbols.c): any bytes either parse into lines whose fields hold
 * the documented shape (a module, when there is one, too), or are
 * rejected; nothing is read past the end. The same bytes, as one
 * NUL-ended line, go through proto_sym_kallsyms_line() (an imported
 * trace.dat's kallsyms): a text symbol's name and module within their
 * bounds.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/symbols.h"

static int check_sym(void *ctx, const struct proto_sym *sym)
{
	(void)ctx;
	if (sym->name_len == 0 || sym->name_len > PROTO_SYM_MAX_NAME ||
	    strlen(sym->name) != sym->name_len || strchr(sym->name, ' '))
		abort();
	if (sym->module && (!*sym->module || strlen(sym->module) > PROTO_SYM_MAX_MODULE ||
			    strchr(sym->module, ' ')))
		abort();
	return 0;
}

/* @data as one NUL-ended line of kallsyms (the importer's lines are < 640 bytes) */
static void kallsyms_line(const uint8_t *data, size_t size)
{
	char line[640], name[PROTO_SYM_MAX_NAME + 1], mod[PROTO_SYM_MAX_MODULE + 1];
	uint64_t addr;

	if (size >= sizeof(line))
		size = sizeof(line) - 1;
	memcpy(line, data, size);
	line[size] = '\0';
	if (proto_sym_kallsyms_line(line, &addr, name, mod) &&
	    (strlen(name) > PROTO_SYM_MAX_NAME || strlen(mod) > PROTO_SYM_MAX_MODULE))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);	/* exact size: ASan sees overreads */

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	proto_sym_parse(copy, size, check_sym, NULL, NULL);
	free(copy);
	kallsyms_line(data, size);
	return 0;
}
