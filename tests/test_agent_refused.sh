#!/bin/bash
# An agent the collector refuses says why when it can know (issue 17), not
# just "collector closed the connection":
#  - its own certificate expired, or not yet valid: said before connecting
#    (the collector sees no connection from it), with the date;
#  - the collector's TLS alert decoded: a certificate of another CA ("the
#    collector refused our certificate: unknown CA"), one its CRL revokes
#    ("...: certificate revoked"), every time (five tries each).
# The expired and future certificates are signed by the test's CA with
# python3's cryptography (the certificate helper makes only current ones).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
python3 -c 'import cryptography' 2>/dev/null || skip "needs python3-cryptography"
tc_lock
tc_setup agent_refused agent collector_pid

tc_certs gone
{ "$top_srcdir/contrib/tracecollect-certs" -d "$tmp/rogue" ca &&
	"$top_srcdir/contrib/tracecollect-certs" -d "$tmp/rogue" agent rogue; } >/dev/null ||
	{ echo "FAIL: certificate helper (rogue)"; exit 1; }
tc_certs_run revoke gone > "$tmp/revoke.out" 2>&1 ||
	{ cat "$tmp/revoke.out"; echo "FAIL: tracecollect-certs revoke"; exit 1; }

# dated NAME DAYS_FROM DAYS_TO: $tmp/NAME.crt/.key for CN tc-agent, signed by
# the test CA, valid from today+DAYS_FROM to today+DAYS_TO
dated() {
	python3 - "$tmp/pki" "$tmp/$1" "$2" "$3" <<'EOF'
import datetime, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID
pki, out, a, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ca_key = serialization.load_pem_private_key(open(pki + "/ca.key", "rb").read(), None)
ca = x509.load_pem_x509_certificate(open(pki + "/ca.crt", "rb").read())
key = ec.generate_private_key(ec.SECP256R1())
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder()
	.subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tc-agent")]))
	.issuer_name(ca.subject).public_key(key.public_key())
	.serial_number(x509.random_serial_number())
	.not_valid_before(now + datetime.timedelta(days=a))
	.not_valid_after(now + datetime.timedelta(days=b))
	.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)
	.sign(ca_key, hashes.SHA256()))
open(out + ".crt", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(out + ".key", "wb").write(key.private_bytes(serialization.Encoding.PEM,
	serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
EOF
}
dated expired -30 -1 && dated future 2 30 || { echo "FAIL: dated certificates"; exit 1; }

tc_start_collector --crl "$tmp/pki/crl.pem"

# agent NAME CERT: traceagent with CERT.crt/.key for 1 s; stderr in $tmp/NAME.err, exit in rc
agent() {
	tc_run_agent "$1" --cert "$2.crt" --key "$2.key" -e sched:sched_switch --no-user \
		--duration 1 --instance "tc-refused-$$-$1"
	rc=$?
}
# says NAME TEXT: the agent exited 1 saying TEXT
says() {
	local err=$tmp/$1.err want=$2
	check "$1: exit 1 saying '$2' (exit $rc: $(tail -c 400 "$err"))" \
		'[ "$rc" = 1 ] && grep -qF "$want" "$err"'
}
conns() { grep -c "refused agent\|accepted\|connection from" "$tmp/collector.log"; }

before=$(conns)
agent expired "$tmp/expired"
says expired "our certificate $tmp/expired.crt expired on "
agent future "$tmp/future"
says future "our certificate $tmp/future.crt is not valid before "
check "... both said before connecting: the collector saw no connection" '[ "$(conns)" = "$before" ]'

# The collector lets a refused socket linger (server/conn/conn.c), so the alert
# reaches the agent instead of being lost to a reset: each of five tries
# decodes it, none falls back to "most likely refused".
for i in 1 2 3 4 5; do
	agent "rogue$i" "$tmp/rogue/agent-rogue"
	says "rogue$i" "the collector refused our certificate: unknown CA"
	agent "revoked$i" "$tmp/pki/revoked/agent-gone"
	says "revoked$i" "the collector refused our certificate: certificate revoked"
done

exit $failed
