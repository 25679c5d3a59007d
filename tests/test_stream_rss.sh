#!/bin/bash
# Every answer streams in batches (issue 18, "Streaming"): printing a large
# answer costs the collector and traceq memory in proportion to a page, not
# to the answer. Measured as peak RSS (VmHWM), compared between an answer
# of N rows and one of 4N rows; no clock is read.
#
# Real sched_switch events of a short agent run are stored, then the table
# is grown with copies of its rows (later in time) by the sqlite3 command,
# the time index rebuilt over them, into two databases: N and 4N rows. For
# each, a collector is started on it (nothing to ingest) and traceq prints
# every row as text (its default renderer, trace-cmd's format) to a pipe
# that counts them, and again with --follow from the start of time (the
# live tail, in storage order). Asserts: every row printed; pages were
# read ahead (server/query/queryd_ahead.c), and the text is the same as a
# collector with one query thread (no read-ahead) prints; traceq's peak RSS for 4N
# rows and the collector's (its VmHWM after answering, less before) grow
# by less than a bound that rows in proportion would pass by far
# (the answer of 3N more rows is hundreds of MB held whole).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v sqlite3 >/dev/null || skip "needs the sqlite3 command (Debian sqlite3)"
/usr/bin/time -f %M true >/dev/null 2>&1 || skip "needs GNU time (/usr/bin/time, Debian time)"
tc_lock
tc_setup stream-rss agent workload collector_pid

N=${TC_RSS_ROWS:-150000}
tc_certs
tc_start_collector --db "$tmp/seed.db" --journal-size 0
( while :; do sleep 0.001; done ) &
workload=$!
tc_run_agent agent -e sched:sched_switch --duration 1 --name rss-host --instance "tc-rss-$$" \
	--spool-dir "$tmp/spool"
rc=$?
kill "$workload"; wait "$workload" 2>/dev/null
workload=
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
seed=$(traceq --count sched_switch)
kill -TERM "$collector_pid"; wait "$collector_pid" 2>/dev/null
collector_pid=
check "real rows were stored ($seed)" '[ "$seed" -gt 100 ]'

table=$(sqlite3 "$tmp/seed.db" "SELECT table_name FROM event_types WHERE name = 'sched_switch'")
type_id=$(sqlite3 "$tmp/seed.db" "SELECT id FROM event_types WHERE name = 'sched_switch'")
cols=$(sqlite3 "$tmp/seed.db" "SELECT group_concat('\"' || name || '\"', ', ')
	FROM pragma_table_info('$table')")

# grow DB ROWS: a copy of the seed with its rows copied (each copy later
# in time by the span so far) until it has ROWS, and the time index anew
grow() {
	local db=$1 want=$2 have span
	sqlite3 "$tmp/seed.db" ".backup '$db'"
	have=$(sqlite3 "$db" "SELECT count(*) FROM \"$table\"")
	while [ "$have" -lt "$want" ]; do
		span=$(sqlite3 "$db" "SELECT max(ts) - min(ts) + 1000 FROM \"$table\"")
		sqlite3 "$db" "INSERT INTO \"$table\" ($cols) SELECT ${cols/\"ts\"/\"ts\" + $span} FROM \"$table\" LIMIT $((want - have))"
		have=$(sqlite3 "$db" "SELECT count(*) FROM \"$table\"")
	done
	sqlite3 "$db" "DELETE FROM ts_blocks WHERE type_id = $type_id;
		INSERT INTO ts_blocks (type_id, lo, hi, min_ts, max_ts, span, seq)
		SELECT $type_id, min(rowid), max(rowid), min(ts), max(ts), max(ts) - min(ts),
			min(rowid) FROM \"$table\" GROUP BY (rowid - 1) / 64;"
}

hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status"; }

# measure ROWS: print every row of a database of ROWS; sets tq_kb, cd_kb
# (the collector's VmHWM growth while answering) and printed
measure() {
	local db="$tmp/rows-$1.db" before
	grow "$db" "$1"
	tc_start_collector --db "$db" --journal-size 0
	before=$(hwm "$collector_pid")
	printed=$( { /usr/bin/time -f %M -o "$tmp/tq-$1.kb" "$top_builddir/traceq/traceq" \
		--server "$query" -t 120000 sched_switch 2> "$tmp/tq-$1.err"; } |
		tee "$tmp/text-$1" | wc -l)
	tq_kb=$(cat "$tmp/tq-$1.kb")
	cd_kb=$(( $(hwm "$collector_pid") - before ))
	echo "rows=$1 printed=$printed traceq_peak_rss_kb=$tq_kb collector_hwm_before_kb=$before collector_hwm_growth_kb=$cd_kb"
	ahead=$(grep -c " rows (read ahead) in " "$tmp/collector.log")
	# the same rows through the live tail: --follow from the start of time
	followed=$( { /usr/bin/time -f %M -o "$tmp/tf-$1.kb" "$top_builddir/traceq/traceq" \
		--server "$query" -t 120000 --follow --since @1ns --limit "$1" sched_switch \
		2> "$tmp/tf-$1.err"; } | wc -l)
	tf_kb=$(cat "$tmp/tf-$1.kb")
	cf_kb=$(( $(hwm "$collector_pid") - before ))
	echo "rows=$1 followed=$followed traceq_follow_peak_rss_kb=$tf_kb collector_hwm_growth_kb=$cf_kb"
	kill -TERM "$collector_pid"; wait "$collector_pid" 2>/dev/null
	collector_pid=
	rm -f "$db" "$db-wal" "$db-shm"
}

measure "$N"
p1=$printed tq1=$tq_kb cd1=$cd_kb f1=$followed tf1=$tf_kb cf1=$cf_kb
check "all $N rows printed ($p1), and followed ($f1)" '[ "$p1" = "$N" ] && [ "$f1" = "$N" ]'
# the pages after the first were read ahead while traceq printed; with one
# query thread nothing is read ahead, and the text is the same
check "pages were read ahead ($ahead of $(( (N + 9999) / 10000 )))" '[ "$ahead" -gt 0 ]'
grow "$tmp/one.db" "$N"
tc_start_collector --db "$tmp/one.db" --journal-size 0 --query-threads 1
traceq sched_switch > "$tmp/text-one"
kill -TERM "$collector_pid"; wait "$collector_pid" 2>/dev/null
collector_pid=
check "the text read ahead is the text read page by page" \
	'[ "$(wc -l < "$tmp/text-one")" = "$N" ] && cmp "$tmp/text-$N" "$tmp/text-one"' &&
	rm -f "$tmp/text-$N" "$tmp/text-one" "$tmp/one.db"
measure $((4 * N))
p4=$printed tq4=$tq_kb cd4=$cd_kb f4=$followed tf4=$tf_kb cf4=$cf_kb
check "all $((4 * N)) rows printed ($p4), and followed ($f4)" \
	'[ "$p4" = $((4 * N)) ] && [ "$f4" = $((4 * N)) ]'

# 3N more rows of sched_switch are over 100 bytes each in any form: held
# whole, far over 32 MB; streamed, the peaks are those of a page
bound=32768
tc_check_memory "traceq's peak RSS does not grow with the answer (N: $tq1 kB, 4N: $tq4 kB)" \
	'[ $((tq4 - tq1)) -lt $bound ]'
tc_check_memory "the collector's RSS does not grow with the answer (N: +$cd1 kB, 4N: +$cd4 kB)" \
	'[ $((cd4 - cd1)) -lt $bound ]'
tc_check_memory "traceq --follow's peak RSS does not grow with the rows (N: $tf1 kB, 4N: $tf4 kB)" \
	'[ $((tf4 - tf1)) -lt $bound ]'
tc_check_memory "nor the collector's, tailing them (N: +$cf1 kB, 4N: +$cf4 kB)" \
	'[ $((cf4 - cf1)) -lt $bound ]'

[ "$failed" = 0 ] || { tail -20 "$tmp/collector.log"; exit 1; }
echo "PASS"
