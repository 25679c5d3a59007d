#!/bin/bash
# Filter push-down end to end: a real tracecollectd with a server-side
# filter, real traceagents in tracefs instances of their own, real kernel
# sched_switch events, a real SQLite file.
#
# Asserts: with 'sched:sched_switch prev_comm == "sleep"' (the switches of
# a workload of sleeps, so the test needs no idle CPU) the collector pushes the
# filter down to an agent that offers it (its instance's filter file holds
# it, the collector logs that the kernel took it) but not to one started
# with --no-pushdown; the two agents, tracing the same kernel at the same
# time, store exactly the same rows where their runs overlap, and the
# pushed-down one ships fewer events; SIGHUP that changes the filter, then
# removes it, updates a streaming agent's instance (and "none" after the
# removal) without reconnecting it; a filter our grammar takes but the
# kernel refuses (a string value without quotes) is reported with the
# kernel's message, and the collector still enforces it; a suffix glob on a
# fixed char array, which the kernel evaluates otherwise, is not pushed and
# stores the same events with push-down offered or not, while a prefix glob
# is pushed.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup pushdown workload agent collector_pid

tc_certs
cat > "$tmp/collector.conf" <<CONF
filter = sched:sched_switch prev_comm == "sleep"
CONF
tc_start_collector -C "$tmp/collector.conf"

inst() { echo "tc-pushdown-$$-$1"; }
filter_file() { echo "$tracing/instances/$(inst "$1")/events/sched/sched_switch/filter"; }
agent() {	# agent NAME DURATION [ARGS...]; with BG=1 in the background (agent its pid)
	local name=$1 duration=$2 run=tc_run_agent
	shift 2
	[ -n "${BG:-}" ] && run=tc_start_agent
	$run "$name" -e sched:sched_switch --duration "$duration" --name "$name" --no-user \
		--instance "$(inst "$name")" "$@"
}
shipped() { sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/$1.out"; }
dropped() {	# dropped HOST: sched_switch events the collector's filter dropped
	traceq --drops | sed -n "s/^host=$1 system=sched event=sched_switch reason=filter count=\([0-9]*\)$/\1/p"
}
# wait_file NAME PATTERN: until the filter file of NAME's instance matches
wait_file() {
	for _ in $(seq 100); do
		grep -q "$2" "$(filter_file "$1")" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# rows HOST: "trace_ts cpu prev_pid next_pid" of its stored sched_switch rows
rows() {
	traceq -H "$1" --format json "sched_switch" |
		sed -n 's/.*"cpu":\([0-9]*\),.*"trace_ts":\([0-9]*\),.*"prev_pid":\([0-9-]*\),.*"next_pid":\([0-9-]*\),.*/\2 \1 \3 \4/p' |
		sort -n
}
busy() { ( while :; do sleep 0.003; done ) & workload=$!; }

# 1. Same kernel, same time: pushed down (a) and collector-only (b).
busy
BG=1 agent a 4; pid_a=$agent
BG=1 agent b 4 --no-pushdown; pid_b=$agent
wait_file a '^prev_comm == "sleep"'; seen_a=$?
filter_b=$(cat "$(filter_file b)" 2>/dev/null)
wait "$pid_a"; rc_a=$?
wait "$pid_b"; rc_b=$?; agent=
check "agent a exits 0" '[ "$rc_a" = 0 ] || { cat "$tmp/a.err"; false; }'
check "agent b exits 0" '[ "$rc_b" = 0 ] || { cat "$tmp/b.err"; false; }'
check "a's instance filter file holds the pushed filter" '[ "$seen_a" = 0 ]'
check "b's instance (--no-pushdown) has no filter (${filter_b:-gone})" '[ "$filter_b" = none ]'
check "collector logs that a's kernel took it" \
	'grep -q "host a: sched:sched_switch: the kernel took filter .prev_comm == .sleep.." "$tmp/collector.log"'
check "nothing was pushed to b" '! grep -q "host b: sched:sched_switch: the kernel" "$tmp/collector.log"'
check "a's agent logs the filter it set" 'grep -q "filter .prev_comm == .sleep.. set in the instance" "$tmp/a.err"'
ship_a=$(shipped a); ship_b=$(shipped b)
echo "shipped: pushed down a=$ship_a, collector-only b=$ship_b"
check "a shipped fewer events than b" '[ -n "$ship_a" ] && [ -n "$ship_b" ] && [ "$ship_a" -lt "$ship_b" ]'
# (the collector's filter may have dropped none of a's: the agent answers
# the collector's clock probes before its first page, so the pushed filter
# can be in the kernel before any event is shipped)
drop_a=$(dropped a)
check "a: stored + dropped here (${drop_a:-0}) == shipped" \
	'[ $(( $(traceq -H a --count "*") + ${drop_a:-0} )) = "$ship_a" ]'
rows a > "$tmp/rows_a"
rows b > "$tmp/rows_b"
check "every stored row of a and b is a sleep's" \
	'[ "$(traceq -H "[ab]" --count "sched_switch where prev_comm != \"sleep\"")" = 0 ]'
# The runs overlap in [max(first), min(last)]: each stored every switch
# of a sleep in its own run, so there both hold the same events. Each
# instance stamps an event with its own clock read (microseconds apart), so
# the window's ends go in the middle of quiet gaps (> 1 ms) and rows compare
# without their time, per CPU in time order.
lo=$(sort -n <(head -1 "$tmp/rows_a") <(head -1 "$tmp/rows_b") | tail -1 | cut -d' ' -f1)
hi=$(sort -n <(tail -1 "$tmp/rows_a") <(tail -1 "$tmp/rows_b") | head -1 | cut -d' ' -f1)
read -r L H < <(awk -v lo="$lo" -v hi="$hi" '
	NR > 1 && $1 - t > 1000000 && t >= lo && $1 <= hi { m = (t + $1) / 2; if (!L) L = m; H = m }
	{ t = $1 }
	END { printf "%.0f %.0f\n", L, H }' "$tmp/rows_a")
win() { awk -v L="$L" -v H="$H" '$1 > L && $1 < H { print $2, $3, $4 }' "$1" | sort -s -n -k1,1; }
n_win=$(win "$tmp/rows_a" | wc -l)
echo "overlap: $n_win rows of a in ($L, $H)"
check "the overlap holds rows ($n_win)" '[ "$n_win" -gt 10 ]'
check "stored rows with push-down == collector-only rows in the overlap" \
	'diff <(win "$tmp/rows_a") <(win "$tmp/rows_b") > "$tmp/rows.diff" || { head "$tmp/rows.diff"; false; }'

# 2. SIGHUP while an agent streams: change, then remove the filter.
BG=1 agent c 60
wait_file c '^prev_comm == "sleep"'; got=$?
check "c got the filter" '[ "$got" = 0 ]'
echo 'filter = sched:sched_switch next_comm == "sleep"' > "$tmp/collector.conf"
kill -HUP "$collector_pid"
wait_file c '^next_comm == "sleep"'; got=$?
check "SIGHUP with a changed filter updates c's instance" '[ "$got" = 0 ]'
: > "$tmp/collector.conf"
kill -HUP "$collector_pid"
wait_file c "^none"; got=$?
check "SIGHUP without the filter clears c's instance" '[ "$got" = 0 ]'
# the agent clears its instance, then reports it: the collector's line can
# come a little after the file changes
for _ in $(seq 100); do
	grep -q "host c: sched:sched_switch: filter cleared in the agent" "$tmp/collector.log" && break
	sleep 0.1
done
check "collector logs the clear" \
	'grep -q "host c: sched:sched_switch: filter cleared in the agent" "$tmp/collector.log"'

# 3. A filter the kernel refuses: reported, and still enforced here.
echo 'filter = sched:sched_switch prev_comm != sleep' > "$tmp/collector.conf"
kill -HUP "$collector_pid"
for _ in $(seq 100); do grep -q "host c: .*refused" "$tmp/collector.log" && break; sleep 0.1; done
check "c: the kernel's refusal is logged with its message" \
	'grep -A3 "host c: sched:sched_switch: the kernel refused filter .prev_comm != sleep." "$tmp/collector.log" | grep -q "did you forget quotes"'
kill -TERM "$agent"; wait "$agent"; rc=$?; agent=
check "c exits 0 (never reconnected)" '[ "$rc" = 0 ] && [ "$(grep -c "agent c (" "$tmp/collector.log")" = 1 ]'
agent d 3; rc=$?
kill "$workload"; wait "$workload" 2>/dev/null; workload=
check "agent d exits 0" '[ "$rc" = 0 ] || { cat "$tmp/d.err"; false; }'
check "d: the refusal is logged" 'grep -q "host d: sched:sched_switch: the kernel refused" "$tmp/collector.log"'
check "d's agent logs the refusal" 'grep -q "the kernel refused filter" "$tmp/d.err"'
stored_d=$(traceq -H d --count '*')	# with the agent's task name events
dropped_d=$(dropped d)
echo "d: shipped=$(shipped d) stored=$stored_d dropped=$dropped_d"
check "d: rows stored" '[ "$stored_d" -gt 0 ]'
check "d: no stored row is a sleep's (the collector enforced it)" \
	'[ "$(traceq -H d --count "sched_switch where prev_comm == \"sleep\"")" = 0 ]'
check "d: the collector dropped the sleeps' switches" '[ -n "$dropped_d" ] && [ "$dropped_d" -gt 0 ]'
check "d: stored + dropped == shipped" '[ $((stored_d + dropped_d)) = "$(shipped d)" ]'

# 4. Push down only what the kernel evaluates as we do. For a fixed char[16]
# like next_comm the kernel matches '~ "*suffix"' against the array's last
# bytes, so "pdPID.sh" never ends in ".sh" there: pushed down, that filter
# would drop every event the collector keeps. A workload whose comm ends in
# the suffix runs wholly while two agents trace the same kernel, one
# offering push-down (e), one not (f): both must store the same events.
# Then a prefix glob, which the kernel evaluates as we do, is pushed to e.
reloads() { grep -c "reload: .* filter rule(s) in effect" "$tmp/collector.log"; }
reload() {	# reload RULE: SIGHUP with RULE as the only filter, until it is in effect
	local n
	n=$(reloads)
	echo "filter = sched:sched_switch $1" > "$tmp/collector.conf"
	kill -HUP "$collector_pid"
	for _ in $(seq 100); do [ "$(reloads)" -gt "$n" ] && return 0; sleep 0.1; done
	return 1
}
tracing_on() {	# until NAME's instance traces (every event enabled, readers in place)
	for _ in $(seq 100); do
		[ "$(cat "$tracing/instances/$(inst "$1")/tracing_on" 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}
wait_log() {	# wait_log PATTERN: until the collector's log has it
	for _ in $(seq 100); do grep -q "$1" "$tmp/collector.log" && return 0; sleep 0.1; done
	return 1
}
comm="pd$$.sh"		# at most 15 bytes, not ending in the array's last byte
printf '#!/bin/bash\nfor i in $(seq 20); do sleep 0.01; done\n' > "$tmp/$comm"
chmod +x "$tmp/$comm"
reload "next_comm ~ \"*$$.sh\""; got=$?
check "the suffix glob is in effect" '[ "$got" = 0 ]'
BG=1 agent e 600; pid_e=$agent
BG=1 agent f 600 --no-pushdown; pid_f=$agent
tracing_on e; on_e=$?
tracing_on f; on_f=$?
wait_log "host e: sched:sched_switch: \(the kernel took filter\|filter .* is not pushed down\)"
check "e and f trace" '[ "$on_e" = 0 ] && [ "$on_f" = 0 ]'
filter_e=$(cat "$(filter_file e)" 2>/dev/null)
check "e's instance has no filter for the suffix glob (${filter_e:-gone})" '[ "$filter_e" = none ]'
check "the collector says why it keeps the suffix glob" \
	'grep -q "host e: sched:sched_switch: filter .next_comm ~ .\*$$.sh.. is not pushed down: a .\*suffix. glob on a fixed char array" "$tmp/collector.log"'
"$tmp/$comm"
reload "next_comm ~ \"pd$$*\""; got=$?
wait_file e "^next_comm ~ \"pd$$\*\""; pushed=$?
check "the prefix glob is pushed to e's instance" '[ "$got" = 0 ] && [ "$pushed" = 0 ]'
check "the collector logs that e's kernel took it" \
	'grep -q "host e: sched:sched_switch: the kernel took filter .next_comm ~ .pd$$\*.." "$tmp/collector.log"'
"$tmp/$comm"
kill -TERM "$pid_e" "$pid_f"
wait "$pid_e"; rc_e=$?
wait "$pid_f"; rc_f=$?; agent=
check "e and f exit 0" '[ "$rc_e" = 0 ] && [ "$rc_f" = 0 ] || { cat "$tmp/e.err" "$tmp/f.err"; false; }'
stored_e=$(traceq -H e --count sched_switch)
stored_f=$(traceq -H f --count sched_switch)
echo "switches to $comm stored: push-down offered e=$stored_e, collector-only f=$stored_f"
check "f stored the workload's switches" '[ "$stored_f" -gt 0 ]'
check "push-down stores the same: e == f" '[ "$stored_e" = "$stored_f" ]'
check "every stored row of e and f is the workload's" \
	'[ "$(traceq -H "[ef]" --count "sched_switch where next_comm != \"$comm\"")" = 0 ]'

check "no tracefs instance left behind" '! ls "$tracing/instances" | grep -q "^tc-pushdown-$$-"'
kill "$collector_pid"; wait "$collector_pid"; rc=$?
collector_pid=
check "collector exits 0 on SIGTERM" '[ "$rc" = 0 ]'

if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	exit 1
fi
echo "PASS: filter push-down"
