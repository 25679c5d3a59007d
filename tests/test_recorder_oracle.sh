#!/bin/bash
# What one flight recorder should hold, by the kernel's own answer (issue
# 38: "a kernel instance of our own in overwrite mode, with the same size
# and events, frozen at the same moment, is the oracle"): a collector
# (real certificates, SQLite) and one armed agent, rec-o
# (--flight-recorder 1, sched_switch and sys_enter, --no-comm-events,
# --trace-clock mono, --freeze-on 'sched_switch where prev_comm ==
# "tcor-PID"') in a tracefs instance of its own; beside it the oracle, an
# instance the test makes with what the agent's instance has: the same
# buffer_size_kb, buffer_subbuf_size_kb, trace_clock and events, options/
# overwrite 1, and the same `traceoff if prev_comm == "tcor-PID"` on
# sched_switch. A workload wraps both buffers; a copy of sleep named
# tcor-PID switches out once: the kernel freezes both at that event.
#
# Asserts:
#  - the agent's instance has what the oracle copies (overwrite, the
#    buffer of --flight-recorder 1, the mono clock, the two events, the
#    same trigger line), and both buffers wrapped before the trigger;
#  - the trigger froze the oracle (tracing_on 0) and took one snapshot,
#    done, with events;
#  - the snapshot's stored events (traceq --snapshot-id N -f json) against
#    the oracle's buffer (trace-cmd extract -B, trace-cmd report -t), per
#    CPU, over the span both hold (from the later side's first event to
#    the trigger), events matched by order of (event, pid), not by time:
#    the two instances stamp an event apart, by as much as an interrupt
#    between the tracepoint's two probes takes (tests/oracle_compare.py
#    says how, and where the span's edges are): 0 events missing either
#    way, none after the trigger but those written while the two stopped
#    (between the two trigger stamps), the trigger event the same on both
#    and the last of its CPU on both;
#  - the comparison can fail: the oracle with 100 events of a CPU taken
#    out of the span's middle (a lost page's hole) is found 100 short.
# Prints the figures per CPU: events compared, the span, the events one
# side kept before it, the largest difference between an event's two
# stamps.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd > /dev/null || skip "needs trace-cmd (apt-get install trace-cmd; ./setup deps)"
tc_lock
tc_setup recorder-oracle workload agent collector_pid
inst="tc_ro_$$"
oracle="tc_ro_oracle_$$"
fire="tcor-$$"
otrig="traceoff if prev_comm == \"$fire\""
oracle_cleanup() {
	[ -n "${TC_KEEP_LOGS:-}" ] && cp "$tmp"/*.log "$tmp"/*.err "$tmp"/*.txt "$tmp"/*.json "$TC_KEEP_LOGS/" 2>/dev/null
	tc_cleanup
	if [ -d "$tracing/instances/$oracle" ]; then
		echo "!$otrig" > "$tracing/instances/$oracle/events/sched/sched_switch/trigger" 2>/dev/null
		rmdir "$tracing/instances/$oracle"
	fi
	rmdir "$tracing/instances/$inst-freezewatch" "$tracing/instances/$inst" 2>/dev/null
}
trap oracle_cleanup EXIT

tc_certs
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"
tc_start_collector --query "ipc://$sock"
tq_root() { "$top_builddir/traceq/traceq" -s "ipc://$sock" -t 120000 --sync "$@"; }
cp "$(command -v sleep)" "$tmp/$fire"

( while :; do sleep 0.001; done ) &
workload=$!
tc_start_agent rec-o --name rec-o --instance "$inst" -e sched:sched_switch \
	-e raw_syscalls:sys_enter --no-comm-events --no-user --trace-clock mono \
	--flight-recorder 1 --freeze-on "sched_switch where prev_comm == \"$fire\""
for _ in $(seq 100); do
	grep -q "flight recorder: .* MiB per CPU" "$tmp/rec-o.err" &&
		tq_root --hosts 2>/dev/null | grep -q '^rec-o  *yes ' && break
	sleep 0.1
done
check "the recorder is armed and connected" \
	'tq_root --hosts | grep -q "^rec-o  *yes " || { cat "$tmp/rec-o.err"; false; }'

# ---- the oracle: what the agent's instance has ----
ai=$tracing/instances/$inst
oi=$tracing/instances/$oracle
# knob DIR FILE: the file's value (a trace_clock's bracketed name)
knob() { sed -n 's/.*\[\(.*\)\].*/\1/p;t;p' "$1/$2"; }
a_kb=$(knob "$ai" buffer_size_kb) a_sub=$(knob "$ai" buffer_subbuf_size_kb 2>/dev/null)
a_clock=$(knob "$ai" trace_clock) a_events=$(sort "$ai/set_event" | tr '\n' ' ')
a_trig=$(cat "$ai/events/sched/sched_switch/trigger")
echo "info: the agent's instance: buffer_size_kb $a_kb, sub-buffer ${a_sub:-none} KiB," \
	"clock $a_clock, events $a_events, trigger '$a_trig'"
check "the agent's instance: overwrite, 1 MiB per CPU, mono, sched_switch and sys_enter only" \
	'[ "$(cat "$ai/options/overwrite")" = 1 ] && [ "$a_kb" -ge 1024 ] && [ "$a_clock" = mono ] &&
	 [ "$a_events" = "raw_syscalls:sys_enter sched:sched_switch " ]'
mkdir "$oi" || { echo "FAIL: cannot make the oracle instance $oracle"; exit 1; }
if [ -n "$a_sub" ] && [ "$(cat "$oi/buffer_subbuf_size_kb")" != "$a_sub" ]; then
	echo "$a_sub" > "$oi/buffer_subbuf_size_kb"
fi
echo 0 > "$oi/tracing_on"
echo 1 > "$oi/options/overwrite"
echo "$a_clock" > "$oi/trace_clock"
echo "$a_kb" > "$oi/buffer_size_kb"
echo "$otrig" > "$oi/events/sched/sched_switch/trigger"
for e in sched/sched_switch raw_syscalls/sys_enter; do echo 1 > "$oi/events/$e/enable"; done
echo 1 > "$oi/tracing_on"
# shellcheck disable=SC2034 # o_events: read in check's test
o_events=$(sort "$oi/set_event" | tr '\n' ' ')
check "the oracle has the agent's size, sub-buffer, clock, events and trigger" \
	'[ "$(knob "$oi" buffer_size_kb)" = "$a_kb" ] && [ "$(knob "$oi" trace_clock)" = "$a_clock" ] &&
	 [ -z "$a_sub" -o "$(knob "$oi" buffer_subbuf_size_kb)" = "$a_sub" ] &&
	 [ "$o_events" = "$a_events" ] &&
	 [ "$(cat "$oi/events/sched/sched_switch/trigger")" = "$a_trig" ]'

# overrun DIR: the CPUs whose buffer wrapped (overrun > 0), and of how many
wrapped() {
	local n=0 w=0 f
	for f in "$1"/per_cpu/cpu*/stats; do
		n=$((n + 1))
		[ "$(sed -n 's/^overrun: //p' "$f")" -gt 0 ] && w=$((w + 1))
	done
	echo "$w/$n"
}
for _ in $(seq 300); do
	wa=$(wrapped "$ai") wo=$(wrapped "$oi")
	[ "${wa%/*}" = "${wa#*/}" ] && [ "${wo%/*}" = "${wo#*/}" ] && break
	sleep 0.1
done
check "both buffers wrapped on every CPU before the trigger (agent $wa, oracle $wo)" \
	'[ "${wa%/*}" = "${wa#*/}" ] && [ "${wo%/*}" = "${wo#*/}" ]'

# ---- the trigger ----
"$tmp/$fire" 0.01
. "$top_srcdir/tests/recorder_lib.sh"	# snaps_json, snap_field, snap_of
for _ in $(seq 200); do
	snaps_json
	id=$(snap_of "trigger sched_switch on rec-o")
	[ -n "$id" ] && [ "$(snap_field "$id" rec-o done)" = 1 ] && break
	sleep 0.1
done
events=$(snap_field "${id:-0}" rec-o events)
check "the trigger took snapshot ${id:-none}: done, with events (${events:-none})" \
	'[ -n "$id" ] && [ "$(snap_field "$id" rec-o done)" = 1 ] && [ "${events:-0}" -gt 0 ]'
check "the trigger froze the oracle too (tracing_on $(cat "$oi/tracing_on"))" \
	'[ "$(cat "$oi/tracing_on")" = 0 ]'
kill "$workload"; wait "$workload" 2>/dev/null
workload=

# ---- compare ----
(cd "$tmp" && trace-cmd extract -B "$oracle" -o "$tmp/oracle.dat") > "$tmp/extract.log" 2>&1
trace-cmd report -t -i "$tmp/oracle.dat" > "$tmp/oracle.txt" 2> "$tmp/report.log"
check "the oracle's buffer read (trace-cmd extract, report: $(grep -c ': sched_switch: \|: sys_enter: ' "$tmp/oracle.txt") events)" \
	'grep -q ": sys_enter: " "$tmp/oracle.txt" || { tail -5 "$tmp/extract.log" "$tmp/report.log"; false; }'
tq_root --snapshot-id "${id:-0}" -f json "sched_switch,sys_enter" > "$tmp/snap.json" 2> "$tmp/snap.err"
n=$(grep -c '^{"event":' "$tmp/snap.json")	# not its lost_events markers
check "the snapshot's events read back ($n, its row says ${events:-none})" '[ "$n" = "${events:-x}" ]'
python3 "$top_srcdir/tests/oracle_compare.py" "$tmp/oracle.txt" "$tmp/snap.json" "$fire" \
	> "$tmp/compare.txt"; rc=$?
sed 's/^/info: /' "$tmp/compare.txt"
check "snapshot ${id:-none} holds what the oracle holds: $(tail -n 1 "$tmp/compare.txt")" '[ "$rc" = 0 ]'
# the same comparison, the oracle with a hole of 100 events in CPU 0's span
python3 "$top_srcdir/tests/oracle_compare.py" --drop 0:100 "$tmp/oracle.txt" "$tmp/snap.json" \
	"$fire" > "$tmp/hole.txt"; rc=$?
check "... and a hole of 100 oracle events is seen: 100 missing ($(grep '^cpu 0:' "$tmp/hole.txt"))" \
	'[ "$rc" = 1 ] && grep -q "^cpu 0: .* missing_from_snapshot=0 missing_from_oracle=100 " "$tmp/hole.txt"'

kill -INT "$agent"; wait "$agent"; rc=$?
agent=
check "rec-o exits 0 (exit $rc: $(tail -n 2 "$tmp/rec-o.err"))" '[ "$rc" = 0 ]'
check "the agent's instances are gone" '! ls -d "$ai" "$ai-freezewatch" 2>/dev/null'
exit "$failed"
