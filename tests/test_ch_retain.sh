#!/bin/bash
# Retention on the ClickHouse store (issue 32): by age, a partial day, and
# by size, counted exactly once across kill -9 (server/store/clickhouse_retain.c).
#
# Three trace-cmd recordings, imported as three hosts; the import puts a
# recording's last page at the file's modification time, so: imp-c three
# days before yesterday (a whole day), imp-a yesterday 06:00 and imp-b
# yesterday 18:00 (one day, a cut at 12:00 through it). Then --retain-age
# puts the cut at yesterday 12:00.
#
# Asserts:
#  - the collector killed (-9, a test aid) right after a round was counted
#    in the open commit: no retention drop is committed, nothing removed;
#  - killed again once the round committed, before any row was removed:
#    the drops are committed (imp-a's and imp-c's events), nothing removed;
#  - started again: exactly the events before the cut are removed (none
#    older left, imp-b's all kept, imp-c's day gone as a partition, imp-a's
#    day kept), and --drops counts exactly them, once, per event type;
#    orphan rows (of a commit id with no commits row) before the cut go
#    with them, and are not counted;
#  - SQLite, given the same recordings and the same --retain-age, removes
#    and counts the same per event type, and leaves each host the same
#    bytes for its quota;
#  - --retain-size: the database's active parts end under the cap, and the
#    retention drops == the events removed;
#  - rows of a commit id the restarted collector gave up, and a commits row
#    of it that lands after, are not read (void_ids).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

command -v sqlite3 > /dev/null || skip "needs sqlite3 (apt-get install sqlite3)"
tc_ch_import_test ch_retain collector_pid
for x in a b c; do
	tc_sched_record "$x" 'for i in $(seq 20); do sleep 0.01; ls / > /dev/null; done'
done
day0=$(( $(date -u +%s) / 86400 * 86400 - 86400 ))	# yesterday 00:00 UTC
touch -d "@$((day0 - 3 * 86400 + 43200))" "$tmp/c.dat"
touch -d "@$((day0 + 6 * 3600))" "$tmp/a.dat"
touch -d "@$((day0 + 18 * 3600))" "$tmp/b.dat"
cut=$((day0 + 12 * 3600))
age=$(( $(date -u +%s) - cut ))	# the cut moves on as the test runs: by minutes, not hours

tc_ch_import_start
tq() { "$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 "$@"; }
chq() { tc_ch --query "$1"; }
start() { tc_start_collector "${ch_db_args[@]}" --query "ipc://$tmp/q.sock" "$@"; }
# wait_dead: the collector killed itself (the test aid); waits up to a minute
wait_dead() {
	for _ in $(seq 600); do kill -0 "$collector_pid" 2>/dev/null || break; sleep 0.1; done
	wait "$collector_pid" 2>/dev/null; collector_pid=
}
ev="merge('tc', '^ev_')"
stored() { chq "SELECT count() FROM $ev"; }
# retention drops of completed commits, in all and per event type
drops_ret() {
	chq "SELECT sum(n) FROM tc.drops WHERE reason = 'retention' AND
		_tc_commit <= (SELECT max(id) FROM tc.commits)"
}

start
for x in a b c; do
	tq --import "$tmp/$x.dat" --name "imp-$x" > "$tmp/imp-$x.out" 2>&1; rc=$?
	check "imp-$x imports into ClickHouse (exit $rc)" '[ "$rc" = 0 ] || cat "$tmp/imp-$x.out"'
done
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
total=$(stored)
old=$(chq "SELECT count() FROM $ev WHERE ts < $cut * 1000000000")
hosts_old=$(chq "SELECT groupUniqArray(h.name) FROM (SELECT DISTINCT host_id FROM $ev
	WHERE ts < $cut * 1000000000) ANY INNER JOIN tc.hosts AS h USING host_id")
chq "SELECT _table, count() FROM $ev WHERE ts < $cut * 1000000000 GROUP BY _table
	ORDER BY _table" > "$tmp/old.types"
check "the recordings sit on both sides of the cut ($old of $total before it: $hosts_old)" \
	'[ "$old" -gt 0 ] && [ "$old" -lt "$total" ] &&
	 [ "$hosts_old" = "['"'"'imp-a'"'"','"'"'imp-c'"'"']" ] ||
	 [ "$hosts_old" = "['"'"'imp-c'"'"','"'"'imp-a'"'"']" ]'

# orphans: rows of commit 0, which has no commits row (as a late batch of an
# abandoned commit that landed after the cleanup), copied from imp-a's and
# imp-c's events before the cut: below every round's upto, never counted
# as drops, removed with the round's rows
t=$(chq "SELECT _table FROM $ev WHERE ts < $cut * 1000000000 GROUP BY _table
	ORDER BY count() DESC LIMIT 1")
cols=$(chq "SELECT arrayStringConcat(groupArray(name), ',') FROM system.columns
	WHERE database = 'tc' AND table = '$t'")
for w in "ts < $day0 * 1000000000" "ts >= $day0 * 1000000000 AND ts < $cut * 1000000000"; do
	chq "INSERT INTO tc.\`$t\` ($cols) SELECT ${cols/_tc_commit/toUInt64(0)} FROM tc.\`$t\`
		WHERE $w LIMIT 3"
done
orphans=$(chq "SELECT count() FROM $ev WHERE _tc_commit = 0")
check "6 orphan rows of no commit, on both days before the cut ($orphans)" '[ "$orphans" = 6 ]'
total=$((total + orphans))

# kill_at POINT WANT: the collector, with retention, killed by the test aid
# at POINT; then WANT retention drops are committed and nothing is removed
kill_at() {
	point=$1 want=$2	# (check's eval sees globals, not these arguments)
	TRACECOLLECTD_TEST_RETAIN_KILL=$point start --retain-age "$age"
	wait_dead
	check "the test aid killed the collector at $point" \
		'grep -q "killing the collector at $point" "$tmp/collector.log"'
	n=$(drops_ret); s=$(stored)
	check "after a kill at $point: $want retention drops committed (${n:-0}), nothing removed ($s)" \
		'[ "${n:-0}" = "$want" ] && [ "$s" = "$total" ]'
}
kill_at counted 0	# a round counted in the open commit: its commit is lost
kill_at committed "$old"	# the round committed, its rows not removed yet

# again, to the end
start --retain-age "$age"
for _ in $(seq 300); do
	[ "$(stored)" -le "$((total - old))" ] &&
		[ "$(chq "SELECT count() FROM system.mutations WHERE database = 'tc' AND
			is_done = 0")" = 0 ] && break
	sleep 0.2
done
s=$(stored); n=$(drops_ret)
check "retention removed exactly the events before the cut and the orphans ($((total - s)) == $old + $orphans)" \
	'[ "$((total - s))" = "$((old + orphans))" ]'
check "the orphans are gone" '[ "$(chq "SELECT count() FROM $ev WHERE _tc_commit = 0")" = 0 ]'
check "none before the cut is left" \
	'[ "$(chq "SELECT count() FROM $ev WHERE ts < $cut * 1000000000")" = 0 ]'
check "the retention drops count them once ($n == $old)" '[ "$n" = "$old" ]'
parts=$(chq "SELECT groupUniqArray(partition) FROM system.parts WHERE database = 'tc' AND
	active AND startsWith(table, 'ev_')")
check "imp-c's day went as a partition, imp-a's day stays for imp-b ($parts)" \
	'[ "$parts" = "['"'"'$(date -u -d "@$day0" +%Y%m%d)'"'"']" ]'
tq --drops > "$tmp/ch.drops" 2>&1
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
chq "SELECT h.name, toInt64(b) - toInt64(f) FROM (SELECT host_id, sum(b) AS b, sum(f) AS f FROM
	(SELECT host_id, bytes AS b, 0 AS f FROM tc.cpu_counts UNION ALL
	 SELECT host_id, 0 AS b, bytes AS f FROM tc.freed) GROUP BY host_id)
	ANY INNER JOIN (SELECT host_id, any(name) AS name FROM tc.hosts GROUP BY host_id) AS h
	USING host_id ORDER BY h.name" | sed 's/\t-[0-9]*$/\t0/' > "$tmp/ch.usage"

# SQLite: the same recordings, the same age
tc_start_collector --query "ipc://$tmp/q.sock" --retain-age "$age"
for x in a b c; do
	tq --import "$tmp/$x.dat" --name "imp-$x" > "$tmp/sq-$x.out" 2>&1 || cat "$tmp/sq-$x.out"
done
sleep 2	# retention runs each second: let it pass once more
tq --sync --drops > "$tmp/sqlite.drops" 2>&1
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
check "--drops: ClickHouse counts what SQLite counts, per event type" \
	'grep -q retention "$tmp/sqlite.drops" && cmp -s "$tmp/ch.drops" "$tmp/sqlite.drops" ||
	{ diff "$tmp/ch.drops" "$tmp/sqlite.drops"; false; }'
sqlite3 -separator $'\t' "$tmp/trace.db" "SELECT h.name, max(0, (SELECT sum(bytes) FROM cpus
	WHERE host_id = h.id) - h.freed_bytes) FROM hosts AS h ORDER BY h.name" > "$tmp/sqlite.usage"
check "each host's bytes for its quota after retention are SQLite's" \
	'cmp -s "$tmp/ch.usage" "$tmp/sqlite.usage" || { diff "$tmp/ch.usage" "$tmp/sqlite.usage"; false; }'

# by size: under a cap of the database's bytes less half its events'
used=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'tc' AND active")
evb=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'tc' AND active AND
	startsWith(table, 'ev_')")
cap=$((used - evb / 2))
before=$(stored); drops_before=$(drops_ret)
start --retain-size "$cap"
for _ in $(seq 300); do
	[ "$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'tc' AND
		active")" -le "$cap" ] &&
		[ "$(chq "SELECT count() FROM system.mutations WHERE database = 'tc' AND
			is_done = 0")" = 0 ] && break
	sleep 0.2
done
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
now=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'tc' AND active")
s=$(stored); n=$(drops_ret)
# a round counted and committed whose rows are not removed yet (the next call removes them)
last="(SELECT max(id) FROM tc.commits)"
# (retain_rounds: per collector number the last commit a round takes; this one's is 0)
pending=$(chq "SELECT count() FROM $ev WHERE
	ts < (SELECT argMax(cut, round) FROM tc.retain_rounds WHERE _tc_commit <= $last) AND
	_tc_commit <= (SELECT argMax(uptos, round)[1] FROM tc.retain_rounds WHERE _tc_commit <= $last)")
check "--retain-size $cap: the store is under it ($now, from $used)" '[ "$now" -le "$cap" ]'
check "--retain-size: some events removed, each counted once (removed $((before - s)) + counted, not yet removed $pending == $((n - drops_before)))" \
	'[ "$s" -lt "$before" ] && [ "$((before - s + pending))" = "$((n - drops_before))" ]'
# a late commits row (server/store/clickhouse.h): a collector killed with
# commit X's rows acknowledged and its commits row held by the server;
# started again, it gives X up; X's row lands before X's rows are deleted.
# Made here by landing both after the start: X the last id the killed
# collectors reserved, which no commit took
x=$(chq "SELECT max(hw) FROM tc.commit_ids WHERE hw % 64 = 0")
t=$(chq "SELECT _table FROM $ev GROUP BY _table ORDER BY count() DESC LIMIT 1")
cols=$(chq "SELECT arrayStringConcat(groupArray(name), ',') FROM system.columns
	WHERE database = 'tc' AND table = '$t'")
e=$(chq "SELECT any(name) FROM tc.event_types WHERE table_name = '$t'")
# (up to 5 rows: retention may have left fewer, as under ASan in CI: 2)
k=$(chq "SELECT least(count(), 5) FROM tc.\`$t\`")
start
n0=$(tq --count "$e")
chq "INSERT INTO tc.\`$t\` ($cols) SELECT ${cols/_tc_commit/toUInt64($x)} FROM tc.\`$t\` LIMIT $k"
chq "INSERT INTO tc.commits (id, ts, collector) VALUES ($x, 0, 'late')"
n1=$(tq --count "$e")
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
check "$k rows of a commit given up at the start, and its late commits row: not read ($e: $n0 == $n1)" \
	'[ -n "$n0" ] && [ "$n0" = "$n1" ] && [ "$k" -ge 1 ] &&
	 [ "$(chq "SELECT count() FROM $ev WHERE _tc_commit = $x")" = "$k" ]'
check "the collector's log has no sanitizer report (a --enable-sanitizers build)" \
	'! grep -q "Sanitizer\|runtime error:" "$tmp/collector.log"'
[ "$failed" = 0 ] || tail -30 "$tmp/collector.log"
exit "$failed"
