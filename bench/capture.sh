#!/bin/sh
# capture.sh OUTDIR - record real ring-buffer pages of a varied workload for
# `bench/run ingest`: sched (switch, wakeup, waking), irq, timer and
# raw_syscalls events in a tracefs instance of our own (removed on exit),
# written as tests/data/capture.sh lays them out (capture.txt, header_page,
# cpuN.raw) plus every enabled event's format and formats.txt listing them.
# Then `trace-cmd record` traces the same events and workload into
# OUTDIR/trace.dat, the peer trace-cmd report decodes.
set -eu

T=${TRACEFS:-/sys/kernel/tracing}
OUT=$1
I="$T/instances/tc-bench-$$"
EVENTS="sched/sched_switch sched/sched_wakeup sched/sched_waking irq timer raw_syscalls"

cleanup() {
	if [ -d "$I" ]; then
		echo 0 > "$I/tracing_on" 2>/dev/null || true
		echo 0 > "$I/events/enable" 2>/dev/null || true
		rmdir "$I"
	fi
}
trap cleanup EXIT INT TERM

mkdir -p "$OUT"
cat > "$OUT/workload.sh" <<'W'
for _ in 1 2 3 4; do
	dd if=/dev/zero bs=4k count=1000 status=none | cat > /dev/null &
	( for _ in $(seq 300); do sleep 0.001; done ) &
done
wait
W
workload() { sh "$OUT/workload.sh"; }
mkdir "$I"
echo 0 > "$I/tracing_on"
echo mono > "$I/trace_clock"
echo 1024 > "$I/buffer_size_kb"
for e in $EVENTS; do echo 1 > "$I/events/$e/enable"; done
echo 1 > "$I/tracing_on"
workload
echo 0 > "$I/tracing_on"

ncpus=$(ls -d "$I"/per_cpu/cpu* | wc -l)
{
	echo "page_size=$(( $(cat "$I/buffer_subbuf_size_kb" 2>/dev/null || echo 4) * 1024 ))"
	echo "long_size=$(( $(getconf LONG_BIT) / 8 ))"
	echo "ncpus=$ncpus"
} > "$OUT/capture.txt"
cp "$T/events/header_page" "$OUT/header_page"
: > "$OUT/formats.txt"
for f in "$I"/events/*/*/format; do
	d=${f%/format}; name=${d##*/}; sys=${d%/*}; sys=${sys##*/}
	[ -f "$d/enable" ] && [ "$(cat "$d/enable")" = 1 ] || continue
	cp "$f" "$OUT/$sys.$name.format"
	echo "$sys $name $sys.$name.format" >> "$OUT/formats.txt"
done
n=0
while [ $n -lt "$ncpus" ]; do
	dd if="$I/per_cpu/cpu$n/trace_pipe_raw" of="$OUT/cpu$n.raw" bs=4096 \
	   iflag=nonblock status=none 2>/dev/null || true
	n=$((n + 1))
done

# The peer: trace-cmd records the same events and workload.
set --
for e in $EVENTS; do set -- "$@" -e "$(echo "$e" | tr / :)"; done
# (-d --no-filter: this kernel refuses trace-cmd's function-tracer and pid
# filter set-up; neither matters for events.)
# trace-cmd records in the top-level instance and leaves its buffer size,
# clock and tracing_on changed: put back what it found.
T=/sys/kernel/tracing
top_on=$(cat "$T/tracing_on")
# "7 (expanded: 1408)": a buffer not yet allocated; put back its real size
top_kb=$(sed -E 's/.*expanded: ([0-9]+).*/\1/; s/ .*//' "$T/buffer_size_kb")
top_clock=$(sed 's/.*\[\(.*\)\].*/\1/' "$T/trace_clock")
trace-cmd record -d --no-filter -C mono -b 1024 "$@" -o "$OUT/trace.dat" \
	sh "$OUT/workload.sh" > "$OUT/trace-cmd.log" 2>&1 || true
echo "$top_kb" > "$T/buffer_size_kb" 2>/dev/null || true
echo "$top_clock" > "$T/trace_clock" 2>/dev/null || true
echo "$top_on" > "$T/tracing_on" 2>/dev/null || true
# it may complain while resetting the function tracer at the end; the file counts
[ -s "$OUT/trace.dat" ] || echo "capture.sh: trace-cmd record failed (see $OUT/trace-cmd.log)" >&2
