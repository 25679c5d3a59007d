#!/bin/bash
# Delivery: nothing is lost across a collector crash and a network cut.
#
# 1. kill -9 the collector while an agent streams (once events of it are
#    stored), restart it on the same database and port (once the agent
#    noticed): the agent reconnects (backoff), resends what was not
#    acknowledged, the collector drops what it had already committed.
#    Twice: with one connection for everything, and with --connections
#    per-cpu.
# 2. agent and collector in two network namespaces made here, joined by a
#    veth pair; the link goes down mid-stream (once events are stored) and
#    comes back once the agent noticed the missing ACKs; it reconnects and
#    resends.
# Each time: per CPU, the sched_switch events stored == the agent's own
#    count of events it read from that CPU (its summary after every resend:
#    a page counts once however often it went out), and no event is stored
#    twice (no two rows alike in every column), so a duplicate and a
#    miscount tell themselves apart. Order, not time, places the faults.
# Real daemons, real certificates, real kernel events in the agent's own
# tracefs instance. Namespaces and instances are removed at the end.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tmp=$(mktemp -d /tmp/tc-delivery.XXXXXX)
collector_pid=
workload=
nsc=tcdc$$
nsa=tcda$$
failed=0
cleanup() {
	[ -n "$collector_pid" ] && kill -9 "$collector_pid" 2>/dev/null && wait "$collector_pid" 2>/dev/null
	[ -n "$workload" ] && kill "$workload" 2>/dev/null && wait "$workload" 2>/dev/null
	ip netns del "$nsa" 2>/dev/null
	ip netns del "$nsc" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

certs=$top_srcdir/contrib/tracecollect-certs
"$certs" -d "$tmp/pki" ca >/dev/null &&
"$certs" -d "$tmp/pki" server 127.0.0.1 10.231.77.1 >/dev/null &&
"$certs" -d "$tmp/pki" agent tc-agent >/dev/null ||
	{ echo "FAIL: certificate helper"; exit 1; }

# start_collector DB LISTEN [NETNS]: start it, wait for its ready file.
start_collector() {
	tc_netns=${3:-} tc_start_collector --db "$1" --listen "$2"
}

stop_collector() {
	kill "$collector_pid"; wait "$collector_pid"
	collector_pid=
}

start_workload() {
	( while :; do sleep 0.002; done ) &
	workload=$!
}

stop_workload() {
	kill "$workload"; wait "$workload" 2>/dev/null
	workload=
}

field() { sed -n "s/.*total:.* $1=\([0-9]*\).*/\1/p" "$2"; }

# tq [NETNS] ARGS...: traceq against the collector (in NETNS when not "").
tq() {
	local ns=$1
	shift
	${ns:+ip netns exec "$ns"} "$top_builddir/traceq/traceq" --server "$query" \
		--sync -t 120000 "$@"
}

# wait_for WHAT CMD: poll CMD (eval) up to 60 s, in order: the test waits
# for what happened, not for a time. Fails the test saying WHAT otherwise.
wait_for() {
	for _ in $(seq 1200); do
		eval "$2" && return 0
		sleep 0.05
	done
	fail "waited 60 s for $1"
	return 1
}

# same_counts LABEL NETNS OUT: what was stored, per CPU, is exactly what the
# agent whose summary is in OUT read from that CPU (its own count, after
# all its resends: a page counts once however often it went out), and no
# event is stored twice: as many distinct rows (every column, timestamps
# included) as the count says.
same_counts() {
	local label=$1 ns=$2 out=$3 cpu n stored shipped distinct total=0
	shipped=$(field events "$out")
	for cpu in $(sed -n 's/^traceagent: cpu\([0-9]*\):.*/\1/p' "$out"); do
		n=$(sed -n "s/^traceagent: cpu$cpu: pages=[0-9]* events=\([0-9]*\).*/\1/p" "$out")
		stored=$(tq "$ns" --count "* where CPU == $cpu")	# task name events too
		check "$label: cpu$cpu stored ($stored) == shipped ($n)" '[ "$stored" = "$n" ]'
		total=$((total + n))
	done
	stored=$(tq "$ns" --count '*')
	check "$label: stored ($stored) == shipped ($shipped)" \
		'[ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ] && [ "$total" = "$shipped" ]'
	distinct=$(tq "$ns" -f json '*' | sort -u | wc -l)
	check "$label: no event stored twice: $distinct distinct rows" \
		'[ "$distinct" = "$stored" ]'
}

# ---- 1. kill -9 the collector mid-stream, restart it on the same db and
# port; once with every stream on one connection, once with a connection
# per CPU (--connections per-cpu: each is acknowledged and resent on its own)
# crash_case MODE N
crash_case() {
	local mode=$1 n=$2 host=crash-$1
	start_collector "$tmp/crash-$mode.db" 127.0.0.1:0
	start_workload
	tc_start_agent "agent$n" -e sched:sched_switch --duration 7 --name "$host" \
		--instance "tcdeliv-$$-$n" --spool-dir "$tmp/spool" --spool-mem-mb 1 --connections "$mode"
	wait_for "$mode: events stored before the crash" \
		'[ "$(tq "" --count sched_switch 2>/dev/null || echo 0)" -gt 0 ]'
	kill -9 "$collector_pid"; wait "$collector_pid" 2>/dev/null
	collector_pid=
	wait_for "$mode: the agent noticing the crash" 'grep -q "lost the collector" "$tmp/agent$n.err"'
	start_collector "$tmp/crash-$mode.db" "$listen"
	wait "$agent"; rc=$?
	stop_workload
	cat "$tmp/agent$n.out"
	check "$mode: agent survives the collector crash and exits 0" \
		'[ "$rc" = 0 ] || { cat "$tmp/agent$n.err"; false; }'
	check "$mode: agent logged the loss and reconnected" \
		'grep -q "lost the collector" "$tmp/agent$n.err" && [ "$(field reconnects "$tmp/agent$n.out")" -ge 1 ]'
	same_counts "$mode crash" "" "$tmp/agent$n.out"
	check "$mode: traceq --stats shows the delivery counters" \
		'"$top_builddir/traceq/traceq" --server "$query" --stats | grep -q "host=$host.* resent_pages=[0-9]* lost_pages=0 lost_events=0"'
	"$top_builddir/traceq/traceq" --server "$query" --stats | sed 's/ agent_.*overrun=[0-9]*//'
	stop_collector
}
crash_case one 1
crash_case per-cpu 3
ncpus=$(grep -c "^traceagent: cpu[0-9]*:" "$tmp/agent3.out")
check "per-cpu: the agent reconnected with $ncpus data connections besides its own" \
	'[ "$(grep -c "agent crash-per-cpu .* connected" "$tmp/collector.log")" -ge $(( 2 * (ncpus + 1) )) ]'

# ---- 2. cut the link between two network namespaces for several seconds
if ! command -v ip >/dev/null || ! ip netns add "$nsc" 2>/dev/null; then
	echo "SKIP (part 2): cannot create network namespaces"
else
	ip netns add "$nsa" &&
	ip link add tcdc$$ netns "$nsc" type veth peer name tcda$$ netns "$nsa" &&
	ip -n "$nsc" addr add 10.231.77.1/30 dev tcdc$$ &&
	ip -n "$nsa" addr add 10.231.77.2/30 dev tcda$$ &&
	ip -n "$nsc" link set lo up && ip -n "$nsa" link set lo up &&
	ip -n "$nsc" link set tcdc$$ up && ip -n "$nsa" link set tcda$$ up ||
		{ echo "FAIL: cannot set up the veth pair"; exit 1; }
	start_collector "$tmp/cut.db" 10.231.77.1:0 "$nsc"
	start_workload
	tc_netns=$nsa tc_start_agent agent2 -e sched:sched_switch --duration 9 --name cut-host \
		--instance "tcdeliv-$$-2" --spool-dir "$tmp/spool" --ack-timeout-ms 1500
	wait_for "events stored before the cut" \
		'[ "$(tq "$nsc" --count sched_switch 2>/dev/null || echo 0)" -gt 0 ]'
	ip -n "$nsa" link set tcda$$ down
	wait_for "the agent noticing the cut" \
		'grep -qE "no acknowledgement|Resource temporarily unavailable" "$tmp/agent2.err"'
	ip -n "$nsa" link set tcda$$ up
	wait "$agent"; rc=$?
	stop_workload
	cat "$tmp/agent2.out"
	check "agent survives the link cut and exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent2.err"; false; }'
	check "agent noticed the silent cut" 'grep -qE "no acknowledgement|Resource temporarily unavailable" "$tmp/agent2.err"'
	same_counts "link cut" "$nsc" "$tmp/agent2.out"
	check "pages were resent after the cut" '[ "$(field resent "$tmp/agent2.out")" -gt 0 ]'
	ip netns exec "$nsc" "$top_builddir/traceq/traceq" --server "$query" --stats |
		sed 's/ agent_.*overrun=[0-9]*//'
	kill "$collector_pid"; wait "$collector_pid"
	collector_pid=
fi

# (own instance names: tests running in parallel use tracecollect-PID)
check "no tracefs instance left behind" '! ls "$tracing/instances" | grep -q "^tcdeliv-$$-"'
if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	echo "--- agent stderr"; cat "$tmp"/agent*.err
	exit 1
fi
echo "PASS: delivery"
