#!/bin/bash
# A journal replay places every event where the first pass did, across
# rotated journal files, while the host's clock is being slewed in (issue
# 36; server/ingest/clockmap.h: a rotated file carries the clock map as it
# stood, JREC_CLOCKMAP; the pages stored before a crash still tell the map
# how far they went).
#
# An agent whose realtime is 5 s ahead (libfaketime, as in test_clocks.sh)
# streams sched events to a collector whose journal rotates at 128 KB
# (--journal-size 1M): its events are placed by the collector's
# measurements, each slewed in over a second of trace time, so rotations
# fall inside slews. A few times during the run the collector is stopped
# (SIGSTOP) and its database and journal copied: what a kill -9 at that
# moment leaves; each while another process holds the store's write lock,
# so that the journal holds a backlog past the store's marks. Once the agent is done and everything is stored, each
# copy is given to a collector of its own, which stores what its journal
# holds past the copied store's marks, as a restart after a crash does.
# The last copy is taken after the agent is done (stopped with SIGTERM, as
# --duration would, while storing is held back): its journal holds the
# whole stream past its store's marks. The agent traces no task events
# (--no-comm-events): a row's task name is then the store's name of its
# pid, the agent's saved cmdlines' or one the collector learned from
# events, not a rename the row's own host journaled.
# Asserts: the copies' journals held rotated files; every event of each
# replayed store is stored by the first collector too, at the same ts to
# the nanosecond (and the replays stored events of their own: some were
# not in the copied store yet); the last copy's replay stores exactly the
# first pass's events, each with the task name the first pass gives it
# (the names learned from events: a rotated file carries them,
# JREC_PIDNAMES, and the pages stored before the crash teach them again,
# server/ingest/pidnames.h).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_need_faketime
command -v sqlite3 >/dev/null || skip "needs sqlite3"
tc_lock
tc_setup clockreplay collector_pid agent workload watcher locker
inst="tc-clockreplay-$$"
replay_cleanup() {
	[ -n "$collector_pid" ] && kill -CONT "$collector_pid" 2>/dev/null
	rmdir "$tracing/instances/$inst" 2>/dev/null
	tc_cleanup
}
trap replay_cleanup EXIT
tc_certs
tc_start_collector --db "$tmp/a.db" --journal-size 1M

# rows FILE: every stored event of clk-r as "ts<TAB>comm<TAB>the row's other
# fields", comm the task's name at the event ("_comm", or "comm" in an event
# without a comm field of its own)
rows() { traceq --sync '*' -H clk-r -f json | python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l)
    comm = r.pop("_comm" if "_comm" in r else "comm", None)
    ts = r.pop("ts")
    print(ts, comm, json.dumps(r, sort_keys=True), sep="\t")' | sort -k3 > "$1"; }

( while :; do sleep 0.001; done ) &
workload=$!
( while :; do ls "$tmp/a.db.journal"; sleep 0.05; done > "$tmp/seen" 2>/dev/null ) &
watcher=$!
tc_faked_agent r +5s -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_waking \
	--no-user --no-kernel-symbols --no-comm-events --trace-clock mono --duration 60 --name clk-r \
	--instance "$inst"
# crash images: the collector stopped while its store and journal are copied
# (with a backlog: another process holds the store's write lock for 3 s,
# below its 5 s busy timeout, so storing stops while the journal grows);
# before the last, the agent is stopped and has its DONE (all journaled):
# the workload slows down and the store catches up first (traceq --sync),
# so that the journal (1M) has room for the rest while storing is held back
for k in 1 2 3 4; do
	sleep 1
	if [ "$k" = 4 ]; then
		kill "$workload"; wait "$workload" 2>/dev/null
		( while :; do sleep 0.02; done ) &
		workload=$!
		traceq --hosts > /dev/null
	fi
	# (the last holds it 4 s, the agent's end and the copy inside them)
	sqlite3 -cmd ".timeout 3000" -cmd "BEGIN EXCLUSIVE;" \
		-cmd ".system sleep $([ "$k" = 4 ] && echo 4 || echo 3)" "$tmp/a.db" "COMMIT;" &
	locker=$!
	if [ "$k" = 4 ]; then
		sleep 0.3
		kill -TERM "$agent"
		wait "$agent"; rc=$?
		agent=
	else
		sleep 2
	fi
	kill -STOP "$collector_pid"
	mkdir "$tmp/snap$k"
	cp -a "$tmp"/a.db* "$tmp/snap$k/"
	kill -CONT "$collector_pid"
	wait "$locker"
	locker=
done
kill "$watcher" "$workload"; wait "$watcher" "$workload" 2>/dev/null
watcher= workload=
check "the agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/r.err"; false; }'
check "its events were placed by the collector's measurement" \
	'grep -q "host clk-r: its realtime disagrees" "$tmp/collector.log"'
rows "$tmp/rows-a"
kill "$collector_pid"; wait "$collector_pid"
collector_pid=
# names: every pid's name in the store (the agent's saved cmdlines and the
# names the collector learned from events)
names() { sqlite3 "$1" "SELECT pid, comm FROM comms ORDER BY pid"; }
names "$tmp/a.db" > "$tmp/names-a"
first=$(grep '\.tcj$' "$tmp/seen" | sort | head -1)
echo "the first pass stored $(wc -l < "$tmp/rows-a") events; journal files seen: $(grep -c '\.tcj$' "$tmp/seen" | head -1) names, $(sort -u "$tmp/seen" | grep -c '\.tcj$') distinct"

for k in 1 2 3 4; do
	snap=$tmp/snap$k
	files=$(ls "$snap/a.db.journal" | grep '\.tcj$' | tr '\n' ' ')
	check "copy $k: its journal holds a rotated file ($files; the first was $first)" \
		'ls "$snap/a.db.journal" | grep "\.tcj$" | grep -qv "^$first\$"'
	# the events the copied store held already (a copy of it: reading moves its WAL)
	mkdir "$snap/peek"
	cp "$snap"/a.db "$snap"/a.db-wal "$snap/peek/" 2>/dev/null
	tc_start_collector --db "$snap/a.db"
	rows "$tmp/rows-$k"
	kill "$collector_pid"; wait "$collector_pid"
	collector_pid=
	# (the names: the first pass learned more from pages the copy never had)
	read -r n missing moved renamed stored_a < <(python3 -c 'import sys
a = {}
for l in open(sys.argv[1]):
    ts, comm, rest = l.rstrip("\n").split("\t", 2)
    a[rest] = ts, comm
n = missing = moved = renamed = 0
for l in open(sys.argv[2]):
    ts, comm, rest = l.rstrip("\n").split("\t", 2)
    n += 1
    if rest not in a:
        missing += 1
        if missing <= 3:
            print("not stored by the first pass:", ts, rest, file=sys.stderr)
    elif a[rest][0] != ts:
        moved += 1
        if moved <= 3:
            print("at", ts, "not", a[rest][0] + ":", rest, file=sys.stderr)
    elif a[rest][1] != comm:
        renamed += 1
        if renamed <= 3 and sys.argv[3] == "4":
            print("named", comm, "not", a[rest][1] + ":", ts, rest, file=sys.stderr)
print(n, missing, moved, renamed, len(a))' "$tmp/rows-a" "$tmp/rows-$k" "$k")
	before=$(sqlite3 "$snap/peek/a.db" "SELECT coalesce(sum(events), 0) FROM cpus" 2>/dev/null)
	echo "copy $k: $n events after the replay (${before:-?} in the copied store), $missing not stored by the first pass, $moved at another ts"
	check "copy $k: the replay stored what the copied journal held past its marks (${before:-?} -> $n events)" \
		'grep -q "stored [1-9][0-9]* journal file(s)" "$tmp/collector.log" &&
		 [ -n "$before" ] && [ "$n" -gt "$before" ]'
	check "copy $k: every replayed event is the first pass's, at the same ts ($n events: $missing missing, $moved moved)" \
		'[ "$n" -gt 100 ] && [ "$missing" = 0 ] && [ "$moved" = 0 ]'
	if [ "$k" = 4 ]; then
		check "copy 4 (the whole stream journaled): the replay stores the first pass's events ($n of $stored_a), each with its task name ($renamed named otherwise)" \
			'[ "$n" = "$stored_a" ] && [ "$renamed" = 0 ]'
		names "$snap/a.db" > "$tmp/names-4"
		check "copy 4: the replay names every pid as the first pass did ($(wc -l < "$tmp/names-a") pids)" \
			'[ -s "$tmp/names-a" ] && diff "$tmp/names-a" "$tmp/names-4" | head -8 >&2 &&
			 cmp -s "$tmp/names-a" "$tmp/names-4"'
	fi
	: > "$tmp/collector.log"
done
exit $failed
