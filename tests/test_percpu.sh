#!/bin/bash
# --connections per-cpu end to end: real certificates, real tracecollectd
# and traceagent on 127.0.0.1, real sched_switch and sched_wakeup events in
# the agent's own tracefs instance, each CPU's pages on a TLS connection of
# its own next to the control connection.
#
# Asserts: the collector saw one control and one data connection per CPU
# of the same agent session; stored events == shipped, in total and per
# CPU; each stream's pages arrived in order on its connection (no
# "expected" gaps logged); the instance is gone afterwards.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup percpu agent collector_pid workload

tc_certs
tc_start_collector

# context switches on every CPU while the agent traces
( while :; do sleep 0.002; done ) &
workload=$!
tc_run_agent agent -e sched:sched_switch -e sched:sched_wakeup --duration 3 \
	--connections per-cpu --name percpu-host --no-user --instance "tc-percpu-$$"
rc=$?
kill "$workload"; wait "$workload" 2>/dev/null
workload=
cat "$tmp/agent.out"
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'

ncpus=$(grep -c "^traceagent: cpu[0-9]*:" "$tmp/agent.out")
conns=$(grep -c "agent percpu-host .* connected" "$tmp/collector.log")
check "collector saw $((ncpus + 1)) connections ($conns): control + one per CPU" \
	'[ "$ncpus" -ge 1 ] && [ "$conns" = $((ncpus + 1)) ]'

shipped=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/agent.out")
stored=$(traceq --count '*')	# with the agent's task name events
check "stored ($stored) == shipped ($shipped)" \
	'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ]'
check "the agent's DONEs add up to what it shipped" 'tc_done_covers "$tmp/agent.out"'

traceq --stats > "$tmp/stats"
for cpu in $(seq 0 $((ncpus - 1))); do
	a=$(sed -n "s/^traceagent: cpu$cpu: .* events=\([0-9]*\) .*/\1/p" "$tmp/agent.out")
	s=$(sed -n "s/^host=percpu-host cpu=$cpu .* events=\([0-9]*\) .*agent_pages.*/\1/p" "$tmp/stats")
	check "cpu$cpu: stored ($s) == shipped ($a)" '[ -n "$a" ] && [ "$s" = "$a" ]'
done
check "every stream in order on its connection" '! grep -q "expected" "$tmp/collector.log"'
check "no tracefs instance left behind" '[ ! -e "$tracing/instances/tc-percpu-$$" ]'
if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	echo "--- agent stderr"; cat "$tmp/agent.err"
	exit 1
fi
echo "PASS: percpu"
