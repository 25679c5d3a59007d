#!/bin/bash
# tests/test_freezewatch once more on a kernel that refuses buffer_percent
# 0 (tests/refuse_shim.so): the watch's descriptors would then wake only
# at a fraction of its buffer, so freezewatch must say so and tick
# (freezewatch_tick_ms()), and still report the freeze and its timestamp.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
[ -f "$top_builddir/tests/refuse_shim.so" ] ||
	{ echo "FAIL: tests/refuse_shim.so not built (make check builds it)"; exit 1; }
tc_refuse_env "buffer_percent:0=EINVAL"
log=$(mktemp /tmp/tc-freezewatch-refused.XXXXXX)
"$top_builddir/tests/test_freezewatch" > "$log" 2>&1; rc=$?
cat "$log"
if [ $rc = 0 ] && ! grep -q "refused buffer_percent 0" "$log"; then
	rc=1; echo "FAIL: no log line says the kernel refused buffer_percent 0"
fi
rm -f "$log"
[ $rc = 0 ] && echo "PASS: the freeze watch ticks where buffer_percent 0 is refused"
exit $rc
