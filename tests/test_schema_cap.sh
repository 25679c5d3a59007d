#!/bin/bash
# Schema explosion (issue 30, "One agent must not stall everyone").
#
# One host sends 3000 new event types, each with one event, at once (a
# trace-cmd v6 file made by tests/tracedat_bomb.py, imported: the agents'
# ingest path), while a real traceagent connects. With the default cap
# (max-event-types 2000 per host) and one CREATE TABLE per type:
#  - the real agent gets its WELCOME (no "no welcome from the collector")
#    and its events are stored;
#  - the import ends; 2000 of its types are stored, the events of the
#    other 1000 are counted in --drops as schema-cap (1000 of them);
#  - traceq --events lists every type, and --sql answers (its views are
#    made for the types the statement names only);
#  - the collector logs the cap, escaped, not once per type.
# Times and memory are not asserted (see the issue's figures).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
command -v python3 >/dev/null || skip "needs python3"
tc_lock
tc_setup schema_cap agent collector_pid import_pid
inst="tc_schema_$$"
schema_cleanup() {
	rmdir "$tracing/instances/$inst" 2>/dev/null
	tc_cleanup
}
trap schema_cleanup EXIT

tc_tracecmd_record "$inst" "$tmp/base.dat" -e sched:sched_switch --file-version 6 sleep 0.1
python3 "$top_srcdir/tests/tracedat_bomb.py" "$tmp/base.dat" "$tmp/bomb.dat" 3000 ||
	{ echo "FAIL: tracedat_bomb.py"; exit 1; }

tc_certs
tc_traceq_for_all
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"
tc_start_collector --query "ipc://$sock"
tq() { "$tq" -s "ipc://$sock" -t 300000 "$@"; }

tq --import "$tmp/bomb.dat" --name bomb > "$tmp/imp.out" 2>&1 &
import_pid=$!
sleep 0.5	# its formats are being stored
tc_run_agent agent -e sched:sched_switch --duration 2 --name real-host --no-user \
	--instance "tc-schema-$$"
agent_rc=$?
check "the real agent was welcomed and exits 0 ($(tail -2 "$tmp/agent.err" | tr '\n' ' '))" \
	'[ "$agent_rc" = 0 ] && ! grep -q "no welcome" "$tmp/agent.err"'
wait "$import_pid"; rc=$?
import_pid=
check "the import ends, exit 0 ($(tr '\n' ' ' < "$tmp/imp.out"))" '[ "$rc" = 0 ]'

shipped=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/agent.out")
stored=$(tq --sync -H real-host --count '*' 2>&1)	# sched_switch and the agent's task name events
check "the real agent's events are stored ($stored of $shipped)" \
	'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ]'

tq --drops -H bomb > "$tmp/drops" 2>&1
capped=$(awk '/reason=schema-cap/ { sub(/.*count=/, ""); n += $0 } END { print n + 0 }' "$tmp/drops")
check "the events of the 1000 types past the cap are in --drops as schema-cap ($capped)" \
	'[ "$capped" = 1000 ]'

tq --events > "$tmp/events" 2>&1; rc=$?
types=$(grep -c "^bomb:" "$tmp/events")
check "traceq --events works (exit $rc) and lists the 2000 types stored ($types)" \
	'[ "$rc" = 0 ] && [ "$types" = 2000 ]'

n=$(tq --sql 'SELECT count(*) AS n FROM bomb__ev7' -f csv 2>&1 | tr -d '\r' | tail -1)
check "--sql reads a type's view ($n)" '[ "$n" = 1 ]'
h=$(tq --sql 'SELECT count(*) AS n FROM hosts' -f csv 2>&1 | tr -d '\r' | tail -1)
check "--sql answers with 2000+ types stored ($h hosts)" '[ "$h" = 2 ]'

lines=$(grep -c "schema-cap" "$tmp/collector.log")
check "the cap is logged, not once per type ($lines lines)" '[ "$lines" -ge 1 ] && [ "$lines" -le 3 ]'
check "the collector is still running" 'kill -0 "$collector_pid"'
exit $failed
