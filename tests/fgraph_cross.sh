#!/bin/sh
# tests/fgraph_cross.sh - the function graph tracer on aarch64: cross-build
# libtracecollect's sources with arch/aarch64/mcount.S and
# tests/fgraph_prog.c (-pg) with aarch64-linux-gnu-gcc, then let
# tests/test_fgraph run the program under qemu-user and compare its call
# graph, call by call, as it does for x86_64. Skips (exit 77) saying why
# when the cross toolchain or qemu is missing (Debian gcc-aarch64-linux-gnu
# libc6-dev-arm64-cross qemu-user; ./setup installs them).
set -eu
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
build=${top_builddir:-.}
CC=${AARCH64_CC:-aarch64-linux-gnu-gcc}
QEMU=${QEMU_AARCH64:-qemu-aarch64}
if ! command -v "$CC" >/dev/null || ! command -v "$QEMU" >/dev/null; then
	echo "SKIP: $CC or $QEMU not installed (apt-get install" \
	     "gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
	exit 77
fi
# Tests that start the daemons or load both CPUs take this lock and run
# one at a time: test_e2e needs idle CPUs (its prev_pid == 0 switches) and
# the instance checks must not see another test's agents.
exec 9> /tmp/tracecollect-tracefs-tests.lock && flock 9
out=$build/tests/aarch64
mkdir -p "$out"
: > "$out/config.h"
objs=""
for f in common/tracecollect.c common/ring.c common/ring_reader.c \
	 common/ring_clock.c common/page.c lib/fgraph.c lib/fgraph_config.c \
	 arch/aarch64/mcount.S; do
	o=$out/$(basename "$f").o
	"$CC" -O2 -g -std=gnu11 -D_GNU_SOURCE -I"$out" -I"$src" -c "$src/$f" -o "$o"
	objs="$objs $o"
done
"$CC" -O2 -g -D_GNU_SOURCE -pg -I"$out" -c "$src/tests/fgraph_prog.c" \
	-o "$out/fgraph_prog.o"
# shellcheck disable=SC2086
"$CC" -rdynamic -o "$out/fgraph_prog" "$out/fgraph_prog.o" $objs \
	-pthread -latomic
FGRAPH_QEMU=$(command -v "$QEMU") FGRAPH_AARCH64_PROG=$out/fgraph_prog \
QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu} CK_RUN_CASE=aarch64 \
	exec "$build/tests/test_fgraph"
