#!/bin/bash
# The ClickHouse test harness (tests/lib.sh tc_start_clickhouse,
# tc_start_zookeeper; issue 32) on Debian's clickhouse-server and
# zookeeper: what the backend's tests rely on, checked once here.
#
# Asserts:
#  - the server answers SELECT 1 on its own loopback ports, as the
#    default user with its password, and refuses a wrong password;
#  - a MergeTree table takes rows and gives them back (data in $tmp);
#  - the read-only user reads, is refused writes and DDL (readonly=1),
#    and has the limits --sql needs: max_execution_time,
#    max_result_rows, max_memory_usage;
#  - with ZooKeeper (skipped, saying so, when it is not installed): a
#    ReplicatedMergeTree keeps one copy of a block inserted twice, which
#    a plain MergeTree stores twice (the dedup issue 32 rests on);
#  - SIGTERM stops the server, and its ports are free again.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_setup chharness
if tc_have_zookeeper; then
	tc_start_zookeeper
else
	tc_skip_part "ReplicatedMergeTree dedup" "zookeeper is not installed"
fi
tc_start_clickhouse

check "SELECT 1 as $ch_user" '[ "$(tc_ch --query "SELECT 1")" = 1 ]'
check "a wrong password is refused" \
	'! clickhouse-client --host 127.0.0.1 --port "$ch_port" --user "$ch_user" --password x --query "SELECT 1" 2>/dev/null'
http_get() {
	local hp=${ch_http#http://}
	hp=${hp%/}
	( exec 3<> "/dev/tcp/${hp%:*}/${hp##*:}" &&
		printf 'GET %s HTTP/1.0\r\n\r\n' "$1" >&3 && timeout 5 cat <&3 )
}
check "the HTTP interface answers /ping" 'http_get /ping | tr -d "\r" | tail -1 | grep -qx "Ok\."'
tc_ch --query "SELECT version()"
check "data lives under \$tmp" '[ -d "$tmp/ch/data/metadata" ] || [ -d "$tmp/ch/data/data" ]'

tc_ch --multiquery --query "CREATE DATABASE tc;
	CREATE TABLE tc.t (d Date DEFAULT today(), k UInt64, s String)
		ENGINE = MergeTree(d, (k), 8192);
	INSERT INTO tc.t (k, s) VALUES (1, 'a'), (2, 'b');" ||
	fail "create and insert"
check "MergeTree gives the rows back" \
	'[ "$(tc_ch --query "SELECT groupArray(s) FROM (SELECT s FROM tc.t ORDER BY k)")" = "['"'"'a'"'"','"'"'b'"'"']" ]'

ro() {
	clickhouse-client --host 127.0.0.1 --port "$ch_port" --user "$ch_ro_user" \
		--password "$ch_ro_password" "$@"
}
check "the read-only user reads" '[ "$(ro --query "SELECT count() FROM tc.t")" = 2 ]'
check "the read-only user may not insert" \
	'! ro --query "INSERT INTO tc.t (k, s) VALUES (3, '"'"'c'"'"')" 2>/dev/null'
check "the read-only user may not create" \
	'! ro --query "CREATE TABLE tc.u (k UInt8) ENGINE = Memory" 2>/dev/null'
check "the read-only user may not change its settings" \
	'! ro --query "SET max_execution_time = 0" 2>/dev/null'
setting() { ro --query "SELECT value FROM system.settings WHERE name = '$1'"; }
check "readonly=1" '[ "$(setting readonly)" = 1 ]'
check "max_execution_time=30" '[ "$(setting max_execution_time)" = 30 ]'
check "max_result_rows=100000" '[ "$(setting max_result_rows)" = 100000 ]'
check "max_memory_usage=268435456" '[ "$(setting max_memory_usage)" = 268435456 ]'
check "max_result_rows throws past its limit" \
	'! ro --query "SELECT number FROM system.numbers LIMIT 200000" > /dev/null 2>&1'

if [ -n "${zookeeper_pid:-}" ]; then
	check "zookeeper answers ruok" '[ "$(tc_zk_cmd ruok)" = imok ]'
	tc_ch --multiquery --query "
		CREATE TABLE tc.r (d Date, k UInt64)
			ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/r', '{replica}', d, (k), 8192);
		INSERT INTO tc.r VALUES ('2026-01-01', 1), ('2026-01-01', 2);
		INSERT INTO tc.r VALUES ('2026-01-01', 1), ('2026-01-01', 2);
		CREATE TABLE tc.m (d Date, k UInt64) ENGINE = MergeTree(d, (k), 8192);
		INSERT INTO tc.m VALUES ('2026-01-01', 1), ('2026-01-01', 2);
		INSERT INTO tc.m VALUES ('2026-01-01', 1), ('2026-01-01', 2);" ||
		fail "replicated table"
	check "ReplicatedMergeTree keeps a block inserted twice once" \
		'[ "$(tc_ch --query "SELECT count() FROM tc.r")" = 2 ]'
	check "MergeTree stores it twice" '[ "$(tc_ch --query "SELECT count() FROM tc.m")" = 4 ]'
fi

port=$ch_port
kill "$clickhouse_pid" && wait "$clickhouse_pid"
check "SIGTERM stops the server" '! kill -0 "$clickhouse_pid" 2>/dev/null'
clickhouse_pid=
check "its native port is free again" '! ss -Hltn "sport = :$port" | grep -q .'

exit "$failed"
