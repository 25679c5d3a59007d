#!/bin/bash
# COMM and CPU mean one thing everywhere (issue 29, part 2): the task that
# ran the event and the CPU it ran on, never an event's own field of that
# name in another case (sched_wakeup's comm, ipi_send_cpu's cpu).
#
# A workload of our own names (tccw-PID, which forks, execs tcc-true and
# renames a subshell to tcc-ren through /proc/self/comm) runs while
#
#  1. trace-cmd records it in an instance of the test's own; the recording
#     is imported, and for sched_switch, sched_wakeup, sched_process_exec
#     and * `traceq --count` with a COMM filter equals the number of lines
#     `trace-cmd report -F` prints with the same filter (3.1.6 crashes as
#     it closes the file, so its stdout is line-buffered: every line it
#     printed is counted), for the workload's names, sh and <idle>; and
#     ipi_send_cpu with CPU == 0 equals report -F's (the CPU the event ran
#     on, not the field cpu, the IPI's target). The kernel saves cmdlines
#     on a best-effort basis (a trylock): the events of a pid the
#     recording's saved cmdlines lack are left out on both sides, as
#     trace-cmd then names it from the events it prints, which depends on
#     the filter (traceq(1), COMM);
#  2. a live agent traces the same events while an instance of the test's
#     own holds the kernel's own COMM filter (`COMM ~ "tcc*"`) on each:
#     for every event, traceq's count with that filter equals the kernel's
#     (its buffer overran nothing), and so, within 2% and 2 events, does
#     what a collector's ingest filter with it kept of a second agent's
#     events (it decides in decode order); the agent said it traces
#     task_newtask and task_rename;
#  3. an agent with --no-comm-events, tracing no sched_process_fork
#     either: COMM is then the saved cmdlines' name, the one traceq
#     prints: the filter's count equals the printed lines of that name;
#     and CPU == 0 counts the rows printed on [000].
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
command -v stdbuf >/dev/null || skip "needs stdbuf (coreutils)"
for e in task/task_newtask task/task_rename sched/sched_process_exec ipi/ipi_send_cpu; do
	[ -d "$tracing/events/$e" ] || skip "this kernel has no $e event"
done
tc_lock
tc_setup comm filt_pid agent collector_pid
inst_r="tc_comm_rec_$$"; inst_k="tc_comm_kern_$$"; inst_a="tc-comm-$$-a"
comm_cleanup() {
	local i
	for i in "$inst_r" "$inst_k" "$inst_a" "$inst_a-b" "$inst_a-f"; do
		[ -d "$tracing/instances/$i" ] && rmdir "$tracing/instances/$i" 2>/dev/null
	done
	tc_cleanup
}
trap comm_cleanup EXIT

# The workload: its script is named tccw (the name it runs as after its
# exec), its children exec tcc-true, and a subshell renames itself.
cp /bin/true "$tmp/tcc-true"
cat > "$tmp/tccw" <<EOF
#!/bin/sh
for i in \$(seq 15); do
	"$tmp/tcc-true"
	( printf tcc-ren > /proc/self/comm; sleep 0.01; /bin/true; : )
	sleep 0.005
	echo x | wc -c > /dev/null
done
EOF
chmod 755 "$tmp/tccw"
sched="sched_switch sched_wakeup sched_wakeup_new sched_process_fork sched_process_exec sched_process_exit"

# ---- 1. an imported trace-cmd recording: trace-cmd report -F's answer ----
rec_args=()
for e in $sched; do rec_args+=(-e "sched:$e"); done
tc_tracecmd_record "$inst_r" "$tmp/w.dat" "${rec_args[@]}" -e ipi:ipi_send_cpu "$tmp/tccw"

tc_certs
mkdir -m 755 "$tmp/run"
tc_start_collector --query "ipc://$tmp/run/query.sock" --filter '[host=comm-filt] sched COMM ~ "tcc*"'
traceq --import "$tmp/w.dat" --name comm-imp > "$tmp/imp.out" 2>&1; rc=$?
check "the recording imports (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/imp.out"; false; }'

# the pids of events the saved cmdlines do not name: " && common_pid != N" each
unnamed=$(trace-cmd dump --cmd-lines -i "$tmp/w.dat" 2>/dev/null |
	awk '$1 ~ /^[0-9]+$/ { print $1 }' | sort -u > "$tmp/named.txt"
	trace-cmd report -i "$tmp/w.dat" 2>/dev/null |
	sed -n 's/^.*-\([0-9][0-9]*\) *\[[0-9]*\] .*/\1/p' | sort -u |
	comm -23 - "$tmp/named.txt" | grep -vx 0 | head -200 |
	awk '{ printf " && common_pid != %s", $1 }')
echo "import: $(printf '%s' "$unnamed" | grep -o '!=' | wc -l) pid(s) without a saved cmdline left out"
# report_count FILTER: the event lines trace-cmd report -F FILTER prints
report_count() {
	stdbuf -oL trace-cmd report -F "$1" -i "$tmp/w.dat" 2>/dev/null |
		grep -cE '\[[0-9]+\] +[0-9]+\.[0-9]+: [a-z_0-9]+:'
}
for name in tccw tcc-true tcc-ren sh "<idle>"; do
	for e in sched_switch sched_wakeup sched_process_exec '*'; do
		re=$e; [ "$e" = '*' ] && re='.*'
		theirs=$(report_count "$re: COMM == \"$name\"$unnamed")
		ours=$(traceq --host comm-imp --count "$e where COMM == \"$name\"$unnamed")
		check "import: $e where COMM == \"$name\": $ours, trace-cmd report -F $theirs" \
			'[ "$ours" = "$theirs" ]'
	done
done
check "import: the workload's names are in the recording" \
	'[ "$(report_count "sched_switch: COMM == \"tccw\"")" -gt 0 ] &&
	 [ "$(report_count "sched_process_exec: COMM == \"tcc-true\"")" -gt 0 ]'
theirs=$(report_count 'ipi_send_cpu: CPU == 0')
ours=$(traceq --host comm-imp --count 'ipi_send_cpu where CPU == 0')
check "import: ipi_send_cpu where CPU == 0: $ours, trace-cmd report -F $theirs" '[ "$ours" = "$theirs" ]'

# ---- 2. a live agent beside the kernel's own COMM filter ----
mkdir "$tracing/instances/$inst_k" || { echo "FAIL: cannot make instance $inst_k"; exit 1; }
echo 16384 > "$tracing/instances/$inst_k/buffer_size_kb"
for e in $sched; do
	echo 'COMM ~ "tcc*"' > "$tracing/instances/$inst_k/events/sched/$e/filter" &&
		echo 1 > "$tracing/instances/$inst_k/events/sched/$e/enable" ||
		{ echo "FAIL: cannot filter $e on COMM in $inst_k"; exit 1; }
done
agent_args=()
for e in $sched; do agent_args+=(-e "sched:$e"); done
start_agent() {
	local inst=$1; shift
	tc_start_agent "agent-$inst" "${agent_args[@]}" -e ipi:ipi_send_cpu --no-user \
		--instance "$inst" "$@"
	agent_log=$tmp/agent-$inst.err
	for _ in $(seq 100); do	# until it traces
		[ "$(cat "$tracing/instances/$inst/events/sched/sched_switch/enable" 2>/dev/null)" = 1 ] &&
			break
		kill -0 "$agent" 2>/dev/null || break
		sleep 0.1
	done
	sleep 0.5
}
stop_agent() {
	kill -INT "$agent"; wait "$agent"; rc=$?; agent=
	check "the agent stops cleanly (exit $rc)" '[ "$rc" = 0 ] || { cat "$agent_log"; false; }'
}
start_agent "$inst_a-f" --name comm-filt
filt_pid=$agent filt_log=$agent_log
start_agent "$inst_a" --name comm-live
# on one CPU: the ingest filter decides in decode order, which is time
# order only within a CPU's pages (the stored COMM is exact either way)
one_cpu=(); command -v taskset > /dev/null && one_cpu=(taskset -c 0)
"${one_cpu[@]}" "$tmp/tccw"
sleep 0.5
echo 0 > "$tracing/instances/$inst_k/tracing_on"
stop_agent
live_log=$agent_log agent=$filt_pid agent_log=$filt_log filt_pid=
stop_agent
check "the agent says it traces the task name events" \
	'grep -q "task:task_newtask and task:task_rename too" "$live_log"'
overrun=$(awk '/^overrun:/ { n += $2 } END { print n + 0 }' "$tracing"/instances/"$inst_k"/per_cpu/cpu*/stats)
check "the kernel's instance lost nothing (overrun $overrun)" '[ "$overrun" = 0 ]'
all_k=0
for e in $sched; do
	kern=$(grep -c ": $e:" "$tracing/instances/$inst_k/trace")
	all_k=$((all_k + kern))
	ours=$(traceq --host comm-live --count "$e where COMM ~ \"tcc*\"")
	check "live: $e where COMM ~ \"tcc*\": $ours, the kernel's filter $kern" '[ "$ours" = "$kern" ]'
	# the ingest filter knows a rename when it has decoded the page that
	# holds it, which may come after another CPU's page with the task's
	# later events (tracecollectd(8)); the workload ran on one CPU, and
	# the other CPU's wakeups of it may still differ by an event or two
	ours=$(traceq --host comm-filt --count "$e")
	check "live: $e stored by the collector's filter COMM ~ \"tcc*\": $ours, the kernel's $kern" \
		'd=$((ours - kern)); [ "${d#-}" -le $((kern / 50 + 2)) ]'
done
check "live: the kernel's filter saw the workload ($all_k events)" '[ "$all_k" -gt 30 ]'
# the same COMM as a --hist key and in the --sql views (common_comm; on
# sched_wakeup, comm is the woken task's field, as in the kernel)
kern=$(grep -c ": sched_wakeup:" "$tracing/instances/$inst_k/trace")
traceq --host comm-live --hist 'keys=COMM' sched_wakeup > "$tmp/hist.txt" 2>&1
hist=$(awk '/^\{ COMM: *tcc/ { n += $NF } END { print n + 0 }' "$tmp/hist.txt")
check "live: --hist keys=COMM on sched_wakeup: $hist hits of tcc*, the kernel's $kern" \
	'[ "$hist" = "$kern" ] || cat "$tmp/hist.txt"'
sql=$(traceq -f csv --sql "SELECT count(*) FROM sched_wakeup WHERE host = 'comm-live'
	AND common_comm GLOB 'tcc*'" | tail -1 | tr -d '\r')
check "live: --sql common_comm GLOB 'tcc*' on sched_wakeup: $sql, the kernel's $kern" \
	'[ "$sql" = "$kern" ]'
sql=$(traceq -f csv --sql "SELECT count(*) FROM sched_wakeup WHERE host = 'comm-live'
	AND comm GLOB 'tcc*'" | tail -1 | tr -d '\r')
ours=$(traceq --host comm-live --count 'sched_wakeup where comm ~ "tcc*"')
check "live: sched_wakeup's own comm field, in --sql ($sql) and in a filter ($ours)" \
	'[ "$sql" = "$ours" ] && [ "$ours" -gt 0 ]'
rmdir "$tracing/instances/$inst_k"

# ---- 3. without the task name events: the saved cmdlines' names ----
agent_args=(-e sched:sched_switch)	# no sched_process_fork: no names from forks
start_agent "$inst_a-b" --name comm-cmd --no-comm-events
check "--no-comm-events: the agent leaves task_rename off" \
	'[ "$(cat "$tracing/instances/$inst_a-b/events/task/task_rename/enable")" = 0 ]'
"$tmp/tccw"
stop_agent
traceq --host comm-cmd --format text sched_switch > "$tmp/cmd.txt"
for name in tccw tcc-ren; do
	printed=$(grep -cE "^ *$name-[0-9]+ +\[" "$tmp/cmd.txt")
	ours=$(traceq --host comm-cmd --count "sched_switch where COMM == \"$name\"")
	check "--no-comm-events: sched_switch where COMM == \"$name\": $ours, printed so $printed" \
		'[ "$ours" = "$printed" ] && [ "$ours" -gt 0 ]'
done
traceq --host comm-cmd --format text ipi_send_cpu > "$tmp/ipi.txt"
printed=$(grep -cE '\[000\] ' "$tmp/ipi.txt")
ours=$(traceq --host comm-cmd --count 'ipi_send_cpu where CPU == 0')
check "ipi_send_cpu where CPU == 0 counts the rows printed on [000] ($ours, $printed)" \
	'[ "$ours" = "$printed" ]'
exit "$failed"
