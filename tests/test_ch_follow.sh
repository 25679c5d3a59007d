#!/bin/bash
# traceq --follow on the ClickHouse store (issue 32): tests/test_follow.sh
# (its followers, the collector's restart midway, a second host, a scoped
# identity; every follower's rows == a plain query's, none twice, none
# missing) with the collector on a clickhouse-server of the test's own
# (tests/lib.sh tc_start_clickhouse). The cursor is the writer's commit
# order (server/store/clickhouse_tail.c says why no row is skipped).
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/lib.sh"
tc_need_clickhouse
follow_clickhouse=1
. "$top_srcdir/tests/test_follow.sh"
