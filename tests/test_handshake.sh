#!/bin/bash
# Connections that never authenticate, or go quiet, are closed (issue 14),
# tested by events (each close is a read returning EOF, waited for in a
# bounded loop), with bench/loadgen: --idle-sockets opens TCP connections
# that send nothing, --stall an agent that stops in the middle of a frame.
#  1. --handshake-timeout 1: 20 silent connections are all closed;
#     --idle-timeout 1: a streaming agent that stalls gets ERROR "no
#     complete frame" and is closed.
#  2. --max-handshakes-per-source 1 (and a handshake timeout the test never
#     reaches): of two silent connections from 127.0.0.1 the second is
#     closed at once and the first stays (a burst from one address waits
#     its turn: the handshakes it has in flight finish; agents retry), and
#     meanwhile an agent from 127.0.0.2 connects and is stored; the
#     refusal is logged once for 127.0.0.1 however many follow.
#  3. --max-handshakes 2: with two silent connections open (127.0.0.3 and
#     127.0.0.5) one from 127.0.0.4 gets in, and the oldest (127.0.0.3's)
#     is given up for it (issue 30: strangers cannot keep a source out).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_lock
tc_setup handshake idle_pid idle2_pid idle4_pid idle5_pid collector_pid
tc_certs

lg() {
	"$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
		--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" \
		--data "$top_srcdir/tests/data" "$@"
}
idle() { "$top_builddir/bench/loadgen" --connect "$listen" "$@"; }
# wait_line FILE PATTERN: until FILE has a line matching PATTERN (bounded)
wait_line() {
	for _ in $(seq 600); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
stop_collector() {
	kill "$collector_pid"; wait "$collector_pid"; rc=$?
	collector_pid=
	check "collector exits 0 on SIGTERM" '[ "$rc" = 0 ]'
}

# 1. timeouts
tc_start_collector --handshake-timeout 1 --idle-timeout 1 --max-handshakes-per-source 64
timeout 120 "$top_builddir/bench/loadgen" --connect "$listen" --idle-sockets 20 \
	> "$tmp/idle.out" 2>&1
rc=$?
n=$(grep -c ' closed$' "$tmp/idle.out")
check "20 silent connections are all closed by the handshake timeout ($n)" \
	'[ "$rc" = 0 ] && [ "$n" = 20 ]'
check "the timeout is logged with its reason" \
	'grep -q "connection closed: TLS handshake not done within 1000 ms" "$tmp/collector.log"'
timeout 120 "$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
	--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" --data "$top_srcdir/tests/data" \
	--agents 1 --stall --name quiet > "$tmp/quiet.out" 2>&1
rc=$?
check "an agent stalled mid-frame is closed with ERROR 'no complete frame'" \
	'[ "$rc" = 0 ] && grep -q "closed: no complete frame for 1000 ms" "$tmp/quiet.out"'
stop_collector

# 2. one handshake per source address
tc_start_collector --handshake-timeout 1d --max-handshakes-per-source 1 --max-handshakes 2
idle --idle-sockets 2 > "$tmp/idle2.out" 2>&1 &
idle_pid=$!
check "a second silent connection from 127.0.0.1 is closed at once" \
	'wait_line "$tmp/idle2.out" "socket 1 closed"'
check "and the first stays open" '! grep -q "socket 0 closed" "$tmp/idle2.out"'
lg --bind 127.0.0.2 --agents 1 --pages 20 --name other > "$tmp/other.out" 2>&1
rc=$?
check "meanwhile an agent from 127.0.0.2 is stored" '[ "$rc" = 0 ]'
n=$(traceq --count sched:sched_switch) || n=x
check "its events are stored ($n)" '[ "$n" != x ] && [ "$n" -gt 0 ]'
kill "$idle_pid"; wait "$idle_pid"
idle --idle-sockets 4 > "$tmp/more.out" 2>&1 &
idle_pid=$!
check "of 4 more from 127.0.0.1 the ones past the first are closed" \
	'wait_line "$tmp/more.out" "socket 3 closed"'
n=$(grep -c "127.0.0.1: .*(--max-handshakes-per-source)" "$tmp/collector.log")
check "the refusals at 127.0.0.1 are logged once ($n)" '[ "$n" = 1 ]'

# 3. handshakes in all
kill "$idle_pid"; wait "$idle_pid"
idle_pid=
idle --bind 127.0.0.3 --idle-sockets 1 > "$tmp/idle3.out" 2>&1 &
idle2_pid=$!
check "a silent connection from 127.0.0.3 is open" 'wait_line "$tmp/idle3.out" "socket 0 open"'
idle --bind 127.0.0.5 --idle-sockets 1 > "$tmp/idle5.out" 2>&1 &
idle5_pid=$!
check "then one from 127.0.0.5" 'wait_line "$tmp/idle5.out" "socket 0 open"'
idle --bind 127.0.0.4 --idle-sockets 1 > "$tmp/idle4.out" 2>&1 &
idle4_pid=$!
check "with 2 handshakes in progress one from 127.0.0.4 gives up the oldest (127.0.0.3's)" \
	'wait_line "$tmp/idle3.out" "socket 0 closed"'
check "the eviction is logged with the cap" \
	'grep -q "127.0.0.3: connection closed: its oldest TLS handshake given up for another source.s: 2 connections in the TLS handshake already" "$tmp/collector.log"'
check "127.0.0.5's and 127.0.0.4's stay open" \
	'! grep -q "socket 0 closed" "$tmp/idle5.out" "$tmp/idle4.out"'
stop_collector
check "the refusals are counted at exit" \
	'grep -q "connections were closed by limits" "$tmp/collector.log"'

if [ "$failed" != 0 ]; then
	echo "--- collector log"; tail -40 "$tmp/collector.log"
	exit 1
fi
echo "PASS: handshake limits"
