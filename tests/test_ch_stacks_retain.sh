#!/bin/bash
# Retention of the stacks table on ClickHouse (issue 38): the stacks only
# removed event rows referenced go, the others stay and print, and a
# stack the writer had written before its sweep prints when rows refer to
# it again (server/store/clickhouse_stacks.c, ch_stacks_sweep()).
#
# Four trace-cmd recordings with -T (a stack after every event; an import
# is known by its file's digest, so each is its own): oldh.dat, oldo.dat
# and again.dat of one workload, new.dat of another; oldh.dat and
# oldo.dat put three days ago, new.dat and again.dat now (an import puts
# a recording at its file's time). One collector, --retain-age one day,
# the writer's stack memory three seconds long
# (TRACECOLLECTD_TEST_STACKS_REFRESH, a test aid): imp-h gets new.dat
# then oldh.dat, imp-o oldo.dat; retention removes the old rows, then the
# sweep the stacks only they referenced. Then, in the same collector,
# imp-o gets again.dat: stacks it wrote before the sweep, swept.
#
# Asserts:
#  - oldh.dat brought imp-h stacks new.dat has not (else nothing to sweep);
#  - after the sweep: no event row before the cut, no stacks row that no
#    event row references, no reference without its stacks row; imp-h
#    keeps exactly new.dat's stacks, imp-o none;
#  - traceq prints imp-h's rows as before oldh.dat came, "=> " lines
#    included;
#  - again.dat refers to stacks imp-o had before the sweep, and every one
#    of its stack rows prints its "=> " lines (a writer that kept
#    believing its swept stacks stored would leave them without frames).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_ch_import_test ch_stacks_retain collector_pid
for x in oldh oldo again; do
	tc_sched_record "$x" 'for i in $(seq 20); do sleep 0.01; ls -R /etc > /dev/null 2>&1; done' -T
done
tc_sched_record new 'for i in $(seq 20); do sleep 0.01; cat /proc/self/status > /dev/null; done' -T
now=$(date -u +%s)
touch -d "@$((now - 3 * 86400))" "$tmp/oldh.dat" "$tmp/oldo.dat"
cut=$(( (now - 86400) / 3600 * 3600 ))	# --retain-age 86400, by the hour

tc_ch_import_start
tq() { "$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 "$@"; }
chq() { tc_ch --query "$1"; }
imp() {
	tq --import "$tmp/$1.dat" --name "$2" > "$tmp/imp-$1-$2.out" 2>&1; rc=$?
	check "$1.dat imports as $2 (exit $rc)" '[ "$rc" = 0 ] || cat "$tmp/imp-$1-$2.out"'
}
show() { tq -H "$1" --time raw --no-host '*' > "$2" 2>&1; }
# nocomm FILE: FILE's lines with the COMM column left out: a pid's name is
# the host's (oldh.dat, imported into imp-h too, may teach another for a
# pid of new.dat: "trace-cmd-30330" then printed "sleep-30330" once in CI)
nocomm() { sed -E 's/^ *[^ ].*-([0-9]+) +\[([0-9]{3})\] /\1 [\2] /' "$1"; }
host() { echo "(SELECT any(host_id) FROM tc.hosts WHERE name = '$1')"; }
nstacks() { chq "SELECT uniqExact(id) FROM tc.stacks WHERE host_id = $(host "$1")"; }

TRACECOLLECTD_TEST_STACKS_REFRESH=3 \
	tc_start_collector "${ch_db_args[@]}" --query "ipc://$tmp/q.sock" --retain-age 86400
imp new imp-h
show imp-h "$tmp/h-new.txt"
s_new=$(nstacks imp-h)
imp oldh imp-h
s_all=$(nstacks imp-h)	# none swept yet: the sweep takes stacks six seconds old
imp oldo imp-o
chq "SELECT DISTINCT id FROM tc.stacks WHERE host_id = $(host imp-o)" > "$tmp/o-ids"
check "oldh.dat brought imp-h stacks new.dat has not ($s_new, then $s_all)" \
	'[ "$s_new" -gt 0 ] && [ "$s_all" -gt "$s_new" ]'

kt=$(chq "SELECT any(table_name) FROM tc.event_types WHERE system = 'ftrace' AND
	name = 'kernel_stack'")
kc=$(chq "SELECT any(col) FROM tc.event_fields WHERE name = 'caller' AND type_id IN
	(SELECT type_id FROM tc.event_types WHERE system = 'ftrace' AND name = 'kernel_stack')")
refs="SELECT host_id AS h, reinterpretAsUInt64(substring($kc, 2, 8)) AS i FROM tc.$kt
	WHERE length($kc) = 9"
unref() {
	chq "SELECT count() FROM (SELECT DISTINCT host_id, id FROM tc.stacks)
		WHERE (host_id, id) NOT IN ($refs)"
}
dangling() { chq "SELECT count() FROM ($refs) WHERE (h, i) NOT IN (SELECT host_id, id FROM tc.stacks)"; }
old_rows() { chq "SELECT count() FROM merge('tc', '^ev_') WHERE ts < $cut * 1000000000"; }
for _ in $(seq 600); do
	[ "$(old_rows)" = 0 ] && [ "$(nstacks imp-o)" = 0 ] && [ "$(unref)" = 0 ] &&
		[ "$(chq "SELECT count() FROM system.mutations WHERE database = 'tc' AND
			is_done = 0")" = 0 ] && break
	sleep 0.2
done
n_old=$(old_rows) n_unref=$(unref) n_dangling=$(dangling)
check "retention removed the old rows ($n_old left)" '[ "$n_old" = 0 ]'
check "no stacks row is left that no event row references ($n_unref)" '[ "$n_unref" = 0 ]'
check "no event row references a stack not stored ($n_dangling)" '[ "$n_dangling" = 0 ]'
s_h=$(nstacks imp-h) s_o=$(nstacks imp-o)
check "imp-h keeps exactly new.dat's stacks ($s_h == $s_new), imp-o none ($s_o)" \
	'[ "$s_h" = "$s_new" ] && [ "$s_o" = 0 ]'
show imp-h "$tmp/h-after.txt"
check "imp-h's rows print as before oldh.dat came, stacks included, COMM aside ($(grep -c '^=> ' \
	"$tmp/h-after.txt") => lines)" \
	'[ "$(grep -c "^=> " "$tmp/h-after.txt")" -gt 0 ] &&
	 cmp -s <(nocomm "$tmp/h-new.txt") <(nocomm "$tmp/h-after.txt") ||
	 { diff <(nocomm "$tmp/h-new.txt") <(nocomm "$tmp/h-after.txt") | head -5; false; }'

imp again imp-o
show imp-o "$tmp/o-again.txt"
n_dangling=$(dangling)
n_seen=$(chq "SELECT count() FROM (SELECT DISTINCT id FROM tc.stacks WHERE host_id = $(host imp-o))
	WHERE id IN ($(paste -sd, "$tmp/o-ids"))")
check "again.dat refers to $n_seen stacks imp-o had before their sweep, none missing ($n_dangling)" \
	'[ "$n_seen" -gt 0 ] && [ "$n_dangling" = 0 ]'
# each kernel_stack row's line and whether "=> " lines follow it
n_rows=$(grep -c 'kernel_stack:' "$tmp/o-again.txt")
n_framed=$(awk '/kernel_stack:/ { if (k) b++; k = 1; next } k && /^=> / { f++; k = 0; next }
	{ if (k) b++; k = 0 } END { print f + 0 }' "$tmp/o-again.txt")
check "each of imp-o's $n_rows stack rows prints its frames ($n_framed do)" \
	'[ "$n_rows" -gt 0 ] && [ "$n_framed" = "$n_rows" ]'
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
check "the collector logged no sanitizer report" \
	'! grep -q "Sanitizer\|runtime error:" "$tmp/collector.log"'
[ "$failed" = 0 ] || tail -30 "$tmp/collector.log"
exit "$failed"
