#!/bin/bash
# The collector measures each agent's clock (issue 36; PROTOCOL.md, "Clock
# measurement"): one timeline across hosts even when a host's realtime lies.
#
#  1. A host clock 5 s off: two agents trace the same kernel events, each in
#     its own tracefs instance, on the mono trace clock; one runs under
#     libfaketime with its realtime +5 s (FAKETIME_DONT_FAKE_MONOTONIC=1: the
#     trace clock does not move). Asserts: the shift is real (its HELLO's
#     offset is 5 s off the other's); the same sched_switch events (same CPU
#     and fields, tests/clock_pairs.py) are stored at times whose difference
#     lies within the measurements' uncertainties (before: 5 s apart); --hosts reports the
#     ~5 s disagreement and source "measured" for it, "host" for the other;
#     the log names the host and the amount; a Perfetto export's manifest
#     carries each host's source, offset, uncertainty, drift and
#     disagreement as --hosts says them.
#  2. An asymmetric link: an agent behind tests/delay_relay.py, which holds
#     what goes to the agent for 6 ms and nothing the other way. The
#     collector's measured offset against the truth (the agent's own sample:
#     same machine, same clocks) lies within the reported uncertainty, which
#     covers the known asymmetry.
#  3. Slew: an agent whose realtime runs 0.1% fast (faketime x1.001) drifts
#     past the tolerance, so its placement switches to the measurement while
#     it streams; no CPU's ts steps backwards (by trace_ts order).
#  4. Per-CPU connections: as 1, the faked agent with --connections per-cpu.
#     Every link is probed and answers (each connection's pages are placed
#     by that connection's measurement): more measurements than links are
#     stored, and the same events' stored times still differ by at most
#     the uncertainties (a data link left unmeasured would place its CPU's
#     events 5 s off).
# No wall-clock thresholds: every bound is an uncertainty the collector
# reported.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_need_faketime
command -v sqlite3 >/dev/null || skip "needs sqlite3"
tc_lock
tc_setup clocks collector_pid agent agent_b relay workload
inst="tc-clocks-$$"
clocks_cleanup() {
	local i
	for i in a b c d e f; do rmdir "$tracing/instances/$inst-$i" 2>/dev/null; done
	tc_cleanup
}
trap clocks_cleanup EXIT
tc_certs
tc_start_collector

common=(-e sched:sched_switch --no-user --trace-clock mono)
hosts_json() { traceq --hosts -f json > "$tmp/hosts.json" 2>&1; }
# col HOST KEY: a --hosts column of HOST
col() {
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["host"] == sys.argv[2]:
        v = r[sys.argv[3]]
        print("" if v is None else v)' "$tmp/hosts.json" "$1" "$2"
}
# rows HOST: its sched_switch rows as "cpu trace_ts ts prev_pid next_pid prev_state" lines
rows() { traceq sched_switch -H "$1" -f json | python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["cpu"], r["trace_ts"], r["ts"], r["prev_pid"], r["next_pid"], r["prev_state"])' \
	> "$tmp/rows-$1"; }
# max_unc HOST: the largest uncertainty of HOST's measurements
max_unc() {
	sqlite3 "$tmp/trace.db" "SELECT max(uncertainty_ns) FROM clock_points
		JOIN hosts ON hosts.id = clock_points.host_id WHERE hosts.name = '$1'"
}
# same_events PART A B: A's and B's same sched_switch events (tests/
# clock_pairs.py says how) are stored at times that differ by at most the
# two hosts' largest uncertainties (and the distance of the event's two
# trace clock readings)
same_events() {
	local part=$1 a=$2 b=$3 n worst dtrace ua ub
	ua=$(max_unc "$a") ub=$(max_unc "$b")
	rows "$a"; rows "$b"
	read -r n worst dtrace < <(python3 "$top_srcdir/tests/clock_pairs.py" "$tmp/rows-$a" \
		"$tmp/rows-$b")
	echo "$part: $n events stored by both; worst stored-time difference $worst ns (their trace clock readings: $dtrace ns apart); uncertainties $ua + $ub ns"
	check "$part: $a and $b stored the same events ($n)" '[ "$n" -gt 50 ]'
	check "$part: their stored times differ by at most the uncertainties ($worst <= $ua + $ub + $dtrace ns)" \
		'[ "$worst" -le $(( ua + ub + dtrace )) ]'
}

# ---- 1. a host clock 5 s off ----
( while :; do sleep 0.002; done ) &
workload=$!
tc_start_agent a "${common[@]}" --duration 3 --name clk-a --instance "$inst-a"
agent_b=$agent
tc_faked_agent b +5s "${common[@]}" --duration 3 --name clk-b --instance "$inst-b"
wait "$agent"; rc_b=$?
wait "$agent_b"; rc_a=$?
agent= agent_b=
check "both agents exit 0 ($rc_a, $rc_b)" '[ "$rc_a" = 0 ] && [ "$rc_b" = 0 ] ||
	{ cat "$tmp/a.err" "$tmp/b.err"; false; }'
hosts_json
shift_ns=$(( $(col clk-b clock_offset_ns) - $(col clk-a clock_offset_ns) ))
check "the faked agent's realtime is really 5 s ahead (its HELLO offset: +$shift_ns ns)" \
	'[ "$shift_ns" -gt 4900000000 ] && [ "$shift_ns" -lt 5100000000 ]'
unc_a=$(max_unc clk-a) unc_b=$(max_unc clk-b)
check "both hosts were measured (uncertainty $unc_a, $unc_b ns)" '[ -n "$unc_a" ] && [ -n "$unc_b" ]'
check "clk-b is placed by the measurement, clk-a by its own clock" \
	'[ "$(col clk-b clock_source)" = measured ] && [ "$(col clk-a clock_source)" = host ]'
dis=$(col clk-b clock_disagree_ns) u=$(col clk-b clock_uncertainty_ns)
off=$(( dis > 5000000000 ? dis - 5000000000 : 5000000000 - dis ))
check "--hosts: clk-b disagrees by ~5 s ($dis ns: $off ns off its true +5 s, uncertainties $u + $unc_a ns)" \
	'[ -n "$dis" ] && [ "$off" -le $(( u + unc_a )) ]'
check "the log names the host and the amount" \
	'grep -Eq "host clk-b: its realtime disagrees with the collector.s measurement of its clock by \+(4\.99|5\.00)[0-9]* s" "$tmp/collector.log"'
check "no such line for clk-a" '! grep -q "host clk-a: its realtime disagrees" "$tmp/collector.log"'
same_events 1 clk-a clk-b
# its trace.dat (--time wall) carries the offset that placed its events,
# the measured one: trace-cmd report's first time is traceq's, not 5 s off
traceq --export "$tmp/clk-b.dat" -f tracedat --time wall -H clk-b > "$tmp/export.out" 2>&1
tc_first=$(trace-cmd report "$tmp/clk-b.dat" 2> /dev/null | grep -m1 ': sched_switch:' |
	sed -n 's/.* \([0-9][0-9]*\.[0-9]*\): .*/\1/p')
tq_first=$(traceq --format json -n 1 -H clk-b sched_switch | sed -n 's/.*"ts":\([0-9]*\).*/\1/p')
check "trace-cmd report of clk-b's export prints its stored wall-clock time ($tc_first s, traceq $tq_first ns)" \
	'awk -v a="$tc_first" -v b="$tq_first" "BEGIN { d = a * 1e9 - b; exit !(a > 0 && d < 1e6 && d > -1e6) }"'
# a Perfetto export of both: the manifest says per host how it was placed,
# with the figures --hosts gives
traceq --export "$tmp/clk.zip" -f perfetto -H clk-a -H clk-b > "$tmp/pexport.out" 2>&1
unzip -p "$tmp/clk.zip" perfetto_manifest.json > "$tmp/manifest.json" 2>/dev/null
mclock() {
	python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))["perfetto_manifest"]["files"]
c = [f["tracecollect_clock"] for f in m if f["machine"]["name"] == sys.argv[2]][0]
print(c.get(sys.argv[3], ""))' "$tmp/manifest.json" "$1" "$2" 2>/dev/null
}
echo "manifest: $(tr -d '\n' < "$tmp/manifest.json")"
check "the Perfetto manifest: clk-b measured, its uncertainty, drift, disagreement and offset as --hosts says" \
	'[ "$(mclock clk-b source)" = measured ] &&
	 [ "$(mclock clk-b uncertainty_ns)" = "$(col clk-b clock_uncertainty_ns)" ] &&
	 [ "$(mclock clk-b drift_ppb)" = "$(col clk-b clock_drift_ppb)" ] &&
	 [ "$(mclock clk-b disagree_ns)" = "$(col clk-b clock_disagree_ns)" ] &&
	 [ "$(mclock clk-b offset_ns)" = "$(col clk-b clock_measured_ns)" ]'
check "the Perfetto manifest: clk-a placed by its own clock, with its measurement too" \
	'[ "$(mclock clk-a source)" = host ] &&
	 [ "$(mclock clk-a offset_ns)" = "$(col clk-a clock_offset_ns)" ] &&
	 [ "$(mclock clk-a uncertainty_ns)" = "$(col clk-a clock_uncertainty_ns)" ]'

# ---- 2. an asymmetric link ----
python3 "$top_srcdir/tests/delay_relay.py" "$listen" 0 6 > "$tmp/relay.port" &
relay=$!
for _ in $(seq 50); do [ -s "$tmp/relay.port" ] && break; sleep 0.1; done
tc_run_agent c "${common[@]}" --duration 2 --name clk-c --instance "$inst-c" \
	--connect "127.0.0.1:$(head -1 "$tmp/relay.port")"; rc=$?
check "the agent behind the relay exits 0" '[ "$rc" = 0 ] || { cat "$tmp/c.err"; false; }'
hosts_json
err=$(( $(col clk-c clock_measured_ns) - $(col clk-c clock_offset_ns) ))
u=$(col clk-c clock_uncertainty_ns)
echo "2: offset error $err ns against the host's own clock, uncertainty $u ns (6 ms one way)"
check "the uncertainty covers the known asymmetry (half the 6 ms: $u ns)" '[ "$u" -ge 3000000 ]'
check "the measured offset's error lies within it (|$err| <= $u ns)" '[ "${err#-}" -le "$u" ]'
kill "$relay"; wait "$relay" 2>/dev/null; relay=

# ---- 3. slew ----
tc_faked_agent d "+0 x1.001" "${common[@]}" --duration 13 --name clk-d --instance "$inst-d"
wait "$agent"; rc=$?
agent=
kill "$workload"; wait "$workload" 2>/dev/null; workload=
check "the slewed agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/d.err"; false; }'
check "its realtime drifted past the tolerance: placed by the measurement from then on" \
	'grep -q "host clk-d: its realtime disagrees" "$tmp/collector.log"'
rows clk-d
back=$(sort -k1,1n -k2,2n "$tmp/rows-clk-d" | awk '$1 == c && $3 < ts { n++ } { c = $1; ts = $3 } END { print n + 0 }')
echo "3: $(wc -l < "$tmp/rows-clk-d") events, $back steps backwards"
check "no CPU's ts steps backwards" '[ "$back" = 0 ] && [ -s "$tmp/rows-clk-d" ]'

# ---- 4. per-CPU connections ----
( while :; do sleep 0.002; done ) &
workload=$!
tc_start_agent e "${common[@]}" --duration 3 --name clk-e --instance "$inst-e"
agent_b=$agent
tc_faked_agent f +5s "${common[@]}" --duration 3 --name clk-f --instance "$inst-f" \
	--connections per-cpu
wait "$agent"; rc_f=$?
wait "$agent_b"; rc_e=$?
agent= agent_b=
kill "$workload"; wait "$workload" 2>/dev/null; workload=
check "both agents exit 0 ($rc_e, $rc_f)" '[ "$rc_e" = 0 ] && [ "$rc_f" = 0 ] ||
	{ cat "$tmp/e.err" "$tmp/f.err"; false; }'
links=$(( $(getconf _NPROCESSORS_ONLN) + 1 ))
npoints=$(sqlite3 "$tmp/trace.db" "SELECT count(*) FROM clock_points
	JOIN hosts ON hosts.id = clock_points.host_id WHERE hosts.name = 'clk-f'")
check "every per-cpu link of clk-f was measured ($npoints measurements, $links links)" \
	'[ "$npoints" -ge "$links" ]'
hosts_json
check "clk-f is placed by the measurement" '[ "$(col clk-f clock_source)" = measured ]'
same_events 4 clk-e clk-f

if [ "$failed" != 0 ]; then
	echo "--- collector (last 30 lines)"; tail -n 30 "$tmp/collector.log"
	exit 1
fi
echo "PASS: one timeline across hosts whose clocks lie"
