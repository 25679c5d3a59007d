#!/bin/bash
# tests/test_recorder.sh against a collector that stores into ClickHouse
# (issue 38 on the store of issue 32): a clickhouse-server of the test's
# own (tests/lib.sh tc_db_backend). The same asserts: snapshots by hand and
# by a trigger, their rows and events, the refusals, kill -9 and the
# journal. Skips, saying why, without clickhouse-server.
TC_BACKEND=clickhouse exec bash "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/test_recorder.sh"
