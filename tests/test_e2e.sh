#!/bin/bash
# End-to-end: real certificates, real tracecollectd and traceagent on
# 127.0.0.1 (ports chosen at run time), a real SQLite file, real kernel
# sched_switch events in the agent's own tracefs instance; then traceq.
#
# Asserts: the agent ships and the collector stores the same number of
# sched_switch events; "sched_switch where prev_pid == W" (W the
# workload's shell, which sleeps 200 times: switched out on a busy machine
# too, where the idle task may never run) returns rows and only rows with
# prev_pid W, and the idle task's rows, when there are any, print as
# trace-cmd prints them; an agent with a certificate from another CA is
# refused, logged, and nothing of it is stored; bad queries exit 2 with a
# caret, an unreachable collector exits 1; no tracefs instance is left;
# the default field index gives the same rows as the time blocks, and
# --index none drops it.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup e2e agent collector_pid

tc_certs
{ "$top_srcdir/contrib/tracecollect-certs" -d "$tmp/rogue" ca &&
	"$top_srcdir/contrib/tracecollect-certs" -d "$tmp/rogue" agent tc-agent; } >/dev/null ||
	{ echo "FAIL: certificate helper (rogue)"; exit 1; }

tc_start_collector
echo "collector: agents on $listen, queries on $query"


# A workload that context-switches while the agent traces.
( for _ in $(seq 200); do sleep 0.005; done ) &
workload=$!
t_start=$(date +%s%N)
tc_run_agent agent -e sched:sched_switch --duration 3 --name e2e-host --no-user \
	--instance "tc-e2e-$$-a"
agent_rc=$?
t_end=$(date +%s%N)
wait "$workload"
cat "$tmp/agent.out"
check "agent exits 0" '[ "$agent_rc" = 0 ] || { cat "$tmp/agent.err"; false; }'

shipped=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/agent.out")
check "agent reports the events it shipped" '[ -n "$shipped" ] && [ "$shipped" -gt 0 ]'

stored=$(traceq --count '*')	# sched_switch and the agent's task name events
check "stored events ($stored) == shipped ($shipped)" '[ "$stored" = "$shipped" ]'

w=$workload	# its rows: "idle" below
traceq --format fields "sched_switch where prev_pid == $w" > "$tmp/idle.txt"; rc=$?
check "traceq select exits 0" '[ "$rc" = 0 ]'
rows=$(wc -l < "$tmp/idle.txt")
check "sched_switch where prev_pid == $w (the workload) returns rows ($rows)" '[ "$rows" -ge 1 ]'
check "every row has prev_pid=$w" '! grep -qv " prev_pid=$w " "$tmp/idle.txt"'
check "rows are in the field=value layout (--format fields)" \
	'grep -qE "^ *[^ ].*-$w +\[[0-9]{3}\] [0-9]+\.[0-9]{6}: sched_switch: prev_comm=" "$tmp/idle.txt"'
check "the default text is trace-cmd report's" \
	'traceq --limit 3 "sched_switch where prev_pid == $w" |
	 grep -qE "^ +[^ ]+-$w +\[[0-9]{3}\] +[0-9]+\.[0-9]{6}: sched_switch: +[^ ]+:$w \[[0-9]+\] [A-Z+]+ ==> .*:[0-9]+ \[[0-9]+\]$"'
traceq --limit 3 "sched_switch where prev_pid == 0" > "$tmp/swapper.txt"
check "the idle task's rows, if it ran ($(wc -l < "$tmp/swapper.txt")), are trace-cmd's <idle>-0 and swapper/N:0" \
	'! grep -vqE "^ +<idle>-0 +\[[0-9]{3}\] +[0-9]+\.[0-9]{6}: sched_switch: +swapper/[0-9]+:0 \[[0-9]+\] [A-Z+]+ ==> .*:[0-9]+ \[[0-9]+\]$" "$tmp/swapper.txt"'
head -3 "$tmp/idle.txt"

n_json=$(traceq --format json "sched:sched_switch where prev_pid == $w" | grep -c "\"prev_pid\":$w,")
check "json output: one object per row, same rows ($n_json)" '[ "$n_json" = "$rows" ]'
check "json rows carry host, cpu and ts" \
	'traceq --format json --limit 1 "sched_switch" | grep -q "\"host\":\"e2e-host\",\"cpu\":[0-9]*,\"ts\":[0-9]*"'
# ts_within HOST FROM TO: every stored row of HOST has FROM <= ts <= TO (wall ns)
ts_within() {
	traceq --format json --host "$1" sched_switch |
		sed -n 's/.*"ts":\([0-9]*\).*/\1/p' |
		awk -v lo="$2" -v hi="$3" '$1 < lo || $1 > hi { bad++ } END { exit bad > 0 || NR == 0 }'
}
clock=$(sed -n 's/.*agent e2e-host (.*clock \([a-z0-9-]*\)).*/\1/p' "$tmp/collector.log")
check "stored times lie within the run (trace clock $clock)" 'ts_within e2e-host "$t_start" "$t_end"'
count_idle=$(traceq --count "sched_switch where prev_pid == $w")
check "--count agrees with the rows ($count_idle)" '[ "$count_idle" = "$rows" ]'

# prev_pid == W reads the default field index; the same rows through the
# time blocks (a range the index does not serve) and as pages of 7.
check "the collector built its default field indexes" \
	'grep -q "field indexes: 4 named" "$tmp/collector.log"'
traceq --format fields "sched_switch where prev_pid >= $w && prev_pid <= $w" > "$tmp/idle_blocks.txt"
check "index and time blocks give the same rows" 'cmp -s "$tmp/idle.txt" "$tmp/idle_blocks.txt"'
traceq --format fields --limit 7 "sched_switch where prev_pid == $w" > "$tmp/idle7.txt"
check "the first 7 through the index are the first 7 rows" \
	'head -7 "$tmp/idle.txt" | cmp -s - "$tmp/idle7.txt"'

# A client certificate from another CA is refused and nothing is stored.
tc_run_agent rogue -e sched:sched_switch --duration 1 --cert "$tmp/rogue/agent-tc-agent.crt" \
	--key "$tmp/rogue/agent-tc-agent.key" --name rogue-host --no-user --instance "tc-e2e-$$-b"
rc=$?
check "agent with a foreign certificate exits 1" '[ "$rc" = 1 ]'
sleep 0.3
check "collector logs the refusal with the reason" \
	'grep -q "refused agent.*certificate" "$tmp/collector.log"'
check "nothing stored from the refused agent" '[ "$(traceq --count "*")" = "$stored" ]'
check "refused agent is not a known host" '! traceq --stats | grep -q rogue-host'
check "stats list the traced host" 'traceq --stats | grep -q "host=e2e-host"'

# The other trace clock gives wall-clock times too.
other=mono
[ "$clock" = mono ] && other=x86-tsc
t_start=$(date +%s%N)
tc_run_agent clock -e sched:sched_switch --duration 1 --name e2e-clock --no-user \
	--instance "tc-e2e-$$-c" --trace-clock "$other"; rc=$?
t_end=$(date +%s%N)
if [ "$other" = x86-tsc ] && ! tc_can_tsc; then
	# a kernel without it: refused, and it says why
	tc_skip_part "events on the x86-tsc trace clock" "$tc_why"
	check "--trace-clock x86-tsc refused with a reason" \
		'[ "$rc" = 1 ] && grep -q "trace-clock x86-tsc: .*trace_clock x86-tsc" "$tmp/clock.err"'
else
	check "with --trace-clock $other too" \
		'[ "$rc" = 0 ] && ts_within e2e-clock "$t_start" "$t_end" || { cat "$tmp/clock.err"; false; }'
fi
"$top_builddir/traceagent" --connect "$listen" --trace-clock sundial 2> "$tmp/clock.err"; rc=$?
check "a bad --trace-clock exits 2" '[ "$rc" = 2 ] && grep -q "auto, mono or x86-tsc" "$tmp/clock.err"'

# Errors the user sees.
traceq "sched_switch where nosuch == 1" 2> "$tmp/err.txt"; rc=$?
cat "$tmp/err.txt"
check "unknown field exits 2" '[ "$rc" = 2 ]'
check "caret under the unknown field" \
	'[ "$(grep -n "\^" "$tmp/err.txt" | head -1 | cut -d: -f2 | awk "{print index(\$0, \"^\")}")" = \
	   "$(grep "sched_switch where" "$tmp/err.txt" | head -1 | awk "{print index(\$0, \"nosuch\")}")" ]'
traceq "sched_switch where prev_pid ==" 2>/dev/null; rc=$?
check "syntax error exits 2" '[ "$rc" = 2 ]'
"$top_builddir/traceq/traceq" --server tcp://127.0.0.1:1 --timeout 2000 "sched_switch" 2> "$tmp/unreach.txt"; rc=$?
check "unreachable collector exits 1 and says so" '[ "$rc" = 1 ] && grep -q "cannot reach" "$tmp/unreach.txt"'

check "no tracefs instance left behind" \
	'[ ! -e "$tracing/instances/tc-e2e-$$-a" ] && [ ! -e "$tracing/instances/tc-e2e-$$-b" ] &&
	 [ ! -e "$tracing/instances/tc-e2e-$$-c" ]'

traceq "sched_switch where prev_pid == $w" > "$tmp/idle_all.txt"
kill "$collector_pid"; wait "$collector_pid"; rc=$?
collector_pid=
check "collector exits 0 on SIGTERM" '[ "$rc" = 0 ]'

# Field index settings: a bad one is refused at start, "none" drops them.
"$top_builddir/tracecollectd" --foreground --db "$tmp/trace.db" \
	--index "sched:sched_switch prev-pid" 2> "$tmp/index_err.txt"; rc=$?
check "a bad --index exits 2 and says what is expected" \
	'[ "$rc" = 2 ] && grep -q "SYSTEM\[:EVENT\] FIELD" "$tmp/index_err.txt"'
: > "$tmp/collector.log"
tc_start_collector --index none
check "--index none drops the indexes built before" \
	'grep -q "field indexes: 0 named, 0 built and 2 dropped" "$tmp/collector.log"'
check "the same rows without them" \
	'traceq "sched_switch where prev_pid == $w" | cmp -s - "$tmp/idle_all.txt"'
kill "$collector_pid"; wait "$collector_pid"; collector_pid=

if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	echo "--- agent stderr"; cat "$tmp/agent.err"
	exit 1
fi
echo "PASS: end to end"
