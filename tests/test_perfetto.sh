#!/bin/bash
# traceq --export -f perfetto over real kernel events (issue 33, "Perfetto").
# No Perfetto code runs here: the files are held to the rules of its
# importer (google/perfetto ec5d16b14b74: importers/json/
# json_trace_tokenizer.cc, importers/systrace/systrace_line_tokenizer.cc
# and systrace_line_parser.cc) by tests/perfetto_check.py.
#
# Two agents (hosts pf-a, pf-b) record sched_switch and sched_waking of a
# busy loop into one collector. Asserts:
#  - one host: a valid JSON file (python3 -m json.tool); every line of its
#    systemTraceEvents matches the importer's line pattern; every
#    sched_switch carries prev_comm, prev_pid, prev_prio, prev_state,
#    next_comm, next_pid, next_prio; the CPU slices rebuilt from its lines
#    are the slices of the host's sched_switch rows (traceq -f json); as
#    many sched_switch lines as traceq --count says; the tgid column;
#  - both hosts: a zip archive (unzip -t) of one file per host, each as
#    above, and a perfetto_manifest naming each file once as a machine;
#  - the golden file tests/data/perfetto_golden.json (test_perfetto's) is
#    valid JSON and passes the same checks;
#  - a traced program (tests/fgraph_prog_fentry under agent --exec): one
#    complete event per stored funcgraph_exit, nested on each thread,
#    named run, recurse, leaf; its threads named;
#  - losses (a 16 KiB buffer, the agent held still): the file's markers
#    ('#' lines of the text, global instants) are where traceq's text
#    prints them: the same CPU, words and time of the CPU's next event;
#  - an unwritable PATH fails with exit 1 and leaves nothing.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

command -v python3 >/dev/null || skip "needs python3"
command -v unzip >/dev/null || skip "needs unzip"
check_py="$top_srcdir/tests/perfetto_check.py"
tc_need_tracefs
tc_lock
tc_setup perfetto agent workload collector_pid

check "the golden file is valid JSON" \
	'python3 -m json.tool "$top_srcdir/tests/data/perfetto_golden.json" > /dev/null'
check "the golden file passes the importer's rules" \
	'python3 "$check_py" "$top_srcdir/tests/data/perfetto_golden.json"'

tc_certs pf-a pf-b
tc_start_collector
tc_agent_events="-e sched:sched_switch -e sched:sched_waking" \
	tc_host_agents "tc-perfetto-$$" pf-a pf-b

# ---- one host: a JSON file ----
traceq --export "$tmp/a.json" -f perfetto -H pf-a > "$tmp/export.out" 2> "$tmp/export.err"
rc=$?
check "--export -f perfetto of one host exits 0" '[ "$rc" = 0 ] || { cat "$tmp/export.err"; false; }'
check "it is valid JSON" 'python3 -m json.tool "$tmp/a.json" > /dev/null'
traceq -H pf-a -f json sched:sched_switch > "$tmp/a-switch.jsonl"
check "its lines pass the importer's rules; its CPU slices are the rows'" \
	'python3 "$check_py" "$tmp/a.json" "$tmp/a-switch.jsonl"'
n=$(traceq --count -H pf-a sched:sched_switch)
lines=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["systemTraceEvents"]
print(sum(1 for l in t.split("\n") if ": sched_switch: " in l and not l.startswith("#")))' "$tmp/a.json")
check "a line per sched_switch row ($lines of $n)" '[ "$n" -gt 0 ] && [ "$lines" = "$n" ]'
wk=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["systemTraceEvents"]
print(t.count(": sched_waking: comm="))' "$tmp/a.json")
check "sched_waking lines ($wk)" '[ "$wk" -gt 0 ]'
check "the tgid column" 'grep -qE -- "-[0-9]+ +\\( *[0-9]+\\) \\[" "$tmp/a.json"'

# ---- both hosts: one archive ----
traceq --export "$tmp/fleet.zip" -f perfetto > /dev/null 2> "$tmp/export.err"
rc=$?
check "--export -f perfetto of two hosts exits 0" '[ "$rc" = 0 ] || { cat "$tmp/export.err"; false; }'
check "it is a zip archive" 'unzip -tq "$tmp/fleet.zip" > /dev/null'
check "one file per host and the manifest" \
	'[ "$(unzip -Z1 "$tmp/fleet.zip" | sort | tr "\n" " ")" = "perfetto_manifest.json pf-a.json pf-b.json " ]'
check "each file passes the importer's rules; the manifest names them" \
	'python3 "$check_py" --zip "$tmp/fleet.zip"'

# ---- a program's function-graph calls ----
prog=$top_builddir/tests/fgraph_prog_fentry
if [ ! -x "$prog" ]; then
	tc_skip_part "the program's calls" "$prog not built (x86_64 only)"
else
	tc_run_agent prog --name pf-prog -e sched:sched_switch --instance "tc-perfetto-$$-p" \
		--exec -- "$prog" > /dev/null
	rc=$?
	check "agent --exec of a traced program exits 0" '[ "$rc" = 0 ] || { cat "$tmp/prog.err"; false; }'
	traceq --export "$tmp/prog.json" -f perfetto -H pf-prog 2> "$tmp/export.err"
	rc=$?
	check "--export -f perfetto of the program's host exits 0" \
		'[ "$rc" = 0 ] || { cat "$tmp/export.err"; false; }'
	calls=$(traceq --count -H pf-prog ftrace:funcgraph_exit)
	check "a complete event per call ($calls), nested on each thread" \
		'[ "$calls" -gt 0 ] && python3 "$check_py" --calls "$calls" "$tmp/prog.json"'
	check "the calls are named (run, recurse, leaf)" \
		'(for f in run recurse leaf; do grep -q "\"ph\":\"X\",\"cat\":\"function\",\"name\":\"$f\"" "$tmp/prog.json" || exit 1; done)'
	check "the program's threads are named" 'grep -q "\"name\":\"thread_name\"" "$tmp/prog.json"'
fi

# ---- losses: a tiny buffer, an agent held still (as test_export.sh) ----
tc_lossy_agent agent-l pf-loss "tc-perfetto-$$-l"
traceq --export "$tmp/loss.json" -f perfetto -H pf-loss raw_syscalls 2> "$tmp/export.err"
rc=$?
check "the lossy host exports (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/export.err"; false; }'
traceq --no-host -H pf-loss raw_syscalls > "$tmp/loss.txt"
if grep -q "^CPU:[0-9]* \[" "$tmp/loss.txt"; then
	check "the Perfetto file has traceq's losses, at the same places" \
		'python3 "$check_py" --losses "$tmp/loss.txt" "$tmp/loss.json"'
else
	tc_skip_part "losses in the Perfetto file" "the kernel lost nothing this run (traceq prints no loss)"
fi

# ---- failure leaves nothing ----
traceq --export "$tmp/nodir/a.json" -f perfetto -H pf-a > /dev/null 2> "$tmp/export.err"
rc=$?
check "an unwritable PATH exits 1, saying why" \
	'[ "$rc" = 1 ] && grep -q "traceq: --export: " "$tmp/export.err"'
check "and leaves nothing" '[ ! -e "$tmp/nodir" ] && ! ls "$tmp"/a.json.tmp* 2>/dev/null'

exit "$failed"
