#!/bin/bash
# A record that kills the collector is quarantined, not replayed at every
# start (server/ingest/journal.h: crash quarantine).
#
# The collector runs with TRACECOLLECTD_TEST_ABORT_ON=FORMAT:sched_wakeup, a
# test aid (only in a build configured with --enable-test-aids; else the
# test skips) that abort()s the ingest worker while it decodes that FORMAT,
# as a format that overflows libtraceevent's stack would. A simulated agent
# (bench/loadgen, tests/data's real pages: sched_switch, sched_wakeup and
# ftrace:print) ships while another process holds the database's write
# lock, so that everything is journaled and acknowledged before the worker
# reaches the FORMAT; then the lock goes and the collector dies. It is
# started again with the hook still set, as a crash loop under
# Restart=on-failure would, and then once more.
#
# Asserts: the agent got its DONE; the first collector died of SIGABRT;
# the second stays up and stores the journal; the FORMAT record is in
# DIR/quarantine with a note giving the reason, the journal file and
# offset, the host and the certificate subject; traceq --drops counts it
# for the host and sched:sched_wakeup; the rest of the file is stored:
# stored sched_switch + print events plus the sched_wakeup events counted
# as not stored (their FORMAT is gone) == the events shipped, and those
# counts agree with --stats' bad_events; a third start (hook still set)
# neither dies nor quarantines nor stores anything again.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_test_aids
command -v sqlite3 >/dev/null || skip "needs the sqlite3 command (Debian sqlite3)"
tc_lock
tc_setup quarantine locker collector_pid

tc_certs
db=$tmp/trace.db
jdir=$tmp/trace.db.journal
export TRACECOLLECTD_TEST_ABORT_ON=FORMAT:sched_wakeup

# count EVENT: stored events of EVENT (0 when there is no such table)
count() { traceq --count "$1" 2>/dev/null || echo 0; }
# drops_count REASON [SYSTEM EVENT]: the count of that --drops row, or 0
drops_count() {
	traceq --drops | grep "^host=quar-0 system=${2:--} event=${3:--} reason=$1 count=" |
		sed -n 's/.* count=\([0-9]*\)$/\1/p' | grep . || echo 0
}
# alive: is the collector still running?
alive() { kill -0 "$collector_pid" 2>/dev/null; }
# replayed N: wait until the log says "stored N journal file(s)" N times in
# all, or the collector is gone. Return: whether it is still running.
replayed() {
	for _ in $(seq 1200); do
		[ "$(grep -c "stored [0-9]* journal file(s)" "$tmp/collector.log")" -ge "$1" ] &&
			break
		alive || break
		sleep 0.1
	done
	alive
}

# ---- 1. the record kills the collector
tc_start_collector
rm -f "$tmp/locked"
sqlite3 -cmd ".timeout 3000" -cmd "BEGIN EXCLUSIVE;" -cmd ".system touch $tmp/locked; sleep 3" \
	"$db" "COMMIT;" &
locker=$!
for _ in $(seq 100); do [ -e "$tmp/locked" ] && break; sleep 0.05; done
"$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
	--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" --data "$top_srcdir/tests/data" \
	--agents 1 --pages 40 --name quar > "$tmp/loadgen.out" 2>&1
rc=$?
cat "$tmp/loadgen.out"
check "the agent's DONE covers every page it shipped (journaled)" '[ "$rc" = 0 ]'
shipped=$(sed -n 's/.* shipped_events=\([0-9]*\).*/\1/p' "$tmp/loadgen.out")
wait "$locker"
locker=
for _ in $(seq 600); do alive || break; sleep 0.1; done
alive && { kill -9 "$collector_pid"; echo "(the collector did not die: killed)"; }
wait "$collector_pid"
rc=$?
collector_pid=
check "the collector died of SIGABRT decoding the FORMAT (exit $rc)" \
	'[ "$rc" = 134 ] && grep -q "aborting on FORMAT sched_wakeup" "$tmp/collector.log"'
check "the FORMAT's record is in the journal" \
	'[ "$(ls "$jdir" | grep -c "\.tcj$")" -ge 1 ]'

# ---- 2. the next start, the hook still set: quarantined, the rest stored
tc_start_collector
if ! replayed 1; then
	tail -5 "$tmp/collector.log"
	wait "$collector_pid"
	fail "the second collector died too (exit $?): a crash loop"
	collector_pid=
	exit 1
fi
switch=$(count sched:sched_switch)
print=$(count ftrace:print)
wakeup=$(count sched:sched_wakeup)
check "the second collector stays up and stored the journal file" 'alive'
cat "$tmp/collector.log" | grep -i "quarantin\|died\|not stored\|not applied"
note=$(ls "$jdir/quarantine/"*.txt 2>/dev/null | head -1)
check "one record in quarantine" \
	'[ "$(ls "$jdir/quarantine" 2>/dev/null | grep -c "\.txt$")" = 1 ] &&
	 [ "$(ls "$jdir/quarantine" | grep -c "\.rec$")" = 1 ]'
[ -n "$note" ] && cat "$note"
check "its note says why, where and whose" \
	'[ -n "$note" ] && grep -q "^the collector died while decoding this record$" "$note" &&
	 grep -q "^journal file: .*/[0-9a-f]\{16\}\.tcj$" "$note" &&
	 grep -q "^record: ends at byte [0-9]* of the file$" "$note" &&
	 grep -q "^unit: message FORMAT sched:sched_wakeup$" "$note" &&
	 grep -q "^host: quar-0$" "$note" && grep -q "^certificate subject: ..*$" "$note"'
check "the record kept is the FORMAT (its text is in it)" \
	'grep -q "name: sched_wakeup" "${note%.txt}.rec"'
traceq --drops
quarantined=$(drops_count "the collector died decoding it" sched sched_wakeup)
check "traceq --drops counts it for the host and event ($quarantined)" '[ "$quarantined" = 1 ]'
unknown=$(drops_count "event id with no FORMAT")
bad_events=$(traceq --stats | grep "^host=quar-0 " | grep -v "^host=quar-0 cpu=all " |
	sed -n 's/.* bad_events=\([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
echo "shipped=$shipped sched_switch=$switch print=$print sched_wakeup=$wakeup" \
	"no FORMAT=$unknown bad_events=$bad_events"
check "the rest of the file is stored: $switch + $print stored + $unknown not stored == $shipped" \
	'[ -n "$shipped" ] && [ "$switch" -gt 0 ] && [ "$print" -gt 0 ] && [ "$wakeup" = 0 ] &&
	 [ "$unknown" -gt 0 ] && [ $((switch + print + unknown)) = "$shipped" ]'
check "--stats counts the same events as not stored ($bad_events)" '[ "$bad_events" = "$unknown" ]'
kill "$collector_pid"; wait "$collector_pid"
collector_pid=

# ---- 3. once more: nothing is decoded, quarantined or stored again
tc_start_collector
check "a third start stays up, stores nothing twice" \
	'[ "$(count sched:sched_switch)" = "$switch" ] && [ "$(count ftrace:print)" = "$print" ] &&
	 [ "$(drops_count "the collector died decoding it" sched sched_wakeup)" = 1 ] && alive'
check "nothing more in quarantine" '[ "$(ls "$jdir/quarantine" | grep -c "\.txt$")" = 1 ]'
kill "$collector_pid"; wait "$collector_pid"
collector_pid=
exit $failed
