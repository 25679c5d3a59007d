/*
 * ch_column.h - where the filter tests' event keeps its fields in the
 * ClickHouse table of tests/test_chfilter.c and tests/fuzz/fuzz_ch_filter.c
 * (a ch_column_fn of clickhouse_filter.h): field i in the column named as
 * fields[i], CPU in cpu, COMM in comm.
 */
#ifndef TESTS_CH_COLUMN_H
#define TESTS_CH_COLUMN_H

#include <stddef.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_escape.h"

static inline int ch_test_column(const struct filter_field *fields, size_t nfields, int idx,
				 struct ch_sql *s)
{
	if (idx == FILTER_FIELD_CPU)
		return ch_sql_ident(s, "cpu");
	if (idx == FILTER_FIELD_COMM)
		return ch_sql_ident(s, "comm");
	if (idx < 0 || (size_t)idx >= nfields)
		return TC_ERR_UNKNOWN_FIELD;
	return ch_sql_ident(s, fields[idx].name);
}

#endif
