/*
 * store_types.c - what goes with the store's shared types (store_types.h):
 * the kinds' names, freeing a schema, checking a histogram's spec against
 * its query, the stack tables' hash. Calls nothing of the store.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sys/random.h>

#include "common/hist.h"
#include "server/store/store_types.h"

const char *store_kind_name(enum store_kind kind)
{
	switch (kind) {
	case STORE_SIGNED: return "signed";
	case STORE_UNSIGNED: return "unsigned";
	case STORE_STRING: return "string";
	case STORE_BLOB: return "blob";
	}
	return "?";
}

bool store_field_is_stack(const char *system, const char *name, const char *field)
{
	return system && name && field && !strcmp(system, "ftrace") &&
	       (!strcmp(name, "kernel_stack") || !strcmp(name, "user_stack")) &&
	       !strcmp(field, "caller");
}

void store_schema_free(struct store_schema *sc)
{
	if (!sc)
		return;
	for (size_t i = 0; i < sc->ncols; i++) {
		free((char *)sc->cols[i].name);
		free((char *)sc->cols[i].column);
	}
	free(sc->cols);
	for (size_t i = 0; i < sc->nfmts; i++) {
		struct store_fmt *f = &sc->fmts[i];

		for (size_t k = 0; f->types && k < f->ncols; k++)
			free(f->types[k]);
		free(f->types);
		free(f->cols);
		free(f->text);
		free(f->host_ids);
	}
	free(sc->fmts);
	free(sc->system);
	free(sc->name);
	free(sc->table);
	free(sc->format);
	free(sc);
}

int store_hist_check(const struct store_query *q, const struct store_hist *h)
{
	const struct hist_spec *sp = h->spec;

	if (sp->nkeys < 1 || sp->nkeys > HIST_KEYS_MAX || sp->nvals > HIST_VALS_MAX ||
	    sp->nsort < 1 || sp->nsort > HIST_SORT_MAX || sp->size < 1 || sp->size > HIST_SIZE_MAX)
		return -EINVAL;
	for (size_t i = 0; i < sp->nkeys; i++)
		if (h->key_col[i] < STORE_HIST_STACK || h->key_col[i] >= (int)q->schema->ncols ||
		    (h->key_col[i] == STORE_HIST_STACK &&
		     (!h->stacks || h->stack_col >= h->stacks->ncols || !h->stack_bytes)))
			return -EINVAL;
	for (size_t i = 0; i < sp->nvals; i++)
		if (h->val_col[i] < STORE_HIST_CPU || h->val_col[i] == STORE_HIST_HOST ||
		    h->val_col[i] >= (int)q->schema->ncols)
			return -EINVAL;
	for (size_t i = 0; i < sp->nsort; i++)
		if (sp->sort[i].i >= (sp->sort[i].by == HIST_SORT_VAL ? sp->nvals : sp->nkeys))
			return -EINVAL;
	return 0;
}

uint64_t store_stack_seed(const void *fallback)
{
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed))
		seed = (uint64_t)(uintptr_t)fallback;
	return seed;
}

uint64_t store_stack_hash(uint64_t seed, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 14695981039346656037ull ^ seed;	/* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h ^ (h >> 29);
}

bool store_col_is_stack(const struct store_schema *sc, size_t c)
{
	return sc->cols[c].kind == STORE_BLOB &&
	       store_field_is_stack(sc->system, sc->name, sc->cols[c].name);
}
