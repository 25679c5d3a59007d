#!/bin/bash
# The fleet flight recorder (issue 38), by hand: a collector (its ipc
# query socket for root, its TLS query port for the certificates alice and
# bob, `snapshot = cert:alice rec-1,rec-2`, `freeze-group = g rec-g*`) and
# three armed agents, rec-1 to rec-3 (traceagent --flight-recorder 1: 1 MiB
# per CPU in overwrite mode), each tracing sched_switch and sys_enter
# (enough to wrap 1 MiB per CPU in a few seconds) in a tracefs instance of
# its own while a workload switches.
#
# Asserts:
#  - armed, the agents ship no page: the collector received none of them
#    (--stats pages);
#  - refused: bob (no snapshot line) may not, alice may not with a -H
#    that reaches rec-3 (outside her right); nothing was frozen then;
#  - root's --snapshot freezes all three (snapshot 1, its reason and who in
#    --snapshots); each host's row is done, with a window (first_ts <=
#    last_ts), pages, events > 0 and its loss (the kernel's overrun: the
#    1 MiB buffers wrapped, so > 0 on at least one);
#  - every agent's events are stored: per host, the events stored equal
#    the events its snapshot row says it shipped;
#  - alice's --snapshot -H 'rec-[12]' (snapshot 2) freezes rec-1 and rec-2
#    only, who "cert alice";
#  - --snapshot-id N selects exactly snapshot N's events: for N = 1 and 2
#    the rows --snapshot-id N prints, per host, are the events its row
#    says, and together all that was stored;
#  - a snapshot exports: snapshot 2 as trace.dat (trace-cmd report reads
#    each host's events back) and for Perfetto (each host's sched_switch
#    lines);
#  - kill -9 of the collector right after snapshot 3's agents said they
#    shipped it, then a restart on the same database and journal:
#    snapshot 3's rows and events are all there (replayed from the journal).
# Then by an event: three new recorders of group g (rec-g1 to rec-g3: the
# collector's --freeze-group 'g rec-g*'; each claims it too; rec-g3 without
# sched_switch), only
# rec-g1 with --freeze-on 'sched_switch where prev_comm == "tcfire-PID" &&
# prev_state == 1' (asleep: not the switch out as it exits, which a thaw
# faster than the program's 10 ms would take for a second trigger); a
# program of that name sleeps once:
#  - a snapshot "trigger sched_switch on rec-g1" (who "host rec-g1") holds
#    all three hosts, each done with events; the trigger's event is among
#    rec-g1's (--snapshot-id N with its filter);
#  - the trigger fired again at once is refused by the group's rate limit
#    (the collector says so, /metrics counts it exactly once, no new
#    snapshot) and rec-g1 arms itself again: one FROZE per trigger, two in
#    all, though each trigger program switches out again as it exits;
#  - the FROZE's time (the collector logs it) is the trigger event's: the
#    stored hit of rec-g1 at or before it, no record of its CPU between;
#  - each host's snapshot ends within its measured freeze latency: the
#    trigger event <= its last event <= the moment its tracing was off for
#    sure, as the agent read its trace clock then (snap_end's off_ns, which
#    the collector logs); the latencies are reported (info);
#  - the trigger program (started after the agents connected) is named in
#    rec-g3's rows (it traces sys_enter only: no event names a task), by
#    the pid names an armed agent reads at its freeze only;
#  - the armed agents' CPU time while idle is reported (info), rec-g1's
#    with the freeze watch beside rec-g2's without.
# With TC_BACKEND=clickhouse (tests/test_ch_recorder.sh) the collector
# stores into a clickhouse-server of the test's own: the same asserts.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup recorder workload a1 a2 a3 g1 g2 g3 collector_pid
inst="tc_rec_$$"
recorder_cleanup() {
	[ -n "${TC_KEEP_LOGS:-}" ] && cp "$tmp"/*.log "$tmp"/*.err "$TC_KEEP_LOGS/" 2>/dev/null
	tc_cleanup
	rmdir "$tracing/instances/${inst}_g1-freezewatch" 2>/dev/null
	for n in 1 2 3 g1 g2 g3; do rmdir "$tracing/instances/${inst}_$n" 2>/dev/null; done
}
trap recorder_cleanup EXIT

tc_db_backend	# SQLite, or ClickHouse from tests/test_ch_recorder.sh
tc_certs
for n in alice bob; do
	tc_certs_run client "$n" > /dev/null || { echo "FAIL: certificate helper: client $n"; exit 1; }
done
tc_traceq_for_all
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"
# start_collector [ARGS]: the collector (again: ARGS --listen "$listen", the agents' port)
start_collector() {
	tc_start_collector "${tc_db[@]}" --query "ipc://$sock" --query-tls 127.0.0.1:0 \
		--snapshot "cert:alice rec-1,rec-2" --freeze-interval 600 \
		--freeze-group "g rec-g*" --metrics 127.0.0.1:0 "$@"
	qtls=$(sed -n 's/^query_tls=//p' "$tmp/ready")
	murl=$(sed -n 's/^metrics=//p' "$tmp/ready")
}
start_collector
tq_root() { "$tq" -s "ipc://$sock" -t 120000 --sync "$@"; }
tls_as() { local n=$1; shift; "$tq" -s "$qtls" -t 120000 --cert "$tmp/pki/client-$n.crt" \
	--key "$tmp/pki/client-$n.key" --ca "$tmp/pki/ca.crt" "$@"; }

( while :; do sleep 0.001; done ) &
workload=$!
for n in 1 2 3; do
	tc_start_agent "rec-$n" --name "rec-$n" --instance "${inst}_$n" -e sched:sched_switch \
		-e raw_syscalls:sys_enter --no-comm-events --flight-recorder 1
	printf -v "a$n" '%s' "$agent"
done
# all three connected (their HELLO stored)
for _ in $(seq 100); do
	[ "$(tq_root --hosts 2>/dev/null | grep -c '^rec-[123]  *yes ')" = 3 ] && break
	sleep 0.1
done
check "the three recorders are connected" \
	'[ "$(tq_root --hosts | grep -c "^rec-[123]  *yes ")" = 3 ]'
sleep 2	# the workload fills (and wraps) their buffers

# field FILE HOST COL: column COL of host HOST's --stats rows (json), summed
stat_sum() {
	python3 -c 'import json,sys
t = 0
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    if r.get("host") == sys.argv[2]: t += int(r.get(sys.argv[3]) or 0)
print(t)' "$@"
}
tq_root --stats -f json > "$tmp/stats0.json"
shipped_armed=$(( $(stat_sum "$tmp/stats0.json" rec-1 pages) + $(stat_sum "$tmp/stats0.json" rec-2 pages) +
	$(stat_sum "$tmp/stats0.json" rec-3 pages) ))
check "armed, the recorders shipped no page ($shipped_armed received)" '[ "$shipped_armed" = 0 ]'

# refusals
tls_as bob --snapshot > "$tmp/bob.out" 2>&1; rc=$?
check "bob, without a snapshot line, may not (exit $rc: $(cat "$tmp/bob.out"))" \
	'[ "$rc" = 2 ] && grep -q "cert bob may not take snapshots" "$tmp/bob.out"'
tls_as alice --snapshot -H 'rec-*' > "$tmp/alice.out" 2>&1; rc=$?
check "alice may not reach rec-3, outside her right (exit $rc: $(cat "$tmp/alice.out"))" \
	'[ "$rc" = 2 ] && grep -q "may not freeze host .rec-3.: outside its .snapshot. right" "$tmp/alice.out"'
tq_root --snapshots > "$tmp/none.out" 2>&1
check "nothing was frozen by the refused requests" '! grep -q "^ *[0-9]" "$tmp/none.out"'

. "$top_srcdir/tests/recorder_lib.sh"	# snaps_json, snap_field
# wait_done ID HOST...: until each HOST's row of snapshot ID is done
wait_done() {
	local id=$1 h all
	shift
	for _ in $(seq 200); do
		snaps_json "$id"
		all=1
		for h in "$@"; do [ "$(snap_field "$id" "$h" done)" = 1 ] || all=0; done
		[ "$all" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

tq_root --snapshot --reason "by hand, all of them" > "$tmp/snap1.out" 2>&1; rc=$?
# snap_id FILE: the id a --snapshot printed (0: none)
snap_id() { local i; i=$(sed -n 's/^snapshot \([0-9][0-9]*\): .*/\1/p' "$1"); echo "${i:-0}"; }
s1=$(snap_id "$tmp/snap1.out")
check "root's --snapshot freezes the three (exit $rc: $(cat "$tmp/snap1.out"))" \
	'[ "$rc" = 0 ] && grep -q "^snapshot $s1: 3 flight recorders told to freeze" "$tmp/snap1.out"'
wait_done "$s1" rec-1 rec-2 rec-3
check "snapshot 1: each host said what it shipped" \
	'[ "$(snap_field $s1 rec-1 done)$(snap_field $s1 rec-2 done)$(snap_field $s1 rec-3 done)" = 111 ]'
check "snapshot 1: its reason and who asked" \
	'[ "$(snap_field $s1 rec-2 reason)" = "by hand, all of them" ] && case "$(snap_field $s1 rec-2 who)" in uid\ 0*) true;; *) false;; esac'
lost=0
for h in rec-1 rec-2 rec-3; do
	f=$(snap_field $s1 $h first_ts) l=$(snap_field $s1 $h last_ts) e=$(snap_field $s1 $h events)
	p=$(snap_field $s1 $h pages) x=$(snap_field $s1 $h lost)
	echo "info: snapshot 1 $h: window $f..$l ($(( (${l:-0} - ${f:-0}) / 1000000 )) ms), pages $p, events $e, lost $x"
	check "snapshot 1 $h: a window, pages and events" \
		'[ -n "$f" ] && [ -n "$l" ] && [ "$f" -le "$l" ] && [ "$p" -gt 0 ] && [ "$e" -gt 0 ]'
	lost=$(( lost + ${x:-0} ))
done
check "snapshot 1: the wrapped buffers' loss is counted ($lost events overwritten)" '[ "$lost" -gt 0 ]'

# stored_all HOST: HOST's events stored (both types), by --count
# stored_in ID HOST [EVENTS]: the rows --snapshot-id ID prints of HOST, of
# EVENTS (default both) ("failed": traceq did)
both="sched:sched_switch,raw_syscalls:sys_enter"
stored_all() { tq_root --count "$both" -H "$1" | sed -n 's/^\([0-9][0-9]*\).*/\1/p'; }
stored_in() {
	tq_root --snapshot-id "$1" "${3:-$both}" -f json > "$tmp/in.json" || { echo failed; return; }
	python3 -c 'import json,sys
n = 0
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    if r.get("host") == sys.argv[2]: n += 1
print(n)' "$tmp/in.json" "$2"
}
snaps_json 0
for h in rec-1 rec-2 rec-3; do
	s=$(stored_all $h) e=$(snap_field $s1 $h events)
	check "$h: every event of its snapshot stored ($s stored, $e shipped)" '[ "$s" = "$e" ]'
done

sleep 1
tls_as alice --snapshot -H 'rec-[12]' --reason "alice's" > "$tmp/snap2.out" 2>&1; rc=$?
s2=$(snap_id "$tmp/snap2.out")
check "alice's --snapshot -H 'rec-[12]' freezes two (exit $rc: $(cat "$tmp/snap2.out"))" \
	'[ "$rc" = 0 ] && grep -q "^snapshot $s2: 2 flight recorders told to freeze" "$tmp/snap2.out"'
wait_done "$s2" rec-1 rec-2
check "snapshot 2: rec-1 and rec-2, asked by cert alice, not rec-3" \
	'[ "$(snap_field $s2 rec-1 who)" = "cert alice" ] && [ -z "$(snap_field $s2 rec-3 done)" ]'

snaps_json 0
for h in rec-1 rec-2; do
	e1=$(snap_field $s1 $h events) e2=$(snap_field $s2 $h events)
	n1=$(stored_in $s1 $h) n2=$(stored_in $s2 $h) all=$(stored_all $h)
	check "$h: --snapshot-id 1 and 2 print exactly their events ($n1 = $e1, $n2 = $e2, of $all)" \
		'[ "$n1" = "$e1" ] && [ "$n2" = "$e2" ] && [ $(( n1 + n2 )) = "$all" ]'
done
n3=$(stored_in $s2 rec-3)
check "--snapshot-id 2 prints no event of rec-3 ($n3)" '[ "$n3" = 0 ]'
# A snapshot exports as any selection: snapshot 2 (rec-1 and rec-2) to
# trace.dat, one file a host (trace-cmd report reads back each host's
# events), and for Perfetto, a zip of one file a host (a sched_switch line
# each)
tq_root --snapshot-id "$s2" --export "$tmp/s2" -f tracedat "$both" > "$tmp/s2.out" 2>&1
tq_root --snapshot-id "$s2" --export "$tmp/s2.zip" -f perfetto "$both" > "$tmp/s2p.out" 2>&1
for h in rec-1 rec-2; do
	e=$(snap_field $s2 $h events)
	# (with DATE, a wall-clock stamp follows the CPU with no blank)
	rep=$(trace-cmd report -i "$tmp/s2/$h.dat" 2>/dev/null | grep -c -- '-[0-9]* *\[[0-9]*\]')
	check "--snapshot-id 2 --export -f tracedat: trace-cmd report reads $h's $e events ($rep)" \
		'[ "$rep" = "$e" ] || { cat "$tmp/s2.out"; trace-cmd report -i "$tmp/s2/$h.dat" 2>&1 | head -n 5; false; }'
	sw=$(stored_in "$s2" "$h" sched_switch)
	pf=$(unzip -p "$tmp/s2.zip" "$h.json" 2>/dev/null | python3 -c 'import json, sys
print(sum(" sched_switch: " in l for l in json.load(sys.stdin)["systemTraceEvents"].split("\n")))' 2>&1)
	check "... and -f perfetto: $h's $sw sched_switch lines ($pf)" \
		'[ "$pf" = "$sw" ] && [ "$sw" -gt 0 ] || { cat "$tmp/s2p.out"; false; }'
done

# kill -9 right after the agents shipped snapshot 3: the journal replays it
sleep 1
tq_root --snapshot --reason "before the crash" > "$tmp/snap3.out" 2>&1
s3=$(snap_id "$tmp/snap3.out")
for _ in $(seq 200); do
	[ "$(cat "$tmp"/rec-[123].err | grep -c "snapshot $s3 shipped")" = 3 ] && break
	sleep 0.05
done
kill -9 "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
start_collector --listen "$listen"
wait_done "$s3" rec-1 rec-2 rec-3
snaps_json 0
ok=1
for h in rec-1 rec-2 rec-3; do
	said=$(sed -n "s/.*snapshot $s3 shipped: [0-9]* pages, \\([0-9]*\\) events.*/\\1/p" "$tmp/$h.err")
	e=$(snap_field $s3 $h events) n=$(stored_in $s3 $h)
	echo "info: snapshot 3 $h: agent said $said events, row $e, stored $n"
	[ -n "$said" ] && [ "$said" = "$e" ] && [ "$n" = "$e" ] || ok=0
done
check "after kill -9 and a restart, snapshot 3 is whole (rows and events)" '[ "$ok" = 1 ]'

for n in 1 2 3; do
	v=a$n
	kill -INT "${!v}"; wait "${!v}"; rc=$?
	printf -v "a$n" ''
	check "rec-$n exits 0 (exit $rc: $(tail -n 2 "$tmp/rec-$n.err"))" '[ "$rc" = 0 ]'
done

# ---- by an event: group g, rec-g1's trigger ----
fire="tcfire-$$"
cp "$(command -v sleep)" "$tmp/$fire"
for n in 1 2 3; do
	trig=() ev=(-e sched:sched_switch)
	[ "$n" = 1 ] && trig=(--freeze-on "sched_switch where prev_comm == \"$fire\" && prev_state == 1")
	[ "$n" = 3 ] && ev=()	# names from saved_cmdlines only: no comm fields
	tc_start_agent "rec-g$n" --name "rec-g$n" --instance "${inst}_g$n" "${ev[@]}" \
		-e raw_syscalls:sys_enter --no-comm-events --flight-recorder 1 --group g "${trig[@]}"
	printf -v "g$n" '%s' "$agent"
done
for _ in $(seq 100); do
	[ "$(tq_root --hosts 2>/dev/null | grep -c '^rec-g[123]  *yes ')" = 3 ] && break
	sleep 0.1
done
check "the group's three recorders are connected" \
	'[ "$(tq_root --hosts | grep -c "^rec-g[123]  *yes ")" = 3 ]'
# cpu_ms PID: its user + system time so far, ms
cpu_ms() { awk -v t="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / t) }' "/proc/$1/stat"; }
c1=$(cpu_ms "$g1") c2=$(cpu_ms "$g2")
sleep 3
c1=$(( $(cpu_ms "$g1") - c1 )) c2=$(( $(cpu_ms "$g2") - c2 ))
echo "info: armed for 3 s under the workload: rec-g1 (freeze watch) used ${c1} ms of CPU," \
	"rec-g2 (no watch) ${c2} ms"
"$tmp/$fire" 0.01
for _ in $(seq 100); do
	snaps_json 0
	id=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    if r.get("reason") == "trigger sched_switch on rec-g1": print(r["id"]); break' "$tmp/snaps.json")
	[ -n "$id" ] && wait_done "$id" rec-g1 rec-g2 rec-g3 && break
	sleep 0.1
done
check "the trigger on rec-g1 froze the group: snapshot ${id:-none}" '[ -n "$id" ]'
# Again at once, once the thaw armed rec-g1 again: refused by the rate
# limit (--freeze-interval 600, which the checks below on a loaded host's
# ClickHouse under ASan cannot outlast, as 10 s once did), and rec-g1 arms
# again by itself (checked below).
for _ in $(seq 200); do
	[ "$(cat "$tracing/instances/${inst}_g1/tracing_on")" = 1 ] && break
	sleep 0.05
done
"$tmp/$fire" 0.01
for h in rec-g1 rec-g2 rec-g3; do
	e=$(snap_field "${id:-0}" $h events)
	echo "info: trigger snapshot $h: window $(snap_field "${id:-0}" $h first_ts)..$(snap_field "${id:-0}" $h last_ts), events $e, lost $(snap_field "${id:-0}" $h lost)"
	check "trigger snapshot: $h done, with events ($e)" \
		'[ "$(snap_field "${id:-0}" $h done)" = 1 ] && [ "${e:-0}" -gt 0 ]'
done
check "trigger snapshot: asked by host rec-g1" '[ "$(snap_field "${id:-0}" rec-g1 who)" = "host rec-g1" ]'
hit=$(tq_root --snapshot-id "${id:-0}" --count "sched_switch where prev_comm == \"$fire\"" |
	sed -n 's/^\([0-9][0-9]*\).*/\1/p')
check "the trigger's event is in rec-g1's snapshot ($hit)" '[ "${hit:-0}" -ge 1 ]'
# The FROZE's time (the collector logs it) is the trigger event's, as the
# agent's freeze watch recorded it on the same clock: at or after the
# stored trigger event, with no record of that CPU between (the kernel
# switched the instance off at the event itself; agent/freezewatch.h).
froze_ts=$(sed -n "s/.*snapshot ${id:-0}: rec-g1 froze (trigger sched_switch at trace_ns \([0-9]*\),.*/\1/p" \
	"$tmp/collector.log" | head -n 1)
tq_root --snapshot-id "${id:-0}" -f json "sched_switch,sys_enter" \
	> "$tmp/g1-rows.log" 2>&1
trig_gap=$(python3 -c 'import json,sys
ts, fire = int(sys.argv[2] or -1), sys.argv[3]
rows = []
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    if r.get("host") == "rec-g1": rows.append(r)
hits = [r for r in rows if r.get("prev_comm") == fire and r["trace_ts"] <= ts]
if not hits: sys.exit(0)
t = max(hits, key=lambda r: r["trace_ts"])
between = [r for r in rows if r["cpu"] == t["cpu"] and t["trace_ts"] < r["trace_ts"] <= ts]
print(ts - t["trace_ts"], len(between), t["trace_ts"], t["ts"])' "$tmp/g1-rows.log" "${froze_ts:-}" "$fire")
# trig_of: the trigger event (the hit before the FROZE's time): trace_ts ts
trig_of=$(echo "$trig_gap" | cut -d' ' -f3-4) trig_gap=$(echo "$trig_gap" | cut -d' ' -f1-2)
echo "info: FROZE at trace_ns ${froze_ts:-none}; the stored trigger event before it by ${trig_gap% *} (its trace clock's units)"
# The trigger program started after the agents connected, and an armed
# agent reads no pid names until a freeze: in rec-g3's snapshot (only
# sys_enter, --no-comm-events: no event of it carries a name, so the
# collector learns none) its syscalls are named by the read at the freeze.
named=$(python3 -c 'import json,sys
rows = []
for l in open(sys.argv[1]):
    try: rows.append(json.loads(l))
    except ValueError: continue
pids = {r.get("prev_pid") for r in rows if r.get("host") == "rec-g1" and r.get("prev_comm") == sys.argv[2]}
mine = [r for r in rows if r.get("host") == "rec-g3" and r.get("common_pid") in pids]
print(sum(r.get("comm") == sys.argv[2] for r in mine), len(mine))' "$tmp/g1-rows.log" "$fire")
check "the trigger program's syscalls are named in rec-g3's snapshot ($named: named, of its syscalls)" \
	'[ "${named#* }" -ge 1 ] && [ "${named% *}" = "${named#* }" ]'
[ -n "$froze_ts" ] || grep "snapshot ${id:-0}:" "$tmp/collector.log"
check "the FROZE's time is the trigger event's: a stored hit at or before it, none of its CPU between (${trig_gap:-no hit})" \
	'[ -n "$froze_ts" ] && [ "${trig_gap#* }" = 0 ]'
# Each host's snapshot ends within its measured freeze latency after the
# trigger: every agent reads its trace clock once its tracing is off for
# sure (after its tracing_on 0, or, rec-g1, when it noticed its trigger),
# sends it in its SNAP_END (off_ns), and the collector logs it with the
# wall-clock time its events would have. On the trace clock, which the three
# share (one machine, one choice of clock): trigger <= the host's last event
# <= its freeze. On the wall clock (snap_field's last_ts, converted with
# the freeze's time in the same step): last_ts <= the freeze's time.
trig_trace=${trig_of% *} trig_wall=${trig_of#* }
# last_trace HOST: the trace_ts of HOST's last event in the snapshot
last_trace() {
	python3 -c 'import json,sys
m = ""
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    if r.get("host") == sys.argv[2] and (m == "" or r["trace_ts"] > m): m = r["trace_ts"]
print(m)' "$tmp/g1-rows.log" "$1"
}
for h in rec-g1 rec-g2 rec-g3; do
	off=$(sed -n "s/.*host $h: snapshot ${id:-0}: tracing off by \(-\{0,1\}[0-9]*\) (trace_ns \([0-9]*\)).*/\1 \2/p" \
		"$tmp/collector.log" | head -n 1)
	off_wall=${off% *} off_trace=${off#* } lt=$(last_trace $h) lw=$(snap_field "${id:-0}" $h last_ts)
	[ -n "$off" ] && [ -n "$trig_of" ] &&
		echo "info: freeze latency $h: $(( off_wall - trig_wall )) ns after the trigger event" \
			"($(( off_trace - trig_trace )) in trace clock units; its last event" \
			"$(( lt - trig_trace )) after the trigger)"
	check "trigger snapshot $h ends between the trigger and its measured freeze (trace clock: $trig_trace <= $lt <= ${off_trace:-none}; wall: ${lw:-none} <= ${off_wall:-none})" \
		'[ -n "$off" ] && [ -n "$trig_of" ] && [ -n "$lt" ] && [ -n "$lw" ] &&
		 [ "$trig_trace" -le "$lt" ] && [ "$lt" -le "$off_trace" ] && [ "$lw" -le "$off_wall" ]'
done
tc_wait_log "$tmp/collector.log" "a trigger freeze of group g refused"
check "a second trigger within 600 s is refused by the group's rate limit" \
	'grep -q "host rec-g1: a trigger freeze of group g refused: the group froze less than 600 s ago" "$tmp/collector.log"'
tc_wait_log "$tmp/rec-g1.err" "no freeze came within 5000 ms: armed again"
check "... and rec-g1 armed itself again" \
	'grep -q "no freeze came within 5000 ms: armed again" "$tmp/rec-g1.err"'
snaps_json 0
n=$(grep -c '"reason":"trigger sched_switch on rec-g1"' "$tmp/snaps.json")
check "... no second trigger snapshot ($n rows)" '[ "$n" = 3 ]'
curl -sS -o "$tmp/metrics" "$murl/metrics"
rl=$(tc_metric "$tmp/metrics" 'tracecollect_trigger_freezes_refused_total{reason="rate_limit"}')
n=$(grep -c "flight recorder: its trigger (sched_switch) froze the instance" "$tmp/rec-g1.err")
check "... and counted in /metrics, once: one FROZE per trigger (rate_limit ${rl:-none}, rec-g1 said FROZE $n times)" \
	'[ "$rl" = 1 ] && [ "$n" = 2 ]'
for n in 1 2 3; do
	v=g$n
	kill -INT "${!v}"; wait "${!v}"; rc=$?
	printf -v "g$n" ''
	check "rec-g$n exits 0 (exit $rc: $(tail -n 2 "$tmp/rec-g$n.err"))" '[ "$rc" = 0 ]'
done
check "the agents' instances are gone" \
	'! ls -d "$tracing/instances/${inst}_"* 2>/dev/null'
exit "$failed"
