#!/bin/bash
# tests/test_export.sh against a collector that stores into ClickHouse
# (issues 32, 33): a clickhouse-server of the test's own (tests/lib.sh
# tc_db_backend), every assert of that test (trace-cmd report of the
# exported trace.dat identical to traceq --time raw, v7 and v6, losses
# where traceq prints them, the programs' instance, the round trip,
# KernelShark's counts). What an export needs of a host besides its rows
# (boots, formats, losses, symbols) comes from ClickHouse alone.
# Skips, saying why, without clickhouse-server.
TC_BACKEND=clickhouse exec bash "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/test_export.sh"
