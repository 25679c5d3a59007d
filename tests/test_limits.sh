#!/bin/bash
# The collector's memory stays bounded whatever agents declare and send
# (issue 14), with bench/loadgen's simulated agents over mutual TLS:
#  1. 16 agents declaring 128 MiB pages are refused, the ERROR naming the
#     1 MiB frame limit on both sides (agent output, collector log);
#  2. 16 agents declaring 1 MiB pages, one 100-byte page each, are stored:
#     buffers follow what arrives, not what a HELLO declares;
#  3. 64 agents stall in the middle of a 1 MiB page frame: with
#     --input-memory 2M, two such frames are read and the other connections
#     wait unread (TCP pushes back), while an agent from another address
#     (127.0.0.2) is served meanwhile.
# Memory is VmRSS after a warm-up agent against VmHWM after each step
# (/proc/PID/status): a bound on bytes, not on time. In a build with
# AddressSanitizer (redzones, shadow memory, its quarantine of freed
# blocks) RSS says nothing about what the collector holds: there the
# figures are printed, not checked; the plain build checks them.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_lock
tc_setup limits stall_pid collector_pid
ulimit -n 4096 2>/dev/null
tc_certs
tc_start_collector --input-memory 2M

lg() {
	"$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
		--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" \
		--data "$top_srcdir/tests/data" "$@"
}
kb() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$collector_pid/status"; }

lg --agents 1 --pages 20 --name warm > "$tmp/warm.out" 2>&1
rc=$?
check "a warm-up agent is stored" '[ "$rc" = 0 ]'
base=$(kb VmRSS)
echo "collector VmRSS after the warm-up: $base kB"

# 1. page size over the frame limit
lg --agents 16 --pages 1 --page-size 134217728 --page-bytes 100 --name huge \
	> "$tmp/huge.out" 2>&1
n=$(grep -c "refused: hello: page_size 134217728 is over the largest frame (1048576 bytes)" \
	"$tmp/huge.out")
check "16 agents declaring 128 MiB pages get an ERROR naming the limit ($n)" '[ "$n" = 16 ]'
n=$(grep -c "closing: hello: page_size 134217728 is over the largest frame (1048576 bytes)" \
	"$tmp/collector.log")
check "the collector logs the 16 refusals with the reason ($n)" '[ "$n" = 16 ]'

# 2. at the limit, 100-byte pages
lg --agents 16 --pages 1 --page-size 1048576 --page-bytes 100 --name cap \
	> "$tmp/cap.out" 2>&1
rc=$?
check "16 agents declaring 1 MiB pages get a DONE for their 100-byte page" '[ "$rc" = 0 ]'
n=$(traceq --stats | sed -n 's/^host=\(cap-[0-9]*\) .*/\1/p' | sort -u | wc -l)
check "16 hosts known ($n)" '[ "$n" = 16 ]'
hwm=$(kb VmHWM)
tc_check_memory "VmHWM $hwm kB stays within 16 MiB of $base kB" '[ $((hwm - base)) -lt 16384 ]'

# 3. frames stalled mid-way share --input-memory
lg --agents 64 --pages 1 --page-size 1048576 --stall --name stall > "$tmp/stall.out" 2>&1 &
stall_pid=$!
# until the collector says connections wait for input memory (bounded), or
# (without the bound) every stalled frame was written, i.e. taken in
for _ in $(seq 1200); do
	grep -q "input memory full" "$tmp/collector.log" && break
	[ "$(grep -c ': stalled$' "$tmp/stall.out")" = 64 ] && break
	kill -0 "$stall_pid" 2>/dev/null || break
	sleep 0.1
done
check "the collector waits for input memory" 'grep -q "input memory full" "$tmp/collector.log"'
lg --bind 127.0.0.2 --agents 1 --pages 20 --name other > "$tmp/other.out" 2>&1
rc=$?
check "meanwhile an agent from 127.0.0.2 is stored" '[ "$rc" = 0 ]'
n=$(grep -c ': stalled$' "$tmp/stall.out")
check "not every stalled frame was taken in ($n of 64)" '[ "$n" -lt 64 ]'
hwm=$(kb VmHWM)
tc_check_memory "VmHWM $hwm kB stays within 40 MiB of $base kB (64 MiB were sent)" \
	'[ $((hwm - base)) -lt 40960 ]'

kill "$stall_pid"; wait "$stall_pid" 2>/dev/null
stall_pid=
kill "$collector_pid"; wait "$collector_pid"; rc=$?
collector_pid=
check "collector exits 0 on SIGTERM" '[ "$rc" = 0 ]'
if [ "$failed" != 0 ]; then
	for f in huge cap stall other; do echo "--- loadgen $f"; tail -5 "$tmp/$f.out"; done
	echo "--- collector log"; tail -40 "$tmp/collector.log"
	exit 1
fi
echo "PASS: limits"
