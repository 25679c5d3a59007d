#!/bin/bash
# Ports a stranger cannot close (issue 30): connections without any
# credential, or idle ones, or one identity's heavy queries, must not keep
# a legitimate client out.
#  1. Agent port (the default caps, --max-handshakes 256 and 8 per source,
#     a handshake timeout the test never reaches): 40 loopback sources
#     127.0.0.2..41 x 8 silent connections fill the handshake pool; a real
#     traceagent from 127.0.0.1 still connects (an older stranger's
#     handshake is given up for it) and exits 0.
# 1b. A first connect the collector resets in the handshake (a proxy does
#     it to the first 2) is tried again with backoff: traceagent exits 0.
#  2. TLS query port: 40 raw TCP connections that never start TLS, from
#     127.0.0.1 like the client; then alice's traceq over TLS answers.
#  3. TLS query port: 40 idle authenticated connections (openssl s_client
#     with bob's certificate, kept open) take all 32 request slots; then
#     alice's traceq answers.
#  4. Fairness: 12 slow --sql (a recursive CTE that runs until the query
#     timeout) from one identity (the tcp endpoint's, over nng), then
#     alice's --hosts over TLS answers while they are all still running.
# Each step prints the time the legitimate client took.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup ports agent collector_pid
tc_certs
for n in alice bob; do
	tc_certs_run client "$n" > /dev/null ||
		{ echo "FAIL: certificate helper: client $n"; exit 1; }
done

bg=()		# background strangers, stopped at exit
bobs=()
cleanup() {
	local p
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${bg[@]}"; do wait "$p" 2>/dev/null; done
	tc_cleanup
}
trap cleanup EXIT

ms() { echo $(( $(date +%s%N) / 1000000 )); }
t_begin=$(ms)
rss() { awk '/^VmRSS/ { print $2 " kB" }' "/proc/$collector_pid/status" 2>/dev/null; }
# wait_count N PATTERN FILE...: until N lines of FILE... match (bounded)
wait_count() {
	local n=$1 pat=$2 got
	shift 2
	for _ in $(seq 300); do
		got=$(cat "$@" 2>/dev/null | grep -c "$pat")
		[ "$got" -ge "$n" ] && return 0
		sleep 0.1
	done
	echo "# only $got of $n lines '$pat'"
	grep -hv "$pat" "$@" | sort | uniq -c | sort -rn | head -5
	return 1
}

tc_start_collector --handshake-timeout 1d \
	--query-tls 127.0.0.1:0 --scope 'cert:alice *' --scope 'cert:bob *'
qtls=$(sed -n 's/^query_tls=//p' "$tmp/ready")

# 1. the agent port
for i in $(seq 2 41); do
	"$top_builddir/bench/loadgen" --connect "$listen" --bind "127.0.0.$i" --idle-sockets 8 \
		> "$tmp/idle-$i.out" 2>&1 &
	bg+=($!)
done
check "40 sources x 8 silent connections fill the handshake pool" \
	'wait_count 1 "(--max-handshakes)" "$tmp/collector.log"'
t0=$(ms)
tc_run_agent agent -e sched:sched_switch --duration 1 --name ports-host --no-user \
	--instance "tc-ports-$$"
rc=$?
echo "# traceagent with the handshake pool full: exit $rc after $(( $(ms) - t0 )) ms (collector RSS $(rss))"
check "a real agent connects and exits 0 while strangers fill the handshake pool" \
	'[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
check "its events are stored" '[ "$(traceq --count -H ports-host sched_switch)" -gt 0 ]'

# 1b. a first connect cut in the handshake is tried again: a proxy in front
# of the collector resets the first 2 connections at once (as a full
# handshake pool gives one up), then forwards
python3 -u "$top_srcdir/tests/tcp_relay.py" "$listen" reset 1 2 > "$tmp/cutter.port" &
bg+=($!)
wait_count 1 . "$tmp/cutter.port"
t0=$(ms)
tc_run_agent retry --connect "127.0.0.1:$(cat "$tmp/cutter.port")" -e sched:sched_switch \
	--duration 1 --name ports-retry --no-user --instance "tc-ports-$$"
rc=$?
echo "# traceagent whose first 2 connects are reset: exit $rc after $(( $(ms) - t0 )) ms"
check "an agent whose first connects are reset tries again and exits 0" \
	'[ "$rc" = 0 ] || { cat "$tmp/retry.err"; false; }'
check "it says it tries again" 'grep -q "trying again in" "$tmp/retry.err"'

# as NAME ARGS...: traceq over the TLS query port with NAME's certificate
as() {
	local n=$1
	shift
	"$top_builddir/traceq/traceq" -s "$qtls" -t 30000 --cert "$tmp/pki/client-$n.crt" \
		--key "$tmp/pki/client-$n.key" --ca "$tmp/pki/ca.crt" "$@"
}

# 2. silent connections on the TLS query port, from the client's own address
"$top_builddir/bench/loadgen" --connect "$qtls" --idle-sockets 40 > "$tmp/qidle.out" 2>&1 &
qidle=$!
bg+=($!)
check "40 silent connections to the TLS query port are open" \
	'wait_count 40 "open$" "$tmp/qidle.out"'
t0=$(ms)
as alice --hosts > "$tmp/hosts2.out" 2> "$tmp/hosts2.err"
rc=$?
echo "# alice's --hosts with 40 silent connections: exit $rc after $(( $(ms) - t0 )) ms (collector RSS $(rss))"
check "alice's --hosts answers while strangers hold TLS handshakes open" \
	'[ "$rc" = 0 ] && grep -q ports-host "$tmp/hosts2.out" || { cat "$tmp/hosts2.err"; false; }'

# 3. idle authenticated connections: bob's, 40 of them, each kept open,
# 4 at a time (more at once from one address would give up each other's
# handshakes: 8 per source), once the strangers of step 2 are gone
kill "$qidle"; wait "$qidle" 2> /dev/null
n0=$(grep -c "certificate bob" "$tmp/collector.log")
mkfifo "$tmp/hold" && exec 8<> "$tmp/hold"	# their input: never a byte, never an end
for i in $(seq 40); do
	openssl s_client -connect "$qtls" -quiet -verify_quiet -cert "$tmp/pki/client-bob.crt" \
		-key "$tmp/pki/client-bob.key" -CAfile "$tmp/pki/ca.crt" <&8 > /dev/null 2>&1 &
	bobs+=($!)
	bg+=($!)
	[ $((i % 4)) = 0 ] && [ "$i" -le 32 ] && wait_count $((n0 + i)) "certificate bob" "$tmp/collector.log"
done
check "bob's connections take all 32 request slots" \
	'wait_count $((n0 + 32)) "certificate bob" "$tmp/collector.log"'
t0=$(ms)
as alice --hosts > "$tmp/hosts3.out" 2> "$tmp/hosts3.err"
rc=$?
echo "# alice's --hosts with 40 idle authenticated connections: exit $rc after $(( $(ms) - t0 )) ms (collector RSS $(rss))"
check "alice's --hosts answers while bob's idle connections fill the port" \
	'[ "$rc" = 0 ] && grep -q ports-host "$tmp/hosts3.out" || { cat "$tmp/hosts3.err"; false; }'

# 4. one identity's heavy queries (the tcp endpoint's): alice's --hosts
# answers while they all still run. First bob's connections go, and alice
# is answered on an idle port.
kill "${bobs[@]}" 2> /dev/null
wait "${bobs[@]}" 2> /dev/null
for _ in $(seq 100); do
	as alice --hosts > /dev/null 2>&1 && break
	sleep 0.1
done
heavy=()
for i in $(seq 6); do
	traceq --sql "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
		SELECT count(*) FROM c" > "$tmp/heavy-$i.out" 2>&1 &
	heavy+=($!)
	bg+=($!)
done
sleep 1		# let them come first
t0=$(ms)
as alice --hosts > "$tmp/hosts4.out" 2> "$tmp/hosts4.err"
rc=$?
echo "# alice's --hosts behind 6 heavy --sql of another identity: exit $rc after $(( $(ms) - t0 )) ms (collector RSS $(rss))"
running=0
for p in "${heavy[@]}"; do kill -0 "$p" 2>/dev/null && running=$((running + 1)); done
check "alice's --hosts answers ($rc) while all 6 heavy --sql still run ($running)" \
	'[ "$rc" = 0 ] && [ "$running" = 6 ] || { cat "$tmp/hosts4.err"; false; }'
kill "${heavy[@]}" 2> /dev/null

echo "# the test took $(( $(ms) - t_begin )) ms"
if [ "$failed" != 0 ]; then
	echo "--- collector log"; tail -40 "$tmp/collector.log"
	exit 1
fi
echo "PASS: ports"
