#!/bin/bash
# The filter-semantics table (issue 32): tests/test_chfilter, the ClickHouse
# filter compiler's check suite, run against a clickhouse-server of its own
# (tests/lib.sh tc_start_clickhouse): every operator and glob case of the
# filter tests selects the same rows in ClickHouse as filter_eval() and as
# SQLite (test_chfilter.c says what exactly). Without clickhouse-server only
# the compiler's own cases run, and the test says it skipped the table.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_setup chfilter
if tc_have_clickhouse; then
	tc_start_clickhouse
	export CH_PORT=$ch_port CH_USER=$ch_user CH_PASSWORD=$ch_password
fi
check "tests/test_chfilter passes" '"$top_builddir/tests/test_chfilter"'
[ "$failed" = 0 ] && [ -z "${CH_PORT:-}" ] &&
	skip "the table against ClickHouse: clickhouse-server is not installed (the compiler's own cases passed)"
exit "$failed"
