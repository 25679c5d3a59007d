#!/bin/bash
# traceq --sql on the ClickHouse store (issue 32) is refused, saying why,
# because 18.16 cannot give a read-only user our views alone. The test
# shows the two facts the refusal rests on (server/store/clickhouse_sql.c)
# on a clickhouse-server of its own, with a readonly=1 user (tv) whose
# allow_databases names only a database of views (tcv):
#  - tv reads the system database (system.processes: another user's query);
#  - tv is denied a view in tcv over a table of another database (tc);
# so should a newer server change either, this test says to revisit.
# Then, with a collector on that server:
#  - traceq --sql exits nonzero with the reason (not an approximation);
#  - a plain query still answers (the collector runs).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_clickhouse
tc_setup ch_sql collector_pid

# the test's users.xml, plus tv: read-only, allowed the database tcv only
eval "tc_ch_users_base() $(declare -f tc_ch_users | sed 1d)"
tc_ch_users() {
	tc_ch_users_base | sed "s|</users>|<tv><password>tvpw</password><networks><ip>127.0.0.1</ip></networks><profile>readonly</profile><quota>default</quota><allow_databases><database>tcv</database></allow_databases></tv></users>|"
}
tc_start_clickhouse
tv() { clickhouse-client --host 127.0.0.1 --port "$ch_port" --user tv --password tvpw --query "$1" 2>&1; }
tc_ch --multiquery --query "CREATE DATABASE tcb; CREATE DATABASE tcv;
	CREATE TABLE tcb.t (a UInt64) ENGINE = MergeTree ORDER BY a;
	INSERT INTO tcb.t VALUES (1), (2);
	CREATE VIEW tcv.v AS SELECT a FROM tcb.t"
tc_ch --query "SELECT sleep(2) AS tc_probe_$$" > /dev/null 2>&1 &
probe=$!
for _ in $(seq 20); do
	out=$(tv "SELECT user FROM system.processes WHERE query LIKE '%tc_probe_$$%' AND user != 'tv'")
	[ -n "$out" ] && break
	sleep 0.1
done
wait "$probe"
check "18.16: a user allowed only tcv reads the system database: another user's query in system.processes ($out)" \
	'[ "$out" = "$ch_user" ]'
out=$(tv "SELECT count() FROM tcv.v")
check "18.16: that user is denied a view over another database's table ($out)" \
	'grep -q "Access denied to database tcb" <<< "$out"'

tc_certs
tc_ch_db_args
tc_start_collector "${ch_db_args[@]}" --query "ipc://$tmp/q.sock"
tq() { "$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 "$@"; }
tq --sql "SELECT count(*) FROM hosts" > "$tmp/sql.out" 2>&1; rc=$?
check "--sql is refused on ClickHouse, saying why (exit $rc: $(cat "$tmp/sql.out"))" \
	'[ "$rc" != 0 ] && grep -q "sql is not answered from ClickHouse: 18.16 lets every user read the system database" "$tmp/sql.out"'
tq --hosts > "$tmp/hosts.out" 2>&1; rc=$?
check "the collector still answers other queries (--hosts exit $rc)" '[ "$rc" = 0 ]'
exit "$failed"
