#!/bin/bash
# 100 simulated agents (bench/loadgen replaying tests/data's real pages) on
# one tracecollectd at once, over mutual TLS on 127.0.0.1.
#
# Asserts: every agent gets a DONE covering what it shipped (loadgen exits 0),
# the store holds exactly the shipped events, and all 100 hosts are known.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_lock
tmp=$(mktemp -d /tmp/tc-agents100.XXXXXX)
collector_pid=
failed=0
cleanup() {
	[ -n "$collector_pid" ] && kill "$collector_pid" 2>/dev/null && wait "$collector_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ulimit -n 4096 2>/dev/null

tc_certs
tc_start_collector

"$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
	--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" --data "$top_srcdir/tests/data" \
	--agents 100 --pages 20 --name sim > "$tmp/loadgen.out" 2>&1
rc=$?
cat "$tmp/loadgen.out"
check "all 100 agents: a DONE that covers what each shipped" '[ "$rc" = 0 ]'
shipped=$(sed -n 's/.* shipped_events=\([0-9]*\).*/\1/p' "$tmp/loadgen.out")
total=0
for ev in sched:sched_switch sched:sched_wakeup ftrace:print; do
	n=$(traceq --count "$ev") || n=x
	total=$((total + n))
done
check "store holds exactly the shipped events ($total == $shipped)" '[ "$total" = "$shipped" ]'
hosts=$(traceq --stats | sed -n 's/^host=\(sim-[0-9]*\) .*/\1/p' | sort -u | wc -l)
check "100 hosts known ($hosts)" '[ "$hosts" = 100 ]'

kill "$collector_pid"; wait "$collector_pid"; rc=$?
collector_pid=
check "collector exits 0 on SIGTERM" '[ "$rc" = 0 ]'
if [ "$failed" != 0 ]; then
	echo "--- collector log"; tail -50 "$tmp/collector.log"
	exit 1
fi
echo "PASS: 100 agents"
