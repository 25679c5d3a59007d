#!/bin/bash
# COMM on the ClickHouse store gives SQLite's answers from a live host's
# task names (issue 32; clickhouse_comm.h): the name a task had at each
# event, through its renames.
#
# Two collectors run side by side, one on a clickhouse-server of the
# test's own (tests/lib.sh tc_start_clickhouse), one on SQLite, each with
# an agent of its own in a tracefs instance of its own tracing the same
# sched events (the agents add task_newtask and task_rename); a third
# instance holds the kernel's own filter COMM ~ "tcc*" on sched_switch
# while both trace.
# The workload (tests' names tcc-*): a task renamed before the agents
# start (prctl(PR_SET_NAME) to tcc-pre), blocked on a fifo until they
# trace, that then sleeps a while and renames itself to tcc-post (its
# events before the rename are named by the rename's old name: no name
# change of it that they saw precedes them);
# tasks that rename themselves several times as they run (tcc-a0 ..
# tcc-a3, with sleeps between: sched_switch events under each name); and
# short children that exec.
#
# Asserts:
#  - both agents stop cleanly, and the kernel's instance lost nothing;
#  - sched_switch where COMM ~ "tcc*" counts the kernel's filter's events
#    on ClickHouse;
#  - for each event and COMM filter (==, !=, globs of each form, each
#    rename's name, the pre-start name, swapper/N with a workload field,
#    COMM with other fields under && and ||, a '!' glob), the count from
#    ClickHouse == the count from SQLite, and they discriminate (most
#    count some events);
#  - traceq --follow of a COMM filter, started before anything was
#    stored, prints the rows a plain query of it returns (ClickHouse);
#  - traceq prints the same events of a COMM filter from both (stdout,
#    host names and times aside: each instance's buffer reads the clock
#    for an event of its own), and --hist keys=COMM,prev_state the same
#    entries.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_need_clickhouse
command -v python3 > /dev/null || skip "needs python3 (the workload's prctl(PR_SET_NAME))"
for e in task/task_newtask task/task_rename; do
	[ -d "$tracing/events/$e" ] || skip "this kernel has no $e event"
done
tc_lock
tc_setup ch_comm agent agent_sq pre_pid follower collector_ch collector_pid
inst_k="tc_chcomm_kern_$$" inst_c="tc-chcomm-$$-c" inst_s="tc-chcomm-$$-s"
chcomm_cleanup() {
	local i
	for i in "$inst_k" "$inst_c" "$inst_s"; do
		[ -d "$tracing/instances/$i" ] && rmdir "$tracing/instances/$i" 2>/dev/null
	done
	tc_cleanup
}
trap chcomm_cleanup EXIT

# rename.py NAME...: this python takes each NAME in turn (prctl(PR_SET_NAME)),
# sleeping a few times after each (context switches under each name);
# "wait:FIFO" blocks reading FIFO (one switch), "nap" sleeps again
cat > "$tmp/rename.py" << 'EOF'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
for name in sys.argv[1:]:
    if name.startswith("wait:"):
        open(name[5:]).read()
        continue
    if name != "nap" and libc.prctl(15, name.encode(), 0, 0, 0) != 0:
        sys.exit("prctl: %s" % os.strerror(ctypes.get_errno()))
    for _ in range(5):
        time.sleep(0.002)
EOF
cp /bin/true "$tmp/tcc-true"
cat > "$tmp/tccw" << EOF
#!/bin/sh
for i in \$(seq 6); do
	python3 "$tmp/rename.py" tcc-a0 tcc-a1 tcc-a2 tcc-a3
	"$tmp/tcc-true"
	sleep 0.005
done
EOF
chmod 755 "$tmp/tccw"

tc_certs
tc_start_clickhouse
tc_ch_db_args
tc_start_collector "${ch_db_args[@]}"
listen_ch=$listen query_ch=$query collector_ch=$collector_pid
tc_start_collector
listen_sq=$listen query_sq=$query
tq_ch() { "$top_builddir/traceq/traceq" --server "$query_ch" --sync -t 120000 "$@"; }
tq_sq() { "$top_builddir/traceq/traceq" --server "$query_sq" --sync -t 120000 "$@"; }

# a follower of a COMM filter on ClickHouse, from before anything is stored
t0=$(date +%s%N)
fsel='sched_switch where COMM ~ "tcc*" || next_comm ~ "tcc-a*"'
"$top_builddir/traceq/traceq" --server "$query_ch" -t 120000 -f json --follow --since "@${t0}ns" \
	"$fsel" > "$tmp/follow" 2> "$tmp/follow.err" &
follower=$!

# the task named before the agents start, which renames itself once they trace
# (blocked until both agents trace: it runs only while both see it)
mkfifo "$tmp/go"
python3 "$tmp/rename.py" tcc-pre "wait:$tmp/go" nap tcc-post &
pre_pid=$!
for _ in $(seq 100); do	# until it has its name, then blocks on the fifo
	[ "$(cat "/proc/$pre_pid/comm" 2>/dev/null)" = tcc-pre ] && break
	sleep 0.05
done
sleep 0.3

events=(-e sched:sched_switch -e sched:sched_wakeup -e sched:sched_process_exec)
# start_agent INSTANCE NAME LISTEN: an agent of the events, until it traces
start_agent() {
	listen=$3 tc_start_agent "agent-$1" "${events[@]}" --no-user --instance "$1" --name "$2"
	for _ in $(seq 100); do
		[ "$(cat "$tracing/instances/$1/events/sched/sched_switch/enable" 2>/dev/null)" = 1 ] &&
			break
		kill -0 "$agent" 2>/dev/null || break
		sleep 0.1
	done
}
start_agent "$inst_s" comm-sq "$listen_sq"
agent_sq=$agent
start_agent "$inst_c" comm-ch "$listen_ch"
sleep 0.5
# the kernel's filter, on while both agents trace
mkdir "$tracing/instances/$inst_k" || { echo "FAIL: cannot make instance $inst_k"; exit 1; }
echo 8192 > "$tracing/instances/$inst_k/buffer_size_kb"
echo 'COMM ~ "tcc*"' > "$tracing/instances/$inst_k/events/sched/sched_switch/filter" &&
	echo 1 > "$tracing/instances/$inst_k/events/sched/sched_switch/enable" ||
	{ echo "FAIL: cannot filter sched_switch on COMM in $inst_k"; exit 1; }
echo go > "$tmp/go"
wait "$pre_pid"; pre_pid=
"$tmp/tccw"
sleep 0.5
echo 0 > "$tracing/instances/$inst_k/tracing_on"
for a in agent agent_sq; do
	kill -INT "${!a}"; wait "${!a}"; rc=$?; printf -v "$a" ''
	check "the agent ($a) stops cleanly (exit $rc)" '[ "$rc" = 0 ]'
done
overrun=$(awk '/^overrun:/ { n += $2 } END { print n + 0 }' \
	"$tracing/instances/$inst_k"/per_cpu/cpu*/stats)
check "the kernel's instance lost nothing (overrun $overrun)" '[ "$overrun" = 0 ]'
kern=$(grep -c ": sched_switch:" "$tracing/instances/$inst_k/trace")
rmdir "$tracing/instances/$inst_k"
ours=$(tq_ch --host comm-ch --count 'sched_switch where COMM ~ "tcc*"')
check "ClickHouse: sched_switch where COMM ~ \"tcc*\": $ours, the kernel's filter $kern" \
	'[ "$ours" = "$kern" ] && [ "$kern" -gt 20 ]'

queries=(
	'sched_switch where COMM ~ "tcc*"'
	'sched_switch where COMM == "tcc-pre"'
	'sched_switch where COMM == "tcc-post"'
	'sched_switch where COMM == "tcc-a0"'
	'sched_switch where COMM == "tcc-a2"'
	'sched_switch where COMM == "tcc-a3" && prev_state & 1'
	'sched_switch where COMM ~ "tcc-a[1-2]"'
	'sched_switch where COMM ~ "tcc-?3"'
	'sched_switch where COMM ~ "*-p*"'
	'sched_switch where COMM ~ "tcc-p*" || next_comm ~ "tcc-a*"'
	'sched_switch where COMM != "tcc-a1" && prev_comm ~ "tcc*"'
	'sched_switch where COMM ~ "!tcc*" && next_comm ~ "tcc*"'
	'sched_switch where COMM ~ "swapper*" && next_comm ~ "tcc*"'
	'sched_switch where COMM ~ "tcc-a?" && CPU == 0'
	'sched_wakeup where COMM ~ "tcc*"'
	'sched_wakeup where comm ~ "tcc*" && !(COMM ~ "tcc*")'
	'sched_process_exec where COMM ~ "tcc*"'
	'sched_process_exec where COMM == "tcc-true"'
	'sched where COMM ~ "tcc-[ap]*"'
)
# counts QUERY-FN HOST: the count of each query, one a line
counts() {
	local q
	for q in "${queries[@]}"; do
		"$1" --host "$2" --count "$q" 2> /dev/null || echo error
	done
}
counts tq_ch comm-ch > "$tmp/ch.counts"
counts tq_sq comm-sq > "$tmp/sq.counts"
some=0
for i in "${!queries[@]}"; do
	c=$(sed -n "$((i + 1))p" "$tmp/ch.counts") s=$(sed -n "$((i + 1))p" "$tmp/sq.counts")
	check "${queries[$i]}: ClickHouse $c == SQLite $s" '[ "$c" = "$s" ] && [ "$c" != error ]'
	case $s in '' | *[!0-9]*) continue ;; esac
	[ "$s" -gt 0 ] && some=$((some + 1))
done
check "the queries count some events ($some of ${#queries[@]})" \
	'[ "$some" -ge $(( ${#queries[@]} * 3 / 4 )) ]'

# the follower prints what a plain query of its filter does, once caught up
# (the printed comm aside: the pid's latest name when the row was printed)
nocomm() { sed -E 's/,"comm":"([^"\\]|\\.)*"//' "$@" | sort; }
tq_ch -f json --since "@${t0}ns" "$fsel" | nocomm > "$tmp/plain"
for _ in $(seq 150); do
	[ "$(wc -l < "$tmp/follow")" -ge "$(wc -l < "$tmp/plain")" ] && break
	sleep 0.2
done
sleep 0.5	# a repeat would show up as more lines
kill -TERM "$follower"; wait "$follower"; rc=$?; follower=
n=$(wc -l < "$tmp/plain")
check "--follow of a COMM filter on ClickHouse prints the plain query's $n rows (exit $rc)" \
	'[ "$rc" = 0 ] && [ "$n" -gt 10 ] && nocomm "$tmp/follow" | cmp -s - "$tmp/plain" ||
	{ nocomm "$tmp/follow" | diff - "$tmp/plain" | head -5; cat "$tmp/follow.err"; false; }'

# the printed events of a COMM filter, and a COMM histogram, host names aside
for m in ch sq; do
	"tq_$m" --host "comm-$m" 'sched_switch where COMM ~ "tcc-[ap]*"' 2>&1 |
		sed -E "s/comm-$m/HOST/g; s/ [0-9]+\.[0-9]+: / T: /" > "$tmp/$m.select"
	"tq_$m" --host "comm-$m" --hist 'keys=COMM,prev_state' \
		'sched_switch where COMM ~ "tcc*" || next_comm ~ "tcc*"' 2>&1 |
		sed "s/comm-$m/HOST/g" > "$tmp/$m.hist"
done
n=$(wc -l < "$tmp/sq.select")
check "traceq prints the same $n events of a COMM filter from both" \
	'[ "$n" -gt 10 ] && cmp -s "$tmp/ch.select" "$tmp/sq.select" ||
	{ diff "$tmp/ch.select" "$tmp/sq.select" | head -5; false; }'
n=$(grep -c '^{' "$tmp/sq.hist")
check "--hist keys=COMM,prev_state: the same $n entries from both" \
	'[ "$n" -gt 3 ] && cmp -s "$tmp/ch.hist" "$tmp/sq.hist" ||
	{ diff "$tmp/ch.hist" "$tmp/sq.hist" | head -5; false; }'
exit "$failed"
