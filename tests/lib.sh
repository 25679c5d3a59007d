# tests/lib.sh - what the daemon tests share; sourced right after `set -u`:
#   . "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
# then tc_need_tracefs (root and a writable tracefs, else skip saying why)
# and tc_lock where the test starts.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
tracing=/sys/kernel/tracing

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; failed=1; }
check() { if eval "$2"; then echo "ok: $1"; else fail "$1"; fi; }

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
