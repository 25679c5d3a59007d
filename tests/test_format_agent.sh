#!/bin/bash
# An agent with a valid certificate sends event formats whose print fmt
# crashes libtraceevent 1.7's print-argument parser (what
# fuzz_tracedat_write found through traceq/render.c): tests/user_sample
# registers its event with such a print fmt, a real traceagent attached
# to its ring ships the format (MSG_FORMAT, group) to a real
# tracecollectd over mutual TLS, as for any program's event.
#
# Asserts, for each format: the collector keeps running and refuses it
# (common/format_check: "does not declare" / "after an index"), saying
# so in its log once: the connection goes on, so the agent does not
# reconnect and send it again; the FORMAT and the program's events are
# counted in traceq --drops; no row of it is stored, so traceq never renders it; and
# the collector still answers traceq and takes the next agent.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup format-agent collector_pid agent
shm=$(mktemp -d /dev/shm/tc-fmtagent.XXXXXX)
fa_cleanup() {
	rm -rf "$shm"
	tc_cleanup
}
trap fa_cleanup EXIT

tc_certs
tc_start_collector

# the reproducer's shape (__print_flags of a field sched_switch lacks),
# the global flag it leaves for a later REC->, and an index chain
hostile=(
	'"%s", __print_flags(REC->nosuch, "|", { 1, "a" })'
	'"%s %llu", __print_flags(1, "|", { 1, "a" }), REC->nosuch'
	'"%llu", REC->id[0][0]'
)
why=("does not declare" "does not declare" "after an index")
seen() { grep -c "$1" "$tmp/collector.log" 2>/dev/null; }
for i in "${!hostile[@]}"; do
	was=$(seen "${why[$i]}")
	tc_start_agent "agent$i" --user-dir "$shm" --name "hostile$i" -e sched:sched_process_exit \
		--drain-timeout 1
	USER_SAMPLE_PRINT_FMT=${hostile[$i]} TRACECOLLECT_DIR=$shm \
		"$top_builddir/tests/user_sample" 1000 16 > "$tmp/sample$i.out" 2>&1
	rc=$?
	for _ in $(seq 100); do
		[ "$(seen "${why[$i]}")" -gt "$was" ] && break
		sleep 0.1
	done
	kill -INT "$agent" 2>/dev/null; wait "$agent" 2>/dev/null; agent=
	check "format $i: the program ran with an agent attached (rc $rc)" '[ "$rc" = 0 ]'
	check "format $i: the collector is still running" 'kill -0 "$collector_pid"'
	check "format $i: the collector refused it: ${why[$i]} ($(seen "${why[$i]}") log lines)" \
		'[ "$(seen "${why[$i]}")" -gt "$was" ]'
	n=$(traceq --count "myapp:request" 2>&1)
	check "format $i: traceq answers, no row of it stored ($n)" \
		'case $n in 0 | *"unknown event: myapp:request"*) true ;; *) false ;; esac'
	# refused once: the connection went on (no reconnect sending it again),
	# the FORMAT and the program's records are counted in --drops
	nrej=$(grep -c "host hostile$i: format of myapp:request rejected" "$tmp/collector.log")
	check "format $i: refused once, not again by a reconnecting agent ($nrej)" '[ "$nrej" = 1 ]'
	for _ in $(seq 100); do
		traceq --drops > "$tmp/drops$i.txt" 2>&1
		grep -q "^host=hostile$i .*reason=event id with no FORMAT" "$tmp/drops$i.txt" && break
		sleep 0.1
	done
	check "format $i: the refused FORMAT is counted in --drops" \
		'grep -q "^host=hostile$i system=myapp event=request reason=FORMAT refused" "$tmp/drops$i.txt"'
	nev=$(awk -v h="host=hostile$i" '$1 == h && /reason=event id with no FORMAT/ {
		split($NF, kv, "="); s += kv[2] } END { print s + 0 }' "$tmp/drops$i.txt")
	check "format $i: its events are counted as of no FORMAT ($nev)" '[ "$nev" -gt 0 ]'
done

grep -m1 "does not declare" "$tmp/collector.log"

# the next agent, with the program's own format, is taken
tc_start_agent good --user-dir "$shm" --name good -e sched:sched_process_exit
TRACECOLLECT_DIR=$shm "$top_builddir/tests/user_sample" 1000 16 > "$tmp/good.out" 2>&1
rc=$?
for _ in $(seq 100); do
	[ "$(traceq --count "myapp:request" 2>/dev/null)" -gt 0 ] 2>/dev/null && break
	sleep 0.1
done
kill -INT "$agent" 2>/dev/null; wait "$agent" 2>/dev/null; agent=
n=$(traceq --count "myapp:request" 2>&1)
check "a well-formed program's events are stored afterwards ($n, rc $rc)" '[ "$rc" = 0 ] && [ "$n" -gt 0 ]'
check "and render (traceq parses its print fmt)" \
	'traceq --limit 1 "myapp:request" | grep -q "path=/api/items"'
check "the collector is still running" 'kill -0 "$collector_pid"'

if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	for f in "$tmp"/agent*.err; do echo "--- $f"; cat "$f"; done
	exit 1
fi
echo "PASS: hostile print fmts from an agent are refused, the collector stays up"
