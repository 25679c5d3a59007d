/*
 * store_types.c - what goes with the store's shared types (store_types.h):
 * the kinds' names, freeing a schema. Calls nothing of the store.
 */
#include "config.h"

#include <stdlib.h>

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
