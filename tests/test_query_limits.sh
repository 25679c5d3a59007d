#!/bin/bash
# Per-query limits and cancel (issue 18, "Streaming"): the collector's
# query-timeout stops a request's store work and says so, query-max-rows
# caps an answer over all its pages (select and --follow) and says so, and
# a request whose client went away stops at once.
#
# Real sched_switch rows of a short agent run, grown to TC_LIMIT_ROWS rows
# by copying them with the sqlite3 command (as test_stream_rss.sh does).
# Asserts:
#  - --query-timeout 1: a count over every row with a glob filter fails,
#    exit 2, saying "query-timeout of 1 ms"; the log says it too;
#  - --query-max-rows 1000: a select of every row prints 1000 rows and
#    exits 2 saying "query-max-rows of 1000"; with -n 500 it prints 500
#    and exits 0; --follow from the start prints 1000 and stops the same;
#  - a --sql cross join (minutes of work) whose traceq gives up after
#    300 ms (-t 300) is stopped because the asker went away, not at the
#    8 s limit of --sql: the log says "the asker went away" for it.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v sqlite3 >/dev/null || skip "needs the sqlite3 command (Debian sqlite3)"
tc_lock
tc_setup query-limits agent workload collector_pid

N=${TC_LIMIT_ROWS:-200000}
tc_certs
tc_start_collector --db "$tmp/seed.db" --journal-size 0
( while :; do sleep 0.001; done ) &
workload=$!
tc_run_agent agent -e sched:sched_switch --duration 1 --name limits-host \
	--instance "tc-limits-$$" --spool-dir "$tmp/spool"
rc=$?
kill "$workload"; wait "$workload" 2>/dev/null
workload=
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
traceq --count sched_switch > /dev/null
kill -TERM "$collector_pid"; wait "$collector_pid" 2>/dev/null
collector_pid=

db=$tmp/seed.db
table=$(sqlite3 "$db" "SELECT table_name FROM event_types WHERE name = 'sched_switch'")
type_id=$(sqlite3 "$db" "SELECT id FROM event_types WHERE name = 'sched_switch'")
cols=$(sqlite3 "$db" "SELECT group_concat('\"' || name || '\"', ', ')
	FROM pragma_table_info('$table')")
have=$(sqlite3 "$db" "SELECT count(*) FROM \"$table\"")
while [ "$have" -lt "$N" ]; do
	span=$(sqlite3 "$db" "SELECT max(ts) - min(ts) + 1000 FROM \"$table\"")
	sqlite3 "$db" "INSERT INTO \"$table\" ($cols) SELECT ${cols/\"ts\"/\"ts\" + $span}
		FROM \"$table\" LIMIT $((N - have))"
	have=$(sqlite3 "$db" "SELECT count(*) FROM \"$table\"")
done
sqlite3 "$db" "DELETE FROM ts_blocks WHERE type_id = $type_id;
	INSERT INTO ts_blocks (type_id, lo, hi, min_ts, max_ts, span, seq)
	SELECT $type_id, min(rowid), max(rowid), min(ts), max(ts), max(ts) - min(ts), min(rowid)
	FROM \"$table\" GROUP BY (rowid - 1) / 64;"
check "the table holds $N rows" '[ "$have" = "$N" ]'

tq() { "$top_builddir/traceq/traceq" --server "$query" "$@"; }

# ---- query-timeout ----
tc_start_collector --db "$db" --journal-size 0 --query-timeout 1
tq -t 60000 --count 'sched_switch where prev_comm ~ "*q*z*"' > "$tmp/out" 2> "$tmp/err"
rc=$?
cat "$tmp/err"
check "a count past --query-timeout 1 fails (exit $rc) saying so" \
	'[ "$rc" = 2 ] && grep -q "query-timeout of 1 ms" "$tmp/err" && [ ! -s "$tmp/out" ]'
check "the log says it was stopped at the query-timeout" \
	'grep -q "count .*stopped at the collector.s query-timeout" "$tmp/collector.log"'
kill -TERM "$collector_pid"; wait "$collector_pid" 2>/dev/null
collector_pid=

# ---- query-max-rows ----
tc_start_collector --db "$db" --journal-size 0 --query-max-rows 1000
tq -t 60000 -f json sched_switch > "$tmp/out" 2> "$tmp/err"
rc=$?
cat "$tmp/err"
check "a select of $N rows prints 1000 and fails (exit $rc) saying query-max-rows" \
	'[ "$rc" = 2 ] && [ "$(wc -l < "$tmp/out")" = 1000 ] &&
	 grep -q "query-max-rows of 1000" "$tmp/err"'
tq -t 60000 -f json -n 500 sched_switch > "$tmp/out" 2> "$tmp/err"
rc=$?
check "-n 500 stays under it: 500 rows, exit 0 ($rc)" \
	'[ "$rc" = 0 ] && [ "$(wc -l < "$tmp/out")" = 500 ] && [ ! -s "$tmp/err" ]'
tq -t 60000 -f json --follow --since @1ns sched_switch > "$tmp/out" 2> "$tmp/err"
rc=$?
cat "$tmp/err"
check "--follow prints 1000 and stops (exit $rc) saying query-max-rows" \
	'[ "$rc" = 2 ] && [ "$(wc -l < "$tmp/out")" = 1000 ] &&
	 grep -q "query-max-rows of 1000" "$tmp/err"'
kill -TERM "$collector_pid"; wait "$collector_pid" 2>/dev/null
collector_pid=

# ---- a client that goes away ----
tc_start_collector --db "$db" --journal-size 0
tq -t 300 --sql "SELECT count(*) FROM sched_switch AS a, sched_switch AS b" \
	> "$tmp/out" 2> "$tmp/err"
rc=$?
check "traceq gave up on the cross join (exit $rc)" '[ "$rc" = 1 ]'
for _ in $(seq 100); do
	grep -q "sql 'SELECT count" "$tmp/collector.log" && break
	sleep 0.1
done
grep "sql 'SELECT count" "$tmp/collector.log"
check "the collector stopped it because the asker went away, not at --sql's 8 s limit" \
	'grep "sql .SELECT count" "$tmp/collector.log" | grep -q "the asker went away"'

[ "$failed" = 0 ] || { tail -20 "$tmp/collector.log"; exit 1; }
echo "PASS"
