#!/bin/bash
# The agent's connection to its collector closed at the two ends of a run,
# with --journal-size 0 (pages acknowledged only once stored): the agent
# reconnects and resends what is not acknowledged, or says what it could
# not deliver; it never exits on the first closed link.
#
# 1. In the drain. The collector is stopped (SIGSTOP: it acknowledges
#    nothing more) while agent "drain" streams; once the agent has switched
#    its instance's tracing off (tracing_on reads 0: it is in its drain,
#    waiting for the collector) the collector is killed (-9), so the
#    agent's link closes there; then it is started again on the same port
#    and database. Asserts: the agent logs the loss, reconnects, exits 0,
#    and every event it shipped is stored exactly once (traceq --count ==
#    its total).
# 2. The drain gives up. The same, but no collector comes back:
#    --drain-timeout 2. Asserts: exit status 1, the error line and the
#    summary both say how many pages and events were not delivered; a
#    collector started afterwards on the database holds the others (stored
#    + undelivered >= shipped, stored < shipped).
# 3. At the start. Agent "start" (--connections per-cpu) goes through a
#    relay that closes the second connection it accepts: the agent's first
#    data connection, after the collector welcomed its control connection
#    (as a collector does that closes a connection while the agent still
#    introduces itself, e.g. when its first commit meets a removed
#    database). Asserts: the agent logs the loss, reconnects, exits 0,
#    stored == shipped.
# Order, not time, makes each case: the collector stops before the drain,
# and dies only once the drain has begun; the relay cuts by a count.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup drain relay agent workload collector_pid
# a collector stopped (SIGSTOP) when a check fails must take the exit trap's TERM
trap '[ -n "$collector_pid" ] && kill -CONT "$collector_pid" 2>/dev/null; tc_cleanup' EXIT

tc_certs
field() { sed -n "s/.*total:.* $1=\([0-9]*\).*/\1/p" "$2"; }
( while :; do sleep 0.002; done ) &
workload=$!

# stream NAME ARGS...: agent NAME streams sched_switch for 3 s in instance
# tc-drain-$$-NAME (outputs in $tmp/NAME.out and .err); agent holds its pid.
stream() {
	local name=$1
	shift
	tc_start_agent "$name" -e sched:sched_switch --duration 3 --name "$name" \
		--instance "tc-drain-$$-$name" --spool-dir "$tmp/spool-$name" "$@"
}

# in_drain NAME: wait until agent NAME switched its tracing on (its
# instance's tracing_on reads 1), then off again: it is in finish().
in_drain() {
	local on=$tracing/instances/tc-drain-$$-$1/tracing_on want
	for want in 1 0; do
		for _ in $(seq 600); do
			[ "$(cat "$on" 2>/dev/null)" = "$want" ] && break
			kill -0 "$agent" 2>/dev/null || return 1
			sleep 0.05
		done
		[ "$(cat "$on" 2>/dev/null)" = "$want" ] || return 1
	done
}

# started NAME: wait until agent NAME was welcomed and reads its ring
# buffers (its first connection is complete).
started() {
	for _ in $(seq 200); do
		grep -qE "mapped ring buffer|splicing full pages|ring buffers of [0-9]+ CPUs with read" "$tmp/$1.err" && return 0
		sleep 0.05
	done
	return 1
}

kill9_collector() {
	kill -9 "$collector_pid"; wait "$collector_pid" 2>/dev/null
	collector_pid=
}

# every event stored (the agent's task name events too, traceagent(8))
count() { traceq --count '*' --host "$1" 2>> "$tmp/traceq.err"; }

# ---- 1. the link closes in the drain; the collector comes back ----
tc_start_collector --journal-size 0
stream drain
started drain
kill -STOP "$collector_pid"
check "drain: the agent reaches its drain with the collector stopped" 'in_drain drain'
kill9_collector
tc_start_collector --journal-size 0 --listen "$listen"
wait "$agent"; rc=$?; agent=
shipped=$(field events "$tmp/drain.out")
check "drain: the agent exits 0 ($rc)" '[ "$rc" = 0 ] || { cat "$tmp/drain.err"; false; }'
check "drain: it lost the collector and reconnected" \
	'grep -q "lost the collector" "$tmp/drain.err" && [ "$(field reconnects "$tmp/drain.out")" -ge 1 ]'
stored=$(count drain)
check "drain: stored ($stored) == shipped ($shipped)" \
	'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ]'

# ---- 2. the link closes in the drain; no collector until --drain-timeout ----
stream giveup --drain-timeout 2
started giveup
kill -STOP "$collector_pid"
check "give up: the agent reaches its drain with the collector stopped" 'in_drain giveup'
kill9_collector
wait "$agent"; rc=$?; agent=
shipped=$(field events "$tmp/giveup.out")
lost_err=$(sed -n 's/.* \([0-9]*\) pages (\([0-9]*\) events) were not delivered.*/\2/p' "$tmp/giveup.err")
lost_out=$(sed -n 's/.*undelivered: pages=[0-9]* events=\([0-9]*\).*/\1/p' "$tmp/giveup.out")
check "give up: exit status 1 ($rc)" '[ "$rc" = 1 ]'
check "give up: the error says how many events were not delivered ($lost_err)" \
	'[ -n "$lost_err" ] && [ "$lost_err" -gt 0 ] || { cat "$tmp/giveup.err"; false; }'
check "give up: the summary says the same ($lost_out) and what was shipped ($shipped)" \
	'[ "$lost_out" = "$lost_err" ] && [ -n "$shipped" ] || { cat "$tmp/giveup.out"; false; }'
tc_start_collector --journal-size 0 --listen "$listen"
stored=$(count giveup)
check "give up: stored ($stored) + undelivered ($lost_err) covers shipped ($shipped)" \
	'[ -n "$stored" ] && [ $((stored + lost_err)) -ge "$shipped" ] && [ "$stored" -lt "$shipped" ]'

# ---- 3. a connection of the first session closes after the WELCOME ----
# With --connections per-cpu the agent, welcomed on its control connection,
# opens a data connection per CPU. The relay forwards both ways, but closes
# the second connection it accepts (the first data connection) at once.
if ! command -v python3 > /dev/null; then
	echo "SKIP (part 3): no python3 for the relay"
else
	python3 -u "$top_srcdir/tests/tcp_relay.py" "$listen" close 2 \
		> "$tmp/relay.port" 2> "$tmp/relay.err" &
	relay=$!
	for _ in $(seq 100); do [ -s "$tmp/relay.port" ] && break; sleep 0.05; done
	stream start --connect "127.0.0.1:$(cat "$tmp/relay.port")" --connections per-cpu
	wait "$agent"; rc=$?; agent=
	shipped=$(field events "$tmp/start.out")
	check "start: the agent exits 0 ($rc)" '[ "$rc" = 0 ] || { cat "$tmp/start.err"; false; }'
	check "start: it was welcomed, lost the collector and reconnected" \
		'grep -q "collector host id" "$tmp/start.err" && grep -q "lost the collector" "$tmp/start.err" &&
		 [ "$(field reconnects "$tmp/start.out")" -ge 1 ]'
	stored=$(count start)
	check "start: stored ($stored) == shipped ($shipped)" \
		'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ]'
fi

check "no tracefs instance left behind" '! ls "$tracing/instances" | grep -q "^tc-drain-$$-"'
if [ "$failed" != 0 ]; then
	echo "--- collector"; cat "$tmp/collector.log"
	for f in "$tmp"/*.err; do echo "--- $f"; cat "$f"; done
	exit 1
fi
echo "PASS: the agent reconnects at both ends of a run, or says what it did not deliver"
