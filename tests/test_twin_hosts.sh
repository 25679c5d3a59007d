#!/bin/bash
# One host name, two hosts (issue 30, "--stats broken for everyone"): a
# reinstalled or cloned machine (a new machine-id) or an import beside a
# live host stores one name under two host ids. Two trace-cmd recordings of
# CPU 0 alone (-M 1: a 1-CPU host's rows), imported under one name, give
# two hosts whose only CPU rows are both cpu 0.
#
# Asserts:
#  - traceq --stats exits 0 and prints a cpu=0 row and a cpu=all total for
#    each of the two (told apart by machine_id), each total its own host's
#    row, not the two merged (before: exit 1, "collector: no error");
#  - a text query prints no "collector:" line on stderr (before: every one
#    did, through the host column's --stats);
#  - --format json gives the two hosts' rows with their machine_id.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
tc_lock
tc_setup twin collector_pid
inst="tc_twin_$$"
twin_cleanup() {
	rmdir "$tracing/instances/$inst" 2>/dev/null
	tc_cleanup
}
trap twin_cleanup EXIT

# record FILE: trace-cmd record of sched_switch on CPU 0 only, under load there
record() {
	trace-cmd record -B "$inst" -M 1 -d --no-filter -e sched:sched_switch -o "$1" \
		taskset -c 0 sh -c 'for i in $(seq 20); do sleep 0.01; ls / > /dev/null; done' \
		> "$tmp/record.log" 2>&1
	rmdir "$tracing/instances/$inst" 2>/dev/null
	[ -s "$1" ] || { cat "$tmp/record.log"; false; }
}
record "$tmp/a.dat" && record "$tmp/b.dat" ||
	{ echo "FAIL: trace-cmd record"; exit 1; }

tc_certs
mkdir -m 755 "$tmp/run"
# ipc: importing needs an identity (root's uid)
tc_start_collector --query "ipc://$tmp/run/query.sock"
query="ipc://$tmp/run/query.sock"
for f in a b; do
	traceq --import "$tmp/$f.dat" --name twin > "$tmp/imp-$f.out" 2>&1; rc=$?
	check "recording $f imports as host twin (exit $rc: $(cat "$tmp/imp-$f.out"))" '[ "$rc" = 0 ]'
done

traceq --stats > "$tmp/stats" 2> "$tmp/stats.err"; rc=$?
check "--stats exits 0 ($rc: $(cat "$tmp/stats.err"))" '[ "$rc" = 0 ] && ! grep -q "no error" "$tmp/stats.err"'
mids=$(sed -n 's/^host=twin cpu=0 .* machine_id=\([^ ]*\)$/\1/p' "$tmp/stats" | sort -u)
check "a cpu=0 row for each of the two hosts ($(echo $mids))" \
	'[ "$(echo "$mids" | grep -c "^import:")" = 2 ]'
# each total is its own host's one row: the same counters, cpu=all
ok=1
for m in $mids; do
	row=$(grep "^host=twin cpu=0 .* machine_id=$m\$" "$tmp/stats" | sed 's/ cpu=0 / cpu=all /')
	grep -qxF "$row" "$tmp/stats" || ok=0
done
check "a total per host id, each its own row's counters" '[ "$ok" = 1 ] &&
	[ "$(grep -c "^host=twin cpu=all " "$tmp/stats")" = 2 ]'

traceq sched_switch > "$tmp/text" 2> "$tmp/text.err"; rc=$?
check "a text query prints its rows and no collector error ($rc: $(head -3 "$tmp/text.err"))" \
	'[ "$rc" = 0 ] && [ -s "$tmp/text" ] && ! grep -q "collector:" "$tmp/text.err"'
traceq --stats --format json > "$tmp/stats.json" 2>&1
check "--stats --format json: both hosts' rows, machine_id last" \
	'[ "$(grep -c "^{\"host\":\"twin\",\"cpu\":0,.*,\"machine_id\":\"import:[0-9a-f]*\"}$" "$tmp/stats.json")" = 2 ]'

if [ "$failed" != 0 ]; then
	cat "$tmp/stats" "$tmp/stats.err"
	echo "--- collector (last 20 lines)"; tail -n 20 "$tmp/collector.log"
	exit 1
fi
echo "PASS: one name under two host ids"
