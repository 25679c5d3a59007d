/*
 * filter_fields.h - the event the filter fuzz targets bind to (fuzz_filter.c,
 * fuzz_ch_filter.c): the fields of tests/filter_event.h's test event,
 * without its check-based helpers (the fuzz targets link no check).
 */
#ifndef TESTS_FUZZ_FILTER_FIELDS_H
#define TESTS_FUZZ_FILTER_FIELDS_H

#include "common/filter.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

static const struct filter_field fields[] = {
	{ "common_pid", FILTER_SIGNED, 4 }, { "prev_pid", FILTER_SIGNED, 4 },
	{ "prio", FILTER_SIGNED, 1 }, { "flags", FILTER_UNSIGNED, 8 },
	{ "len", FILTER_UNSIGNED, 2 }, { "prev_comm", FILTER_STRING, 16 },
	{ "delta", FILTER_SIGNED, 8 }, { "state", FILTER_UNSIGNED, 1 },
};
static const struct filter_schema schema = { fields, ARRAY_SIZE(fields) };

#endif
