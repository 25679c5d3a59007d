#!/bin/bash
# End to end for programs' own events: tests/user_sample writes 1,000,000
# myapp:request events through libtracecollect into its ring buffer; a real
# traceagent attaches to it, ships its pages and formats to a real
# tracecollectd over mutual TLS; then traceq.
#
# Asserts: stored + reported losses == 1,000,000 exactly; stored == what the
# library accepted == what the agent shipped; the fields filter (latency_us);
# the events sit on the host's wall-clock timeline; the ring file is gone.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
N=1000000

tc_need_tracefs
tc_lock
tmp=$(mktemp -d /tmp/tc-user.XXXXXX)
shm=$(mktemp -d /dev/shm/tc-user.XXXXXX)
collector_pid= agent=
failed=0
cleanup() {
	[ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	[ -n "$collector_pid" ] && kill "$collector_pid" 2>/dev/null && wait "$collector_pid" 2>/dev/null
	rm -rf "$tmp" "$shm"
}
trap cleanup EXIT

tc_certs
tc_start_collector

t0=$(date +%s%N)
tc_start_agent agent -e sched:sched_process_exit --user-dir "$shm" --name user-host

TRACECOLLECT_DIR=$shm "$top_builddir/tests/user_sample" "$N" > "$tmp/sample.out"
sample_rc=$?
cat "$tmp/sample.out"
check "sample program ran (an agent attached)" '[ "$sample_rc" = 0 ]'
# the agent notices the program is gone, recovers and drains its buffers
for _ in $(seq 100); do
	grep -q "exited; its buffers are drained" "$tmp/agent.err" && break
	sleep 0.1
done
kill -INT "$agent"; wait "$agent"; agent_rc=$?; agent=
t1=$(date +%s%N)
cat "$tmp/agent.out"
check "agent exits 0" '[ "$agent_rc" = 0 ] || { cat "$tmp/agent.err"; false; }'

accepted=$(sed -n 's/.*accepted=\([0-9]*\).*/\1/p' "$tmp/sample.out")
shipped=$(sed -n 's/.*user: .* events=\([0-9]*\).*/\1/p' "$tmp/agent.out")
stored=$(traceq --count "myapp:request")
# losses the collector recorded for the program's streams (ids >= 32768)
lost=$(traceq --stats | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	if (v["cpu"] != "all" && v["cpu"] >= 32768) sum += v["dropped"] + v["overrun"] + v["lost_events"] } END { print sum + 0 }')
echo "written=$N accepted=$accepted shipped=$shipped stored=$stored lost=$lost"
check "stored + reported losses == $N" '[ $((stored + lost)) = "$N" ]'
check "stored == accepted by the library" '[ "$stored" = "$accepted" ]'
check "stored == shipped by the agent" '[ "$stored" = "$shipped" ]'
check "events arrive (stored > 0)" '[ "$stored" -gt 0 ]'

slow=$(traceq --count "myapp:request where latency_us > 100")
check "filter on a program's field ($slow of $stored)" '[ "$slow" -gt 0 ] && [ "$slow" -lt "$stored" ]'
# the ring's losses print where they happened (CPU:N [N EVENTS DROPPED],
# a lost_events object in JSON): rows are the other lines
check "every filtered row matches" \
	'! traceq --format fields --limit 200 "myapp:request where latency_us > 990" |
	 grep -v "CPU:[0-9]* \[.*EVENTS DROPPED\]$" | grep -vqE " latency_us=99[1-9] "'
check "rows carry the path string" 'traceq --format fields --limit 1 "myapp:request" | grep -q "path=/api/items"'
ts=$(traceq --format json --limit 1 "myapp:request" | grep -v '"lost_events"' |
	sed -n 's/.*"ts":\([0-9]*\).*/\1/p')
check "events on the wall-clock timeline ($t0 <= $ts <= $t1)" '[ "$ts" -ge "$t0" ] && [ "$ts" -le "$t1" ]'
check "the program's ring file is gone" '[ -z "$(ls "$shm")" ]'

kill "$collector_pid"; wait "$collector_pid"; collector_pid=
if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	echo "--- agent stderr"; cat "$tmp/agent.err"
	exit 1
fi
echo "PASS: programs' events end to end"
