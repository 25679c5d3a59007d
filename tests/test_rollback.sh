#!/bin/bash
# A transaction the collector cannot commit (disk full, I/O error) must not
# be acknowledged: its pages are sent again and stored once.
#
# The failure is real SQLite's: while an agent streams sched_switch, the
# test adds a trigger to the database that aborts every write of a page
# mark (stream_marks, written in the same transaction as the pages'
# events), waits until the collector reports the failed commit, and drops
# the trigger again.
#
# Asserts: the collector logs the failed commit and closes the agent's
# connection; the agent reconnects, resends what was not acknowledged and
# exits 0; the stored sched_switch events equal the shipped ones exactly
# (nothing lost, nothing twice).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v sqlite3 >/dev/null || skip "needs the sqlite3 command (Debian sqlite3)"
tc_lock
tc_setup rollback agent workload collector_pid

tc_certs
tc_start_collector
db() { sqlite3 -cmd ".timeout 20000" "$tmp/trace.db" "$@"; }

( while :; do sleep 0.002; done ) &
workload=$!
tc_start_agent agent -e sched:sched_switch --duration 8 --name rollback-host \
	--instance "tc-rollback-$$" --spool-dir "$tmp/spool"
sleep 2
db "CREATE TRIGGER tc_test_fail_ins BEFORE INSERT ON stream_marks
	BEGIN SELECT RAISE(ABORT, 'injected by test_rollback'); END;
    CREATE TRIGGER tc_test_fail_upd BEFORE UPDATE ON stream_marks
	BEGIN SELECT RAISE(ABORT, 'injected by test_rollback'); END;" ||
	fail "cannot add the failing trigger"
for _ in $(seq 150); do
	grep -q "commit failed" "$tmp/collector.log" && break
	sleep 0.1
done
db "DROP TRIGGER tc_test_fail_ins; DROP TRIGGER tc_test_fail_upd;" ||
	fail "cannot drop the failing trigger"
check "collector logs the failed commit and closes the connections" \
	'grep -qE "commit failed.*injected by test_rollback.*(send the pages of this transaction again|storing what they sent again from the receive journal)" "$tmp/collector.log"'
wait "$agent"; rc=$?
agent=
kill "$workload"; wait "$workload" 2>/dev/null
workload=
cat "$tmp/agent.out"
field() { sed -n "s/.*total:.* $1=\([0-9]*\).*/\1/p" "$tmp/agent.out"; }
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
check "agent reconnected ($(field reconnects))" '[ "$(field reconnects)" -ge 1 ]'
shipped=$(field events)
stored=$(traceq --count '*')	# with the agent's task name events
check "stored ($stored) == shipped ($shipped)" \
	'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ]'

if [ "$failed" != 0 ]; then
	echo "--- collector"; cat "$tmp/collector.log"
	echo "--- agent"; cat "$tmp/agent.err"
	exit 1
fi
echo "PASS: a failed commit is sent again, stored once"
