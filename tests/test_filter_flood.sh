#!/bin/bash
# A malicious collector against the agent (issue 30): tests/fake_collector
# welcomes a real traceagent (--insecure-plain, its own tracefs instance)
# and sends it 200,000 MSG_FILTER messages, each text different and 2000
# bytes long, in turn
# for sched:sched_switch (traced: its filter is written) and
# nope:not_traced (answered at once, without tracefs), never reading the
# answers. The agent must stay bounded:
#  - memory: VmHWM under 64 MiB (taking every filter and queueing every
#    answer took it past 800 MiB);
#  - once its answers wait unsent (the collector's socket is full), it
#    stops reading (back-pressure: the fake collector cannot send all);
#  - tracefs writes: filters for one event are coalesced (the latest one
#    is written), at most KFILTER_WRITE_BURST + KFILTER_WRITES_PER_S a
#    second: far fewer writes than filters (the agent's summary line
#    "pushdown: ... written=N");
#  - the log: at most 20 lines about filters per 10 s, then one line
#    with how many were left out.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup filter_flood fake_pid agent_pid
N=200000

"$top_builddir/tests/fake_collector" "$tmp/port" $N 2000 sched:sched_switch nope:not_traced \
	> "$tmp/fake.out" 2>&1 &
fake_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
"$top_builddir/traceagent" --insecure-plain --connect "127.0.0.1:$port" -e sched:sched_switch \
	--instance "tc-flood-$$" --spool-dir "$tmp" --drain-timeout 1 --no-user \
	> "$tmp/agent.out" 2> "$tmp/agent.err" &
agent_pid=$!
for _ in $(seq 1200); do	# until the fake collector sent all it could (at most 120 s)
	grep -q "^fake_collector: sent" "$tmp/fake.out" && break
	kill -0 "$agent_pid" 2>/dev/null || break
	sleep 0.1
done
check "the fake collector is done sending" 'grep -q "^fake_collector: sent" "$tmp/fake.out"'
sleep 1			# the agent takes what it read
hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$agent_pid/status")
sent=$(sed -n 's/^fake_collector: sent \([0-9]*\) of.*/\1/p' "$tmp/fake.out")
echo "agent VmHWM: $hwm kB after $sent of $N filters were sent"
tc_check_memory "the agent's VmHWM stays under 64 MiB ($hwm kB)" '[ "${hwm:-999999}" -lt 65536 ]'
check "the agent stopped reading: not all $N filters could be sent ($sent)" \
	'[ "${sent:-$N}" -lt $N ]'
kill "$fake_pid"; wait "$fake_pid" 2>/dev/null	# its socket closes: the agent is on its own
fake_pid=
kill -INT "$agent_pid"
wait "$agent_pid"
agent_pid=
stats=$(grep "pushdown:" "$tmp/agent.out")
echo "${stats:-no pushdown line in the summary}"
val() { echo "$stats" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
writes=$(val written)
check "filters are coalesced: ${writes:-?} tracefs writes for $(val filters) filters" \
	'[ -n "$writes" ] && [ "$writes" -ge 1 ] && [ "$writes" -lt 2000 ] &&
	 [ "$writes" -lt "$(val filters)" ]'
lines=$(grep -c "filter" "$tmp/agent.err")
echo "agent log lines about filters: $lines"
check "the log about filters is rate-limited ($lines lines)" '[ "$lines" -le 45 ]'
check "the log says how many lines it left out" \
	'grep -q "more lines about pushed-down filters were not logged" "$tmp/agent.err" || [ "$(val log_left_out)" -gt 0 ]'
check "the instance is gone" '[ ! -d "$tracing/instances/tc-flood-$$" ]'

exit $failed
