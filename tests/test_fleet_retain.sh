#!/bin/bash
# Retention with two collectors on one ClickHouse (issue 35): the lease of
# server/store/clickhouse_lease.c lets one of them run retention at a time.
#
# One clickhouse-server of the test's own; collectors A and B (--collector-id
# 1 and 2). Three trace-cmd recordings imported through them as three hosts
# (imp-c three days before yesterday, imp-a yesterday 06:00 through A,
# imp-b yesterday 18:00 through B; test_ch_retain.sh's layout), then both
# started again with --retain-age (cut: yesterday 12:00) and
# --retain-lease 6. Asserts:
#  - exactly the events before the cut are removed, and the retention
#    drops count them once: a round once counted waits 3 s before its
#    commit (TRACECOLLECTD_TEST_RETAIN_PAUSE, a test aid), so that both
#    collectors counting would count twice;
#  - every round was counted by one collector, the lease's holder, and the
#    other said it skipped retention because that one holds the lease;
#  - the holder killed (-9): a fourth recording (imp-d, two days before
#    yesterday) imported through the other, which takes the lease over once
#    the dead holder's ran out (its claim's time on the server's clock
#    after the last expiry of the holder's term), removes imp-d's events
#    and counts them once: drops == all events removed, rounds numbered
#    once each.
# Skips, saying why, without clickhouse-server, trace-cmd or a writable
# tracefs.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_ch_import_test fleet_retain pid_A pid_B clickhouse_pid
for x in a b c d; do
	tc_sched_record "$x" 'for i in $(seq 20); do sleep 0.01; ls / > /dev/null; done'
done
day0=$(( $(date -u +%s) / 86400 * 86400 - 86400 ))	# yesterday 00:00 UTC
touch -d "@$((day0 - 3 * 86400 + 43200))" "$tmp/c.dat"
touch -d "@$((day0 - 2 * 86400 + 43200))" "$tmp/d.dat"
touch -d "@$((day0 + 6 * 3600))" "$tmp/a.dat"
touch -d "@$((day0 + 18 * 3600))" "$tmp/b.dat"
cut=$((day0 + 12 * 3600))
age=$(( $(date -u +%s) - cut ))	# the cut moves on as the test runs: by minutes, not hours
lease=6

tc_ch_import_start
. "$top_srcdir/tests/fleet_lib.sh"

tq() { "$top_builddir/traceq/traceq" --server "ipc://$tmp/q-$1.sock" -t 120000 "${@:2}"; }
# collector NAME ID [ARGS...]: fleet_collector with an ipc query socket (importing needs an identity)
collector() { fleet_collector "$1" "$2" --query "ipc://$tmp/q-$1.sock" "${@:3}"; }
committed="_tc_commit IN (SELECT id FROM tc.commits)"
ev="merge('tc', '^ev_')"
stored() { fleet_ch "SELECT count() FROM $ev WHERE $committed"; }
older() { fleet_ch "SELECT count() FROM $ev WHERE $committed AND ts < $cut * 1000000000"; }
drops_ret() { fleet_ch "SELECT sum(n) FROM drops WHERE reason = 'retention' AND $committed"; }
busy() { fleet_ch "SELECT count() FROM system.mutations WHERE database = 'tc' AND is_done = 0"; }
# wait_removed N: until N events are stored, none older than the cut, no
# mutation running (three minutes at most)
wait_removed() {
	for _ in $(seq 900); do
		[ "$(stored)" = "$1" ] && [ "$(older)" = 0 ] && [ "$(busy)" = 0 ] && return
		sleep 0.2
	done
}
stop() { local v=pid_$1; kill "${!v}"; wait "${!v}" 2>/dev/null; printf -v "$v" ''; }

collector A 1
collector B 2
for x in a:A b:B c:A; do
	tq "${x#*:}" --import "$tmp/${x%:*}.dat" --name "imp-${x%:*}" > "$tmp/imp.out" 2>&1; rc=$?
	check "imp-${x%:*} imports through ${x#*:} (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/imp.out"; false; }'
done
stop A; stop B
total=$(stored); old=$(older)
check "the recordings sit on both sides of the cut ($old of $total before it)" \
	'[ "${old:-0}" -gt 0 ] && [ "$old" -lt "$total" ]'
[ "$failed" = 0 ] || { tail -40 "$tmp/collector.log"; exit 1; }

# both with retention, started together; a counted round waits 3 s before
# its commit (a test aid), so that without the lease both would count
TRACECOLLECTD_TEST_RETAIN_PAUSE=3 collector A 1 --retain-age "$age" --retain-lease "$lease"
TRACECOLLECTD_TEST_RETAIN_PAUSE=3 collector B 2 --retain-age "$age" --retain-lease "$lease"
wait_removed "$((total - old))"
s=$(stored); n=$(drops_ret)
check "retention removed exactly the events before the cut ($((total - s)) == $old)" \
	'[ "$((total - s))" = "$old" ]'
check "the retention drops count them once, not once per collector ($n == $old)" \
	'[ "$n" = "$old" ]'
holder=$(fleet_ch "SELECT argMax(collector, term) FROM retain_lease")
other=$([ "$holder" = A ] && echo B || echo A)
counters=$(fleet_ch "SELECT groupUniqArray(collector) FROM retain_rounds WHERE $committed")
check "every round was counted by the lease's holder $holder ($counters)" \
	'[ "$counters" = "['"'"'$holder'"'"']" ]'
sleep "$lease"	# a lease's length: the other has looked at least once more since
check "$other said it skipped retention while $holder holds the lease" \
	'grep -q "collector '"'"'$holder'"'"' holds the retention lease: not running retention here" \
		"$tmp/collector.log"'
check "$other never claimed a term alone: $holder held every one" \
	'[ "$(fleet_ch "SELECT count() FROM (SELECT term FROM retain_lease GROUP BY term
		HAVING uniqExact(nonce) = 1 AND any(collector) = '"'"'$other'"'"')")" = 0 ]'

# the holder killed: the other takes the lease over once it ran out
hterm=$(fleet_ch "SELECT max(term) FROM retain_lease WHERE collector = '$holder'")
v=pid_$holder; kill -9 "${!v}"; wait "${!v}" 2>/dev/null; printf -v "$v" ''
echo "killed the lease's holder $holder (-9)"
tq "$other" --import "$tmp/d.dat" --name imp-d > "$tmp/imp.out" 2>&1; rc=$?
check "imp-d imports through $other (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/imp.out"; false; }'
old_d=$(older)
all=$(stored)
check "imp-d is older than the cut ($old_d events)" '[ "${old_d:-0}" -gt 0 ]'
wait_removed "$((all - old_d))"
s=$(stored); n=$(drops_ret)
check "$other removed imp-d's events ($((all - s)) == $old_d)" '[ "$((all - s))" = "$old_d" ]'
check "the retention drops count every removed event once ($n == $old + $old_d)" \
	'[ "$n" = "$((old + old_d))" ]'
oterm=$(fleet_ch "SELECT max(term) FROM retain_lease")
check "$other holds the latest term ($oterm) alone" \
	'[ "$(fleet_ch "SELECT uniqExact(nonce), any(collector) FROM retain_lease
		WHERE term = $oterm")" = "1	$other" ]'
# its claim's now() on the server: its first row's expiry less the lease
claimed=$(fleet_ch "SELECT min(expires) - $lease FROM retain_lease WHERE term = $oterm")
ran_out=$(fleet_ch "SELECT max(expires) FROM retain_lease WHERE term = $hterm")
check "$other claimed it (server time $claimed) after $holder's ran out ($ran_out)" \
	'[ "$oterm" -gt "$hterm" ] && [ "$claimed" -gt "$ran_out" ]'
check "rounds after the kill were counted by $other" \
	'[ "$(fleet_ch "SELECT argMax(collector, round) FROM retain_rounds WHERE $committed")" = "$other" ]'
check "every round number once ($(fleet_ch "SELECT count(), uniqExact(round) FROM retain_rounds"))" \
	'[ "$(fleet_ch "SELECT count() - uniqExact(round) FROM retain_rounds")" = 0 ]'
check "the collectors' log has no sanitizer report (a --enable-sanitizers build)" \
	'! grep -q "Sanitizer\|runtime error:" "$tmp/collector.log"'
[ "$failed" = 0 ] || tail -40 "$tmp/collector.log"
exit "$failed"
