#!/bin/bash
# traceq --follow (issue 18, "Live tail"): rows printed as the collector
# stores them, from a cursor in storage order that survives a collector
# restart and the agent's reconnect, with the filter run on the collector.
#
# An agent (host fol-a) ships real sched events of a busy loop for a few
# seconds; meanwhile followers run over the collector's ipc query socket:
#  - F0 "sched_wakeup" --since @T0, started before anything is stored: it
#    says it waits for the event, then prints it as it comes;
#  - F1 "sched_switch,sched_wakeup where prev_pid != 0" --since @T0 (the
#    time before the agent started), started once rows are stored: it
#    prints the backlog, then what comes;
#  - F2 the same selection as uid 5001, scoped to host fol-a;
#  - F3 "sched_switch" --since -1m, started later still.
# Midway the collector is stopped (kill -TERM) and started again on the
# same database, journal and ports: the agent reconnects and resends what
# was not acknowledged, the followers reconnect and resume. A second agent
# (host fol-b) ships afterwards. Then, for each follower, the rows it
# printed (json lines, less comm: the pid's name as known when asked) are
# exactly the rows a plain query of the same
# selection and window returns: no row twice, none missing; F1 has no
# sched_switch row with prev_pid 0 (the filter ran), F2 only fol-a's rows
# while the plain query has fol-b's too, and F3 printed rows stored before
# it started first (the last minute's backlog); F0 printed the same rows
# as a plain query of sched_wakeup. Last, F4 follows a host being imported
# after it waited for the host's events (see there).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
tc_lock
tc_setup follow agent workload f0 f1 f2 f3 f4 collector_pid

tc_certs
chmod 755 "$tmp"
mkdir -m 755 "$tmp/run"
tc_traceq_for_all
sock="$tmp/run/query.sock"
cargs=(--query "ipc://$sock" --query-group nogroup --scope 'uid:5001 fol-a')
if [ -n "${follow_clickhouse:-}" ]; then	# tests/test_ch_follow.sh: the same on ClickHouse
	tc_start_clickhouse
	tc_ch_db_args
	cargs+=("${ch_db_args[@]}")
fi
tc_start_collector "${cargs[@]}"
query="ipc://$sock"
port=$listen
[ -z "${follow_clickhouse:-}" ] ||
	check "the collector stores into ClickHouse" 'grep -q "storing into ClickHouse" "$tmp/collector.log"'

now_ns() { date +%s%N; }
agent_run() {	# HOST SECONDS: in the background, agent its pid
	tc_start_agent "agent-$1" -e sched:sched_switch -e sched:sched_wakeup --duration "$2" \
		--name "$1" --instance "tc-follow-$$" --spool-dir "$tmp/spool-$1"
}
follow() {	# NAME ARGS...: a follower in the background, its output in $tmp/NAME
	local name=$1
	shift
	"$tq" -s "$query" -t 3000 -f json --follow "$@" > "$tmp/$name" 2> "$tmp/$name.err" &
}
lines() { wc -l < "$1"; }

t0=$(now_ns)
sel='sched_switch,sched_wakeup where prev_pid != 0'
follow f0 --since "@${t0}ns" sched_wakeup	# nothing is stored yet
f0=$!
for _ in $(seq 100); do grep -q "waiting" "$tmp/f0.err" && break; sleep 0.1; done
check "a follower of an event not stored yet waits, and says so" \
	'kill -0 $f0 && grep -q "no event the query selects is stored yet; waiting" "$tmp/f0.err"'
( while :; do sleep 0.001; done ) &
workload=$!
agent_run fol-a 8

# the followers start once rows are stored (a selector names stored events)
for _ in $(seq 100); do
	n=$("$tq" -s "$query" -t 3000 --count sched_switch 2>/dev/null) || n=0
	[ "$n" -gt 0 ] && break
	sleep 0.1
done
follow f1 --since "@${t0}ns" "$sel"
f1=$!
setpriv --reuid=5001 --regid=65534 --clear-groups -- \
	"$tq" -s "$query" -t 3000 -f json --follow --since "@${t0}ns" "$sel" \
	> "$tmp/f2" 2> "$tmp/f2.err" &
f2=$!
sleep 1
t3=$(now_ns)
follow f3 --since -1m sched_switch
f3=$!

# the collector goes away midway and comes back on the same files and ports
sleep 1.5
kill -TERM "$collector_pid"; wait "$collector_pid" 2>/dev/null
collector_pid=
check "followers keep running while the collector is away" \
	'kill -0 $f1 && kill -0 $f2 && kill -0 $f3'
sleep 1
tc_start_collector "${cargs[@]}" --listen "$port"
query="ipc://$sock"

wait "$agent"; rc=$?
agent=
check "agent fol-a exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent-fol-a.err"; false; }'
check "agent fol-a reconnected" 'grep -qi "reconnect\|connected again\|resen" "$tmp/agent-fol-a.err" "$tmp/agent-fol-a.out"'
agent_run fol-b 2
wait "$agent"; rc=$?
agent=
check "agent fol-b exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent-fol-b.err"; false; }'
kill "$workload"; wait "$workload" 2>/dev/null
workload=

# what a plain query returns for the same selection and window, once stored
traceq -f json --since "@${t0}ns" "$sel" > "$tmp/p1"
setpriv --reuid=5001 --regid=65534 --clear-groups -- \
	"$tq" -s "$query" --sync -t 120000 -f json --since "@${t0}ns" "$sel" > "$tmp/p2"
traceq -f json --since "@${t0}ns" sched_switch > "$tmp/p3"
traceq -f json --since "@${t0}ns" sched_wakeup > "$tmp/p0"

# the followers catch up (they poll): wait until they printed as many lines
for _ in $(seq 300); do
	[ "$(lines "$tmp/f1")" -ge "$(lines "$tmp/p1")" ] &&
	[ "$(lines "$tmp/f2")" -ge "$(lines "$tmp/p2")" ] &&
	[ "$(lines "$tmp/f3")" -ge "$(lines "$tmp/p3")" ] &&
	[ "$(lines "$tmp/f0")" -ge "$(lines "$tmp/p0")" ] && break
	sleep 0.2
done
sleep 0.5	# a repeat would show up as more lines
for v in f0 f1 f2 f3; do
	kill -TERM "${!v}"; wait "${!v}"; rc=$?
	printf -v "$v" ''
	check "$v exits 0 on SIGTERM" '[ "$rc" = 0 ] || { cat "$tmp/$v.err"; false; }'
done
cat "$tmp/f1.err"

for v in 0 1 2 3; do
	echo "follower f$v printed $(lines "$tmp/f$v") rows, the plain query has $(lines "$tmp/p$v")"
	# comm is what the pid's cmdline says when asked: later queries know more
	sed -E 's/"_?comm":[^,]*,//' "$tmp/f$v" | sort > "$tmp/f$v.sorted"
	sed -E 's/"_?comm":[^,]*,//' "$tmp/p$v" | sort > "$tmp/p$v.sorted"
	check "f$v: no row printed twice" '[ -z "$(uniq -d "$tmp/f$v.sorted" | head -3)" ]'
	check "f$v: the rows followed == the rows of the plain query (none missing, none extra)" \
		'[ "$(lines "$tmp/p$v")" -gt 0 ] && cmp -s "$tmp/f$v.sorted" "$tmp/p$v.sorted" ||
		 { diff "$tmp/f$v.sorted" "$tmp/p$v.sorted" | head -5; false; }'
done
check "rows were stored before, across and after the restart (both hosts)" \
	'grep -q "\"host\":\"fol-a\"" "$tmp/p1" && grep -q "\"host\":\"fol-b\"" "$tmp/p1"'
check "f1: the filter ran (no sched_switch with prev_pid 0), and both events came" \
	'! grep "\"event\":\"sched:sched_switch\"" "$tmp/f1" | grep -q "\"prev_pid\":0," &&
	 grep -q "\"event\":\"sched:sched_wakeup\"" "$tmp/f1"'
check "f2 (scoped to fol-a) printed only fol-a's rows" \
	'[ -s "$tmp/f2" ] && ! grep -qv "\"host\":\"fol-a\"" "$tmp/f2"'
first_ts=$(head -1 "$tmp/f3" | sed -n 's/.*"ts":\([0-9]*\).*/\1/p')
check "f3 (--since -1m) printed the backlog first (its first row, ts $first_ts, is older than its start $t3)" \
	'[ -n "$first_ts" ] && [ "$first_ts" -lt "$t3" ]'

# A follower that waited for its events follows a host being stored from
# that host's first row: F4 (raw_syscalls of host fol-imp, no --since)
# starts before any raw_syscalls event is stored, says it waits, and is
# held still (SIGSTOP) while a trace-cmd recording is imported as fol-imp;
# let go, it prints every row the import stored (count and set), none of
# them skipped for having been stored before its first answer.
if command -v trace-cmd >/dev/null; then
	inst="tc-follow-imp-$$"
	trace-cmd record -B "$inst" -C mono -d --no-filter -e raw_syscalls -o "$tmp/imp.dat" \
		sh -c 'i=0; while [ $i -lt 3000 ]; do : < /dev/null; i=$((i+1)); done' \
		> "$tmp/record.log" 2>&1
	rmdir "/sys/kernel/tracing/instances/$inst" 2>/dev/null
	isel='sys_enter,sys_exit'
	follow f4 -H fol-imp "$isel"
	f4=$!
	for _ in $(seq 100); do grep -q "waiting" "$tmp/f4.err" && break; sleep 0.1; done
	check "F4 waits for raw_syscalls" 'grep -q "stored yet; waiting" "$tmp/f4.err"'
	kill -STOP "$f4"
	"$tq" -s "$query" --import "$tmp/imp.dat" --name fol-imp > "$tmp/imp.out" 2>&1; rc=$?
	check "the recording is imported as fol-imp" '[ "$rc" = 0 ] || { cat "$tmp/imp.out"; false; }'
	traceq -f json -H fol-imp "$isel" > "$tmp/p4"
	kill -CONT "$f4"
	for _ in $(seq 300); do [ "$(lines "$tmp/f4")" -ge "$(lines "$tmp/p4")" ] && break; sleep 0.2; done
	sleep 0.5	# a repeat would show up as more lines
	kill -TERM "$f4"; wait "$f4"; rc=$?
	f4=
	check "f4 exits 0 on SIGTERM" '[ "$rc" = 0 ] || { cat "$tmp/f4.err"; false; }'
	echo "follower f4 printed $(lines "$tmp/f4") rows, the import stored $(lines "$tmp/p4")"
	sed -E 's/"_?comm":[^,]*,//' "$tmp/f4" | sort > "$tmp/f4.sorted"
	sed -E 's/"_?comm":[^,]*,//' "$tmp/p4" | sort > "$tmp/p4.sorted"
	check "f4: no row printed twice" '[ -z "$(uniq -d "$tmp/f4.sorted" | head -3)" ]'
	check "f4: the rows followed == the rows the import stored (none skipped, none extra)" \
		'[ "$(lines "$tmp/p4")" -gt 0 ] && cmp -s "$tmp/f4.sorted" "$tmp/p4.sorted" ||
		 { diff "$tmp/f4.sorted" "$tmp/p4.sorted" | head -5; false; }'
	check "f4 did not claim it fell behind" '! grep -q "fell behind" "$tmp/f4.err"'
else
	echo "SKIP part: the follower of an import needs trace-cmd"
fi

[ "$failed" = 0 ] || { tail -30 "$tmp/collector.log"; exit 1; }
echo "PASS"
