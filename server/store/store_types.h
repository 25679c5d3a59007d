/*
 * store_types.h - the values the store keeps and what it is told of an
 * event type: the vocabulary its callers and its backends share.
 *
 * The store owns these types, and the dependency runs one way: the page
 * decoder (server/decode.h) reads fields into struct store_value and
 * describes them with enum store_kind, the ingest path hands those values
 * to the writer already decoded (store_insert()), and nothing in
 * server/store/ includes the decoder.
 */
#ifndef SERVER_STORE_STORE_TYPES_H
#define SERVER_STORE_STORE_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* What a field's value is; a column has the kind of the values it holds. */
enum store_kind {
	STORE_SIGNED,		/* integer of 1, 2, 4 or 8 bytes, sign-extended */
	STORE_UNSIGNED,		/* integer of 1, 2, 4 or 8 bytes (also pointers) */
	STORE_STRING,		/* char[N], char[] or __data_loc/__rel_loc char[] */
	STORE_BLOB,		/* any other array, dynamic array or odd-sized field */
};

/* One value of a field, as the decoder reads it and a read passes it on. */
struct store_value {
	enum store_kind kind;
	union {
		int64_t i;	/* STORE_SIGNED */
		uint64_t u;	/* STORE_UNSIGNED */
		struct {	/* STORE_STRING: not NUL-terminated; len excludes any NUL */
			const char *s;
			size_t len;
		} str;
		struct {	/* STORE_BLOB */
			const void *p;
			size_t len;
		} blob;
	};
};

/* store_kind_name - "signed", "unsigned", "string", "blob" (or "?"). */
const char *store_kind_name(enum store_kind kind);

/* One field of an event's format. */
struct store_field {
	const char *name;
	enum store_kind kind;
	unsigned size;		/* bytes in the record; 0 for dynamic/flexible */
	const char *type;	/* the C type as the format gives it; NULL: not known */
};

/*
 * An event type as an agent sent it (store_type()): the format text and
 * its fields, all of them, the common_* fields first.
 */
struct store_type_desc {
	const char *system;
	const char *name;
	const char *format;	/* the format file's text, as sent */
	unsigned nfields;
	const struct store_field *fields;
};

/*
 * One event for store_insert(): where and when it happened, and its
 * fields' values in the order of its type's fields (@nvals of them).
 * Strings and blobs may point into the caller's page: the store copies
 * what it keeps. A field whose name an earlier field of the type has is
 * not stored, and its value is not read (it may be left unset).
 */
struct store_event {
	uint64_t host_id;
	uint32_t cpu;
	uint64_t trace_ts;	/* trace clock, ns */
	int64_t ts;		/* wall clock, ns */
	unsigned nvals;
	const struct store_value *vals;
};

#endif
