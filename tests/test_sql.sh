#!/bin/bash
# traceq --sql (issue 18): read-only SQL over the collector's documented
# views, enforced by the store (an SQLite authorizer), not by reading the
# text. One agent stores real sched_switch events; then:
#
# Asserts:
#  - a GROUP BY prev_comm over the sched_switch view (csv) adds up to
#    traceq --count sched_switch, and sched__sched_switch, hosts, stats
#    and drops answer (json too);
#  - each refused statement (INSERT, UPDATE, DELETE, DROP, CREATE, ATTACH,
#    PRAGMA, load_extension, a read of an underlying table, a second
#    statement after ';') exits 2 with a message that says what was
#    refused, and the stored rows, the tables and the files are unchanged;
#  - a statement that never ends is stopped by the collector's time limit;
#  - a row over the answer's 2 MiB (1000 x randomblob(1048000); 1000 x 16
#    kB) is refused saying so, the collector's VmHWM not growing with it;
#  - an identity with a scope is refused;
#  - each --sql is logged as "sql '...'".
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
tc_lock
tc_setup sql agent workload collector_pid

tc_certs
chmod 755 "$tmp"
mkdir -m 755 "$tmp/run"
tq="$top_builddir/traceq/traceq"
sock="$tmp/run/query.sock"
# ipc: a request's identity is its uid, so a scope can name one
tc_start_collector --query "ipc://$sock" --query-group nogroup --pushdown no \
	--scope 'uid:5001 tc-agent*'
query="ipc://$sock"

( while :; do sleep 0.002; done ) &
workload=$!
tc_run_agent agent -e sched:sched_switch --duration 2 --name tc-agent-sql --instance "tc-sql-$$" \
	--spool-dir "$tmp/spool"
rc=$?
kill "$workload"; wait "$workload" 2>/dev/null
workload=
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'

n=$(traceq --count sched_switch)
traceq -f csv --sql "SELECT prev_comm, count(*) AS n FROM sched_switch GROUP BY prev_comm
	ORDER BY n DESC" > "$tmp/groups" 2> "$tmp/groups.err"
sum=$(awk -F, 'NR > 1 { s += $NF } END { print s + 0 }' "$tmp/groups")
check "GROUP BY prev_comm adds up to --count ($sum of $n, $(($(wc -l < "$tmp/groups") - 1)) groups)" \
	'[ "$n" -gt 0 ] && [ "$sum" = "$n" ] && head -1 "$tmp/groups" | grep -q "^prev_comm,n"'
m=$(traceq --sql "SELECT count(*) AS n FROM sched__sched_switch WHERE host = 'tc-agent-sql'" |
	tail -1)
check "sched__sched_switch counts the same ($m)" '[ "$m" = "$n" ]'
traceq -f json --sql "SELECT host, ncpus FROM hosts" > "$tmp/hosts" 2>&1
check "hosts names the agent's host (json)" 'grep -q "{\"host\":\"tc-agent-sql\",\"ncpus\":" "$tmp/hosts"'
e=$(traceq --sql "SELECT sum(events) FROM stats WHERE host = 'tc-agent-sql'" | tail -1)
check "stats answers ($e events)" '[ "$e" -ge "$n" ]'
check "drops answers" 'traceq --sql "SELECT host, event, reason, count FROM drops" > /dev/null'

tables() { traceq --sql "SELECT count(*) FROM sched_switch" | tail -1; }
before=$(tables)
# refused TEXT WORDS: --sql TEXT exits 2 and its message has WORDS
refused() {
	local words=$2 rc
	traceq --sql "$1" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	check "refused ($rc): $1: $(head -c 200 "$tmp/err")" \
		'[ "$rc" = 2 ] && grep -q -- "$words" "$tmp/err" && [ ! -s "$tmp/out" ]'
}
refused "INSERT INTO ev_sched_sched_switch (host_id, cpu, ts, trace_ts) VALUES (1, 0, 1, 1)" \
	"not allowed in --sql: INSERT"
refused "UPDATE ev_sched_sched_switch SET prev_pid = 0" "not allowed in --sql: UPDATE"
refused "DELETE FROM ev_sched_sched_switch" "not allowed in --sql: DELETE"
refused "DROP TABLE ev_sched_sched_switch" "not allowed in --sql"
refused "DROP VIEW sched_switch" "not allowed in --sql"
refused "CREATE TABLE t (x)" "not allowed in --sql: a change of the schema"
refused "CREATE TEMP VIEW v AS SELECT * FROM main.hosts" "not allowed in --sql: a change of"
refused "ATTACH DATABASE '$tmp/other.db' AS o" "not allowed in --sql: ATTACH"
refused "PRAGMA journal_mode = DELETE" "not allowed in --sql: PRAGMA journal_mode"
refused "SELECT load_extension('$tmp/none.so')" "the function load_extension()"
refused "SELECT * FROM ev_sched_sched_switch" "reading ev_sched_sched_switch"
refused "SELECT peer_subject FROM main.hosts" "reading hosts.peer_subject"
refused "SELECT count(*) FROM sched_switch; DELETE FROM ev_sched_sched_switch" \
	"one statement"
check "the rows are unchanged ($(tables) of $before)" '[ "$(tables)" = "$before" ] &&
	[ "$(traceq --count sched_switch)" = "$n" ]'
check "no file was attached or made" '[ ! -e "$tmp/other.db" ]'

traceq --sql "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
	SELECT count(*) FROM c" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "a statement that never ends is stopped at the time limit ($rc: $(cat "$tmp/err"))" \
	'[ "$rc" = 2 ] && grep -q "time limit" "$tmp/err"'

# One row of a thousand 1 MB blobs: before, the collector built it (2 GB
# of reply, RSS +2.1 GB); now its first value is refused, with the reason.
hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$collector_pid/status"; }
hwm0=$(hwm)
big="SELECT $(printf 'randomblob(1048000), %.0s' $(seq 999))randomblob(1048000)"
traceq --sql "$big" > /dev/null 2> "$tmp/err"; rc=$?
hwm1=$(hwm)
check "a row of 1000 x randomblob(1048000) is refused ($rc: $(cat "$tmp/err"))" \
	'[ "$rc" = 2 ] && grep -q "a value over the limit of [0-9]* bytes (an answer.s 2097152 bytes shared by the statement.s 1000 columns)" "$tmp/err"'
tc_check_memory "the collector's VmHWM stays within 64 MiB of $hwm0 kB ($hwm1 kB)" \
	'[ $((hwm1 - hwm0)) -lt 65536 ]'
wide="SELECT $(printf 'randomblob(16000), %.0s' $(seq 999))randomblob(16000)"
traceq --sql "$wide" > /dev/null 2> "$tmp/err"; rc=$?
check "a row of 1000 values of 16 kB is refused as a row ($rc: $(cat "$tmp/err"))" \
	'[ "$rc" = 2 ] && grep -q "a row of 16000000 bytes, over the limit of 2097152 bytes" "$tmp/err"'
traceq --sql "SELECT randomblob(1000000), randomblob(1000000)" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "two 1 MB values in a row are answered ($rc: $(cat "$tmp/err"))" \
	'[ "$rc" = 0 ] && [ "$(wc -l < "$tmp/out")" = 2 ]'

setpriv --reuid=5001 --regid=65534 --clear-groups -- "$tq" -s "$query" -t 30000 \
	--sql "SELECT count(*) FROM sched_switch" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "an identity with a scope is refused ($rc: $(cat "$tmp/err"))" \
	'[ "$rc" = 2 ] && grep -q "scope" "$tmp/err" && [ ! -s "$tmp/out" ]'
check "--sql is logged" 'grep -q "query from .*: sql .SELECT prev_comm, count(\*)" "$tmp/collector.log"'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 40 lines)"; tail -n 40 "$tmp/collector.log"
	exit 1
fi
echo "PASS: --sql reads the views and nothing else"
