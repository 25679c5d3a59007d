#!/bin/bash
# The database file removed under a running collector (rm) must not make it
# acknowledge events into the unlinked file: it notices at its next commit,
# says so, re-creates the database at the path and stores there everything
# acknowledged since (store.h, "A database removed or replaced").
#
# 1. With the receive journal (the default): agent "before" streams and
#    ends; its events are stored. Agent "during" starts; once some of its
#    events are stored, the test removes trace.db (rm, as an operator
#    would) while the agent keeps streaming.
#    Asserts: the collector logs "database ... was removed or replaced; not
#    storing until it is back" and that it re-created it; the agent exits
#    0; traceq (the query thread's read-only handle follows the file)
#    counts exactly the events "during" shipped - its journal file is
#    stored again from the start into the new file - and none of "before"'s;
#    after a restart of the collector on the same path, the same count
#    (what is stored is in the file at the path, not an unlinked one).
# 2. --journal-size 0 (pages acknowledged once committed): agent "before0"
#    streams and ends; the database is removed; agent "after0" streams, then
#    "after1". Asserts: the log line; "after0" exits 0 and its events are
#    all in the new file, once (the commit that noticed was not
#    acknowledged, the agent sent its pages again), so are "after1"'s; after
#    a restart, the same.
# Without the fix the collector stores into the unlinked file: traceq counts
# the old file's rows, and after the restart the database is empty.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup db_removed agent workload collector_pid

tc_certs
field() { sed -n "s/.*total:.* $1=\([0-9]*\).*/\1/p" "$2"; }
( while :; do sleep 0.002; done ) &
workload=$!

# stream NAME SECONDS: agent NAME streams sched_switch in the background
# (its output in $tmp/NAME.out and .err); agent holds its pid.
stream() {
	tc_start_agent "$1" -e sched:sched_switch --duration "$2" --name "$1" \
		--instance "tc-dbrm-$$-$1" --spool-dir "$tmp/spool-$1"
}

# finish NAME: wait for agent NAME; check it exited 0 and shipped events.
finish() {
	local rc name=$1
	wait "$agent"; rc=$?
	agent=
	check "agent $name exits 0 and ships events" \
		'[ "$rc" = 0 ] && [ "$(field events "$tmp/$name.out")" -gt 0 ] ||
		 { cat "$tmp/$name.err"; false; }'
}

# every event stored (the agent's task name events too, traceagent(8))
count() { traceq --count '*' --host "$1" 2>> "$tmp/traceq.err"; }

restart() {
	kill -TERM "$collector_pid"; wait "$collector_pid"
	collector_pid=
	tc_start_collector "$@"
}

# ---- 1. with the receive journal ----
tc_start_collector
stream before 2
finish before
check "before: stored == shipped" '[ "$(count before)" = "$(field events "$tmp/before.out")" ]'
stream during 8
for _ in $(seq 200); do
	n=$(traceq --count sched_switch --host during 2>/dev/null)
	[ -n "$n" ] && [ "$n" -gt 0 ] && break
	sleep 0.05
done
check "during: some events stored before the removal ($n)" '[ -n "$n" ] && [ "$n" -gt 0 ]'
rm "$tmp/trace.db"
finish during
shipped=$(field events "$tmp/during.out")
check "the collector says the database was removed" \
	'grep -q "database $tmp/trace.db was removed or replaced; not storing until it is back" "$tmp/collector.log"'
check "the collector says it re-created it" \
	'grep -q "database $tmp/trace.db re-created" "$tmp/collector.log"'
stored=$(count during)
check "during: stored ($stored) == shipped ($shipped), seen by queries" \
	'[ -n "$shipped" ] && [ "$stored" = "$shipped" ]'
check "before: nothing in the new file ($(count before))" '[ "$(count before)" = 0 ]'
restart
stored=$(count during)
check "after a restart: stored ($stored) == shipped ($shipped)" '[ "$stored" = "$shipped" ]'
kill -TERM "$collector_pid"; wait "$collector_pid"
collector_pid=
cat "$tmp/collector.log" > "$tmp/collector1.log"

# ---- 2. --journal-size 0 ----
rm -f "$tmp/trace.db" "$tmp/trace.db-wal" "$tmp/trace.db-shm" "$tmp/collector.log"
tc_start_collector --journal-size 0
stream before0 2
finish before0
check "before0: stored == shipped" '[ "$(count before0)" = "$(field events "$tmp/before0.out")" ]'
rm "$tmp/trace.db"
# The agent whose first commit meets the removed file: without a journal
# it must send again what was not acknowledged, wherever that commit falls
# (while it introduces itself, streams or drains; test_drain.sh orders
# each of them).
stream after0 3
finish after0
shipped=$(field events "$tmp/after0.out")
check "no journal: the collector says the database was removed" \
	'grep -q "database $tmp/trace.db was removed or replaced; not storing until it is back" "$tmp/collector.log"'
stored=$(count after0)
check "after0: stored ($stored) == shipped ($shipped), seen by queries" \
	'[ -n "$shipped" ] && [ "$stored" = "$shipped" ]'
stream after1 2
finish after1
shipped=$(field events "$tmp/after1.out")
stored=$(count after1)
check "after1: stored ($stored) == shipped ($shipped) in the new file, seen by queries" \
	'[ -n "$shipped" ] && [ "$stored" = "$shipped" ]'
restart --journal-size 0
stored=$(count after1)
check "after a restart: stored ($stored) == shipped ($shipped)" '[ "$stored" = "$shipped" ]'

if [ "$failed" != 0 ]; then
	echo "--- collector, with a journal"; cat "$tmp/collector1.log"
	echo "--- collector, without"; cat "$tmp/collector.log"
	echo "--- traceq"; cat "$tmp/traceq.err" 2>/dev/null
	exit 1
fi
echo "PASS: a removed database is noticed, re-created and refilled"
