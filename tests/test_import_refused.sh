#!/bin/bash
# traceq --import refusals and their exit status (issue 30, "Small ones"):
# the man page says 2 for a file that cannot be imported or an import the
# collector refused, 1 for a collector or connection that failed. A
# collector with an ipc query socket (root may import there); the fuzz
# corpus's trace.dat seeds as the recordings.
#
# Asserts:
#  - a FIFO is refused at once, exit 2, "not a regular file" (before: open()
#    waited for a writer: traceq hung);
#  - so is a directory;
#  - a --name over the protocol's 255 bytes is refused, exit 2, saying so
#    (before: exit 1, "input too long");
#  - a good seed still imports (exit 0), and nothing else was stored.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (imports over the ipc socket as root)"
tc_setup import_refused collector_pid

seed="$top_srcdir/tests/fuzz/corpus/tracedat/v7zstd.dat"
tc_certs
mkdir -m 755 "$tmp/run"
tc_start_collector --query "ipc://$tmp/run/query.sock"
query="ipc://$tmp/run/query.sock"
tq() { timeout 30 "$top_builddir/traceq/traceq" --server "$query" -t 20000 "$@"; }

mkfifo "$tmp/fifo"
tq --import "$tmp/fifo" --name imp-fifo > "$tmp/out" 2>&1; rc=$?
check "a FIFO is refused at once (exit $rc: $(cat "$tmp/out"))" \
	'[ "$rc" = 2 ] && grep -q "not a regular file" "$tmp/out"'
mkdir "$tmp/dir"
tq --import "$tmp/dir" --name imp-dir > "$tmp/out" 2>&1; rc=$?
check "a directory is refused (exit $rc: $(cat "$tmp/out"))" \
	'[ "$rc" = 2 ] && grep -q "not a regular file" "$tmp/out"'
long=$(printf 'h%.0s' $(seq 300))
tq --import "$seed" --name "$long" > "$tmp/out" 2>&1; rc=$?
check "a --name of 300 bytes is refused (exit $rc: $(cat "$tmp/out"))" \
	'[ "$rc" = 2 ] && grep -q "over the 255 a host name may have" "$tmp/out"'
tq --import "$seed" --name imp-seed > "$tmp/out" 2>&1; rc=$?
check "a seed imports (exit $rc: $(cat "$tmp/out"))" '[ "$rc" = 0 ] && grep -q "^imported" "$tmp/out"'
tq --hosts > "$tmp/hosts" 2>&1
check "only the seed's host was stored" \
	'grep -q "^imp-seed " "$tmp/hosts" && ! grep -q "imp-fifo\|imp-dir\|hhhhhhhh" "$tmp/hosts"'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 20 lines)"; tail -n 20 "$tmp/collector.log"
	exit 1
fi
echo "PASS: refused imports exit 2, a FIFO without waiting"
