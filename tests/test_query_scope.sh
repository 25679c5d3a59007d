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
#  - each query is logged with its uid and "(scoped)";
#  - an event type only scope-db1 has (sched_wakeup, from a second run of
#    its agent) is, for uid 5001, not stored (issue 30): --count, a select,
#    --fields are refused as for a name never stored (exit 2, the same
#    message), a misspelling of it gets no suggestion naming it, --events
#    leaves it out, --follow of it waits as for an unknown event; root
#    still sees it.
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
tc_agent_events="-e sched:sched_switch -e sched:sched_wakeup" \
	tc_host_agents "tc-qscope-$$" scope-db1

web=$(traceq --count -H scope-web1 sched_switch)
wakeups=$(traceq --count sched_wakeup)
check "root sees scope-db1's sched_wakeup ($wakeups)" '[ "$wakeups" -gt 0 ]'
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

# refused WHO WHAT ARGS...: WHO's traceq ARGS... NAME, with NAME sched_wakeup
# and with a name never stored (as long), exit 2 with the same message
refused() {
	local who=$1 what=$2 rc1 rc2
	shift 2
	as "$who" "$@" sched_wakeup > "$tmp/hid.out" 2> "$tmp/hid.err"; rc1=$?
	as "$who" "$@" xched_nosuch > "$tmp/none.out" 2> "$tmp/none.err"; rc2=$?
	sed -i 's/sched_wakeup/NAME/g' "$tmp/hid.err"
	sed -i 's/xched_nosuch/NAME/g' "$tmp/none.err"
	check "$who: $what of a type only other hosts have is an unknown event (exit $rc1)" \
		'[ "$rc1" = 2 ] && [ "$rc2" = 2 ] && grep -q "unknown event" "$tmp/hid.err" &&
		 [ ! -s "$tmp/hid.out" ] && cmp -s "$tmp/hid.err" "$tmp/none.err" ||
		 { cat "$tmp/hid.out" "$tmp/hid.err"; false; }'
}
refused uid:5001 "--count" --count
refused uid:5001 "a select" -f json
refused uid:5001 "--fields" --fields
as uid:5001 --count sched_wakup > /dev/null 2> "$tmp/typo.err"
traceq --count sched_wakup > /dev/null 2> "$tmp/typo.root"
check "uid:5001: a misspelling is not told of sched_wakeup" \
	'grep -q "unknown event" "$tmp/typo.err" && ! grep -q sched_wakeup "$tmp/typo.err" ||
	 { cat "$tmp/typo.err"; false; }'
check "root: a misspelling is told of sched_wakeup" 'grep -q sched_wakeup "$tmp/typo.root"'
as uid:5001 --events > "$tmp/events" 2>&1
check "uid:5001: --events lists sched_switch, not sched_wakeup" \
	'grep -q sched_switch "$tmp/events" && ! grep -q sched_wakeup "$tmp/events"'
check "root: --events lists sched_wakeup" 'traceq --events | grep -q sched_wakeup'
timeout -s INT 3 setpriv --reuid=5001 --regid=65534 --clear-groups -- \
	"$tq" -s "$query" -t 30000 --follow --since -1h sched_wakeup \
	> "$tmp/follow.out" 2> "$tmp/follow.err"
check "uid:5001: --follow sched_wakeup waits as for an event not stored" \
	'grep -q "no event the query selects is stored yet" "$tmp/follow.err" &&
	 [ ! -s "$tmp/follow.out" ] || { cat "$tmp/follow.out" "$tmp/follow.err"; false; }'

check "queries are logged with the uid and the scope" \
	'grep -q "query from uid 5001 (no such user): count .sched_switch.: $web counted (scoped)" \
	 "$tmp/collector.log"'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 40 lines)"; tail -n 40 "$tmp/collector.log"
	exit 1
fi
echo "PASS: two scoped identities on one store each see only their hosts"
