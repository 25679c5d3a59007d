#!/bin/bash
# Scopes (issue 15): the collector's config maps a query identity to the
# hosts it may read, and the store applies it to every read. Two agents
# (hosts scope-web1 and scope-db1, real sched_switch events, a server-side
# filter so that both have drop counters) fill one store; three local
# users ask it over the ipc socket.
#
# Asserts:
#  - uid 5001 (scope uid:5001 scope-web*) sees only scope-web1: its count
#    equals root's count of -H scope-web1, every row it gets (json) and
#    every --stats and --drops line names scope-web1, and its count of
#    -H 'scope-db*' is 0 (a host glob cannot widen a scope);
#  - nobody (scope user:nobody scope-db1) sees only scope-db1, likewise;
#  - uid 5002, named by no scope line, in the query group, sees both;
#  - each query is logged with its uid and "(scoped)".
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
tc_lock
tc_setup query-scope agent workload collector_pid

tc_certs scope-web1 scope-db1
tc_traceq_for_all
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"

tc_start_collector --query "ipc://$sock" --query-group nogroup --pushdown no \
	--filter 'sched:sched_switch prev_comm != "sleep"' \
	--scope 'uid:5001 scope-web*' --scope 'user:nobody scope-db1,nothing-else'
query="ipc://$sock"

tc_host_agents "tc-qscope-$$" scope-web1 scope-db1

web=$(traceq --count -H scope-web1 sched_switch)
db=$(traceq --count -H scope-db1 sched_switch)
check "root sees both hosts' events (web1 $web, db1 $db)" \
	'[ "$web" -gt 0 ] && [ "$db" -gt 0 ] &&
	 [ "$(traceq --count sched_switch)" = $((web + db)) ]'
check "root sees both hosts in --drops" \
	'[ "$(traceq --drops | grep -c "host=scope-")" -ge 2 ]'

# as WHO ARGS...: traceq run as WHO (uid:N with group nogroup, or a user name)
as() {
	local who=$1
	shift
	case "$who" in
	uid:*) setpriv --reuid="${who#uid:}" --regid=65534 --clear-groups -- \
		"$tq" -s "$query" -t 30000 "$@" ;;
	*) runuser -u "$who" -- "$tq" -s "$query" -t 30000 "$@" ;;
	esac
}

# sees WHO HOST WANT: WHO's rows, counts, stats and drops name only HOST
# and its count is WANT.
sees() {
	local who=$1 host=$2 want=$3 n
	n=$(as "$who" --count sched_switch)
	check "$who counts only $host's events ($n, want $want)" '[ "$n" = "$want" ]'
	as "$who" -f json -n 500 sched_switch > "$tmp/rows" 2> "$tmp/rows.err"
	check "$who's rows are all $host's ($(wc -l < "$tmp/rows") rows)" \
		'[ -s "$tmp/rows" ] && ! grep -v "\"host\":\"$host\"" "$tmp/rows"'
	as "$who" --stats > "$tmp/stats" 2>&1
	check "$who's --stats are all $host's" \
		'[ -s "$tmp/stats" ] && ! grep -v "^host=$host " "$tmp/stats"'
	as "$who" --drops > "$tmp/drops" 2>&1
	check "$who's --drops are all $host's" \
		'[ -s "$tmp/drops" ] && ! grep -v "^host=$host " "$tmp/drops"'
	n=$(as "$who" --count -H 'scope-*' sched_switch)
	check "a host glob does not widen $who's scope ($n)" '[ "$n" = "$want" ]'
}
sees uid:5001 scope-web1 "$web"
sees nobody scope-db1 "$db"
n=$(as uid:5002 --count sched_switch)
check "uid 5002, named by no scope, sees both hosts ($n)" '[ "$n" = $((web + db)) ]'
check "queries are logged with the uid and the scope" \
	'grep -q "query from uid 5001 (no such user): count .sched_switch.: $web counted (scoped)" \
	 "$tmp/collector.log"'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 40 lines)"; tail -n 40 "$tmp/collector.log"
	exit 1
fi
echo "PASS: two scoped identities on one store each see only their hosts"
