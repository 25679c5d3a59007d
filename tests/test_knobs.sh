#!/bin/bash
# The agent's answer to a kernel that refuses a tracefs knob (issue 29),
# on any kernel: tests/refuse_shim.so plants each refusal in turn, for the
# agent only. By default the agent keeps the kernel's value, says so in
# exactly one line and carries on (here: on to connecting, which fails at
# a closed port, so no collector is needed); a value the user asked for
# fails with the reason, unless the instance has that value already.
# Then mmap of trace_pipe_raw: refused, --read-mode mmap fails saying so;
# where the kernel maps it, an agent reading through the map delivers.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup knobs collector_pid
shim=$top_builddir/tests/refuse_shim.so
[ -f "$shim" ] || { echo "FAIL: $shim not built (make check builds it)"; exit 1; }
page_kb=$(( $(getconf PAGESIZE) / 1024 ))

# agent RULES ARGS...: the agent under TC_REFUSE=RULES (none: "") with
# ARGS, to a closed port; its stderr in $tmp/err, exit status in rc.
agent() {
	local rules=$1
	shift
	env TC_REFUSE="$rules" LD_PRELOAD="$shim" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$top_builddir/traceagent" --insecure-plain --connect 127.0.0.1:1 \
		--no-user --duration 1 --drain-timeout 1 --instance "tc-knobs-$$" \
		"$@" > /dev/null 2> "$tmp/err"
	rc=$?
}
# carried_on PATTERN: exactly one line matches PATTERN, and the agent got
# as far as connecting.
carried_on() {
	[ "$(grep -c -- "$1" "$tmp/err")" = 1 ] && grep -q "cannot connect to 127.0.0.1" "$tmp/err" ||
		{ cat "$tmp/err"; false; }
}
# refused PATTERN: exit 1, and the last line says PATTERN.
refused() { [ "$rc" = 1 ] && tail -1 "$tmp/err" | grep -q -- "$1" || { cat "$tmp/err"; false; }; }

r=buffer_subbuf_size_kb=EPERM
agent "$r"
check "$r, default size: one line, keeps the kernel's, carries on" \
	'carried_on "cannot set buffer_subbuf_size_kb to 64: Operation not permitted; using the kernel.s $page_kb KiB sub-buffers"'
agent "$r" --subbuf-kb $((page_kb * 2))
check "$r, --subbuf-kb $((page_kb * 2)): fails with the reason" \
	'refused "\-\-subbuf-kb $((page_kb * 2)): .*cannot set buffer_subbuf_size_kb to $((page_kb * 2)): Operation not permitted"'
agent "$r" --subbuf-kb "$page_kb"
check "$r, --subbuf-kb $page_kb (the kernel's): runs, says nothing" \
	'carried_on "cannot connect" && ! grep -q subbuf "$tmp/err"'
# This kernel itself: a size other than its own, where it takes one.
if tc_can_subbuf; then
	agent "" --subbuf-kb $((page_kb * 2))
	check "--subbuf-kb $((page_kb * 2)) on this kernel: runs, says nothing" \
		'carried_on "cannot connect" && ! grep -q subbuf "$tmp/err"'
else
	tc_skip_part "sub-buffers of a size the agent sets" "$tc_why"
fi
r=buffer_subbuf_size_kb=ENOENT
agent "$r"
check "$r (Linux < 6.8), default: one line, carries on" \
	'carried_on "this kernel has no buffer_subbuf_size_kb: using its $page_kb KiB sub-buffers"'
agent "$r" --subbuf-kb $((page_kb * 2))
check "$r, --subbuf-kb $((page_kb * 2)): fails with the reason" 'refused "cannot change the sub-buffer size"'

r=trace_clock:x86-tsc=EINVAL
agent "$r" --trace-clock x86-tsc
check "$r, --trace-clock x86-tsc: fails with the reason" \
	'refused "\-\-trace-clock x86-tsc: .*cannot set trace_clock x86-tsc: Invalid argument"'
agent "$r"
check "$r, auto: carries on, on mono" \
	'carried_on "cannot connect" && ! grep -q "warning: .*trace clock" "$tmp/err" &&
	 { ! grep -q " constant_tsc.* nonstop_tsc" /proc/cpuinfo || grep -q "trace clock mono: .*x86-tsc: Invalid argument" "$tmp/err"; }'
r=trace_clock=EPERM
agent "$r" --trace-clock mono
check "$r, --trace-clock mono: fails with the reason" \
	'refused "\-\-trace-clock mono: .*cannot set trace_clock mono: Operation not permitted"'
agent "$r"
check "$r, auto: one line, keeps the kernel's clock, carries on" \
	'carried_on "trace clock [a-z0-9-]* (the kernel.s): .*cannot set trace_clock mono: Operation not permitted"'

r=buffer_size_kb=EPERM
agent "$r" --buffer-kb 3000
check "$r, --buffer-kb 3000: fails with the reason" \
	'refused "cannot set buffer_size_kb to 3000: Operation not permitted"'
for r in options/record-tgid=EPERM buffer_percent=EACCES; do
	agent "$r"
	check "$r: one line, carries on" 'carried_on "cannot set ${r%=*}.*: Permission denied\|cannot set ${r%=*}.*: Operation not permitted"'
done
r=record-tgid=ENOENT
agent "$r"
check "$r: one line, carries on" 'carried_on "no options/record-tgid: tgids only where"'

# mmap of trace_pipe_raw: the reader opens after the connection, so a
# collector (plain, loopback) this time.
"$top_builddir/tracecollectd" --foreground --insecure-plain --listen 127.0.0.1:0 \
	--query tcp://127.0.0.1:0 --db "$tmp/trace.db" --ready-file "$tmp/ready" \
	2> "$tmp/collector.log" &
collector_pid=$!
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
listen=$(sed -n 's/^listen=//p' "$tmp/ready")
# mapped RULES: an agent reading through the map; output in $tmp/m.out
mapped() {
	env TC_REFUSE="$1" LD_PRELOAD="$shim" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$top_builddir/traceagent" --insecure-plain --connect "$listen" \
		--no-user --duration 1 --instance "tc-knobs-$$-m" --read-mode mmap \
		-e sched:sched_switch > "$tmp/m.out" 2> "$tmp/err"
	rc=$?
}
mapped mmap=EPERM
check "mmap=EPERM, --read-mode mmap: fails with the reason" \
	'refused "\-\-read-mode mmap: cannot open the ring buffers of instance .*: Operation not permitted"'
if tc_can_mmap; then
	mapped ""
	check "--read-mode mmap: reads every CPU through the map and delivers" \
		'[ "$rc" = 0 ] && grep -q "reading \([0-9]*\) of \1 CPUs through a mapped ring buffer$" "$tmp/err" &&
		 grep -q "total:.* events=[1-9]" "$tmp/m.out" || { cat "$tmp/err"; false; }'
else
	tc_skip_part "pages read through mmap" "$tc_why"
fi
check "no tracefs instance left behind" '! ls "$tracing/instances" | grep -q "^tc-knobs-$$"'

[ "$failed" = 0 ] || exit 1
echo "PASS: the agent on kernels that refuse knobs"
