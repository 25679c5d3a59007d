#!/bin/sh
# capture.sh - record the real ring-buffer pages tests/test_decode.c and
# tests/test_store.c decode.
#
# Creates a tracefs instance of its own (removed on exit, whatever happens),
# enables sched:sched_switch and sched:sched_wakeup on the mono clock, writes
# 20 markers "tc-marker-NN" to the instance's trace_marker (ftrace:print
# records them) between short sleeps, stops tracing, saves the kernel's
# per-CPU entry counts, the header_page and format texts and every CPU's raw
# pages. Run it as root from anywhere; it writes next to itself.
#
#   tests/data/capture.sh            # rewrites tests/data/{*.format,cpu*.raw,...}
#
# Output (all in the script's directory):
#   header_page                 events/header_page
#   sched_switch.format, sched_wakeup.format, print.format
#   cpuN.raw                    per_cpu/cpuN/trace_pipe_raw, whole pages
#   capture.txt                 key=value lines: pid (the marker writer),
#                               page_size, long_size, ncpus, cpuN_entries,
#                               markers
set -eu

T=${TRACEFS:-/sys/kernel/tracing}
OUT=$(cd "$(dirname "$0")" && pwd)
I="$T/instances/tc-capture-$$"
NMARKERS=20

cleanup() {
	if [ -d "$I" ]; then
		echo 0 > "$I/tracing_on" 2>/dev/null || true
		echo 0 > "$I/events/enable" 2>/dev/null || true
		rmdir "$I"
	fi
}
trap cleanup EXIT INT TERM

mkdir "$I"
echo 0 > "$I/tracing_on"
echo mono > "$I/trace_clock"
echo 1 > "$I/events/sched/sched_switch/enable"
echo 1 > "$I/events/sched/sched_wakeup/enable"
echo 1 > "$I/tracing_on"

i=1
while [ $i -le $NMARKERS ]; do
	# printf is a shell builtin: the event's common_pid is this shell's pid.
	printf 'tc-marker-%02d' "$i" > "$I/trace_marker"
	sleep 0.01
	i=$((i + 1))
done
echo 0 > "$I/tracing_on"

ncpus=$(ls -d "$I"/per_cpu/cpu* | wc -l)
page_size=$(( $(cat "$I/buffer_subbuf_size_kb" 2>/dev/null || echo 4) * 1024 ))
long_size=$(getconf LONG_BIT)
long_size=$((long_size / 8))
{
	echo "pid=$$"
	echo "page_size=$page_size"
	echo "long_size=$long_size"
	echo "ncpus=$ncpus"
	echo "markers=$NMARKERS"
	n=0
	while [ $n -lt "$ncpus" ]; do
		e=$(sed -n 's/^entries: *//p' "$I/per_cpu/cpu$n/stats")
		echo "cpu${n}_entries=$e"
		n=$((n + 1))
	done
} > "$OUT/capture.txt"

cp "$T/events/header_page" "$OUT/header_page"
cp "$I/events/sched/sched_switch/format" "$OUT/sched_switch.format"
cp "$I/events/sched/sched_wakeup/format" "$OUT/sched_wakeup.format"
cp "$I/events/ftrace/print/format" "$OUT/print.format"
chmod 644 "$OUT/header_page" "$OUT"/*.format

n=0
while [ $n -lt "$ncpus" ]; do
	dd if="$I/per_cpu/cpu$n/trace_pipe_raw" of="$OUT/cpu$n.raw" \
	   bs="$page_size" iflag=nonblock status=none 2>/dev/null || true
	n=$((n + 1))
done
