#!/bin/bash
# End to end for function tracing: the kernel's function tracers (-p) and a
# program started by `traceagent --exec`, against a real tracecollectd.
#
# Kernel part: where the kernel refuses the function tracer (locked down:
# EPERM, even for root; or built without it) the agent must say so in one
# line and still ship the events; where it permits, ftrace:function events
# must arrive. The other branch is skipped with a message.
# --exec part: tests/fgraph_prog_fentry (a known call tree, -pg -mfentry)
# runs under the agent, which stops when it exits and reports its status;
# its funcgraph events are stored and the graph view (traceq --graph) shows
# a known part of the call tree nested.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tmp=$(mktemp -d /tmp/tc-ftrace.XXXXXX)
shm=$(mktemp -d /dev/shm/tc-ftrace.XXXXXX)
collector_pid=
failed=0
cleanup() {
	[ -n "$collector_pid" ] && kill "$collector_pid" 2>/dev/null && wait "$collector_pid" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"; rm -rf "$shm"
}
trap cleanup EXIT

tc_certs
tc_start_collector
agent() {
	"$top_builddir/traceagent" --connect "$listen" --user-dir "$shm" \
		--cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key" \
		--ca "$tmp/pki/ca.crt" "$@"
}

# --- the kernel's function tracer
agent --name kfunc -p function --ftrace-filter 'vfs_*' \
	-e sched:sched_process_exec --duration 2 \
	> "$tmp/k.out" 2> "$tmp/k.err" &
kpid=$!
sleep 0.5
for _ in 1 2 3 4 5; do /bin/true; done
wait "$kpid"; krc=$?
cat "$tmp/k.err"
check "agent -p function exits 0" '[ "$krc" = 0 ]'
check "events still flow" '[ "$(traceq --count "sched:sched_process_exec")" -gt 0 ]'
refusal=$(grep -c "the kernel refuses the function tracer\|the kernel has no function tracer" "$tmp/k.err")
if ! tc_can_function; then
	check "exactly one line says why" '[ "$refusal" = 1 ] && grep -q "tracing the events only" "$tmp/k.err"'
	tc_skip_part "kernel function events" "$tc_why"
else
	check "kernel ftrace:function events arrive" '[ "$(traceq --count "ftrace:function")" -gt 0 ]'
fi
check "instance removed" '! ls "$tracing/instances" | grep -q "^tracecollect-$kpid$"'

# --- a usage error and an unrunnable program
agent --exec > /dev/null 2> "$tmp/u.err"; urc=$?
check "--exec without a program is a usage error" '[ "$urc" = 2 ]'
agent -e sched:sched_process_exec --exec -- "$tmp/no-such-program" > /dev/null 2> "$tmp/n.err"; nrc=$?
check "a program that cannot run fails in one line" \
	'[ "$nrc" = 1 ] && grep -q "no-such-program: No such file" "$tmp/n.err"'

# --- a program under --exec
prog=$top_builddir/tests/fgraph_prog_fentry
if [ ! -x "$prog" ]; then
	tc_skip_part "--exec part" "$prog not built (x86_64 only)"
else
	agent --name exec-host -e sched:sched_process_exit --exec -- "$prog" \
		> "$tmp/e.out" 2> "$tmp/e.err"; erc=$?
	cat "$tmp/e.out"
	check "agent --exec exits 0 when the program ends" '[ "$erc" = 0 ] || { cat "$tmp/e.err"; false; }'
	check "summary reports the program's status" \
		'grep -q "program: .*fgraph_prog_fentry exited with status 0" "$tmp/e.out"'
	entries=$(traceq --count "ftrace:funcgraph_entry")
	exits=$(traceq --count "ftrace:funcgraph_exit")
	echo "funcgraph_entry=$entries funcgraph_exit=$exits"
	# one funcgraph_exit per call by default (TC_FTRACE_ENTRIES=1 adds
	# the entries); the graph view rebuilds the entries from the exits
	check "funcgraph_exit events stored, no entries" '[ "$entries" = 0 ] && [ "$exits" -gt 0 ]'
	# the program's few calls fill no 32 KiB page: its pages go out at
	# flushes and at its exit, partly filled, and only their used bytes
	# are shipped (header and 44-byte records, not the unused rest)
	read -r upages uevents ubytes <<< "$(sed -n 's/.*user: programs=[0-9]* pages=\([0-9]*\) events=\([0-9]*\) bytes=\([0-9]*\).*/\1 \2 \3/p' "$tmp/e.out")"
	echo "user pages=${upages:-?} events=${uevents:-?} bytes=${ubytes:-?}"
	check "user pages are shipped without their unused end" \
		'[ "${upages:-0}" -gt 0 ] && [ "$ubytes" -le $((upages * 24 + uevents * 44)) ]'
	check "the program's ring file is gone" '[ -z "$(ls "$shm")" ]'
	traceq --graph funcgraph > "$tmp/graph.txt"
	# the main thread's first calls, named by the collector from the
	# symbols the agent read from the program's ELF file
	ppid=$(sed -n 's/.*started .* (pid \([0-9]*\)).*/\1/p' "$tmp/e.err")
	grep -- "-$ppid |" "$tmp/graph.txt" | head -10 | cut -d'|' -f3- | sed 's/^ //' \
		> "$tmp/graph.main"
	cat > "$tmp/graph.expect" <<'EXP'
run() {
  recurse() {
    recurse() {
      recurse() {
        leaf();
      } /* recurse */
      leaf();
    } /* recurse */
    leaf();
  } /* recurse */
EXP
	cat "$tmp/graph.main"
	check "traceq --graph nests run > recurse(2) as the program calls them" \
		'diff "$tmp/graph.expect" "$tmp/graph.main"'
	check "--graph rejects other events" '! traceq --graph sched_switch 2>/dev/null'
	# plain rows: the func address (the hook's call site in the function)
	# named by the collector, the number kept in JSON
	traceq --format fields "funcgraph_exit where depth == 0" > "$tmp/entry.txt"
	traceq --format json "funcgraph_exit where depth == 0" > "$tmp/entry.json"
	check "traceq names the func field of funcgraph_exit rows" \
		'grep -q " func=run+0x[0-9a-f]* depth=0" "$tmp/entry.txt" || { head -3 "$tmp/entry.txt"; false; }'
	check "--format json has the address and its name" \
		'grep -q "\"func\":[0-9]*,.*\"func_sym\":\"run+0x" "$tmp/entry.json" || { head -3 "$tmp/entry.json"; false; }'
fi

kill "$collector_pid"; wait "$collector_pid"; collector_pid=
if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	exit 1
fi
echo "PASS: function tracing end to end"
