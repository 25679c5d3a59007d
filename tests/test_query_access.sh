#!/bin/bash
# Who may query (issue 15): the local query endpoint is an ipc socket
# whose mode and group decide who may ask, each query is logged with the
# asking uid, and plain tcp is taken only on loopback, by name.
#
# Asserts:
#  - an ipc endpoint made under umask 000 without --query-group, the
#    group `tracecollect` missing (or, where the host has it, a group that
#    does not exist): the socket is 0600, never open to all, and
#    `runuser -u nobody -- traceq` is refused; the collector logs why;
#  - with --query-group nogroup the socket is 0660 group nogroup: nobody
#    (in nogroup) can query, daemon (not in it) cannot; the collector logs
#    each query with uid 65534, its kind, its text escaped (no control
#    byte reaches the log) and the rows it returned;
#  - TRACEQ_SERVER names traceq's server; the default endpoint of both
#    programs is ipc:///run/tracecollect/query.sock;
#  - --query tcp://0.0.0.0:0, ws://127.0.0.1:0, tls+tcp://127.0.0.1:0,
#    tcp://192.0.2.1:0 (not loopback) and inproc://x are refused at start
#    with exit status 2 and a reason; tcp://127.0.0.1:0 is taken.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (runuser, socket ownership)"
command -v runuser >/dev/null || skip "needs runuser (util-linux)"
tc_lock
tc_setup query-access collector_pid

tc_certs
tc_traceq_for_all
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"

# as USER traceq ARGS...: traceq run as USER; its stderr in $tmp/USER.err
as() { local u=$1; shift; runuser -u "$u" -- "$tq" -s "ipc://$sock" -t 10000 "$@" 2> "$tmp/$u.err"; }

# --- no --query-group: group tracecollect (where this host has one, a
# group that does not exist instead)
grp=()
getent group tracecollect >/dev/null && grp=(--query-group "tc-no-such-group-$$")
old_umask=$(umask)
umask 000
tc_start_collector --query "ipc://$sock" "${grp[@]}"
umask "$old_umask"
mode=$(stat -c %a "$sock")
check "without the group the socket is root's alone (mode $mode)" '[ "$mode" = 600 ]'
as nobody --stats > /dev/null; rc=$?
check "nobody cannot query over ipc (exit $rc: $(head -c 200 "$tmp/nobody.err"))" \
	'[ "$rc" != 0 ]'
check "the collector says why the socket is root's alone" \
	'grep -q "group [a-z0-9-]* does not exist" "$tmp/collector.log"'
"$tq" -s "ipc://$sock" --stats > /dev/null 2> "$tmp/root.err"; rc=$?
check "root can query over ipc (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/root.err"; false; }'
kill "$collector_pid"; wait "$collector_pid"; collector_pid=

# --- --query-group nogroup: its members may query
umask 000
tc_start_collector --query "ipc://$sock" --query-group nogroup
umask "$old_umask"
mode=$(stat -c %a:%G "$sock")
check "the socket is 0660 group nogroup ($mode)" '[ "$mode" = 660:nogroup ]'
as nobody --stats > /dev/null; rc=$?
check "nobody (in nogroup) can query (exit $rc)" \
	'[ "$rc" = 0 ] || { cat "$tmp/nobody.err"; false; }'
as daemon --stats > /dev/null; rc=$?
check "daemon (not in nogroup) cannot query (exit $rc)" '[ "$rc" != 0 ]'
esc=$(printf '\033[31mX\nforged')
as nobody --count "sched_switch where prev_comm == \"$esc\"" > /dev/null
for _ in $(seq 50); do grep -q "uid 65534.*count" "$tmp/collector.log" && break; sleep 0.1; done
check "the stats query is logged with the asking uid" \
	'grep -q "query from uid 65534 (nobody): stats" "$tmp/collector.log"'
want='prev_comm == "\x1b[31mX\nforged"'
check "the count is logged with its text escaped" \
	'grep "query from uid 65534 (nobody): count " "$tmp/collector.log" | grep -qF "$want"'
check "no control byte reached the log" '! grep -q $'"'"'\x1b'"'"' "$tmp/collector.log"'
check "no forged line in the log" '! grep -q "^forged" "$tmp/collector.log"'
TRACEQ_SERVER="ipc://$sock" "$tq" --stats > /dev/null 2> "$tmp/env.err"; rc=$?
check "TRACEQ_SERVER names the server (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/env.err"; false; }'
kill "$collector_pid"; wait "$collector_pid"; collector_pid=

check "tracecollectd's default endpoint is ipc:///run/tracecollect/query.sock" \
	'"$top_builddir/tracecollectd" --help | grep -q "default ipc:///run/tracecollect/query.sock"'
check "traceq's default server is ipc:///run/tracecollect/query.sock" \
	'"$tq" --help | grep -q "default ipc:///run/tracecollect/query.sock"'

# --- plain tcp only on loopback, by name
# start URL: a collector with --query URL; rc is its exit status, or
# "ran" when it got ready (it is stopped then); its log in $tmp/start.log.
start() {
	rm -f "$tmp/ready2"
	"$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 --query "$1" \
		--db "$tmp/trace.db" --cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
		--ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready2" > /dev/null 2> "$tmp/start.log" &
	collector_pid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/ready2" ] && break
		kill -0 "$collector_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ -s "$tmp/ready2" ]; then
		rc=ran
		kill "$collector_pid"; wait "$collector_pid"
	else
		wait "$collector_pid"; rc=$?
	fi
	collector_pid=
}
for url in tcp://0.0.0.0:0 ws://127.0.0.1:0 tls+tcp://127.0.0.1:0 tcp://192.0.2.1:0 \
	   'tcp://[::]:0' inproc://x; do
	start "$url"
	check "--query $url is refused at start with status 2 (exit $rc: $(head -c 300 "$tmp/start.log"))" \
		'[ "$rc" = 2 ] && grep -q "query" "$tmp/start.log"'
done
start tcp://127.0.0.1:0
check "--query tcp://127.0.0.1:0 is taken ($rc)" '[ "$rc" = ran ] || { cat "$tmp/start.log"; false; }'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 40 lines)"; tail -n 40 "$tmp/collector.log"
	exit 1
fi
echo "PASS: who may query: ipc permissions and group, the asker logged, tcp on loopback only"
