#!/bin/bash
# tests/test_losses.sh against a collector that stores into ClickHouse
# (issue 33 on the store of issue 32): a clickhouse-server of the test's
# own (tests/lib.sh tc_db_backend). The losses a tiny ring buffer makes
# are stored, read back where they happened (JSON, and the text layout's
# "CPU:N [N EVENTS DROPPED]" lines), newest first with -r, add up to the
# kernel's overrun per CPU (none stored twice), and read the same after a
# restart, also those stored from the journal after a crash (commits
# failing meanwhile). Skips, saying why, without clickhouse-server.
TC_BACKEND=clickhouse exec bash "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/test_losses.sh"
