#!/bin/bash
# A collector of a fleet that dies for good (issue 35): what its receive
# journal held, acknowledged and not stored, is lost with it unless it is
# started again on that journal (tracecollectd(8), FLEET). The mitigation
# tested here: collector A runs with --journal-size 0, so it acknowledges
# a page only once it is stored in ClickHouse. One clickhouse-server, A
# (no journal) and B, two agents with --connect A,B; A killed (-9)
# mid-stream and never started again: the agents fail over to B and, for
# each host, every shipped event is stored (not: none twice; see
# fleet_check_host_lost). Skips, saying why,
# without clickhouse-server or a writable tracefs.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_clickhouse
tc_need_tracefs
tc_lock
tc_setup fleet_dies workload a1 a2 pid_A pid_B clickhouse_pid

tc_start_clickhouse
tc_ch_db_args
tc_certs

. "$top_srcdir/tests/fleet_lib.sh"
fleet_collector A 1 --journal-size 0
fleet_collector B 2
echo "collector A (no journal): $listen_A; collector B: $listen_B"

( while :; do sleep 0.002; done ) &
workload=$!
fleet_agent 1 "$listen_A,$listen_B" 6
fleet_agent 2 "$listen_A,$listen_B" 6
fleet_kill_a 2	# for good: never started again
fleet_wait_agents 1 2
for n in 1 2; do
	check "h$n failed over to B" 'grep -q "failed over to the collector at" "$tmp/h$n.err"'
done
kill "$workload"; wait "$workload" 2>/dev/null; workload=

fleet_tq "$query_B" --hosts > /dev/null
for n in 1 2; do
	fleet_check_host_lost "h$n" ", A gone for good"
done
[ "$failed" = 0 ] || tail -30 "$tmp/collector.log"
exit "$failed"
