#!/bin/bash
# Who a flight recorder's trigger freezes is the collector's word, never the
# agent's (issue 38, freeze groups): a collector whose configuration puts
# fg-a and fg-b in freeze group team1 (`freeze-group = team1 fg-a` in its
# -C file, --freeze-group 'team1 fg-b' on its command line: the lines add
# up) and three armed agents, each with a certificate of its own host name
# (no host-map: a name is its certificate's), each tracing sched_switch in
# a tracefs instance of its own while a workload switches:
#  - fg-a claims team1 (--group team1) and has a --freeze-on trigger
#    (its program's switch out asleep, prev_state 1: one hit a run, not a
#    second at its exit that a fast thaw would count as a new trigger);
#  - fg-b claims nothing: the configuration alone puts it in team1;
#  - fg-c, in no group, claims team1 too and has a trigger of its own.
#
# Asserts:
#  - at HELLO the collector takes fg-a's claim and logs fg-c's as ignored
#    (escaped host and group names);
#  - fg-a's trigger freezes fg-a and fg-b (one snapshot, both done, with
#    events), not fg-c: no row of fg-c in it, 2 recorders told;
#  - fg-c's trigger freezes fg-c alone: a snapshot "trigger sched_switch
#    on fg-c" with no row of fg-a or fg-b; its claim's refusal is logged
#    with the snapshot's id;
#  - SIGHUP with a line putting fg-c in team1 too: fg-c's claim now
#    counts, and its trigger (past team1's rate limit, --freeze-interval 2) freezes all
#    three, without a word of its claim;
#  - /metrics counts the one claim ignored: tracecollect_trigger_freezes_
#    refused_total{reason="group_claim"} 1, and rate_limit 0, none logged:
#    each trigger is one FROZE (the program that fires it switches out
#    again, exiting, while its agent's instance is frozen: that hit froze
#    nothing new and the agent drains it at the thaw); each triggering
#    agent said FROZE once per trigger; promtool (when installed) passes;
#  - a freeze-group line without globs stops the collector at start (exit
#    2, the line's form said).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup freeze-group workload a b c collector_pid
inst="tc_fg_$$"
fg_cleanup() {
	[ -n "${TC_KEEP_LOGS:-}" ] && cp "$tmp"/*.log "$tmp"/*.err "$TC_KEEP_LOGS/" 2>/dev/null
	tc_cleanup
	for n in a c; do rmdir "$tracing/instances/${inst}_$n-freezewatch" 2>/dev/null; done
	for n in a b c; do rmdir "$tracing/instances/${inst}_$n" 2>/dev/null; done
}
trap fg_cleanup EXIT

tc_certs fg-a fg-b fg-c
tc_strict_hosts=1	# each host name must be its certificate's
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"
printf 'freeze-group = team1 fg-a\n' > "$tmp/collector.conf"
"$top_builddir/tracecollectd" --freeze-group 'team1' --db "$tmp/bad.db" > "$tmp/bad.out" 2>&1; rc=$?
check "a freeze-group line without globs is refused at start (exit $rc: $(head -c 300 "$tmp/bad.out"))" \
	'[ "$rc" = 2 ] && grep -q "freeze-group: expected .NAME GLOB\[,GLOB...\]., got .team1." "$tmp/bad.out"'
tc_start_collector -C "$tmp/collector.conf" --freeze-group 'team1 fg-b' \
	--query "ipc://$sock" --metrics 127.0.0.1:0 --freeze-interval 2
murl=$(sed -n 's/^metrics=//p' "$tmp/ready")
tq_root() { "$tq" -s "ipc://$sock" -t 120000 --sync "$@"; }
tq=$top_builddir/traceq/traceq

( while :; do sleep 0.001; done ) &
workload=$!
fire_a="tcfa-$$" fire_c="tcfc-$$"
cp "$(command -v sleep)" "$tmp/$fire_a"
cp "$(command -v sleep)" "$tmp/$fire_c"
# start_fg N ARGS...: recorder fg-N with its own certificate
start_fg() {
	local n=$1
	shift
	tc_start_agent "fg-$n" --name "fg-$n" --cert "$tmp/pki/agent-fg-$n.crt" \
		--key "$tmp/pki/agent-fg-$n.key" --instance "${inst}_$n" -e sched:sched_switch \
		--no-comm-events --flight-recorder 1 "$@"
	printf -v "$n" '%s' "$agent"
}
start_fg a --group team1 --freeze-on "sched_switch where prev_comm == \"$fire_a\" && prev_state == 1"
start_fg b
start_fg c --group team1 --freeze-on "sched_switch where prev_comm == \"$fire_c\" && prev_state == 1"
for _ in $(seq 100); do
	[ "$(tq_root --hosts 2>/dev/null | grep -c '^fg-[abc]  *yes ')" = 3 ] && break
	sleep 0.1
done
check "the three recorders are connected" \
	'[ "$(tq_root --hosts | grep -c "^fg-[abc]  *yes ")" = 3 ]'
check "fg-a's claim of team1 is taken: a freeze-group line puts it there" \
	'grep -q "host fg-a: freeze group team1, as a freeze-group line puts it" "$tmp/collector.log"'
check "fg-c's claim of team1 is logged as ignored" \
	'grep -q "host fg-c: its claim of freeze group team1 ignored: no freeze-group line" "$tmp/collector.log"'
check "fg-b claimed nothing: nothing said of it" \
	'! grep -q "host fg-b: .*freeze group" "$tmp/collector.log"'
sleep 1	# the workload fills their buffers

. "$top_srcdir/tests/recorder_lib.sh"	# snaps_json, snap_field, snap_of
# trigger N FIRE AFTER HOST...: fire fg-N's trigger; sets id to its
# snapshot's (past id AFTER), once each HOST's row of it is done
trigger() {
	local n=$1 fire=$2 after=$3 h all
	shift 3
	"$tmp/$fire" 0.01
	id=
	for _ in $(seq 150); do
		snaps_json
		id=$(snap_of "trigger sched_switch on fg-$n" "$after")
		if [ -n "$id" ]; then
			all=1
			for h in "$@"; do [ "$(snap_field "$id" "$h" done)" = 1 ] || all=0; done
			[ "$all" = 1 ] && return 0
		fi
		sleep 0.1
	done
	return 1
}

# ---- fg-a's trigger: team1 (fg-a, fg-b), not fg-c ----
trigger a "$fire_a" 0 fg-a fg-b
check "fg-a's trigger took a snapshot: ${id:-none}" '[ -n "$id" ]'
for h in fg-a fg-b; do
	e=$(snap_field "${id:-0}" $h events)
	check "snapshot ${id:-none}: $h frozen and done, with events ($e)" \
		'[ "$(snap_field "${id:-0}" $h done)" = 1 ] && [ "${e:-0}" -gt 0 ]'
done
check "snapshot ${id:-none}: fg-c, outside team1 though it claims it, not frozen" \
	'[ -z "$(snap_field "${id:-0}" fg-c host)" ]'
check "the collector told team1's 2 recorders" \
	'grep -q "snapshot ${id:-0}: 2 recorders of freeze group team1 told to freeze" "$tmp/collector.log"'
check "fg-c shipped no snapshot" '! grep -q "snapshot [0-9]* shipped" "$tmp/fg-c.err"'
ida=${id:-0}

# ---- fg-c's trigger: itself alone ----
trigger c "$fire_c" 0 fg-c
check "fg-c's trigger took a snapshot: ${id:-none}" '[ -n "$id" ] && [ "$id" != "$ida" ]'
e=$(snap_field "${id:-0}" fg-c events)
check "snapshot ${id:-none}: fg-c frozen and done, with events ($e)" \
	'[ "$(snap_field "${id:-0}" fg-c done)" = 1 ] && [ "${e:-0}" -gt 0 ]'
check "snapshot ${id:-none}: neither fg-a nor fg-b frozen by fg-c's claim" \
	'[ -z "$(snap_field "${id:-0}" fg-a host)$(snap_field "${id:-0}" fg-b host)" ]'
check "the collector logged fg-c's claim ignored for snapshot ${id:-none}" \
	'grep -q "snapshot ${id:-0}: host fg-c.s claim of freeze group team1 ignored: .*freezes only itself" "$tmp/collector.log"'
n=$(grep -c "snapshot [0-9]* shipped" "$tmp/fg-a.err")
check "fg-a shipped one snapshot only, fg-a's own ($n)" '[ "$n" = 1 ]'
idc=${id:-0}

# ---- SIGHUP: the collector puts fg-c in team1; its claim counts now ----
printf 'freeze-group = team1 fg-c\n' >> "$tmp/collector.conf"
kill -HUP "$collector_pid"
tc_wait_log "$tmp/collector.log" "reload: .* 3 freeze-group lines"
check "SIGHUP read the freeze-group lines again (3: the file's 2, the command line's 1)" \
	'grep -q "reload: .* 3 freeze-group lines" "$tmp/collector.log"'
# team1 froze at snapshot $ida (the collector's realtime in ms): wait out
# its rate limit (--freeze-interval 2)
for _ in $(seq 150); do
	[ $(( $(date +%s%3N) - ida )) -gt 2500 ] && break
	sleep 0.1
done
trigger c "$fire_c" "$idc" fg-a fg-b fg-c
check "fg-c's trigger, now in team1, froze all three: snapshot ${id:-none}" '[ -n "$id" ]'
check "the collector told team1's 3 recorders, fg-c's claim taken" \
	'grep -q "snapshot ${id:-0}: 3 recorders of freeze group team1 told to freeze" "$tmp/collector.log" &&
	 ! grep -q "snapshot ${id:-0}: host fg-c.s claim" "$tmp/collector.log"'

# ---- /metrics ----
curl -sS -o "$tmp/metrics" "$murl/metrics"
refused=tracecollect_trigger_freezes_refused_total
gc=$(tc_metric "$tmp/metrics" "$refused{reason=\"group_claim\"}")
check "/metrics: one trigger freeze narrowed, its group claim ignored (${gc:-none})" '[ "$gc" = 1 ]'
rl=$(tc_metric "$tmp/metrics" "$refused{reason=\"rate_limit\"}")
said=$(grep -c "a trigger freeze of .* refused: .* less than 2 s ago" "$tmp/collector.log")
check "/metrics: one FROZE per trigger, none refused by the rate limit (${rl:-none}, $said logged)" \
	'[ "$rl" = 0 ] && [ "$said" = 0 ]'
na=$(grep -c "flight recorder: its trigger (sched_switch) froze the instance" "$tmp/fg-a.err")
nc=$(grep -c "flight recorder: its trigger (sched_switch) froze the instance" "$tmp/fg-c.err")
check "fg-a said FROZE once for its one trigger ($na), fg-c twice for its two ($nc)" \
	'[ "$na" = 1 ] && [ "$nc" = 2 ]'
if command -v promtool > /dev/null; then
	promtool check metrics < "$tmp/metrics" > "$tmp/promtool" 2>&1; rc=$?
	check "promtool check metrics passes ($(head -c 300 "$tmp/promtool"))" '[ "$rc" = 0 ]'
fi

for n in a b c; do
	kill -INT "${!n}"; wait "${!n}"; rc=$?
	printf -v "$n" ''
	check "fg-$n exits 0 (exit $rc: $(tail -n 2 "$tmp/fg-$n.err"))" '[ "$rc" = 0 ]'
done
check "the agents' instances are gone" '! ls -d "$tracing/instances/${inst}_"* 2>/dev/null'
exit "$failed"
