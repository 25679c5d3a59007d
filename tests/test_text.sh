#!/bin/bash
# traceq's text against the real thing (issue 17, "Output people can diff").
#
# One workload is traced at once by three tracefs instances, each of its
# own, with the same events (sched, irq, timer) on the same clock (mono):
#   * our traceagent into our tracecollectd,
#   * Debian's trace-cmd record (-B: its own instance; 3.1.6 needs -d
#     --no-filter on this kernel and may leave the instance behind),
#   * a plain instance whose `trace` file the kernel prints itself.
# Two instances see the same events in the same order per CPU, but each
# buffer stamps an event with its own read of the clock, so events are
# matched by CPU, event name and pid within 20 us (tests/text_compare.awk)
# and their lines compared byte for byte.
#
# Asserts: `traceq --time raw` lines are trace-cmd report's lines (after
# its "INSTANCE: " prefix) for every matched event, nothing but the
# microseconds of the time differing (and those only where the two
# buffers stamped the event in different microseconds); `--format kernel`
# lines are the kernel's trace file's likewise for the sched and irq
# events (at most 1% differ: see below); the default time is the
# wall clock; `--format fields` keeps the field=value layout; JSON rows of
# sched_wakeup (fields comm, pid) and ipi_send_cpu (field cpu) carry no
# key twice; COMM of pid 0 is swapper/CPU; CSV has a header; a second host
# brings a leading host column, --no-host and --host drop it; kernel
# symbols are shipped once per boot; no instance is left behind.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
tc_lock
tc_setup text collector_pid agent
tc_inst="tc_text_tc_$$"		# trace-cmd's
k_inst="tc_text_k_$$"		# the kernel's own trace file
text_cleanup() {
	[ -d "$tracing/instances/$k_inst" ] && echo 0 > "$tracing/instances/$k_inst/tracing_on"
	rmdir "$tracing/instances/$tc_inst" "$tracing/instances/$k_inst" 2>/dev/null
	tc_cleanup
}
trap text_cleanup EXIT

tc_certs
tc_start_collector

tc_start_agent agent -e sched -e irq -e timer -e ipi -e rcu:rcu_utilization --trace-clock mono \
	--name text-host --no-user --instance "tc-text-$$-a"
for _ in $(seq 300); do
	grep -q "agent text-host (" "$tmp/collector.log" && break
	kill -0 "$agent" 2>/dev/null || break
	sleep 0.1
done
check "the agent connected" 'grep -q "agent text-host (" "$tmp/collector.log" || { cat "$tmp/agent.err"; false; }'

k="$tracing/instances/$k_inst"
mkdir "$k" && echo mono > "$k/trace_clock" && echo 0 > "$k/options/hash-ptr" &&
	echo 1 > "$k/options/record-tgid" &&
	for s in sched irq timer rcu/rcu_utilization; do echo 1 > "$k/events/$s/enable"; done
check "the kernel's instance is set up" '[ "$(cat "$k/events/sched/enable")" = 1 ]'

trace-cmd record -B "$tc_inst" -C mono -d --no-filter -e sched -e irq -e timer -e rcu:rcu_utilization \
	-o "$tmp/tc.dat" sh -c 'for i in $(seq 20); do sleep 0.01; ls / > /dev/null; done' \
	> "$tmp/record.log" 2>&1
echo 0 > "$k/tracing_on"
kill -INT "$agent"; wait "$agent"; agent_rc=$?; agent=
check "agent exits 0" '[ "$agent_rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
cat "$k/trace" > "$tmp/kernel.txt"
for s in sched irq timer rcu/rcu_utilization; do echo 0 > "$k/events/$s/enable"; done
rmdir "$k" "$tracing/instances/$tc_inst" 2>/dev/null

trace-cmd report -i "$tmp/tc.dat" > "$tmp/tc.txt" 2> "$tmp/report.err"
check "trace-cmd recorded events" 'grep -q "^$tc_inst: " "$tmp/tc.txt" || { cat "$tmp/record.log" "$tmp/report.err"; false; }'

# every event name in FILE (lines "... [CPU] [FLAGS] TIME: NAME: ...")
event_names() {
	sed -n 's/.*\] \([^ ]* \)\{0,1\} *[0-9]*\.[0-9]*: \([a-z0-9_]*\): .*/\2/p' "$1" | sort -u
}
# ours FORMAT EVENT...: traceq --time raw of each event, one after the other
ours() {
	local f=$1 e; shift
	for e in "$@"; do traceq --time raw --format "$f" ${OURS_OPTS:-} "$e" || echo "traceq failed on $e"; done
}
# compare A B [PREFIX]: the matching, its summary line in $tmp/cmp.last
compare() {
	awk -v strip="${3:-}" -v nolat="${4:-}" -v show=6 -f "$top_srcdir/tests/text_compare.awk" "$1" "$2" |
		tee "$tmp/cmp.out"
	tail -1 "$tmp/cmp.out" > "$tmp/cmp.last"
}
val() { sed -n "s/.*\<$1=\([0-9]*\).*/\1/p" "$tmp/cmp.last"; }

# shellcheck disable=SC2046
ours text $(event_names "$tmp/tc.txt") > "$tmp/ours.txt"
check "traceq answered for every event" '! grep -q "^traceq failed" "$tmp/ours.txt"'
compare "$tmp/tc.txt" "$tmp/ours.txt" "$tc_inst"
echo "trace-cmd report vs traceq --time raw: $(cat "$tmp/cmp.last")"
check "events matched with trace-cmd's ($(val matched))" '[ "$(val matched)" -ge 100 ]'
check "no matched line differs but for the microseconds of its time or its COMM" \
	'[ "$(val differ)" = 0 ]'
# Each instance's sched_switch evaluates prev_state on its own: a task
# switched out as it exits can be a zombie (Z) in one and dead (X) in the
# other. Seen in 2 of 12,847 lines once.
check "at most 1% of the lines differ in an exiting task's state ($(val exit_state))" \
	'[ $(( $(val exit_state) * 100 )) -le "$(val matched)" ]'
# timer_expire_entry reads jiffies for each instance on its own: a tick
# can come between the two copies of one event. Seen in 1 of 4,113 once.
check "at most 1% of the lines differ in timer_expire_entry's now ($(val tick))" \
	'[ $(( $(val tick) * 100 )) -le "$(val matched)" ]'
check "lines byte-identical with trace-cmd's, time included ($(val identical))" '[ "$(val identical)" -gt 0 ]'
# The COMM column names the pid from the saved cmdlines: trace-cmd's as it
# read them at the end of its recording and as its sched_switch plugin
# learns them from the events it prints, ours as the agent read them and
# as the collector learns them from the events' comm/pid fields. The
# kernel's table (6552 entries here) turns over on a busy machine, and it
# misses tasks whose name it could not save; when the agent read it every
# 10 s and at its end, 1.3% of the lines were unnamed once under make -j2
# check, and under a load of ~1200 new pids/s 28, 0 and 4 lines. With
# reads every 1 s or faster (agent/comms.h) still 42 and 18; with names
# learned from the events too (server/ingest/sink.c), 0 in every run since. At
# most 1 line in 1000.
check "at most 0.1% of the lines with a pid our cmdlines did not name ($(val comm_unknown))" \
	'[ $(( $(val comm_unknown) * 1000 )) -le "$(val matched)" ]'
# A task that exec'd has had two names: trace-cmd prints the one its
# saved cmdlines held when it read them, ours is the latest the agent read
# or, for a pid the kernel's table lacked, the collector saw in an event.
# Such a pid (a sched_process_exec of it in either listing) is counted
# apart, comm_exec, and not bounded: 16 of 8690 lines once under ASan,
# the recording's own sleep and ls. Any other pid is named the same.
echo "lines of an exec'd pid named differently: $(val comm_exec)"
check "at most 0.1% of the lines with a pid trace-cmd and we name differently ($(val comm_other))" \
	'[ $(( $(val comm_other) * 1000 )) -le "$(val matched)" ]'
# Lines whose pid the peer could not name (<...>) and we did are not ours
# to bound: an exec'd short-lived task (ls from sh) that trace-cmd's saved
# cmdlines missed, 16 of 3745 lines once under ASan, which the check above
# used to count as named differently.
echo "lines only we named: $(val peer_unknown)"
check "at most 1% of the events seen by only one side" \
	'[ $(( ($(val a_only) + $(val b_only)) * 100 )) -le "$(val matched)" ]'
# rcu_utilization prints "%s" of a const char *: a tracepoint_string whose
# text only printk_formats holds (trace-cmd report prints it from its
# trace.dat's copy; without it libtraceevent prints the bare address)
grep " rcu_utilization: " "$tmp/ours.txt" > "$tmp/rcu.txt"
check "rcu_utilization printed through printk_formats ($(grep -c "context switch" "$tmp/rcu.txt") of $(wc -l < "$tmp/rcu.txt") lines)" \
	'grep -q "rcu_utilization: *Start context switch$" "$tmp/rcu.txt" &&
	 ! grep -qE "rcu_utilization: *[0-9a-f]{8,}$" "$tmp/rcu.txt" ||
	 { grep -m3 -E "rcu_utilization: *[0-9a-f]{8,}$" "$tmp/rcu.txt"; false; }'

# The kernel's own text, for the sched and irq events: libtraceevent's
# print fmt without plugins. The kernel's instance has options/record-tgid
# set, so its lines carry the thread group after COMM-PID, and ours do
# with --tgid (the agent ships the kernel's saved_tgids). The timer events are left out: the kernel
# prints %p without 0x (and hashed unless hash-ptr is off) and resolves
# the enum names in __print_symbolic (hrtimer mode=ABS|HARD where
# libtraceevent prints mode=0x8); the latency flags are compared as dots
# (libtraceevent 1.7 knows no 'D' or 'b', BH-off). The kernel prints with
# its compiled code, libtraceevent evaluates the print fmt text: at most
# 1% may differ, shown above (an exiting task's prev_state, which each
# instance evaluates on its own, is counted apart, as against trace-cmd).
# shellcheck disable=SC2046
OURS_OPTS=--tgid ours kernel $(event_names "$tmp/kernel.txt" | grep -v "timer_") > "$tmp/ours_k.txt"
compare "$tmp/kernel.txt" "$tmp/ours_k.txt" "" 1
echo "the kernel's trace file vs traceq --format kernel --time raw: $(cat "$tmp/cmp.last")"
check "events matched with the kernel's ($(val matched))" '[ "$(val matched)" -ge 100 ]'
check "--format kernel: at most 1% of the matched lines differ but for their time ($(val differ))" \
	'[ $(( $(val differ) * 100 )) -le "$(val matched)" ]'
check "--format kernel: at most 1% differ in an exiting task's state ($(val exit_state))" \
	'[ $(( $(val exit_state) * 100 )) -le "$(val matched)" ]'
tgid_lines=$(grep -cE -- "-[0-9]+ +\( *[0-9]+\) \[" "$tmp/ours_k.txt")
check "--tgid: lines with the pid's thread group, as the kernel's ($tgid_lines)" \
	'[ "$tgid_lines" -gt 0 ] && grep -qE -- "-[0-9]+ +\( *[0-9]+\) \[" "$tmp/kernel.txt"'

wall=$(traceq --limit 1 sched_switch | sed -n 's/.*\] *\([0-9]*\)\.[0-9]*: .*/\1/p')
check "the default time is the wall clock ($wall)" '[ "${wall:-0}" -gt 1000000000 ]'
traceq --format fields --limit 50 "sched_switch where prev_pid > 0" > "$tmp/fields.txt"
check "--format fields keeps the field=value layout ($(wc -l < "$tmp/fields.txt") rows)" \
	'[ -s "$tmp/fields.txt" ] && ! grep -vqE "^ *[^ ].*-[0-9]+ +\[[0-9]{3}\] [0-9]+\.[0-9]{6}: sched_switch: prev_comm=[^ ]* prev_pid=[1-9][0-9]* prev_prio=[0-9]+ prev_state=[0-9]+ next_comm=[^ ]* next_pid=[0-9]+ next_prio=[0-9]+$" "$tmp/fields.txt" ||
	 { head -3 "$tmp/fields.txt"; false; }'

# dup_keys: the JSON objects on stdin (flat, one per line) that carry a key twice
dup_keys() {
	awk '{
		n = split("", seen); s = $0; bad = 0
		sub(/^\{/, "", s)
		while (s != "" && s != "}") {
			if (!match(s, /^"([^"\\]|\\.)*":/)) { print "unparsed: " $0; next }
			key = substr(s, 1, RLENGTH - 1); s = substr(s, RLENGTH + 1)
			if (key in seen) bad = 1
			seen[key] = 1
			if (match(s, /^"([^"\\]|\\.)*"/) || match(s, /^[^,}]*/))
				s = substr(s, RLENGTH + 1)
			sub(/^,/, "", s)
		}
		if (bad) print
	}'
}
for e in sched_wakeup ipi_send_cpu sched_switch; do
	traceq --format json "$e" > "$tmp/$e.json"
	n=$(wc -l < "$tmp/$e.json")
	check "json: $n rows of $e, none with a key twice" \
		'[ "$n" -gt 0 ] && [ -z "$(dup_keys < "$tmp/$e.json" | tee "$tmp/dup" | head -3)" ] ||
		 { head -3 "$tmp/dup"; false; }'
done
check "json: ipi_send_cpu's field is \"cpu\", ours \"_cpu\"" \
	'grep -q "\"_cpu\":[0-9]*,.*\"cpu\":[0-9]*" "$tmp/ipi_send_cpu.json"'
check "json: sched_wakeup's comm and pid are the event's, ours \"_comm\"" \
	'grep -q "\"_comm\":.*\"comm\":.*\"pid\":" "$tmp/sched_wakeup.json" &&
	 ! grep -q "\"_pid\"" "$tmp/sched_wakeup.json"'
# events of the idle task (pid 0): interrupts and switches away from it;
# none when no CPU was ever idle during the run (a busy machine)
: > "$tmp/idle.json"
for e in sched_switch softirq_entry hrtimer_expire_entry irq_handler_entry; do
	traceq --format json "$e where common_pid == 0" >> "$tmp/idle.json"
done
if [ -s "$tmp/idle.json" ]; then
	check "json: COMM of pid 0 is swapper/CPU ($(wc -l < "$tmp/idle.json") rows)" \
		'! grep -v "\"cpu\":\([0-9]*\),.*\"comm\":\"swapper/\1\"" "$tmp/idle.json" | grep -q .'
else
	echo "note: no event of pid 0 was recorded (no CPU went idle): swapper/N not checked"
fi
traceq --format csv --limit 3 ipi_send_cpu > "$tmp/ipi.csv"
check "csv: a header, then rows" \
	'head -1 "$tmp/ipi.csv" | grep -q "^event,host,_cpu,ts,trace_ts,comm,common_type,.*,cpu,callsite,callback" &&
	 [ "$(wc -l < "$tmp/ipi.csv")" = 4 ]'

# a second host: a leading host column, unless --no-host or --host picks one
tc_run_agent agent2 -e sched:sched_switch --duration 1 --name text-host-2 --no-user \
	--instance "tc-text-$$-b"
check "second agent exits 0" '[ $? = 0 ] || { cat "$tmp/agent2.err"; false; }'
traceq sched_switch > "$tmp/two.txt"
check "two hosts: every line starts with its host" \
	'grep -q "^  text-host: " "$tmp/two.txt" && grep -q "^text-host-2: " "$tmp/two.txt" &&
	 ! grep -qv "^ *text-host\(-2\)\{0,1\}: " "$tmp/two.txt"'
check "--no-host drops the column" \
	'traceq --no-host --limit 5 sched_switch | grep -q "^ *[^ ].*-[0-9]* *\[[0-9]*\] "'
check "--host with one host: no column" \
	'! traceq --host text-host-2 sched_switch | grep -q "text-host-2: "'

# the kernel's symbols go once per boot: a second run of text-host finds
# them held (WELCOME's kallsyms) and sends none
tc_run_agent agent3 -e sched:sched_switch --duration 1 --name text-host --no-user \
	--instance "tc-text-$$-c"
check "third agent exits 0" '[ $? = 0 ] || { cat "$tmp/agent3.err"; false; }'
traceq --count sched_switch > /dev/null	# --sync: everything stored
kernel_tables=$(sqlite3 "$tmp/trace.db" "SELECT count(*) FROM programs WHERE grp = 0")
check "kernel symbols stored once per host and boot ($kernel_tables tables for 2 hosts)" \
	'[ "$kernel_tables" = 2 ] && grep -q "kernel symbols of this boot" "$tmp/agent3.err"'
# printk_formats likewise: the collector asks for them only when it holds
# none of the boot (WELCOME's printk_formats)
printk_sent=$(grep -c "printk formats of this boot" "$tmp/collector.log")
printk_boots=$(sqlite3 "$tmp/trace.db" "SELECT count(DISTINCT host_id || ' ' || boot_id) FROM printk_formats")
check "printk_formats sent once per host and boot ($printk_sent times, $printk_boots tables for 2 hosts)" \
	'[ "$printk_sent" = 2 ] && [ "$printk_boots" = 2 ]'

check "no tracefs instance left behind" \
	'! ls "$tracing/instances" | grep -q "tc-text-$$\|tc_text_.*_$$"'
[ "$failed" = 0 ] || { tail -20 "$tmp/collector.log"; exit 1; }
echo "PASS"
