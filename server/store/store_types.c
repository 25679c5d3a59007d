/*
 * store_types.c - what goes with the store's shared types (store_types.h).
 */
#include "config.h"

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
