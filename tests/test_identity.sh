#!/bin/bash
# Who the data is from (issue 15): the host name an agent stores under
# must be its certificate's (subject CN or a DNS name), unless the
# collector maps that certificate to host-name globs (--host-map, a
# gateway); peer strings are length-limited and escaped in the log.
#
# Asserts: an agent whose certificate says CN=a may store as a but not as
# b: refused at HELLO with a reason the agent prints and the collector
# logs, nothing stored for b; a certificate's DNS name is as good as its
# CN; a host name holding a newline and an ANSI escape makes one log line,
# escaped, and no raw escape byte reaches the log; a 256 KiB host name is
# refused at HELLO saying which limit, and the log does not hold it; then,
# through an explicit mapping 'gw relay-*,edge-?', the gateway's
# certificate stores as relay-1 and edge-7 (and as a name holding a
# newline, logged escaped) but not as edge-12, and a may not use it.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_lock
tc_setup identity agent collector_pid

tc_certs a gw
# a certificate with a DNS name besides its CN: CN a2, DNS a2 and a2-alias
tc_certs_run agent a2 a2-alias >/dev/null || { echo "FAIL: certificate helper"; exit 1; }
tc_strict_hosts=1

# lg CERT ARGS...: one simulated agent with agent-CERT.crt shipping 3 pages
lg() {
	local cert=$1
	shift
	timeout 120 "$top_builddir/bench/loadgen" --connect "$listen" \
		--cert "$tmp/pki/agent-$cert.crt" --key "$tmp/pki/agent-$cert.key" \
		--ca "$tmp/pki/ca.crt" --data "$top_srcdir/tests/data" --pages 3 "$@"
}
stored_hosts() { traceq --stats | sed -n 's/^host=\([^ ]*\) .*/\1/p' | sort -u | tr '\n' ' '; }

tc_start_collector
echo "collector: agents on $listen, queries on $query"

lg a --host a > "$tmp/a.out" 2>&1; rc=$?
check "CN=a stores as a" '[ "$rc" = 0 ] || { cat "$tmp/a.out"; false; }'

lg a --host b > "$tmp/b.out" 2>&1; rc=$?
check "CN=a claiming host b is refused" '[ "$rc" != 0 ]'
check "the agent is told why" \
	'grep -q "refused: .*host name .b. is not one of certificate a" "$tmp/b.out" || { cat "$tmp/b.out"; false; }'
check "the collector logs why" \
	'grep -q "refused agent: .*host name .b. is not one of certificate a" "$tmp/collector.log"'

lg a2 --host a2-alias > "$tmp/a2.out" 2>&1; rc=$?
check "a certificate's DNS name is a host name it may use" \
	'[ "$rc" = 0 ] || { cat "$tmp/a2.out"; false; }'

forged=$'b\ntracecollectd[1]: info: conn: forged \x1b[31mred\x1b[0m'
lg a --host "$forged" > "$tmp/forged.out" 2>&1
n=$(grep -c "forged" "$tmp/collector.log")
check "a host name with a newline makes one log line ($n)" '[ "$n" = 1 ]'
check "... escaped" \
	'grep -F "b\\ntracecollectd[1]: info: conn: forged \\x1b[31mred\\x1b[0m" "$tmp/collector.log" >/dev/null'
check "no escape byte reaches the log" '! grep -q $'"'"'\x1b'"'"' "$tmp/collector.log"'

head -c 262144 /dev/zero | tr '\0' 'h' > "$tmp/bighost"
size0=$(stat -c %s "$tmp/collector.log")
lg a --host-file "$tmp/bighost" > "$tmp/big.out" 2>&1; rc=$?
size1=$(stat -c %s "$tmp/collector.log")
check "a 256 KiB host name is refused" '[ "$rc" != 0 ]'
check "... at HELLO, saying which limit" \
	'grep -q "refused: .*hello: .host. of 262144 bytes is over the limit of 255 bytes" "$tmp/big.out" || { cat "$tmp/big.out"; false; }'
check "... and it is not logged ($((size1 - size0)) bytes of log)" \
	'[ $((size1 - size0)) -lt 2048 ] && grep -q "over the limit of 255 bytes" "$tmp/collector.log"'

# traceagent: named by its certificate's CN unless --name says otherwise,
# and it prints the collector's refusal
if [ "$(id -u)" = 0 ] && [ -w "$tracing/instances" ]; then
	ta() {	# ta N ARGS...: agent taN with certificate a for 1 s; its exit status
		tc_run_agent "ta$1" --cert "$tmp/pki/agent-a.crt" --key "$tmp/pki/agent-a.key" \
			-e sched:sched_switch --no-user --duration 1 --instance "tc-identity-$$-$1" "${@:2}"
	}
	ta 1; rc=$?
	check "traceagent without --name is its certificate's CN (a)" \
		'[ "$rc" = 0 ] && grep -q "connected to .* as a " "$tmp/ta1.err" || { cat "$tmp/ta1.err"; false; }'
	ta 2 --name b; rc=$?
	check "traceagent --name b with certificate a exits 1 ($rc), printing the refusal" \
		'[ "$rc" = 1 ] && grep -q "collector error: host name .b. is not one of certificate a.s names" "$tmp/ta2.err" ||
		 { cat "$tmp/ta2.err"; false; }'
	ls "$tracing/instances" | grep -q "tc-identity-$$" && fail "a tracefs instance was left behind"
fi

hosts=$(stored_hosts)
check "only a and a2-alias are stored ($hosts)" '[ "$hosts" = "a a2-alias " ]'

# An explicit mapping: the gateway's certificate may name other hosts.
kill "$collector_pid"; wait "$collector_pid"; collector_pid=
tc_start_collector --host-map "gw relay-*,edge-?"
lg gw --host relay-1 > "$tmp/gw1.out" 2>&1; rc1=$?
lg gw --host edge-7 > "$tmp/gw2.out" 2>&1; rc2=$?
lg gw --host gw > "$tmp/gw3.out" 2>&1; rc3=$?
check "the mapping lets gw store as relay-1, edge-7 and itself" \
	'[ "$rc1$rc2$rc3" = 000 ] || { cat "$tmp"/gw[123].out; false; }'
lg gw --host edge-12 > "$tmp/gw4.out" 2>&1; rc=$?
check "... not as edge-12" '[ "$rc" != 0 ] && grep -q "refused: .*edge-12" "$tmp/gw4.out"'
lg a --host relay-2 > "$tmp/gw5.out" 2>&1; rc=$?
check "... and the mapping is gw's alone (a may not be relay-2)" '[ "$rc" != 0 ]'
hosts=$(stored_hosts)
check "stored: a, a2-alias, edge-7, gw, relay-1 ($hosts)" '[ "$hosts" = "a a2-alias edge-7 gw relay-1 " ]'

# an accepted host name with a newline and ANSI escapes: every line that
# names it (connected, done) is one line, escaped
lg gw --host $'relay-x\ntracecollectd[1]: info: forged2 \x1b[31mred' > "$tmp/gw6.out" 2>&1; rc=$?
check "the mapping lets gw store as a name holding a newline" '[ "$rc" = 0 ]'
# the "done" line may come after the agent has exited: wait for both
# lines (bounded), then count on one copy of the log
for _ in $(seq 50); do
	[ "$(grep -c "forged2" "$tmp/collector.log")" -ge 2 ] && break
	sleep 0.1
done
cp "$tmp/collector.log" "$tmp/collector.snap"
n=$(grep -c "forged2" "$tmp/collector.snap")
m=$(grep -cF 'relay-x\ntracecollectd[1]: info: forged2 \x1b[31mred' "$tmp/collector.snap")
check "each of its log lines is one line, escaped ($n lines, $m escaped)" '[ "$n" -ge 2 ] && [ "$m" = "$n" ]'
check "still no escape byte in the log" '! grep -q $'"'"'\x1b'"'"' "$tmp/collector.log"'

exit $failed
