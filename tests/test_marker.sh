#!/bin/bash
# trace_marker writes, end to end: the agent takes -e ftrace:print (the
# ftrace system's events have no enable file: the kernel records them
# always; the agent ships their format instead of failing "cannot enable
# event"), the collector stores them, and traceq prints them as trace-cmd
# report does, buf included ("tracing_mark_write: TEXT": print's buf is a
# flexible array, char buf[] of size 0, at the end of the record; its
# newline ends the line, as trace-cmd prints it).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup marker agent collector_pid

tc_certs
tc_start_collector
inst="tc-marker-$$"
tc_start_agent agent -e ftrace:print --instance "$inst" --no-user --flush-ms 20 --duration 30
for _ in $(seq 100); do
	[ "$(cat "$tracing/instances/$inst/tracing_on" 2>/dev/null)" = 1 ] && break
	sleep 0.1
done
check "the agent runs with -e ftrace:print ($(tail -c 300 "$tmp/agent.err"))" \
	'kill -0 "$agent" 2>/dev/null'
for i in 1 2 3; do
	echo "tc-marker $i" > "$tracing/instances/$inst/trace_marker" 2>/dev/null
done
for _ in $(seq 100); do
	[ "$("$top_builddir/traceq/traceq" -s "$query" --count print 2>/dev/null)" = 3 ] && break
	sleep 0.1
done
kill -INT "$agent"
wait "$agent"
agent=
check "the instance is gone" '[ ! -e "$tracing/instances/$inst" ]'
# --sync: the kernel symbols the agent sent before BYE are stored too
check "three print events stored" \
	'[ "$("$top_builddir/traceq/traceq" -s "$query" --sync --count print)" = 3 ]'
"$top_builddir/traceq/traceq" -s "$query" print > "$tmp/text" 2>&1
cat "$tmp/text"
for i in 1 2 3; do
	check "the text of mark $i is printed" \
		'grep -q "print: *tracing_mark_write: tc-marker $i$" "$tmp/text"'
done
exit $failed
