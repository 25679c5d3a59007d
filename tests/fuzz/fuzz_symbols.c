/*
 * fuzz_symbols.c - libFuzzer target for the MSG_SYMBOLS text parser
 * (proto/symbols.c): any bytes either parse into lines whose fields hold
 * the documented shape (a module, when there is one, too), or are
 * rejected; nothing is read past the end.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);	/* exact size: ASan sees overreads */

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	proto_sym_parse(copy, size, check_sym, NULL, NULL);
	free(copy);
	return 0;
}
