#!/bin/bash
# Remote queries (issue 15): the collector's TLS query port (--query-tls)
# takes only clients with a certificate from its CA, knows whose
# certificate it is, and gives each the hosts its cert: scope allows.
# Two agents (hosts tls-web1, tls-db1, real sched_switch events, a
# server-side filter so both have drop counters) fill one store.
#
# Asserts:
#  - alice (scope cert:alice tls-web*) sees only tls-web1 in rows (json),
#    counts, --stats and --drops; bob (cert:bob tls-db1) only tls-db1;
#  - carol, a valid certificate no scope names, sees no host and so no
#    event type (sched_switch is an unknown event to her);
#  - mallory, with a certificate from another CA, is refused: traceq
#    fails and the collector logs "refused: TLS handshake failed";
#  - one CA signs agents' and query clients' certificates: an agent's
#    (OU=agent) is refused on the query port, a query client's (OU=query)
#    on the agent port, each saying why on both sides;
#  - -s tls://HOST:PORT is the same port; without --cert traceq exits 2;
#  - queries are logged as "query from cert alice: ...";
#  - revocation (--crl): dave, revoked before the start
#    (tracecollect-certs revoke client-dave), is refused, and both traceq and
#    the collector say "certificate revoked"; erin answers, is revoked, and
#    after SIGHUP a new connection of hers is refused the same way while
#    alice still answers;
#  - scopes are read again on SIGHUP (config file, then --scope): carol,
#    given tls-db1 by a line added to the -c file, sees only tls-db1 at the
#    next query; a bad scope line keeps the scopes in effect, and says so.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup query-tls agent workload collector_pid

certs="$top_srcdir/contrib/tracecollect-certs"
tc_certs tls-web1 tls-db1
for n in alice bob carol dave erin; do
	"$certs" -d "$tmp/pki" client "$n" > /dev/null ||
		{ echo "FAIL: certificate helper: client $n"; exit 1; }
done
"$certs" -d "$tmp/other" ca > /dev/null && "$certs" -d "$tmp/other" client mallory > /dev/null ||
	{ echo "FAIL: certificate helper: another CA"; exit 1; }

tc_certs_run revoke client-dave > "$tmp/revoke-dave.out" 2>&1 ||
	{ cat "$tmp/revoke-dave.out"; echo "FAIL: tracecollect-certs revoke client-dave"; exit 1; }
echo "# scope lines here are read again on SIGHUP" > "$tmp/collector.conf"
tc_start_collector -C "$tmp/collector.conf" --crl "$tmp/pki/crl.pem" \
	--query-tls 127.0.0.1:0 --pushdown no \
	--filter 'sched:sched_switch prev_comm != "sleep"' \
	--scope 'cert:alice tls-web*' --scope 'cert:bob tls-db1'
qtls=$(sed -n 's/^query_tls=//p' "$tmp/ready")
check "the collector says where its TLS query port is ($qtls)" '[ -n "$qtls" ]'

tc_host_agents "tc-qtls-$$" tls-web1 tls-db1

web=$(traceq --count -H tls-web1 sched_switch)
db=$(traceq --count -H tls-db1 sched_switch)
check "the local endpoint sees both hosts (web1 $web, db1 $db)" \
	'[ "$web" -gt 0 ] && [ "$db" -gt 0 ]'

# as NAME ARGS...: traceq over the TLS port with NAME's certificate (from DIR $pki)
pki="$tmp/pki"
as() {
	local n=$1
	shift
	"$top_builddir/traceq/traceq" -s "$qtls" -t 30000 --cert "$pki/client-$n.crt" \
		--key "$pki/client-$n.key" --ca "$tmp/pki/ca.crt" "$@"
}

sees() {
	local who=$1 host=$2 want=$3 n
	n=$(as "$who" --count sched_switch)
	check "$who counts only $host's events ($n, want $want)" '[ "$n" = "$want" ]'
	as "$who" -f json -n 500 sched_switch > "$tmp/rows" 2> "$tmp/rows.err"
	check "$who's rows are all $host's ($(wc -l < "$tmp/rows") rows)" \
		'[ -s "$tmp/rows" ] && ! grep -v "\"host\":\"$host\"" "$tmp/rows"'
	as "$who" --stats > "$tmp/stats" 2>&1
	check "$who's --stats are all $host's" \
		'[ -s "$tmp/stats" ] && ! grep -v "^host=$host " "$tmp/stats"'
	as "$who" --drops > "$tmp/drops" 2>&1
	check "$who's --drops are all $host's" \
		'[ -s "$tmp/drops" ] && ! grep -v "^host=$host " "$tmp/drops"'
}
sees alice tls-web1 "$web"
sees bob tls-db1 "$db"
# no host: no event type either (issue 30), so sched_switch is unknown to her
n=$(as carol --count sched_switch 2> "$tmp/carol.err"); rc=$?
check "carol, whom no scope names, sees no host (count '$n', exit $rc)" \
	'[ "$rc" = 2 ] && [ -z "$n" ] && grep -q "unknown event" "$tmp/carol.err" &&
	 [ -z "$(as carol --stats)" ] && ! as carol --events | grep -q sched_switch'
n=$("$top_builddir/traceq/traceq" -s "tls://$qtls" -t 30000 --cert "$pki/client-alice.crt" \
	--key "$pki/client-alice.key" --ca "$tmp/pki/ca.crt" --count sched_switch)
check "-s tls://HOST:PORT is the TLS port too ($n)" '[ "$n" = "$web" ]'

pki="$tmp/other"
as mallory --count sched_switch > "$tmp/mallory.out" 2> "$tmp/mallory.err"; rc=$?
check "a certificate from another CA gets nothing (exit $rc: $(head -c 300 "$tmp/mallory.err"))" \
	'[ "$rc" != 0 ] && [ ! -s "$tmp/mallory.out" ] &&
	 grep -q "refused this client.s certificate (--cert):.*unknown ca" "$tmp/mallory.err"'
for _ in $(seq 50); do grep -q "refused: TLS handshake failed" "$tmp/collector.log" && break; sleep 0.1; done
check "the collector logs the refusal and why" \
	'grep -q "query client .* refused: TLS handshake failed: .*certificate verify failed" \
	 "$tmp/collector.log"'
# one CA signs both kinds: an agent's certificate (OU=agent) cannot query,
# a query client's (OU=query) cannot send data
"$top_builddir/traceq/traceq" -s "$qtls" -t 30000 --cert "$tmp/pki/agent-tls-web1.crt" \
	--key "$tmp/pki/agent-tls-web1.key" --ca "$tmp/pki/ca.crt" --count sched_switch \
	> "$tmp/asagent.out" 2> "$tmp/asagent.err"; rc=$?
check "an agent's certificate gets no answer on the query port (exit $rc: $(head -c 300 "$tmp/asagent.err"))" \
	'[ "$rc" != 0 ] && [ ! -s "$tmp/asagent.out" ] && grep -q "made for an agent" "$tmp/asagent.err"'
check "... and the collector logs why" \
	'grep -q "query client .* refused: certificate tls-web1 was made for an agent" "$tmp/collector.log"'
tc_run_agent agent-alice --cert "$tmp/pki/client-alice.crt" --key "$tmp/pki/client-alice.key" \
	-e sched:sched_switch --duration 1 --name alice --instance "tc-qtls-$$" \
	--spool-dir "$tmp/spool"; rc=$?
check "a query client's certificate cannot send data (agent exit $rc: $(tail -c 300 "$tmp/agent-alice.err"))" \
	'[ "$rc" != 0 ] && grep -q "made for a query client" "$tmp/agent-alice.err"'
check "... and the collector logs why" \
	'grep -q "refused agent: certificate alice was made for a query client" "$tmp/collector.log"'
check "nothing was stored as alice" '[ "$(traceq --count -H alice sched_switch 2>/dev/null || echo 0)" = 0 ]'
"$top_builddir/traceq/traceq" -s "$qtls" --count sched_switch > /dev/null 2> "$tmp/nocert.err"; rc=$?
check "without --cert traceq exits 2 saying why (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q -- "--cert" "$tmp/nocert.err"'
check "queries are logged with the certificate" \
	'grep -q "query from cert alice: count .sched_switch.: $web counted (scoped)" \
	 "$tmp/collector.log" && grep -q "query from cert carol: .*(scope: no host)" \
	 "$tmp/collector.log"'

# Revocation on the query port.
pki="$tmp/pki/revoked"
as dave --count sched_switch > "$tmp/dave.out" 2> "$tmp/dave.err"; rc=$?
check "dave's revoked certificate gets nothing (exit $rc: $(head -c 300 "$tmp/dave.err"))" \
	'[ "$rc" = 1 ] && [ ! -s "$tmp/dave.out" ] &&
	 grep -q "refused this client.s certificate (--cert):.*certificate revoked" "$tmp/dave.err"'
for _ in $(seq 50); do grep -q "refused: .*certificate revoked" "$tmp/collector.log" && break; sleep 0.1; done
check "the collector logs it as revoked" \
	'grep -q "query client .* refused: TLS handshake failed: .*certificate revoked" "$tmp/collector.log"'
pki="$tmp/pki"
# (no scope names her: no host, no event type; --events answers nothing)
n=$(as erin --events 2> "$tmp/erin.err"); rc=$?
check "erin, not revoked yet, is answered (exit $rc, $(wc -l <<< "$n") lines)" \
	'[ "$rc" = 0 ] && ! grep -q sched_switch <<< "$n"'

# hup PATTERN: SIGHUP the collector and wait until the log has one more line
# matching PATTERN (the reload's), so the next query sees what it loaded
hup() {
	local before
	before=$(grep -c "$1" "$tmp/collector.log")
	kill -HUP "$collector_pid"
	for _ in $(seq 100); do
		[ "$(grep -c "$1" "$tmp/collector.log")" -gt "$before" ] && return 0
		sleep 0.1
	done
	return 1
}
tc_certs_run revoke client-erin > "$tmp/revoke-erin.out" 2>&1
check "tracecollect-certs revoke client-erin revokes her query certificate" \
	'[ -f "$tmp/pki/revoked/client-erin.crt" ] && [ ! -f "$tmp/pki/client-erin.crt" ] ||
	 { cat "$tmp/revoke-erin.out"; false; }'
tc_certs_run revoke client-erin > "$tmp/revoke-again.out" 2>&1; rc=$?
check "revoking her again says she is revoked already (exit $rc)" \
	'[ "$rc" = 1 ] && grep -q "client-erin.crt is revoked already" "$tmp/revoke-again.out"'
tc_certs_run revoke bob > "$tmp/revoke-bob.out" 2>&1; rc=$?
check "revoke bob (no agent-bob.crt) names revoke client-bob instead (exit $rc)" \
	'[ "$rc" = 1 ] && grep -q "revoke client-bob" "$tmp/revoke-bob.out" &&
	 [ -f "$tmp/pki/client-bob.crt" ]'
check "SIGHUP reloads the CRL" 'hup "reload: certificate, key, CA and CRL reloaded"'
revoked0=$(grep -c "query client .* refused: .*certificate revoked" "$tmp/collector.log")
pki="$tmp/pki/revoked"
as erin --count sched_switch > "$tmp/erin.out" 2> "$tmp/erin.err"; rc=$?
check "after SIGHUP erin is refused (exit $rc: $(head -c 300 "$tmp/erin.err"))" \
	'[ "$rc" = 1 ] && [ ! -s "$tmp/erin.out" ] &&
	 grep -q "refused this client.s certificate (--cert):.*certificate revoked" "$tmp/erin.err"'
for _ in $(seq 50); do
	[ "$(grep -c "query client .* refused: .*certificate revoked" "$tmp/collector.log")" -gt "$revoked0" ] && break
	sleep 0.1
done
check "... and the collector logs her refusal as revoked" \
	'[ "$(grep -c "query client .* refused: .*certificate revoked" "$tmp/collector.log")" -gt "$revoked0" ]'
pki="$tmp/pki"
n=$(as alice --count sched_switch)
check "alice, not revoked, still answered after the reload ($n)" '[ "$n" = "$web" ]'

# Scopes read again on SIGHUP.
echo "scope = cert:carol tls-db1" >> "$tmp/collector.conf"
check "SIGHUP reads the scope lines again" 'hup "reload: .* scope line(s)"'
n=$(as carol --count sched_switch)
check "carol, given tls-db1 in the config file, now counts only its events ($n, want $db)" \
	'[ "$n" = "$db" ]'
as carol --stats > "$tmp/stats" 2>&1
check "... and her --stats are tls-db1's" '[ -s "$tmp/stats" ] && ! grep -v "^host=tls-db1 " "$tmp/stats"'
n=$(as alice --count sched_switch)
check "alice keeps her --scope from the command line ($n)" '[ "$n" = "$web" ]'
echo "scope = cert:carol" >> "$tmp/collector.conf"
check "a bad scope line is logged on SIGHUP" 'hup "reload: .*keeping the current .*scopes"'
n=$(as carol --count sched_switch)
check "... and the scopes in effect stay ($n, want $db)" '[ "$n" = "$db" ]'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 40 lines)"; tail -n 40 "$tmp/collector.log"
	exit 1
fi
echo "PASS: the TLS query port: client certificates from the CA only, each sees its scope"
