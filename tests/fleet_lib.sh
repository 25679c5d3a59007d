# tests/fleet_lib.sh - what the fleet tests (issue 35: several collectors
# over one ClickHouse) share; sourced after tests/lib.sh, tc_setup,
# tc_start_clickhouse, tc_ch_db_args and tc_certs.

# fleet_collector NAME ID [ARGS...]: collector NAME (--collector-name NAME
# --collector-id ID, its journal $tmp/journal-NAME) on free loopback ports,
# storing into tc_ch_db_args' database; sets pid_NAME, listen_NAME, query_NAME.
fleet_collector() {
	local name=$1 id=$2
	shift 2
	tc_start_collector "${ch_db_args[@]}" --journal-dir "$tmp/journal-$name" \
		--collector-name "$name" --collector-id "$id" "$@"
	printf -v "pid_$name" '%s' "$collector_pid"
	printf -v "listen_$name" '%s' "$listen"
	printf -v "query_$name" '%s' "$query"
}

# fleet_tq QUERY_URL ARGS...: traceq against that collector, once it stored
# what it received (--sync)
fleet_tq() { local q=$1; shift; "$top_builddir/traceq/traceq" --server "$q" --sync -t 120000 "$@"; }

# fleet_ch SQL: clickhouse-client on database tc
fleet_ch() { tc_ch --database tc --query "$1"; }

# fleet_shipped NAME: the events agent NAME's total line says it shipped
fleet_shipped() { sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/$1.out"; }

# fleet_stored HOST: the events of HOST in ClickHouse (its own count)
fleet_stored() {
	fleet_ch "SELECT count() FROM merge('tc', '^ev_') WHERE host_id IN
		(SELECT host_id FROM hosts WHERE name = '$1')"
}

# fleet_counts HOST: $shipped (its agent's output $tmp/HOST.out), $stored
# and $distinct (table, cpu, trace_ts) of HOST's events
fleet_counts() {
	shipped=$(fleet_shipped "$1")
	stored=$(fleet_stored "$1")
	distinct=$(fleet_ch "SELECT count() FROM (SELECT DISTINCT _table, cpu, trace_ts
		FROM merge('tc', '^ev_') WHERE host_id IN
		(SELECT host_id FROM hosts WHERE name = '$1'))")
}

# fleet_check_host HOST [WHAT]: check that HOST's events are stored once:
# stored == shipped and distinct == stored
fleet_check_host() {
	local h=$1 what=${2:-} shipped stored distinct
	fleet_counts "$h"
	check "$h$what: stored ($stored) == shipped ($shipped)" \
		'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ]'
	check "$h: no event twice (distinct $distinct == stored $stored)" \
		'[ "$distinct" = "$stored" ]'
}

# fleet_check_host_lost HOST [WHAT]: check that none of HOST's events is
# lost: distinct == shipped. Not that none is stored twice: a collector
# killed with its commit's INSERT in flight can have it land after its
# agents failed over, and the collector they moved to has then stored
# those pages too (PROTOCOL.md, Failover); the count is printed
fleet_check_host_lost() {
	local h=$1 what=${2:-} shipped stored distinct
	fleet_counts "$h"
	check "$h$what: every shipped event stored (distinct $distinct == shipped $shipped)" \
		'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$distinct" = "$shipped" ]'
	echo "$h$what: stored $stored, $((stored - distinct)) of them twice"
}

# fleet_wait_agents N...: wait for agents hN (pids in aN), check each exits 0
fleet_wait_agents() {
	local n v rc
	for n in "$@"; do
		v=a$n
		wait "${!v}"; rc=$?
		printf -v "a$n" ''
		check "agent h$n exits 0" '[ "$rc" = 0 ] || { cat "$tmp/h$n.err"; false; }'
	done
	agent=
}

# fleet_agent N ADDRS SECONDS: agent hN (host hN) tracing sched_switch for
# SECONDS in a tracefs instance of its own, trying ADDRS in order; its pid in aN
fleet_agent() {
	tc_start_agent "h$1" --connect "$2" -e sched:sched_switch --duration "$3" --name "h$1" \
		--no-user --instance "tc-fleet-$$-$1" --spool-dir "$tmp"
	printf -v "a$1" '%s' "$agent"
}

# fleet_kill_a N: once N agents are connected and 2 s into their stream,
# collector A killed (-9)
fleet_kill_a() {
	for _ in $(seq 100); do
		[ "$(grep -c "agent h[0-9] .* connected" "$tmp/collector.log")" -ge "$1" ] && break
		sleep 0.1
	done
	sleep 2
	kill -9 "$pid_A"; wait "$pid_A" 2>/dev/null; pid_A=
	echo "killed collector A (-9) mid-stream"
}
