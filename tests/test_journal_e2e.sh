#!/bin/bash
# The collector's receive journal (server/ingest/journal.h): it acknowledges pages
# once they are in the journal and decodes and stores them behind, at idle
# priority; what a crash leaves in the journal is stored at the next start,
# once.
#
# 1. A backlog, then kill -9: an agent streams sched_switch; after a while
#    another process holds the database's write lock (BEGIN EXCLUSIVE, for
#    less than the store's 5 s busy timeout), so storing stops while
#    receiving goes on, and the agent still gets its DONE (everything
#    journaled). The collector is killed with part of the stream stored;
#    once the lock is gone it starts again on the same database and
#    journal.
#    Asserts: the DONE covers every page; before the kill the store held
#    less than was shipped, and traceq --stats said so; after the restart
#    stored == shipped exactly,
#    the collector says it stored the journal file, and no page was
#    processed twice (dup_pages 0: the journal's mark in the store, not
#    the stream marks, skipped what was stored); the journal is empty.
# 2. Rotation: with --journal-size 2M a connection's file rotates at 256 KB
#    once stored: a stream of several MB goes through more than one file.
#    Asserts: journal file numbers past the first were seen while it
#    streamed; a second collector given the same journal directory refuses
#    to start; stored == shipped; the journal is empty after a clean stop.
# 3. Rotation, then kill -9: as 1, with --journal-size 1M (files rotate at
#    128 KB) and sched_wakeup/sched_waking too, so the connection is on a
#    later file, which starts with the messages that shape decoding, when
#    the backlog builds up.
#    Asserts: files past the first were seen; the restart stored a file
#    left behind; stored == shipped; no page was processed twice (the
#    only duplicates are pages the agent resent after a full journal
#    pushed back).
# 4. --journal-size 0: no journal; DONE comes once stored.
#    Asserts: the agent's stored_events == its events; no journal directory.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v sqlite3 >/dev/null || skip "needs the sqlite3 command (Debian sqlite3)"
tc_lock
tc_setup journal agent workload locker watcher collector_pid

tc_certs
field() { sed -n "s/.*total:.* $1=\([0-9]*\).*/\1/p" "$2"; }
( while :; do sleep 0.002; done ) &
workload=$!

# locked_stream N DB AFTER ARGS...: agent N (traceagent ARGS, its output in
# $tmp/agentN.out and .err) streams; at least AFTER seconds in, and once the
# store holds a first sched_switch, another process holds DB's write lock
# for 4 s, below the store's 5 s busy timeout, so storing stops while
# receiving goes on. The agent is stopped (SIGTERM, as --duration would)
# 2 s into the lock. Waits for the agent: rc. The agent ships no kernel
# symbols: storing 100k of them is a write of seconds at idle priority
# that the lock would have to wait for.
locked_stream() {
	local n=$1 db=$2 after=$3 i seen=0
	shift 3
	tc_start_agent "agent$n" --instance "tcjournal-$$-$n" --no-kernel-symbols \
		--spool-dir "$tmp/spool" "$@"
	sleep "$after"
	for ((i = 0; i < 300; i++)); do
		seen=$("$top_builddir/traceq/traceq" --server "$query" -t 5000 --count sched_switch \
			2>/dev/null) || seen=0
		[ "$seen" -gt 0 ] && break
		sleep 0.1
	done
	echo "stored before the lock: $seen"
	sqlite3 -cmd ".timeout 3000" -cmd "BEGIN EXCLUSIVE;" -cmd ".system sleep 4" \
		"$db" "COMMIT;" &
	locker=$!
	sleep 2
	kill -TERM "$agent"
	wait "$agent"; rc=$?
	agent=
}

# crash: kill -9 the collector, then wait for the lock to go.
crash() {
	kill -9 "$collector_pid"; wait "$collector_pid" 2>/dev/null
	collector_pid=
	wait "$locker"
	locker=
}

# ---- 1. backlog, kill -9, restart
tc_start_collector --db "$tmp/crash.db"
locked_stream 1 "$tmp/crash.db" 1 -e sched:sched_switch --name journal-crash
cat "$tmp/agent1.out"
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent1.err"; false; }'
check "its DONE covers every page (journaled)" \
	'tc_done_covers "$tmp/agent1.out" && grep -q "journaled_pages=" "$tmp/agent1.out"'
shipped=$(field events "$tmp/agent1.out")
before=$("$top_builddir/traceq/traceq" --server "$query" -t 5000 --count sched_switch 2>/dev/null) || before=0
"$top_builddir/traceq/traceq" --server "$query" -t 5000 --stats > /dev/null 2> "$tmp/stats.err"
cat "$tmp/stats.err"
check "traceq --stats says the collector is still storing" \
	'grep -q "the collector is still storing: [1-9][0-9]* batches" "$tmp/stats.err"'
files=$(ls "$tmp/crash.db.journal" | grep -c '\.tcj$')
crash
echo "shipped=$shipped stored before the kill=$before journal files=$files"
check "a backlog was left in the journal ($before of $shipped stored, $files file(s))" \
	'[ -n "$shipped" ] && [ "$before" -gt 0 ] && [ "$before" -lt "$shipped" ] && [ "$files" -ge 1 ]'
tc_start_collector --db "$tmp/crash.db"
stored=$(traceq --count '*')	# with the agent's task name events
check "after the restart stored ($stored) == shipped ($shipped)" '[ "$stored" = "$shipped" ]'
check "the collector stored the journal left behind" \
	'grep -q "left by an earlier run are stored first" "$tmp/collector.log" &&
	 grep -q "stored 1 journal file(s)" "$tmp/collector.log"'
traceq --stats | sed 's/ agent_.*overrun=[0-9]*//'
check "no page was processed twice (dup_pages=0)" \
	'traceq --stats | grep "host=journal-crash" | grep -q " dup_pages=0" &&
	 ! traceq --stats | grep "host=journal-crash" | grep -q " dup_pages=[1-9]"'
check "the journal is empty" '[ -z "$(ls "$tmp/crash.db.journal" | grep -v "^lock$")" ]'
kill "$collector_pid"; wait "$collector_pid"
collector_pid=

# ---- 2. rotation
tc_start_collector --db "$tmp/rotate.db" --journal-size 2M
( while :; do ls "$tmp/rotate.db.journal"; sleep 0.05; done > "$tmp/seen" 2>/dev/null ) &
watcher=$!
tc_run_agent agent2 -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_waking \
	--duration 4 --name journal-rotate --instance "tcjournal-$$-2"
rc=$?
kill "$watcher"; wait "$watcher" 2>/dev/null
watcher=
"$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 --query tcp://127.0.0.1:0 \
	--db "$tmp/other.db" --journal-dir "$tmp/rotate.db.journal" --cert "$tmp/pki/server.crt" \
	--key "$tmp/pki/server.key" --ca "$tmp/pki/ca.crt" > /dev/null 2> "$tmp/second.log"
rc2=$?
check "a second collector on the same journal refuses to start (exit $rc2)" \
	'[ "$rc2" != 0 ] && grep -q "in use by another tracecollectd" "$tmp/second.log"'
cat "$tmp/agent2.out"
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent2.err"; false; }'
nfiles=$(sort -u "$tmp/seen" | grep -c '\.tcj$')
echo "journal files seen while streaming: $nfiles ($(sort -u "$tmp/seen" | tr '\n' ' '))"
check "the connection's journal rotated ($nfiles files seen)" '[ "$nfiles" -ge 2 ]'
shipped=$(field events "$tmp/agent2.out")
stored=$(traceq --count '*')
check "stored ($stored) == shipped ($shipped)" '[ -n "$shipped" ] && [ "$stored" = "$shipped" ]'
kill "$collector_pid"; wait "$collector_pid"
collector_pid=
check "the journal is empty after a clean stop" '[ -z "$(ls "$tmp/rotate.db.journal" | grep -v "^lock$")" ]'

# ---- 3. rotation, then kill -9
tc_start_collector --db "$tmp/rotcrash.db" --journal-size 1M
( while :; do ls "$tmp/rotcrash.db.journal"; sleep 0.05; done > "$tmp/seen3" 2>/dev/null ) &
watcher=$!
locked_stream 3 "$tmp/rotcrash.db" 3 -e sched:sched_switch -e sched:sched_wakeup \
	-e sched:sched_waking --name journal-rotcrash
kill "$watcher"; wait "$watcher" 2>/dev/null
watcher=
crash
cat "$tmp/agent3.out"
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent3.err"; false; }'
nfiles=$(sort -u "$tmp/seen3" | grep -c '\.tcj$')
check "the connection's journal rotated before the crash ($nfiles files seen)" '[ "$nfiles" -ge 2 ]'
tc_start_collector --db "$tmp/rotcrash.db" --journal-size 1M
shipped=$(field events "$tmp/agent3.out")
stored=$(traceq --count '*')
check "after the restart stored ($stored) == shipped ($shipped)" \
	'[ -n "$shipped" ] && [ "$stored" = "$shipped" ]'
check "the restarted collector stored a journal file left behind" \
	'[ "$(grep -c "left by an earlier run are stored first" "$tmp/collector.log")" = 2 ]'
# a 1M journal can fill while the store is locked: the collector stops
# reading, the agent's write times out and it resends from its spool, and
# the collector drops those pages as duplicates. So every duplicate must be
# a page the agent sent twice; a replay that stored a journal file again
# would count its pages on top.
resent=$(field resent "$tmp/agent3.out")
dups=$(traceq --stats | sed -n 's/^host=journal-rotcrash cpu=all .* dup_pages=\([0-9]*\).*/\1/p')
echo "agent resent ${resent:-?} pages; the collector dropped ${dups:-?} duplicates"
check "no page was processed twice (dup_pages $dups <= resent $resent)" \
	'[ -n "$dups" ] && [ -n "$resent" ] && [ "$dups" -le "$resent" ]'
kill "$collector_pid"; wait "$collector_pid"
collector_pid=

# ---- 4. no journal
tc_start_collector --db "$tmp/plain.db" --journal-size 0
tc_run_agent agent4 -e sched:sched_switch --duration 1 --name journal-none \
	--instance "tcjournal-$$-4"
rc=$?
cat "$tmp/agent4.out"
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent4.err"; false; }'
check "DONE comes once stored: stored_events == events" \
	'grep -q "stored_events=" "$tmp/agent4.out" && tc_done_covers "$tmp/agent4.out"'
check "no journal directory" '[ ! -e "$tmp/plain.db.journal" ]'
exit $failed
