#!/bin/bash
# The integration tests whose answers depend on what the kernel lets
# tracefs do, run once more on a kernel that refuses every optional
# capability (tests/refuse_shim.so; issue 29): each must pass on its skip
# paths, saying what it skipped. Not about a refused agent certificate:
# that is test_agent_refused.sh.
#
# TC_KERNEL_REFUSES=RULES replaces the refusals (tests/refuse_shim.c's
# syntax), e.g. one capability at a time; TC_REFUSED_TESTS the tests.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
[ -f "$top_builddir/tests/refuse_shim.so" ] ||
	{ echo "FAIL: tests/refuse_shim.so not built (make check builds it)"; exit 1; }
rules=${TC_KERNEL_REFUSES:-buffer_subbuf_size_kb=EPERM,trace_clock:x86-tsc=EINVAL,mmap=EPERM,ktls=ENOENT,record-tgid=ENOENT,current_tracer:function*=EPERM}
tc_refuse_env "$rules"
echo "TC_REFUSE=$TC_REFUSE"
failed=0
# test_agent: the check binary's reader tests (mmap)
for t in ${TC_REFUSED_TESTS:-test_paths test_e2e test_ftrace test_knobs test_agent}; do
	log=$(mktemp "/tmp/tc-refused-$t.XXXXXX")
	if [ -f "$top_srcdir/tests/$t.sh" ]; then
		bash "$top_srcdir/tests/$t.sh" > "$log" 2>&1; rc=$?
	else
		"$top_builddir/tests/$t" > "$log" 2>&1; rc=$?
	fi
	grep "^SKIP" "$log" | sed "s/^/$t: /"
	case $rc in
	0) echo "ok: $t passes under the refusals" ;;
	77) echo "ok: $t skipped whole under the refusals: $(tail -1 "$log")" ;;
	*) cat "$log"; fail "$t under the refusals (exit $rc)" ;;
	esac
	rm -f "$log"
done
[ "$failed" = 0 ] || exit 1
echo "PASS: the tracefs tests on a kernel that refuses knobs"
