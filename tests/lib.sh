# tests/lib.sh - what the daemon tests share; sourced right after `set -u`:
#   . "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
# then tc_need_tracefs (root and a writable tracefs, else skip saying why)
# and tc_lock where the test starts; with tmp set to the test's own
# directory, tc_certs and tc_start_collector give it certificates and a
# collector, and traceq asks that collector.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
tracing=/sys/kernel/tracing

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; failed=1; }
check() { if eval "$2"; then echo "ok: $1"; else fail "$1"; fi; }

# tc_setup NAME VAR...: a temporary directory $tmp (/tmp/tc-NAME.*),
# failed=0, the variables VAR... empty, and an exit trap that stops the
# processes whose pids they hold by then (in that order; empty ones are
# skipped) and removes $tmp.
tc_setup() {
	local v
	tmp=$(mktemp -d "/tmp/tc-$1.XXXXXX")
	failed=0
	shift
	tc_pid_vars=("$@")
	for v in "$@"; do printf -v "$v" ''; done
	trap tc_cleanup EXIT
}

tc_cleanup() {
	local v
	for v in "${tc_pid_vars[@]}"; do
		[ -n "${!v}" ] && kill "${!v}" 2>/dev/null && wait "${!v}" 2>/dev/null
	done
	rm -rf "$tmp"
}

tc_need_tracefs() {
	[ "$(id -u)" = 0 ] || skip "needs root for tracefs (running as uid $(id -u))"
	[ -d "$tracing/instances" ] || mount -t tracefs nodev "$tracing" 2>/dev/null
	[ -w "$tracing/instances" ] || skip "$tracing/instances is not writable"
}

# Tests that start the daemons or load both CPUs take this lock and run
# one at a time: test_e2e needs idle CPUs (its prev_pid == 0 switches) and
# the instance checks must not see another test's agents.
tc_lock() {
	exec 9> /tmp/tracecollect-tracefs-tests.lock && flock 9
}

# tc_certs: a CA, a server certificate for 127.0.0.1 and an agent
# certificate in $tmp/pki (contrib/tracecollect-certs); exits on failure.
tc_certs() {
	"$top_srcdir/contrib/tracecollect-certs" -d "$tmp/pki" all >/dev/null ||
		{ echo "FAIL: certificate helper"; exit 1; }
}

# tc_start_collector [ARGS...]: tracecollectd on free loopback ports with
# $tmp/pki's server certificate and the database $tmp/trace.db (ARGS come
# last and may override either), its log in $tmp/collector.log; inside
# network namespace $tc_netns when that is set. Waits for its ready file,
# then sets collector_pid, listen and query; exits saying why if it does
# not start.
tc_start_collector() {
	local run=()
	[ -n "${tc_netns:-}" ] && run=(ip netns exec "$tc_netns")
	rm -f "$tmp/ready"
	"${run[@]}" "$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 \
		--query tcp://127.0.0.1:0 --db "$tmp/trace.db" \
		--cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
		--ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready" "$@" \
		2>> "$tmp/collector.log" &
	collector_pid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/ready" ] && break
		kill -0 "$collector_pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$tmp/ready" ] ||
		{ cat "$tmp/collector.log"; echo "FAIL: collector did not start"; exit 1; }
	listen=$(sed -n 's/^listen=//p' "$tmp/ready")
	query=$(sed -n 's/^query=//p' "$tmp/ready")
}

# traceq [ARGS...]: traceq asking the collector tc_start_collector started,
# once it has stored everything it received (--sync, for up to 2 minutes:
# storing runs at idle priority and the host may be busy; it acknowledges pages
# when they are in its receive journal, and stores them behind).
traceq() { "$top_builddir/traceq/traceq" --server "$query" --sync -t 120000 "$@"; }

# tc_done_covers FILE: the agent's total line in FILE says its DONEs cover
# everything it shipped: stored_events == events, or, from a journaling
# collector, journaled_pages == pages.
tc_done_covers() {
	local line
	line=$(grep "total:" "$1") || return 1
	val() { echo "$line" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
	if [ -n "$(val journaled_pages)" ]; then
		[ "$(val journaled_pages)" = "$(val pages)" ] && [ "$(val pages)" -gt 0 ]
	else
		[ "$(val stored_events)" = "$(val events)" ] && [ "$(val events)" -gt 0 ]
	fi
}
