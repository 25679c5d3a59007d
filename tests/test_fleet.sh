#!/bin/bash
# Several collectors over one ClickHouse (issue 35): one clickhouse-server
# of the test's own, two tracecollectd (A and B, --collector-id 1 and 2,
# each its own journal) on free loopback ports, four agents split between
# them (h1, h2: --connect A,B; h3, h4: --connect B,A), each tracing
# sched_switch in its own tracefs instance.
#
# Mid-stream A is killed (-9): h1 and h2 fail over to B and exit 0. A is
# then started again on its journal (what it acknowledged and had not
# stored is stored now, after B stored the pages that followed: the spans
# of server/ingest/dedup.h). Asserts, for every host: stored (ClickHouse's
# own count) == shipped (the agent's total), and distinct (host, cpu,
# trace_ts, table) == stored; h1 and h2 said they failed over; traceq
# --count and --hosts on either collector see every host; while the agents
# run, --hosts on B says each is connected to B (the live-host set in
# ClickHouse). Skips, saying
# why, without clickhouse-server or a writable tracefs.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_clickhouse
tc_need_tracefs
tc_lock
tc_setup fleet workload a1 a2 a3 a4 pid_A pid_B clickhouse_pid

tc_start_clickhouse
tc_ch_db_args
tc_certs
echo "clickhouse-server: http on 127.0.0.1:$ch_http_port"

. "$top_srcdir/tests/fleet_lib.sh"
fleet_collector A 1
fleet_collector B 2
echo "collector A: agents on $listen_A, queries on $query_A"
echo "collector B: agents on $listen_B, queries on $query_B"

( while :; do sleep 0.002; done ) &
workload=$!
fleet_agent 1 "$listen_A,$listen_B" 10
fleet_agent 2 "$listen_A,$listen_B" 10
fleet_agent 3 "$listen_B,$listen_A" 10
fleet_agent 4 "$listen_B,$listen_A" 10
fleet_kill_a 4
# the live-host set in ClickHouse: B (and any collector) says where each
# host is connected; h1 and h2 move to B at the next refresh (every 5 s)
for _ in $(seq 40); do
	"$top_builddir/traceq/traceq" --server "$query_B" --hosts -f json > "$tmp/live.json" 2>&1
	where=$(python3 -c 'import json,sys
rows = {}
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    rows[r.get("host")] = (r.get("connected"), r.get("collector"))
print(" ".join("%s=%s/%s" % (h, *rows.get(h, ("-", "-"))) for h in ("h1", "h2", "h3", "h4")))' \
		"$tmp/live.json")
	[ "$where" = "h1=yes/B h2=yes/B h3=yes/B h4=yes/B" ] && break
	sleep 0.25
done
check "traceq --hosts on B: every host connected, to B, after A died ($where)" \
	'[ "$where" = "h1=yes/B h2=yes/B h3=yes/B h4=yes/B" ]'
fleet_wait_agents 1 2 3 4
kill "$workload"; wait "$workload" 2>/dev/null; workload=
for n in 1 2; do
	check "h$n failed over from A to B" 'grep -q "failed over to the collector at" "$tmp/h$n.err"'
done
check "h3 and h4 stayed on B" '! grep -q "failed over" "$tmp/h3.err" "$tmp/h4.err"'

# what A acknowledged and had not stored when it died: lost, had it not come back
fleet_tq "$query_B" --hosts > /dev/null	# --sync: B's journal stored
held=$(( $(fleet_shipped h1) + $(fleet_shipped h2) - $(fleet_stored h1) - $(fleet_stored h2) ))
echo "info: A's journal held $held events acknowledged and not stored when it died;" \
	"h1+h2 shipped $(( ($(fleet_shipped h1) + $(fleet_shipped h2)) / 10 )) events/s:" \
	"a window of $(python3 -c "print(round($held / max(1, ($(fleet_shipped h1) + $(fleet_shipped h2)) / 10), 2))") s"

# A again, on its journal: it stores what it acknowledged before it died
fleet_collector A 1
fleet_tq "$query_A" --hosts > "$tmp/hosts-A.txt"; rc_a=$?
fleet_tq "$query_B" --hosts > "$tmp/hosts-B.txt"; rc_b=$?
check "traceq --hosts exits 0 on A and B" '[ "$rc_a" = 0 ] && [ "$rc_b" = 0 ]'

total=0
for n in 1 2 3 4; do
	fleet_check_host "h$n"
	total=$((total + $(fleet_shipped "h$n")))
	for c in A B; do
		check "traceq --hosts on $c lists h$n" 'grep -qw "h$n" "$tmp/hosts-$c.txt"'
	done
done
for c in A B; do
	q=query_$c
	count=$(fleet_tq "${!q}" --count '*' 2>&1 | tail -1)
	check "traceq --count on $c sees every host's events ($count == $total)" \
		'[ "$count" = "$total" ]'
done
dup_ids=$(fleet_ch "SELECT count() - uniqExact(id) FROM commits")
mixed=$(fleet_ch "SELECT uniqExact(collector) FROM commits GROUP BY id % 64 ORDER BY 1 DESC LIMIT 1")
check "commit ids: none twice ($dup_ids), one collector per id residue ($mixed)" \
	'[ "$dup_ids" = 0 ] && [ "$mixed" = 1 ]'
[ "$failed" = 0 ] || tail -40 "$tmp/collector.log"
exit "$failed"
