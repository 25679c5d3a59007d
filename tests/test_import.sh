#!/bin/bash
# traceq --import (issue 17, "Import"): a trace-cmd recording stored through
# the agents' ingest path, compared with trace-cmd report on the same file.
#
# Debian's trace-cmd records sched, irq, timer and rcu_utilization events
# (its strings come from the printk formats) of some load in an
# instance of the test's own (3.1.6 needs -d --no-filter on this kernel and
# may leave the instance behind: removed in the trap), three times: v7 with
# its default zstd compression, v7 uncompressed, v6. A collector (ipc query
# socket, group nogroup) takes the imports.
#
# Asserts:
#  - the zstd v7 file imports (exit 0); for a dozen filters `traceq --time
#    raw` prints trace-cmd report's lines (after its "INSTANCE: " prefix):
#    for an event alone, the lines of that event in the unfiltered report;
#    for a filter, `trace-cmd report -F`'s lines as far as it prints them
#    (3.1.6's -F stops early); the same events, times and text, COMM
#    aside (see below);
#  - v7 uncompressed and v6 import, with the same sched_switch lines as the
#    unfiltered report;
#  - the kernel symbols it stores keep the file's kallsyms module column
#    ("[MODULE]"), exactly those lines';
#  - the same file again: "stored already", exit 0, nothing added;
#  - a live host's name (an agent's) is refused (exit 2) without --force,
#    stored beside it with --force;
#  - nobody (through the socket's group, without an import line) may query
#    but not import, with the reason; with `import = user:nobody imp-*` nobody
#    may import under imp-* names only; over the TLS query port a
#    certificate without an import line may not, one with may;
#  - a truncated and a corrupted file are refused (exit 2) naming the
#    offset, and store nothing (no host row of that name).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
command -v runuser >/dev/null || skip "needs runuser (util-linux)"
tc_lock
tc_setup import collector_pid agent
inst="tc_import_$$"
import_cleanup() {
	for i in "$inst" "${inst}_6" "${inst}_n" "${inst}_a" "${inst}_b"; do
		rmdir "$tracing/instances/$i" 2>/dev/null
	done
	tc_cleanup
}
trap import_cleanup EXIT

# record INSTANCE FILE ARGS...: trace-cmd record of sched, irq, timer under load
record() {
	local i=$1 f=$2; shift 2
	trace-cmd record -B "$i" -C mono -d --no-filter -e sched -e irq -e timer -e rcu:rcu_utilization "$@" -o "$f" \
		sh -c 'for i in $(seq 20); do sleep 0.01; ls / > /dev/null; done' \
		> "$tmp/record.log" 2>&1
	rmdir "$tracing/instances/$i" 2>/dev/null
	[ -s "$f" ] || { cat "$tmp/record.log"; false; }
}
record "$inst" "$tmp/v7.dat"
check "trace-cmd recorded a v7 zstd file" 'trace-cmd dump --summary -i "$tmp/v7.dat" 2>&1 | grep -q zstd'
record "${inst}_n" "$tmp/v7n.dat" --compression none
record "${inst}_6" "$tmp/v6.dat" --file-version 6
check "and a v7 uncompressed and a v6 file" \
	'trace-cmd dump --summary -i "$tmp/v6.dat" 2>&1 | grep -q "^[[:space:]]*6[[:space:]]*\[Version\]"'

tc_certs
tc_traceq_for_all
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"
tc_start_collector --query "ipc://$sock" --query-group nogroup
tq_root() { "$tq" -s "ipc://$sock" -t 120000 "$@"; }
as() { local u=$1; shift; runuser -u "$u" -- "$tq" -s "ipc://$sock" -t 120000 "$@"; }

tq_root --import "$tmp/v7.dat" --name imp-v7 > "$tmp/imp.out" 2> "$tmp/imp.err"; rc=$?
check "the zstd v7 file imports (exit $rc: $(cat "$tmp/imp.out" "$tmp/imp.err"))" '[ "$rc" = 0 ]'
# the recording's kallsyms keep their modules (its "[MODULE]" column): the
# kernel symbols stored with one are the file's text lines with one
trace-cmd dump --kallsyms -i "$tmp/v7.dat" 2>/dev/null |
	awk '$2 ~ /^[tTwW]$/ && $1 !~ /^0+$/ && $4 ~ /^\[.*\]$/ {
		print $3, substr($4, 2, length($4) - 2) }' | LC_ALL=C sort -u > "$tmp/kmod.file"
sqlite3 -readonly "$tmp/trace.db" "SELECT s.name || ' ' || s.module FROM symbols AS s
	JOIN programs AS p ON p.id = s.program_id JOIN hosts AS h ON h.id = p.host_id
	WHERE h.name = 'imp-v7' AND p.grp = 0 AND s.module IS NOT NULL" 2>&1 |
	LC_ALL=C sort > "$tmp/kmod.stored"
if [ -s "$tmp/kmod.file" ]; then
	check "the file's kernel symbols keep their modules ($(wc -l < "$tmp/kmod.stored") stored with one, the file's kallsyms has $(wc -l < "$tmp/kmod.file"): $(head -n 2 "$tmp/kmod.stored" | tr '\n' ';'))" \
		'cmp -s "$tmp/kmod.file" "$tmp/kmod.stored"'
else
	check "the file's kallsyms has no module: none stored ($(wc -l < "$tmp/kmod.stored"))" \
		'[ ! -s "$tmp/kmod.stored" ]'
	tc_skip_part "kernel symbols' modules from a recording" "its kallsyms lists none"
fi

# report FILTER FILE: trace-cmd report's event lines, without the instance prefix
report() {
	if [ -n "$1" ]; then trace-cmd report -F "$1" -i "$2"; else trace-cmd report -i "$2"; fi 2>/dev/null |
		grep -v '^cpus=' | sed 's/^[a-z0-9_]*: //'
}
report "" "$tmp/v7.dat" > "$tmp/all.txt"
# Each selection's lines are matched with trace-cmd's by
# tests/text_compare.awk (CPU, event, pid, time) and compared byte for
# byte. trace-cmd 3.1.6's report -F stops early (losing up to a few percent
# of the matches at the end of a recording, or all of them) and may cut
# its last line short: that line is left out, and text_compare.awk counts
# unmatched lines only inside the span both listings cover. COMM: trace-cmd
# names a pid also from the comms of its sched_switch events, we from the
# saved cmdlines only (as test_text.sh): at most 3% of the lines may carry
# <...> where trace-cmd names the task.
# before S.U: the lines of stdin whose time is before S.U (all: no S.U)
before() {
	awk -v cut="$1" 'BEGIN { split(cut, c, ".") }
		cut != "" && match($0, /\] +[0-9]+\.[0-9]+: /) {
			split(substr($0, RSTART, RLENGTH), t, /[] .:]+/)
			if (t[2] + 0 > c[1] + 0 || (t[2] + 0 == c[1] + 0 && t[3] + 0 >= c[2] + 0))
				next
		}
		{ print }'
}
compared=0
while IFS='|' read -r ev filter; do
	q=$ev; tf=$ev
	[ -n "$filter" ] && q="$ev where $filter" && tf="$ev: $filter"
	tq_root --host imp-v7 --time raw --format text "$q" > "$tmp/ours.txt" 2> "$tmp/ours.err"
	if [ -z "$filter" ]; then
		grep ": $ev: " "$tmp/all.txt" > "$tmp/theirs.txt"
		what="every $ev line of the report"
	else
		# its last line may be cut short: it is left out, and on both
		# sides so is every line at or after its time (two CPUs' ticks
		# can run the same softirq within one microsecond)
		report "$tf" "$tmp/v7.dat" | grep ": $ev: " > "$tmp/theirs.full"
		cut=$(tail -1 "$tmp/theirs.full" | sed -n 's/.*\] \+\([0-9]*\.[0-9]*\): .*/\1/p')
		sed '$d' "$tmp/theirs.full" | before "$cut" > "$tmp/theirs.txt"
		before "$cut" < "$tmp/ours.txt" > "$tmp/ours.cut" && mv "$tmp/ours.cut" "$tmp/ours.txt"
		what="report -F's lines"
	fi
	awk -v show=3 -f "$top_srcdir/tests/text_compare.awk" "$tmp/theirs.txt" "$tmp/ours.txt" \
		> "$tmp/cmp.out"
	line=$(tail -1 "$tmp/cmp.out")
	val() { printf '%s\n' "$line" | sed -n "s/.*\<$1=\([0-9]*\).*/\1/p"; }
	if [ "$(val matched)" = 0 ] && [ -n "$filter" ] && [ ! -s "$tmp/theirs.txt" ]; then
		echo "note: '$q': trace-cmd report -F printed nothing (3.1.6 stops early): not compared"
		continue
	fi
	if [ ! -s "$tmp/theirs.txt" ] && [ ! -s "$tmp/ours.txt" ]; then
		echo "note: '$q': the recording has no such event (none in the report, none stored)"
		continue
	fi
	check "'$q': traceq --time raw prints $what ($line)" \
		'[ "$(val matched)" -gt 0 ] && [ "$(val differ)" = 0 ] && [ "$(val ts_only)" = 0 ] &&
		 [ "$(val exit_state)" = 0 ] && [ "$(val a_only)" = 0 ] && [ "$(val b_only)" = 0 ] &&
		 [ $(( $(val comm_unknown) * 100 )) -le $(( 3 * $(val matched) )) ] ||
		 { head -8 "$tmp/cmp.out"; cat "$tmp/ours.err"; false; }'
	compared=$((compared + 1))
done <<'F'
sched_switch|
sched_switch|prev_pid == 0
sched_switch|prev_state == 1 && next_prio < 130
sched_switch|prev_comm == "sh"
sched_wakeup|
sched_wakeup|target_cpu == 1
sched_waking|prio >= 120
sched_stat_runtime|runtime > 100000
softirq_entry|vec == 7
softirq_raise|
hrtimer_expire_entry|
hrtimer_start|common_pid != 0
timer_start|
sched_process_exec|
irq_handler_entry|
rcu_utilization|
F
check "compared $compared selections with trace-cmd's" '[ "$compared" -ge 10 ]'

for v in v7n v6; do
	tq_root --import "$tmp/$v.dat" --name "imp-$v" > "$tmp/imp.out" 2>&1; rc=$?
	report "" "$tmp/$v.dat" | grep ": sched_switch: " > "$tmp/theirs.txt"
	tq_root --host "imp-$v" --time raw sched_switch > "$tmp/ours.txt" 2>&1
	line=$(awk -f "$top_srcdir/tests/text_compare.awk" "$tmp/theirs.txt" "$tmp/ours.txt" | tail -1)
	check "$v imports (exit $rc) with the report's sched_switch lines ($line)" \
		'[ "$rc" = 0 ] && [ "$(val matched)" = "$(wc -l < "$tmp/theirs.txt")" ] &&
		 [ "$(val differ)" = 0 ] && [ "$(val a_only)" = 0 ] && [ "$(val b_only)" = 0 ] ||
		 cat "$tmp/imp.out"'
done

# the same file again
before=$(tq_root --count sched_switch)
tq_root --import "$tmp/v7.dat" --name imp-v7 > "$tmp/again.out" 2>&1; rc=$?
check "the same file again: stored already, exit 0 ($rc: $(cat "$tmp/again.out"))" \
	'[ "$rc" = 0 ] && grep -q "stored already" "$tmp/again.out"'
tq_root --import "$tmp/v7.dat" --name imp-other > "$tmp/again2.out" 2>&1; rc=$?
check "under another name too ($rc)" '[ "$rc" = 0 ] && grep -q "stored already" "$tmp/again2.out"'
check "nothing was added ($before sched_switch rows)" '[ "$(tq_root --count sched_switch)" = "$before" ]'
tq_root --hosts > "$tmp/hosts" 2>&1
check "--hosts marks the imported host as imported" \
	'grep -q "^imp-v7 .* import  *[0-9]" "$tmp/hosts" &&
	 ! grep -q "^imp-other " "$tmp/hosts"'

# a file of two instances: refused without --buffer, naming them; each
# instance imported with --buffer is a host of its own with trace-cmd
# report's lines of that instance (its lines are "INSTANCE: ..."), and the
# second is not "stored already"
trace-cmd record -B "${inst}_a" -C mono -d --no-filter -e sched:sched_switch \
	-B "${inst}_b" -C mono -d --no-filter -e sched:sched_wakeup -o "$tmp/two.dat" \
	sh -c 'for i in $(seq 20); do sleep 0.01; ls / > /dev/null; done' > "$tmp/record2.log" 2>&1
rmdir "$tracing/instances/${inst}_a" "$tracing/instances/${inst}_b" 2>/dev/null
trace-cmd report "$tmp/two.dat" 2> /dev/null > "$tmp/two.txt"
na=$(grep -c "^ *${inst}_a: " "$tmp/two.txt"); nb=$(grep -c "^ *${inst}_b: " "$tmp/two.txt")
check "trace-cmd recorded two instances ($na and $nb lines)" '[ "$na" -gt 0 ] && [ "$nb" -gt 0 ]'
tq_root --import "$tmp/two.dat" --name imp-two > "$tmp/two.out" 2>&1; rc=$?
check "without --buffer it is refused, naming both (exit $rc: $(cat "$tmp/two.out"))" \
	'[ "$rc" = 2 ] && grep -q "${inst}_a" "$tmp/two.out" && grep -q "${inst}_b" "$tmp/two.out" &&
	 grep -q -- "--buffer" "$tmp/two.out"'
tq_root --import "$tmp/two.dat" --name imp-two --buffer nosuch > "$tmp/two.out" 2>&1; rc=$?
check "a --buffer no instance has is refused (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "nosuch" "$tmp/two.out"'
tq_root --import "$tmp/two.dat" --name imp-two-a --buffer "${inst}_a" > "$tmp/two-a.out" 2>&1; rc=$?
tq_root --import "$tmp/two.dat" --name imp-two-b --buffer "${inst}_b" > "$tmp/two-b.out" 2>&1; rc2=$?
check "each instance imports (exit $rc, $rc2), the second not as stored already" \
	'[ "$rc" = 0 ] && [ "$rc2" = 0 ] && grep -q "^imported" "$tmp/two-a.out" &&
	 grep -q "^imported" "$tmp/two-b.out"'
ca=$(tq_root --count '*' -H imp-two-a); cb=$(tq_root --count '*' -H imp-two-b)
check "each host holds its instance's events ($ca of $na, $cb of $nb)" \
	'[ "$ca" = "$na" ] && [ "$cb" = "$nb" ]'

# a live host's name
tc_start_agent agent -e sched:sched_switch --name live-host --no-user --instance "tc-import-$$-a"
for _ in $(seq 300); do
	grep -q "agent live-host (" "$tmp/collector.log" && break
	kill -0 "$agent" 2>/dev/null || break
	sleep 0.1
done
for _ in $(seq 300); do	# connected once WELCOMEd, after the log line
	tq_root --hosts > "$tmp/live.hosts" 2>&1
	grep -q "^live-host  *yes  *traceagent " "$tmp/live.hosts" && break
	kill -0 "$agent" 2>/dev/null || break
	sleep 0.1
done
check "--hosts: the live agent is connected, with its version ($(grep live-host "$tmp/live.hosts"))" \
	'grep -q "^live-host  *yes  *traceagent $(sed -n "s/^VERSION = //p" "$top_builddir/Makefile") " "$tmp/live.hosts" &&
	 grep -q "^imp-v7  *no  *-  " "$tmp/live.hosts"'
kill -INT "$agent"; wait "$agent"; agent=
for _ in $(seq 300); do	# its connection ends once DONE is written
	tq_root --hosts > "$tmp/live.hosts" 2>&1
	grep -q "^live-host  *no " "$tmp/live.hosts" && break
	sleep 0.1
done
check "--hosts: not connected once the agent is gone ($(grep live-host "$tmp/live.hosts"))" \
	'grep -q "^live-host  *no  *traceagent " "$tmp/live.hosts"'
cp "$tmp/v7n.dat" "$tmp/live.dat"; printf 'y' >> "$tmp/live.dat"	# a file not stored yet
tq_root --import "$tmp/live.dat" --name live-host > "$tmp/live.out" 2>&1; rc=$?
check "a live host's name is refused without --force (exit $rc: $(cat "$tmp/live.out"))" \
	'[ "$rc" = 2 ] && grep -q "name of a host an agent sends" "$tmp/live.out"'
tq_root --import "$tmp/live.dat" --name live-host --force > "$tmp/live.out" 2>&1; rc=$?
check "... and stored beside it with --force (exit $rc: $(cat "$tmp/live.out"))" \
	'[ "$rc" = 0 ] && grep -q "^imported" "$tmp/live.out"'

# who may import
as nobody --stats > /dev/null 2> "$tmp/nobody.err"; rc=$?
check "nobody may query (exit $rc)" '[ "$rc" = 0 ]'
cp "$tmp/v7.dat" "$tmp/run/n.dat"; chmod 644 "$tmp/run/n.dat"
printf 'x' >> "$tmp/run/n.dat"	# another file: a digest of its own
as nobody --import "$tmp/run/n.dat" --name imp-nobody > "$tmp/nobody.out" 2>&1; rc=$?
check "... but not import without an import line (exit $rc: $(cat "$tmp/nobody.out"))" \
	'[ "$rc" = 2 ] && grep -q "may not import" "$tmp/nobody.out"'
kill "$collector_pid"; wait "$collector_pid"; collector_pid=
for n in alice bob; do
	tc_certs_run client "$n" > /dev/null || { echo "FAIL: certificate helper: client $n"; exit 1; }
done
tc_start_collector --query "ipc://$sock" --query-group nogroup --import "user:nobody imp-*" \
	--query-tls 127.0.0.1:0 --import "cert:alice tls-*"
qtls=$(sed -n 's/^query_tls=//p' "$tmp/ready")
# over the TLS query port, with NAME's client certificate
tls_as() { local n=$1; shift; "$tq" -s "$qtls" -t 120000 --cert "$tmp/pki/client-$n.crt" \
	--key "$tmp/pki/client-$n.key" --ca "$tmp/pki/ca.crt" "$@"; }
cp "$tmp/v6.dat" "$tmp/tls.dat"; printf 'z' >> "$tmp/tls.dat"
tls_as bob --import "$tmp/tls.dat" --name tls-bob > "$tmp/tls.out" 2>&1; rc=$?
check "over TLS, a certificate without an import line may not import (exit $rc: $(cat "$tmp/tls.out"))" \
	'[ "$rc" = 2 ] && grep -q "cert bob may not import" "$tmp/tls.out"'
tls_as alice --import "$tmp/tls.dat" --name tls-alice > "$tmp/tls.out" 2>&1; rc=$?
check "... with 'import = cert:alice tls-*' alice may (exit $rc: $(cat "$tmp/tls.out"))" \
	'[ "$rc" = 0 ] && grep -q "^imported" "$tmp/tls.out"'
check "... and the collector logs who imported" \
	'grep -q "import by cert alice: import [0-9]* done" "$tmp/collector.log"'
as nobody --import "$tmp/run/n.dat" --name other-nobody > "$tmp/nobody.out" 2>&1; rc=$?
check "with 'import = user:nobody imp-*' not under other names (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "lines allow other names" "$tmp/nobody.out"'
as nobody --import "$tmp/run/n.dat" --name imp-nobody > "$tmp/nobody.out" 2>&1; rc=$?
check "... and under imp-* (exit $rc: $(cat "$tmp/nobody.out"))" '[ "$rc" = 0 ]'

# broken files
head -c $(( $(stat -c %s "$tmp/v7.dat") * 9 / 10 )) "$tmp/v7.dat" > "$tmp/trunc.dat"
tq_root --import "$tmp/trunc.dat" --name imp-trunc > "$tmp/trunc.out" 2>&1; rc=$?
check "a truncated file is refused (exit $rc: $(cat "$tmp/trunc.out"))" \
	'[ "$rc" = 2 ] && grep -q "offset" "$tmp/trunc.out"'
# the first CPU's first compressed chunk made to claim 4 GiB (after the
# chunk count, its size): flipped bytes inside the zstd data can decode
# without an error (raw literals; trace-cmd's chunks carry no checksum)
off=$(trace-cmd dump --options -i "$tmp/v7.dat" 2>/dev/null |
	awk '/\[id, data offset and size\]/ && $3 > 0 { print $2 + 4; exit }')
cp "$tmp/v7.dat" "$tmp/bad.dat"
printf '\xff\xff\xff\xff' | dd of="$tmp/bad.dat" bs=1 seek="${off:-0}" conv=notrunc 2>/dev/null
tq_root --import "$tmp/bad.dat" --name imp-bad > "$tmp/bad.out" 2>&1; rc=$?
check "a corrupted file is refused (exit $rc: $(cat "$tmp/bad.out"))" \
	'[ "$rc" = 2 ] && grep -q "offset" "$tmp/bad.out"'
tq_root --stats > "$tmp/stats.txt"
check "neither stored anything" '! grep -q "imp-trunc\|imp-bad" "$tmp/stats.txt"'

check "no instance left behind" \
	'! ls "$tracing/instances" | grep -q "tc_import_$$\|tc-import-$$"'
exit $failed
