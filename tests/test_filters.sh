#!/bin/bash
# Server-side filters end to end: a real tracecollectd with a filter in its
# config file, real traceagents shipping kernel sched_switch events.
#
# Asserts: with "sched:sched_switch prev_pid != 0 && prev_comm != "sleep""
# the collector stores no row with prev_pid 0 (nor one of the workload's
# sleeps, which switch out for sure, so the filter always has something to
# drop), counts what it dropped per host and event (traceq --drops), and
# stored + dropped == shipped; a bad rule on SIGHUP is
# reported with FILE:LINE:COL and a caret and the old filter stays; a good
# new rule on SIGHUP takes effect for an agent that is streaming, which is
# not disconnected, and stored + dropped == shipped still holds for it.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup filters agent workload collector_pid

tc_certs

cat > "$tmp/collector.conf" <<CONF
# drop the idle task's switches and the workload's sleeps
filter = sched:sched_switch prev_pid != 0 && prev_comm != "sleep"
CONF

# Collector-side enforcement and its drop counts are what this test is
# about: push-down (the kernel dropping before shipping, which these counts
# cannot see) is off here and tested in test_pushdown.sh.
tc_start_collector -C "$tmp/collector.conf" --pushdown no

agent() {	# agent NAME DURATION; with BG=1 in the background (agent its pid)
	local run=tc_run_agent
	[ -n "${BG:-}" ] && run=tc_start_agent
	$run "$1" -e sched:sched_switch --duration "$2" --name "$1" --no-user \
		--instance "tc-filters-$$-$1"
}
shipped() { sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/$1.out"; }
dropped() {	# dropped HOST: sched_switch events a filter dropped
	traceq --drops | sed -n "s/^host=$1 system=sched event=sched_switch reason=filter count=\([0-9]*\)$/\1/p"
}
busy() { ( while :; do sleep 0.003; done ) & workload=$!; }

# 1. A filter from the config file.
busy
agent f1 3; rc=$?
check "agent f1 exits 0" '[ "$rc" = 0 ] || { cat "$tmp/f1.err"; false; }'
shipped1=$(shipped f1)
stored1=$(traceq -H f1 --count '*')	# with the agent's task name events
dropped1=$(dropped f1)
echo "f1: shipped=$shipped1 stored=$stored1 dropped=$dropped1"
check "the filter dropped switches (${dropped1:-none})" '[ -n "$dropped1" ] && [ "$dropped1" -gt 0 ]'
check "stored + dropped == shipped" '[ $((stored1 + dropped1)) = "$shipped1" ]'
check "no stored row has prev_pid 0" '[ "$(traceq -H f1 --count "sched_switch where prev_pid == 0")" = 0 ]'
check "no stored row is a sleep's" '[ "$(traceq -H f1 --count "sched_switch where prev_comm == \"sleep\"")" = 0 ]'
check "rows with prev_pid != 0 are stored" '[ "$stored1" -gt 0 ]'

# 2. A bad rule on SIGHUP: reported with file:line:col and a caret; old filter kept.
cat > "$tmp/collector.conf" <<CONF
filter = sched:sched_switch prev_pid != 0 && prev_comm != "sleep"
filter = sched:sched_switch prev_pid === 0
CONF
kill -HUP "$collector_pid"
for _ in $(seq 50); do grep -q "reload:" "$tmp/collector.log" && break; sleep 0.1; done
check "bad reload names file:line:col" 'grep -q "reload: .*collector.conf:2:[0-9]*: " "$tmp/collector.log"'
check "bad reload shows a caret under the token" \
	'grep -A3 "reload: .*collector.conf:2" "$tmp/collector.log" | grep -q "^ *\^"'

# 3. A good new rule on SIGHUP while an agent streams: keep only the sleeps.
BG=1 agent f2 6
for _ in $(seq 100); do
	[ "$(traceq -H f2 --count sched_switch 2>/dev/null || echo 0)" -gt 0 ] && break
	sleep 0.1
done
check "f2 rows stored before the reload" '[ "$(traceq -H f2 --count sched_switch)" -gt 0 ]'
cat > "$tmp/collector.conf" <<CONF
filter = sched:sched_switch prev_comm == "sleep"
CONF
kill -HUP "$collector_pid"
wait "$agent"; rc=$?; agent=
kill "$workload"; wait "$workload" 2>/dev/null; workload=
check "agent f2 exits 0 (not dropped by the reload)" '[ "$rc" = 0 ] || { cat "$tmp/f2.err"; false; }'
check "reload logged" 'grep -q "reload: 1 filter rule(s) in effect" "$tmp/collector.log"'
check "f2 connected once" '[ "$(grep -c "agent f2 (" "$tmp/collector.log")" = 1 ]'
shipped2=$(shipped f2)
stored2=$(traceq -H f2 --count '*')
dropped2=$(dropped f2)
echo "f2: shipped=$shipped2 stored=$stored2 dropped=$dropped2"
check "new filter took effect: sleeps' switches stored after the reload" \
	'[ "$(traceq -H f2 --count "sched_switch where prev_comm == \"sleep\"")" -gt 0 ]'
check "f2: stored + dropped == shipped" '[ $((stored2 + dropped2)) = "$shipped2" ]'

check "no tracefs instance left behind" '! ls "$tracing/instances" | grep -q "^tc-filters-$$-"'
kill "$collector_pid"; wait "$collector_pid"; rc=$?
collector_pid=
check "collector exits 0 on SIGTERM" '[ "$rc" = 0 ]'

if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	exit 1
fi
echo "PASS: server-side filters"
