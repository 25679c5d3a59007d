#!/bin/bash
# Established agent connections are bounded (issue 30), with bench/loadgen's
# simulated agents over mutual TLS:
#  1. a HELLO declaring 65536 CPUs is refused, the ERROR naming the cap
#     (--max-agent-cpus, 8192 by default) on both sides;
#  2. 150 connections declaring 8192 CPUs each, sending pages on the
#     capture's CPUs and then held open: the collector's memory follows the
#     CPUs that send, not the CPUs declared (VmHWM within 48 MiB of the
#     warm-up's VmRSS; a slot per declared CPU took ~0.6 MiB a connection);
#  3. once they are gone, the collector gives memory back (malloc_trim);
#  4. --max-agent-conns-per-cert 3 --max-agent-conns 4: with 3 connections
#     of certificate tc-agent held, a 4th of tc-agent is refused naming the
#     cap, while certificate other connects; then the total cap refuses the
#     next one of other, naming --max-agent-conns.
# Memory is VmRSS/VmHWM from /proc/PID/status: a bound on bytes, not time
# (printed, not checked, under AddressSanitizer: tc_check_memory).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_lock
tc_setup agent_conns hold_pid hold2_pid collector_pid
ulimit -n 4096 2>/dev/null
tc_certs other

lg() {
	local cert=$1
	shift
	"$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-$cert.crt" \
		--key "$tmp/pki/agent-$cert.key" --ca "$tmp/pki/ca.crt" \
		--data "$top_srcdir/tests/data" "$@"
}
# lg_bg OUT CERT ARGS...: lg in the background, its output in OUT, its pid in bg_pid
lg_bg() {
	local out=$1 cert=$2
	shift 2
	"$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-$cert.crt" \
		--key "$tmp/pki/agent-$cert.key" --ca "$tmp/pki/ca.crt" \
		--data "$top_srcdir/tests/data" "$@" > "$out" 2>&1 &
	bg_pid=$!
}
kb() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$collector_pid/status"; }
# wait_lines FILE PATTERN N: until FILE has N lines matching PATTERN (at most 60 s)
wait_lines() {
	local n
	for _ in $(seq 600); do
		n=$(grep -c -- "$2" "$1" 2>/dev/null)
		[ "${n:-0}" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

tc_start_collector
lg tc-agent --agents 4 --pages 20 --name warm > "$tmp/warm.out" 2>&1
check "warm-up agents are stored" '[ $? = 0 ]'
base=$(kb VmRSS)
echo "collector VmRSS after the warm-up: $base kB"

# 1. more CPUs than a kernel can have
lg tc-agent --agents 1 --pages 1 --ncpus 65536 --name many > "$tmp/many.out" 2>&1
why="hello: ncpus 65536 is over the most a host may declare (a kernel has at most 8192 CPUs: --max-agent-cpus)"
check "a HELLO of 65536 CPUs gets an ERROR naming the cap" \
	'grep -qF "refused: $why" "$tmp/many.out" || { cat "$tmp/many.out"; false; }'
check "the collector logs the refusal with the reason" \
	'grep -qF "closing: $why" "$tmp/collector.log"'

# 2. 150 connections held, each declaring 8192 CPUs
lg_bg "$tmp/wide.out" tc-agent --agents 150 --pages 20 --ncpus 8192 --hold --name wide
hold_pid=$bg_pid
wait_lines "$tmp/wide.out" ': holding$' 150
check "150 agents declaring 8192 CPUs are served" \
	'[ "$(grep -c ": holding$" "$tmp/wide.out")" = 150 ]'
traceq --stats > /dev/null	# everything stored: ACKs after the commits went out
hwm=$(kb VmHWM)
echo "collector VmHWM with 150 connections declaring 8192 CPUs: $hwm kB (+$((hwm - base)) kB)"
tc_check_memory "VmHWM stays within 48 MiB of $base kB" '[ $((hwm - base)) -lt 49152 ]'

# 3. memory given back once they are gone
kill "$hold_pid"; wait "$hold_pid" 2>/dev/null
hold_pid=
wait_lines "$tmp/collector.log" "agent wide-[0-9]* disconnected before DONE" 150
sleep 2		# the trim runs 1 s after the last close
rss=$(kb VmRSS)
echo "collector VmRSS after they closed: $rss kB (peak $hwm kB)"
tc_check_memory "VmRSS after they closed is back within 24 MiB of $base kB" \
	'[ $((rss - base)) -lt 24576 ]'

# 4. the caps on established connections
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null
tc_start_collector --max-agent-conns-per-cert 3 --max-agent-conns 4
lg_bg "$tmp/mine.out" tc-agent --agents 3 --pages 5 --hold --name mine
hold_pid=$bg_pid
wait_lines "$tmp/mine.out" ': holding$' 3
check "3 connections of tc-agent are served" \
	'[ "$(grep -c ": holding$" "$tmp/mine.out")" = 3 ]'
lg tc-agent --agents 1 --pages 5 --name fourth > "$tmp/fourth.out" 2>&1
rc=$?
why="hello: certificate tc-agent has 3 connections established already, the most one certificate may hold (--max-agent-conns-per-cert)"
check "the 4th connection of tc-agent is refused, naming the cap" \
	'[ "$rc" != 0 ] && grep -qF "refused: $why" "$tmp/fourth.out" || { cat "$tmp/fourth.out"; false; }'
check "the collector logs it with the reason" 'grep -qF "closing: $why" "$tmp/collector.log"'
lg_bg "$tmp/other.out" other --agents 1 --pages 5 --hold --host other
hold2_pid=$bg_pid
wait_lines "$tmp/other.out" ': holding$' 1
check "meanwhile certificate other connects" 'grep -q ": holding$" "$tmp/other.out"'
lg other --agents 1 --pages 5 --host other > "$tmp/other2.out" 2>&1
rc=$?
why="hello: 4 agent connections established already, the most the collector takes (--max-agent-conns)"
check "past --max-agent-conns the next is refused, naming the cap" \
	'[ "$rc" != 0 ] && grep -qF "refused: $why" "$tmp/other2.out" || { cat "$tmp/other2.out"; false; }'
kill "$hold2_pid"; wait "$hold2_pid" 2>/dev/null
hold2_pid=
wait_lines "$tmp/collector.log" "agent other disconnected before DONE" 1
lg other --agents 1 --pages 5 --host other > "$tmp/other3.out" 2>&1
check "once one closed, other is served again" '[ $? = 0 ] || { cat "$tmp/other3.out"; false; }'

exit $failed
