/*
 * fuzz_config.c - libFuzzer target for the config-file parser: any input
 * is either parsed or rejected with a "NAME:LINE:COL: message" error, and
 * every setting it yields has a well-formed key and no control characters.
 * Every value also goes through the "index" setting's parser, which takes
 * it or says why not, and yields only names it can quote.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config_file.h"
#include "common/tc_error.h"
#include "server/store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(const struct config_entry *e)
{
	const char *c;

	if (!*e->key || strspn(e->key, "abcdefghijklmnopqrstuvwxyz"
				"0123456789_-") != strlen(e->key))
		abort();
	for (c = e->value; *c; c++)
		if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f)
			abort();
}

static void check_index(const char *value)
{
	struct store_indexes ix = { 0 };
	char err[256] = "";
	int rc = store_index_parse(&ix, value, err, sizeof(err));

	if (rc < 0 && (rc != TC_ERR_CONFIG || !err[0] || ix.n))
		abort();
	for (size_t i = 0; i < ix.n; i++)
		if (!*ix.v[i].system || !*ix.v[i].event || !*ix.v[i].field ||
		    strpbrk(ix.v[i].field, " \t,:\"") || strpbrk(ix.v[i].system, " \t\":"))
			abort();
	store_indexes_free(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_list l;
	char err[512] = "";
	size_t i;
	int rc;

	rc = config_load_buf("fuzz", (const char *)data, size, &l, err,
			     sizeof(err));
	if (rc < 0) {
		if (rc != TC_ERR_CONFIG || strncmp(err, "fuzz:", 5) != 0)
			abort();
		return 0;
	}
	for (i = 0; i < l.count; i++) {
		check_entry(&l.items[i]);
		check_index(l.items[i].value);
	}
	config_list_free(&l);
	return 0;
}
