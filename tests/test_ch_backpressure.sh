#!/bin/bash
# Back-pressure on the ClickHouse store (issue 32): a ClickHouse that goes
# away while an agent streams holds storing up; the receive journal keeps
# what the agent sends, and the collector says so once.
#
# Asserts, ClickHouse killed (-9) mid-stream and started again on its
# ports and data:
#  - traceq --stats, while it is down, says since when storing is held up
#    and what waits in the receive journal (its own query failing too);
#  - the collector's log says it once when it begins ("storing is held
#    up"), whatever the retries, and once when it ends ("storing resumed");
#  - afterwards: stored == shipped, no event twice, and --stats says
#    nothing of a stall.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_need_clickhouse
tc_lock
tc_setup ch_backpressure agent collector_pid
tc_certs
tc_start_clickhouse
tc_ch_db_args
tc_start_collector "${ch_db_args[@]}" --query "ipc://$tmp/q.sock"
tq() { "$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 20000 "$@"; }
ev="merge('tc', '^ev_')"

( for _ in $(seq 800); do sleep 0.005; done ) &
workload=$!
tc_start_agent agent -e sched:sched_switch --duration 10 --name bp-host --no-user \
	--instance "tc-chbp-$$"
for _ in $(seq 100); do	# until something is stored
	[ "$(tc_ch --query "SELECT count() FROM $ev" 2>/dev/null || echo 0)" -gt 0 ] && break
	sleep 0.1
done
kill -9 "$clickhouse_pid"; wait "$clickhouse_pid" 2>/dev/null; clickhouse_pid=
said=
for _ in $(seq 100); do	# until the collector has tried to store and says so
	tq --stats > "$tmp/stats.out" 2> "$tmp/stats.err"
	grep -q "storing is held up since" "$tmp/stats.err" && { said=yes; break; }
	sleep 0.2
done
check "traceq --stats says since when storing is held up, and the journal's backlog" \
	'[ -n "$said" ] && grep -q "receive journal [0-9.]* MB" "$tmp/stats.err" ||
	cat "$tmp/stats.err"'
sleep 2	# the worker tries again meanwhile: still one line
check "the log says it once, not per retry" \
	'[ "$(grep -c "storing is held up" "$tmp/collector.log")" = 1 ]'
tc_restart_clickhouse
wait "$agent"; agent_rc=$?; agent=
wait "$workload"
check "the agent exits 0 across ClickHouse's outage" '[ "$agent_rc" = 0 ] || cat "$tmp/agent.err"'
shipped=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/agent.out")
"$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" --sync -t 120000 --stats \
	> "$tmp/stats2.out" 2> "$tmp/stats2.err"
stored=$(tc_ch --query "SELECT count() FROM $ev")
distinct=$(tc_ch --query "SELECT count() FROM (SELECT DISTINCT _table, host_id, cpu, trace_ts FROM $ev)")
check "stored ($stored) == shipped ($shipped)" '[ -n "$shipped" ] && [ "$stored" = "$shipped" ]'
check "no event twice ($distinct == $stored)" '[ "$distinct" = "$stored" ]'
check "the log says once that storing resumed" \
	'[ "$(grep -c "storing resumed" "$tmp/collector.log")" = 1 ] &&
	 [ "$(grep -c "storing is held up" "$tmp/collector.log")" = 1 ]'
check "traceq --stats says nothing of a stall once it is over" \
	'! grep -q "held up" "$tmp/stats2.err" && grep -q bp-host "$tmp/stats2.out"'
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
check "the collector's log has no sanitizer report (a --enable-sanitizers build)" \
	'! grep -q "Sanitizer\|runtime error:" "$tmp/collector.log"'
[ "$failed" = 0 ] || tail -30 "$tmp/collector.log"
exit "$failed"
