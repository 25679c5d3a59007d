#!/bin/bash
# Revocation and certificate reloads (issue 15): tracecollectd --crl, the
# certificates reloaded on SIGHUP, expiry warnings; tracecollect-certs
# revoke.
#
# Asserts: an agent with a certificate from an unknown CA is refused on the
# agent port, and one the CRL revokes; an agent connected before its
# certificate is revoked and the collector's SIGHUP keeps storing after it
# (no reconnect), while a new connection with that certificate is refused
# and one with a certificate not revoked is taken; a collector whose
# certificate and CA expire within 30 days says so at start and on SIGHUP,
# and so does one whose query clients' CA (--query-ca) expires.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup revoke agent collector_pid workload

tc_certs keep gone early
{ "$top_srcdir/contrib/tracecollect-certs" -d "$tmp/rogue" ca &&
	"$top_srcdir/contrib/tracecollect-certs" -d "$tmp/rogue" agent rogue; } >/dev/null ||
	{ echo "FAIL: certificate helper (rogue)"; exit 1; }
tc_certs_run revoke early > "$tmp/revoke-early.out" 2>&1 ||
	{ cat "$tmp/revoke-early.out"; echo "FAIL: tracecollect-certs revoke"; exit 1; }
check "tracecollect-certs revoke moves the files aside and makes crl.pem" \
	'[ -f "$tmp/pki/revoked/agent-early.crt" ] && [ ! -f "$tmp/pki/agent-early.crt" ] &&
	 openssl crl -in "$tmp/pki/crl.pem" -noout -text | grep -q "Serial Number"'

tc_start_collector --crl "$tmp/pki/crl.pem"
echo "collector: agents on $listen, queries on $query"

# agent NAME CERT ARGS...: traceagent with CERT.crt/.key, output in
# $tmp/NAME.*; with BG=1 in the background, agent its pid
agent() {
	local name=$1 cert=$2 run=tc_run_agent
	shift 2
	[ "${BG:-0}" = 1 ] && run=tc_start_agent
	$run "$name" --cert "$cert.crt" --key "$cert.key" -e sched:sched_switch --no-user \
		--instance "tc-revoke-$$-$name" "$@"
}
count() { traceq --count sched_switch --host "$1" 2>/dev/null || echo 0; }

agent rogue "$tmp/rogue/agent-rogue" --duration 1; rc=$?
check "an agent with a certificate of an unknown CA is refused (exit $rc)" '[ "$rc" = 1 ]'
check "... the collector says why" \
	'grep -q "refused agent: TLS handshake failed: .*unable to get local issuer certificate" "$tmp/collector.log"'
agent early "$tmp/pki/revoked/agent-early" --duration 1; rc=$?
check "an agent whose certificate the CRL revokes is refused (exit $rc)" '[ "$rc" = 1 ]'
check "... the collector says why" \
	'grep -q "refused agent: TLS handshake failed: .*certificate revoked" "$tmp/collector.log"'

( while :; do sleep 0.002; done ) &
workload=$!
BG=1 agent gone "$tmp/pki/agent-gone"
for _ in $(seq 300); do
	[ "$(count gone)" -gt 0 ] && break
	kill -0 "$agent" 2>/dev/null || break
	sleep 0.2
done
check "the agent named by its certificate's CN (gone) stores" '[ "$(count gone)" -gt 0 ]'

tc_certs_run revoke gone > "$tmp/revoke-gone.out" 2>&1
reloads=$(grep -c "reload: certificate, key, CA and CRL reloaded" "$tmp/collector.log")
kill -HUP "$collector_pid"
for _ in $(seq 100); do
	[ "$(grep -c "reload: certificate, key, CA and CRL reloaded" "$tmp/collector.log")" -gt "$reloads" ] && break
	sleep 0.1
done
check "SIGHUP reloads the CRL" \
	'[ "$(grep -c "reload: certificate, key, CA and CRL reloaded" "$tmp/collector.log")" -gt "$reloads" ]'
refused0=$(grep -c "certificate revoked" "$tmp/collector.log")
agent gone-again "$tmp/pki/revoked/agent-gone" --duration 1; rc=$?
check "a new connection with the now-revoked certificate is refused (exit $rc)" '[ "$rc" = 1 ]'
check "... as revoked" '[ "$(grep -c "certificate revoked" "$tmp/collector.log")" -gt "$refused0" ]'
agent keep "$tmp/pki/agent-keep" --duration 1; rc=$?
check "a certificate not revoked is still taken after the reload (exit $rc)" \
	'[ "$rc" = 0 ] || { cat "$tmp/keep.err"; false; }'

# the connected agent keeps storing: more rows after the refusal than before
before=$(count gone)
for _ in $(seq 300); do
	[ "$(count gone)" -gt "$before" ] && break
	sleep 0.2
done
after=$(count gone)
check "the agent connected before the reload keeps storing ($before, then $after)" \
	'[ "$after" -gt "$before" ]'
kill -TERM "$agent"; wait "$agent"; rc=$?; agent=
kill "$workload"; wait "$workload" 2>/dev/null; workload=
check "... and ends cleanly (exit $rc), everything delivered, never reconnected" \
	'[ "$rc" = 0 ] && tc_done_covers "$tmp/gone.out" && grep -q " reconnects=0" "$tmp/gone.out" ||
	 { cat "$tmp/gone.out" "$tmp/gone.err"; false; }'
check "... the collector never dropped it" '! grep -q "agent gone disconnected" "$tmp/collector.log"'
kill "$collector_pid"; wait "$collector_pid"; collector_pid=

# A collector whose certificate and CA expire within 30 days warns.
mv "$tmp/collector.log" "$tmp/collector1.log"
"$top_srcdir/contrib/tracecollect-certs" -d "$tmp/short" --days 10 all >/dev/null ||
	{ echo "FAIL: certificate helper (short)"; exit 1; }
cp "$tmp/short/server.crt" "$tmp/short/server.key" "$tmp/short/ca.crt" "$tmp/pki/"
"$top_srcdir/contrib/tracecollect-certs" -d "$tmp/qca" --days 12 ca >/dev/null ||
	{ echo "FAIL: certificate helper (qca)"; exit 1; }
cat "$tmp/short/crl.pem" "$tmp/qca/crl.pem" > "$tmp/crls.pem"
tc_start_collector --crl "$tmp/crls.pem" --query-tls 127.0.0.1:0 --query-ca "$tmp/qca/ca.crt"
warn() { grep -c "TLS: the $1 .* expires in [0-9]* days: renew it" "$tmp/collector.log"; }
check "at start it warns that its certificate expires" '[ "$(warn certificate)" = 1 ]'
check "... and the CA certificate" '[ "$(warn "CA certificate")" -ge 1 ]'
check "... and the query clients' CA certificate, in 11 or 12 days" \
	'grep -q "TLS: the CA certificate .* expires in 1[12] days" "$tmp/collector.log"'
check "... and each CRL once (the agents' CA's and the query clients' CA's)" '[ "$(warn CRL)" = 2 ]'
kill -HUP "$collector_pid"
for _ in $(seq 100); do
	[ "$(warn certificate)" = 2 ] && break
	sleep 0.1
done
check "and again on SIGHUP" '[ "$(warn certificate)" = 2 ]'

ls "$tracing/instances" | grep -q "tc-revoke-$$" && fail "a tracefs instance was left behind"
exit $failed
