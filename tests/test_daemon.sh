#!/bin/bash
# tracecollectd without --foreground: it daemonizes before it starts any
# thread (only the forking thread lives on in the child), with --db and
# --ready-file relative to where it was started.
#
# Asserts: the daemon stores what a simulated agent (bench/loadgen) ships,
# has its threads, and exits on SIGTERM.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_lock
tmp=$(mktemp -d /tmp/tc-daemon.XXXXXX)
pid=
failed=0
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

tc_certs
(cd "$tmp" && "$top_builddir/tracecollectd" --listen 127.0.0.1:0 \
	--query tcp://127.0.0.1:0 --db trace.db --cert pki/server.crt \
	--key pki/server.key --ca pki/ca.crt --ready-file ready --host-map "tc-agent daemon-*")
check "the parent exits 0" '[ $? = 0 ]'
for _ in $(seq 100); do
	[ -s "$tmp/ready" ] && break
	sleep 0.1
done
[ -s "$tmp/ready" ] || { echo "FAIL: no ready file"; exit 1; }
pid=$(sed -n 's/^pid=//p' "$tmp/ready")
listen=$(sed -n 's/^listen=//p' "$tmp/ready")
query=$(sed -n 's/^query=//p' "$tmp/ready")
check "the daemon runs its threads" '[ "$(ls /proc/$pid/task | wc -l)" -gt 1 ]'

timeout 60 "$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
	--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" --data "$top_srcdir/tests/data" \
	--agents 1 --pages 50 --name daemon > "$tmp/loadgen.out" 2>&1
rc=$?
cat "$tmp/loadgen.out"
check "the agent gets a DONE that covers what it shipped" '[ "$rc" = 0 ]'
shipped=$(sed -n 's/.* shipped_events=\([0-9]*\).*/\1/p' "$tmp/loadgen.out")
total=0
for ev in sched:sched_switch sched:sched_wakeup ftrace:print; do
	n=$("$top_builddir/traceq/traceq" --server "$query" --sync -t 120000 --count "$ev") || n=x
	total=$((total + n))
done
check "the store holds the shipped events ($total == $shipped)" '[ "$total" = "$shipped" ]'
check "the database is where --db said" '[ -s "$tmp/trace.db" ]'
check "the receive journal is next to it" '[ -d "$tmp/trace.db.journal" ]'

kill "$pid"
for _ in $(seq 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
check "the daemon exits on SIGTERM" '! kill -0 "$pid" 2>/dev/null'
kill -0 "$pid" 2>/dev/null || pid=
exit $failed
