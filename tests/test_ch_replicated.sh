#!/bin/bash
# Replicated tables on the ClickHouse store (issue 32): --db
# clickhouse://...?replicated against a clickhouse-server with Debian's
# ZooKeeper (standalone, on a free loopback port, its data in $tmp/zk) and
# the macros shard and replica (tests/lib.sh: tc_start_zookeeper, then
# tc_start_clickhouse).
#
# Asserts:
#  - every table the collector made (the migrations' and the event tables)
#    is Replicated*, with a dedup window of 1240 blocks;
#  - a commit's event batch INSERTed again (the resend of an INSERT whose
#    answer was lost), twice, stores nothing: block dedup keeps one copy;
#  - the collector killed (-9) while an agent streams and started again:
#    stored == shipped, distinct == stored, no row of an unfinished commit;
#  - ClickHouse killed (-9) while another agent streams and started
#    again: the same;
#  - ?replicated on a database whose tables were made without it is
#    refused at start, saying why.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_need_clickhouse
tc_have_zookeeper || skip "zookeeper is not installed (apt-get install zookeeper; ./setup deps)"
tc_lock
tc_setup ch_replicated agent collector_pid
tc_certs
tc_start_zookeeper
tc_start_clickhouse
tc_ch_db_args
ch_db_args[1]="${ch_db_args[1]}?replicated"
chq() { tc_ch --query "$1"; }
ev="merge('tc', '^ev_')"
stored() { chq "SELECT count() FROM $ev"; }
distinct() { chq "SELECT count() FROM (SELECT DISTINCT _table, host_id, cpu, trace_ts FROM $ev)"; }
start() { tc_start_collector "${ch_db_args[@]}" --query "ipc://$tmp/q.sock" "$@"; }

# stream NAME HOST: an agent NAME tracing sched_switch as HOST for 8 s
# beside a workload, returning once some of it is stored (above $n rows)
stream() {
	( for _ in $(seq 800); do sleep 0.005; done ) &
	workload=$!
	tc_start_agent "$1" -e sched:sched_switch --duration 8 --name "$2" --no-user \
		--instance "tc-chrepl-$$-$1"
	for _ in $(seq 100); do
		[ "$(stored 2>/dev/null || echo 0)" -gt "$n" ] && break
		sleep 0.1
	done
}
# streamed NAME WHAT: once agent NAME ended, every event it shipped is
# stored once (WHAT: across what); $n becomes the rows stored
streamed() {
	local name=$1 shipped m d
	wait "$agent"; agent_rc=$?; agent=
	wait "$workload"
	check "$name exits 0 across $2" '[ "$agent_rc" = 0 ] || cat "$tmp/$name.err"'
	shipped=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/$name.out")
	"$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" --sync -t 120000 --hosts > /dev/null
	m=$(stored)
	check "after $2: stored ($((m - n))) == shipped ($shipped)" \
		'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$((m - n))" = "$shipped" ]'
	d=$(distinct)
	check "after $2: no event twice ($d == $m)" '[ "$d" = "$m" ]'
	n=$m
}

n=0
start
check "the collector says its tables are Replicated" \
	'grep -q "tables are Replicated" "$tmp/collector.log" || cat "$tmp/collector.log"'
stream agent repl-host
sleep 1
kill -9 "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
start --listen "$listen"	# the same port: the agent reconnects and resends
streamed agent "the collector's kill -9"
orphans=$(chq "SELECT count() FROM $ev WHERE _tc_commit > (SELECT max(id) FROM tc.commits)")
check "no event row of an unfinished commit ($orphans)" '[ "$orphans" = 0 ]'

# kill -9 of ClickHouse while a second agent streams, then start it again
# (its config, ports and data; ZooKeeper stays): an INSERT cut off is sent
# again or its commit cleaned up, and the Replicated tables are back
# read-write once the server has its ZooKeeper session again.
stream agent2 repl-host2
kill -9 "$clickhouse_pid"; wait "$clickhouse_pid" 2>/dev/null; clickhouse_pid=
sleep 1
tc_restart_clickhouse
streamed agent2 "ClickHouse's kill -9"

plain=$(chq "SELECT count() FROM system.tables WHERE database = 'tc' AND
	NOT startsWith(engine, 'Replicated')")
tables=$(chq "SELECT count() FROM system.tables WHERE database = 'tc'")
evtables=$(chq "SELECT count() FROM system.tables WHERE database = 'tc' AND
	startsWith(name, 'ev_') AND engine = 'ReplicatedMergeTree'")
check "every table is Replicated ($plain of $tables not; $evtables event tables)" \
	'[ "$plain" = 0 ] && [ "$tables" -gt 20 ] && [ "$evtables" -gt 0 ]'
# (120 s of HTTP timeout + 3 resends + 1) * 10 blocks a second: clickhouse_util.h
window=$(chq "SELECT count() FROM system.tables WHERE database = 'tc' AND
	position(engine_full, 'replicated_deduplication_window = 1240') > 0")
check "every table keeps the hashes of its last 1240 blocks, not 100 ($window of $tables)" \
	'[ "$window" = "$tables" ]'

# The last commit's sched_switch batch, INSERTed again twice: the same
# block, kept once.
t=tc.ev_sched_sched_switch
last=$(chq "SELECT max(_tc_commit) FROM $t")
before=$(chq "SELECT count() FROM $t")
for _ in 1 2; do	# ORDER BY: the rows in the order the writer sent them
	chq "INSERT INTO $t SELECT * FROM $t WHERE _tc_commit = $last ORDER BY _tc_row"
done
after=$(chq "SELECT count() FROM $t")
check "a commit's batch sent again twice is kept once ($before rows, then $after)" \
	'[ -n "$before" ] && [ "$before" -gt 0 ] && [ "$after" = "$before" ]'
check "the server says it kept those blocks once (\"Block with ID ... already exists\")" \
	'grep -q "Block with ID .* already exists" "$tmp/ch/log/server.log" ||
	 tail -5 "$tmp/ch/log/server.log"'

kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
# ?replicated on a database made without it: refused, saying why
chq "CREATE DATABASE plain" &&
chq "CREATE TABLE plain.commits (id UInt64, ts Int64, collector String)
	ENGINE = MergeTree() ORDER BY id"
"$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 \
	--db "clickhouse://$ch_user@127.0.0.1:$ch_http_port/plain?replicated" \
	--db-password-file "$tmp/ch.pw" --journal-dir "$tmp/journal2" \
	--cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" --ca "$tmp/pki/ca.crt" \
	> /dev/null 2> "$tmp/refused.log" &
refused_pid=$!
tc_watch "$refused_pid"
for _ in $(seq 300); do kill -0 "$refused_pid" 2>/dev/null || break; sleep 0.1; done
kill "$refused_pid" 2>/dev/null
wait "$refused_pid"; rc=$?
check "?replicated on a database made without it: refused (exit $rc), saying why" \
	'[ "$rc" != 0 ] && grep -q "made without ?replicated" "$tmp/refused.log" ||
	 cat "$tmp/refused.log"'
check "the collector's log has no sanitizer report (a --enable-sanitizers build)" \
	'! grep -q "Sanitizer\|runtime error:" "$tmp/collector.log"'
[ "$failed" = 0 ] || tail -30 "$tmp/collector.log"
exit "$failed"
