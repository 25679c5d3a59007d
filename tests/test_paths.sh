#!/bin/bash
# Shipping paths: TLS (no kernel TLS here: OpenSSL encrypts the pages
# read into the spool) and --insecure-plain (plain TCP on loopback, full
# pages spliced from trace_pipe_raw into the socket) must store the same
# events.
#
# The comparison: two collectors (one TLS, one plain) and two agents, each
# with its own tracefs instance, trace at the same time. The kernel writes
# every event into each instance that enables it, so both agents see the
# same kernel events; a workload started after both agents are tracing and
# finished before either stops forks, execs and exits a marker program
# N times. Its events (found by the workload's pid and the marker's name)
# are compared as text without the timestamp (each instance reads the
# clock itself) and must be identical sets, N of each kind.
#
# Also asserts: the TLS agent says once that kernel TLS is unavailable and
# still delivers; the plain agent spliced pages; mismatched ends
# (plain agent and TLS collector, and the reverse) are refused with a
# clear reason; --insecure-plain refuses non-loopback addresses; no
# tracefs instance is left.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
N=800

tc_need_tracefs
tc_lock
tmp=$(mktemp -d /tmp/tc-paths.XXXXXX)
pids=()
failed=0
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	if [ -n "${TC_KEEP_TMP:-}" ] && [ "$failed" != 0 ]; then
		echo "kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

tc_certs
tls_args=(--cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt")

# start_collector NAME [ARGS...]: sets listen_NAME and query_NAME.
start_collector() {
	local name=$1; shift
	"$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 \
		--query tcp://127.0.0.1:0 --db "$tmp/$name.db" \
		--ready-file "$tmp/$name.ready" "$@" 2> "$tmp/$name.log" &
	pids+=($!)
	for _ in $(seq 100); do
		[ -s "$tmp/$name.ready" ] && break
		sleep 0.1
	done
	[ -s "$tmp/$name.ready" ] || { cat "$tmp/$name.log"; echo "FAIL: collector $name"; exit 1; }
	eval "listen_$name=\$(sed -n 's/^listen=//p' \"\$tmp/\$name.ready\")"
	eval "query_$name=\$(sed -n 's/^query=//p' \"\$tmp/\$name.ready\")"
}
start_collector tls --cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
	--ca "$tmp/pki/ca.crt"
start_collector plain --insecure-plain

events=(-e sched:sched_process_fork -e sched:sched_process_exec -e sched:sched_process_exit)
inst_t="tc-paths-$$-t" inst_p="tc-paths-$$-p"
"$top_builddir/traceagent" --connect "$listen_tls" "${tls_args[@]}" "${events[@]}" \
	--duration 120 --no-user --instance "$inst_t" --spool-disk-mb 0 \
	> "$tmp/agent_t.out" 2> "$tmp/agent_t.err" &
agent_t=$!
# The plain agent on 4 KiB pages: the workload fills many of them, so full
# pages are spliced for sure (it would fill only about one of the TLS
# agent's default 64 KiB pages per CPU). A kernel that refuses a new
# sub-buffer size still runs --subbuf-kb 4 where its pages are 4 KiB
# already; elsewhere the splice count is not checked.
subbuf_p=(--subbuf-kb 4)
if ! tc_can_subbuf && [ "$(getconf PAGESIZE)" != 4096 ]; then
	tc_skip_part "full pages spliced on 4 KiB pages" "$tc_why"
	subbuf_p=()
fi
"$top_builddir/traceagent" --connect "$listen_plain" --insecure-plain "${events[@]}" \
	--duration 120 --no-user --instance "$inst_p" --spool-disk-mb 0 "${subbuf_p[@]}" \
	> "$tmp/agent_p.out" 2> "$tmp/agent_p.err" &
agent_p=$!
# An agent switches its instance on only once its events and readers are
# set up. (Bounded wait: 30 s, for loaded machines.)
tracing_on() { cat "$tracing/instances/$1/tracing_on" 2>/dev/null || echo none; }
for _ in $(seq 300); do
	[ "$(tracing_on "$inst_t")" = 1 ] && [ "$(tracing_on "$inst_p")" = 1 ] && break
	sleep 0.1
done
check "both agents are tracing (tracing_on: $(tracing_on "$inst_t") $(tracing_on "$inst_p"))" \
	'[ "$(tracing_on "$inst_t")" = 1 ] && [ "$(tracing_on "$inst_p")" = 1 ] ||
	 { cat "$tmp/agent_t.err" "$tmp/agent_p.err" "$tmp/tls.log" "$tmp/plain.log";
	   ps -eLo pid,lwp,stat,wchan:32,etime,args | grep -E "tracecollectd|traceagent" | grep -v grep;
	   false; }'

cp /bin/true "$tmp/tcpathmark"
bash -c 'for ((i = 0; i < '"$N"'; i++)); do "$0"; done' "$tmp/tcpathmark" &
wl=$!
wait "$wl"
kill -INT "$agent_t" "$agent_p"
wait "$agent_t"; rc_t=$?
wait "$agent_p"; rc_p=$?
cat "$tmp/agent_t.out" "$tmp/agent_p.out"
check "TLS agent exits 0" '[ "$rc_t" = 0 ] || { cat "$tmp/agent_t.err"; false; }'
check "plain agent exits 0" '[ "$rc_p" = 0 ] || { cat "$tmp/agent_p.err"; false; }'
if tc_can_ktls; then
	check "TLS agent says kernel TLS is on" 'grep -q "kernel TLS is on" "$tmp/agent_t.err"'
else
	tc_skip_part "pages spliced into kernel TLS" "$tc_why"
	check "TLS agent says once that kernel TLS is not available" \
		'[ "$(grep -c "kernel TLS is not available (no CONFIG_TLS / tls module): OpenSSL encrypts in user space" "$tmp/agent_t.err")" = 1 ]'
fi
spliced=$(sed -n 's/.*cpu[0-9]*:.* splice=\([0-9]*\).*/\1/p' "$tmp/agent_p.out" |
	awk '{ s += $1 } END { print s + 0 }')
[ "${#subbuf_p[@]}" = 0 ] ||
	check "plain agent spliced pages into the socket ($spliced)" '[ "${spliced:-0}" -gt 0 ]'
for a in t p; do
	lost=$(sed -n 's/.*total:.* overrun=\([0-9]*\) dropped=\([0-9]*\).*/\1 \2/p' "$tmp/agent_$a.out" |
		awk '{ print $1 + $2 }')
	check "agent $a: the kernel lost nothing (${lost:-?})" '[ "${lost:-1}" = 0 ]'
	check "agent $a: its DONE covers everything it shipped" 'tc_done_covers "$tmp/agent_$a.out"'
done

# The workload's events, without the timestamp column, and without the
# command name in front of the pid: that comes from the kernel's
# saved_cmdlines as each agent read it, at its own moment.
workload_events() {
	"$top_builddir/traceq/traceq" --server "$1" --sync -t 120000 "sched_process_fork where parent_pid == $wl"
	"$top_builddir/traceq/traceq" --server "$1" --sync -t 120000 "sched_process_exec where old_pid != 0" |
		grep "filename=$tmp/tcpathmark "
	"$top_builddir/traceq/traceq" --server "$1" --sync -t 120000 "sched_process_exit where comm == \"tcpathmark\""
}
strip_ts() { sed -E 's/^ *.*-([0-9]+) +\[/\1 [/; s/ [0-9]+\.[0-9]{6}: / /' | sort; }
workload_events "$query_tls" | strip_ts > "$tmp/ev_tls.txt"
workload_events "$query_plain" | strip_ts > "$tmp/ev_plain.txt"
for path in tls plain; do
	for kind in fork exec exit; do
		n=$(grep -c "sched_process_$kind:" "$tmp/ev_$path.txt")
		check "$path path stored $N ${kind}s ($n)" '[ "$n" = "$N" ]'
	done
done
check "TLS and plain paths stored identical workload events" \
	'cmp -s "$tmp/ev_tls.txt" "$tmp/ev_plain.txt" || { diff "$tmp/ev_tls.txt" "$tmp/ev_plain.txt" | head -40; false; }'

# Both ends must opt in.
"$top_builddir/traceagent" --connect "$listen_tls" --insecure-plain -e sched:sched_process_exec \
	--duration 1 --no-user --instance "tc-paths-$$-x" > /dev/null 2> "$tmp/x.err"; rc=$?
check "plain agent to a TLS collector: exit 1, says why" \
	'[ "$rc" = 1 ] && grep -q "insecure-plain needs it on both ends" "$tmp/x.err" || { cat "$tmp/x.err"; false; }'
"$top_builddir/traceagent" --connect "$listen_plain" "${tls_args[@]}" -e sched:sched_process_exec \
	--duration 1 --no-user --instance "tc-paths-$$-y" > /dev/null 2> "$tmp/y.err"; rc=$?
check "TLS agent to a plain collector: exit 1, says why" \
	'[ "$rc" = 1 ] && grep -q "insecure-plain" "$tmp/y.err" || { cat "$tmp/y.err"; false; }'
check "plain collector logs the TLS agent" 'grep -q "agent speaks TLS" "$tmp/plain.log"'
"$top_builddir/traceagent" --connect 192.0.2.1:7000 --insecure-plain --duration 1 \
	--no-user --instance "tc-paths-$$-z" > /dev/null 2> "$tmp/z.err"; rc=$?
check "plain agent refuses a non-loopback collector" \
	'[ "$rc" = 1 ] && grep -q "not a loopback" "$tmp/z.err" || { cat "$tmp/z.err"; false; }'
"$top_builddir/tracecollectd" --foreground --insecure-plain --listen 0.0.0.0:0 \
	--query tcp://127.0.0.1:0 --db "$tmp/z.db" 2> "$tmp/zc.err"; rc=$?
check "plain collector refuses a non-loopback --listen" \
	'[ "$rc" != 0 ] && grep -q "not a loopback" "$tmp/zc.err" || { cat "$tmp/zc.err"; false; }'

check "no tracefs instance left behind" \
	'! ls "$tracing/instances" | grep -q "^tc-paths-$$-"'

if [ "$failed" != 0 ]; then
	echo "--- tls collector"; cat "$tmp/tls.log"
	echo "--- plain collector"; cat "$tmp/plain.log"
	echo "--- agents"; cat "$tmp/agent_t.err" "$tmp/agent_p.err"
	exit 1
fi
echo "PASS: TLS and plain shipping paths"
