#!/bin/bash
# One query client cannot stall the others (issue 14): queries run on a
# bounded pool, a `sync` wait holds none of it, and a request over the size
# limit gets an error. Checked by order, never by elapsed time (the -t of
# each traceq only turns a hang into a failure).
#
# The backlog that stays pending is real: while an agent streams
# sched_switch, another process holds the database's write lock for longer
# than the store's 5 s busy timeout (test_journal_e2e.sh holds it for
# less), so every commit fails, live or from the journal, and what the
# collector received waits in its receive journal, stored again and again
# in vain, until the test lets the lock go.
#
# Asserts, while that backlog is pending:
#  - A, a traceq --sync --stats with a long --timeout, waits at the
#    collector (its debug log says so) and is still waiting when
#  - B, a plain traceq --stats, has its answer (and B saw the backlog);
#  - 50 traceq --count run at once are all answered, A still waiting.
# Then the lock goes: A is answered (exit 0); once everything is
# stored, 50 counts at once each equal the events the agent shipped.
# Last, traceq with a host glob that makes the request larger than the
# endpoint takes exits non-zero saying the request is over the limit.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v sqlite3 >/dev/null || skip "needs the sqlite3 command (Debian sqlite3)"
tc_lock
tc_setup query-concurrency agent workload A locker collector_pid

tc_certs
tc_start_collector -v -v
tq() { "$top_builddir/traceq/traceq" --server "$query" "$@"; }
field() { sed -n "s/.*total:.* $1=\([0-9]*\).*/\1/p" "$tmp/agent.out"; }

# counts_at_once N TAG ARGS...: N traceq --count ARGS at once, each output in
# $tmp/TAG.I; sets bad to the number that failed or printed no number.
counts_at_once() {
	local n=$1 tag=$2 i pids=()
	shift 2
	for i in $(seq "$n"); do
		tq --count "$@" > "$tmp/$tag.$i" 2>&1 &
		pids+=($!)
	done
	bad=0
	for i in $(seq "$n"); do
		wait "${pids[$((i - 1))]}" && grep -qx '[0-9][0-9]*' "$tmp/$tag.$i" ||
			bad=$((bad + 1))
	done
}

( while :; do sleep 0.002; done ) &
workload=$!
tc_start_agent agent -e sched:sched_switch --duration 6 --name concurrency-host \
	--instance "tc-qconc-$$" --spool-dir "$tmp/spool"
sleep 2
# Hold the database's write lock until $tmp/unlock exists: past the
# store's 5 s busy timeout every commit fails, live or from the journal.
sqlite3 -cmd ".timeout 20000" -cmd "BEGIN EXCLUSIVE;" \
	-cmd ".system while [ -d '$tmp' ] && [ ! -e '$tmp/unlock' ]; do sleep 0.1; done" \
	"$tmp/trace.db" "COMMIT;" > "$tmp/locker.out" 2>&1 &
locker=$!
for _ in $(seq 300); do
	grep -q "commit failed" "$tmp/collector.log" && break
	sleep 0.1
done
check "the collector cannot store (commit failed)" 'grep -q "commit failed" "$tmp/collector.log"'

# A: waits for the backlog, as long as the collector lets it.
tq --sync -t 600000 --stats > "$tmp/A.out" 2> "$tmp/A.err" &
A=$!
for _ in $(seq 300); do
	grep -q "waits up to" "$tmp/collector.log" && break
	sleep 0.1
done
check "A waits at the collector for the backlog" \
	'grep -q "waits up to .* ms for what was received to be stored" "$tmp/collector.log"'

# B: a plain --stats, answered while A still waits.
tq -t 30000 --stats > "$tmp/B.out" 2> "$tmp/B.err"
rc=$?
check "B's --stats is answered (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/B.err"; false; }'
check "B was answered while A still waits" 'kill -0 "$A" 2>/dev/null && [ ! -s "$tmp/A.out" ]'
check "B saw the backlog A waits for" 'grep -q "received and not yet stored" "$tmp/B.err"'

counts_at_once 50 during -t 30000 sched_switch
check "50 counts at once during the backlog: all answered ($bad failed)" '[ "$bad" = 0 ]'
check "A still waits after them" 'kill -0 "$A" 2>/dev/null && [ ! -s "$tmp/A.out" ]'

touch "$tmp/unlock"
wait "$locker" || fail "the lock holder failed: $(cat "$tmp/locker.out")"
locker=
wait "$A"; rc=$?
A=
check "A is answered once the backlog is stored (exit $rc)" \
	'[ "$rc" = 0 ] && [ -s "$tmp/A.out" ] || { cat "$tmp/A.err"; false; }'

wait "$agent"; rc=$?
agent=
kill "$workload"; wait "$workload" 2>/dev/null
workload=
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
shipped=$(field events)
stored=$(traceq --count '*')	# with the agent's task name events
check "stored ($stored) == shipped ($shipped)" \
	'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ]'
counts_at_once 50 after -t 60000 '*'
same=$(cat "$tmp"/after.* | grep -cx "$shipped")
check "50 counts at once: all answered ($bad failed), each $shipped ($same are)" \
	'[ "$bad" = 0 ] && [ "$same" = 50 ]'

# A host glob of 100 KB: more than the endpoint takes in a request.
big=$(head -c 100000 /dev/zero | tr '\0' x)
tq -t 600000 -H "$big" --count sched_switch > "$tmp/big.out" 2> "$tmp/big.err"
rc=$?
check "traceq says the request is over the limit (exit $rc: $(head -c 200 "$tmp/big.err"))" \
	'[ "$rc" != 0 ] && grep -q "over the limit" "$tmp/big.err"'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 60 lines)"; tail -n 60 "$tmp/collector.log"
	echo "--- agent"; cat "$tmp/agent.err"
	exit 1
fi
echo "PASS: one query client cannot stall the others"
