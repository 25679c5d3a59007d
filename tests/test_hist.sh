#!/bin/bash
# traceq --hist (issue 18): a histogram in the kernel's hist-trigger syntax,
# computed by the collector's store, printed as the kernel prints an
# event's `hist` file.
#
# Two agents (hosts hist-a, hist-b; real sched_switch events of a busy
# loop that forks a new `sleep` each turn, so there are hundreds of pids)
# fill one store. Where this kernel takes hist triggers in an instance of
# our own, the kernel's own hist file is compared with ours for the same
# events (made the same by construction: only the switches of a marker
# program that runs after the trigger is set and ends before it is read);
# where it refuses (no CONFIG_HIST_TRIGGERS), every case is compared with
# the same histogram computed here from the rows (traceq -f json, jq).
#
# Asserts, each against that independent computation:
#  - the header lines are the kernel's (# trigger info: hist:keys=...:vals=
#    hitcount:sort=hitcount:size=2048 [active]) and the Totals lines
#    (Hits = rows, Entries = lines, Dropped = 0);
#  - single key (string), two keys, cpu (printed common_cpu, as the
#    kernel prints it), .log2, .buckets=100, .execname (pid 0
#    as <idle>), .hex, vals sums, sort=hitcount.descending (order) and two
#    sort keys, size=128 keeping the first 128 keys to appear with the
#    rest counted as Dropped, a filter (also in the trigger line), host as
#    a key (each host's count is traceq --count -H HOST);
#  - .sym on timer:hrtimer_start's function (a third agent, host hist-t):
#    the kernel's "[addr] name" layout, each name one /proc/kallsyms gives
#    that address, the hitcounts adding up to the rows;
#  - a scoped identity (uid 5001: hist-a only) sees only hist-a's entries;
#  - bad specs are refused with exit status 2 and a clear error: an unknown
#    field, .log2 of a string, .execname of another pid, a bad modifier (a
#    caret under it), size out of range.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v jq >/dev/null || skip "needs jq"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
tc_lock
tc_setup hist agent workload collector_pid

tc_certs hist-a hist-b hist-t
tc_traceq_for_all
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"
tc_start_collector --query "ipc://$sock" --query-group nogroup --pushdown no \
	--scope 'uid:5001 hist-a'
query="ipc://$sock"

# ---- the kernel's own hist file, where the kernel takes hist triggers ----

probe="$tracing/instances/tc-histprobe-$$"
kernel_hist=0
if mkdir "$probe" 2>/dev/null; then
	echo 'hist:keys=common_pid' > "$probe/events/sched/sched_switch/trigger" 2>/dev/null &&
		kernel_hist=1
	[ "$kernel_hist" = 1 ] &&
		echo '!hist:keys=common_pid' > "$probe/events/sched/sched_switch/trigger"
	rmdir "$probe"
fi

# entries FILE: the sorted "{ ... }" lines; totals FILE: the Totals lines.
entries() { grep '^{ ' "$1" | sort; }
totals() { sed -n '/^Totals:/,$p' "$1"; }

if [ "$kernel_hist" = 1 ]; then
	inst="tc-hist-k$$"
	cp /bin/sleep "$tmp/tchistw"
	spec='keys=next_comm,prev_pid.log2:vals=prev_prio:sort=hitcount.descending'
	kfilter='prev_comm == "tchistw"'
	tc_start_agent agent-k -e sched:sched_switch --duration 8 --name hist-k --instance "$inst" \
		--spool-dir "$tmp/spool"
	trig="$tracing/instances/$inst/events/sched/sched_switch/trigger"
	# the agent records (its event enabled, tracing on) before the marker runs
	for _ in $(seq 100); do
		grep -q '^1' "$tracing/instances/$inst/events/sched/sched_switch/enable" \
			2>/dev/null && grep -q '^1' "$tracing/instances/$inst/tracing_on" && break
		sleep 0.1
	done
	echo "hist:$spec if $kfilter" > "$trig"
	for _ in $(seq 200); do "$tmp/tchistw" 0.001; done	# only these switches count
	cat "$tracing/instances/$inst/events/sched/sched_switch/hist" > "$tmp/kernel.hist"
	echo "!hist:$spec if $kfilter" > "$trig"
	wait "$agent"; rc=$?; agent=
	check "kernel comparison: agent exits 0" '[ "$rc" = 0 ]'
	traceq --hist "$spec" -H hist-k "sched_switch where $kfilter" > "$tmp/ours.hist"
	check "kernel comparison: our header lines are the kernel's" \
		'diff <(head -n 5 "$tmp/kernel.hist") <(head -n 5 "$tmp/ours.hist")'
	check "kernel comparison: the same entries ($(grep -c '^{' "$tmp/kernel.hist"))" \
		'diff <(entries "$tmp/kernel.hist") <(entries "$tmp/ours.hist")'
	check "kernel comparison: the same Totals" \
		'diff <(totals "$tmp/kernel.hist") <(totals "$tmp/ours.hist")'
else
	echo "note: this kernel refuses hist triggers in an instance (no CONFIG_HIST_TRIGGERS):" \
		"comparing with histograms computed from the rows"
fi

# ---- two hosts' events, compared with the rows' own histogram ----

tc_host_agents "tc-hist-$$" hist-a hist-b

traceq -f json -H 'hist-[ab]' sched_switch > "$tmp/rows.json"
nrows=$(wc -l < "$tmp/rows.json")
check "rows to compare with ($nrows)" '[ "$nrows" -gt 500 ]'

# The expected lines: jq groups the rows, awk prints them as the kernel
# does. grp KEYS: the jq program grouping the rows (jq -s) by KEYS (an
# array expression) into "key...<TAB>count" lines.
grp() { echo "group_by($1) | .[] | ((.[0] | $1) + [length]) | @tsv"; }

# hist SPEC ARGS...: --hist over hosts hist-a and hist-b; -H given again would
# add a host (traceq(1)), so the cases on one host call traceq themselves
hist() { traceq -H 'hist-[ab]' --hist "$@"; }

# single key (a string), the header and the totals
hist 'keys=next_comm' sched_switch > "$tmp/h1"
check "header lines are the kernel's" \
	'diff <(head -n 5 "$tmp/h1") <(printf "%s\n" "# event histogram" "#" \
	 "# trigger info: hist:keys=next_comm:vals=hitcount:sort=hitcount:size=2048 [active]" \
	 "#" "")'
jq -s -r "$(grp '[.next_comm]')" < "$tmp/rows.json" |
	awk -F'\t' '{ printf "{ next_comm: %-50s } hitcount: %10d\n", $1, $2 }' | sort > "$tmp/w1"
check "single key: the rows' histogram ($(wc -l < "$tmp/w1") entries)" \
	'diff "$tmp/w1" <(entries "$tmp/h1")'
check "Totals: Hits = rows, Entries = lines, Dropped = 0" \
	'diff <(totals "$tmp/h1") <(printf "Totals:\n    Hits: %d\n    Entries: %d\n    Dropped: 0\n" \
	 "$nrows" "$(wc -l < "$tmp/w1")")'
check "default sort: hitcount ascending" \
	'grep -q "^{" "$tmp/h1" && grep "^{" "$tmp/h1" | sed "s/.*hitcount: *//" | sort -n -c'

# expect NAME SPEC QUERY JQKEYS AWKPRINT: --hist SPEC QUERY has the entries
# of the rows grouped by JQKEYS, each printed by AWKPRINT.
expect() {
	local name=$1 spec=$2 q=$3 keys=$4 print=$5
	hist "$spec" $q > "$tmp/h" 2> "$tmp/h.err"
	jq -s -r "$(grp "$keys")" < "$tmp/rows.json" | awk -F'\t' "{ $print }" |
		sort > "$tmp/w"
	check "$name ($(wc -l < "$tmp/w") entries)" \
		'[ -s "$tmp/w" ] && { diff "$tmp/w" <(entries "$tmp/h") || { cat "$tmp/h.err"; false; }; }'
}

expect "two keys" 'keys=next_comm,next_pid:size=8192' sched_switch '[.next_comm, .next_pid]' \
	'printf "{ next_comm: %-50s, next_pid: %10d } hitcount: %10d\n", $1, $2, $3'
expect ".log2" 'keys=prev_pid.log2' sched_switch '[.prev_pid | if . <= 1 then 0 else (. - 1 | log2 | floor + 1) end]' \
	'printf "{ prev_pid: ~ 2^%-2d } hitcount: %10d\n", $1, $2'
expect ".buckets=100" 'keys=next_pid.buckets=100' sched_switch '[(.next_pid / 100 | floor) * 100]' \
	'printf "{ next_pid: ~ %d-%d } hitcount: %10d\n", $1, $1 + 99, $2'
expect "cpu: the CPU, named common_cpu as the kernel names it" 'keys=cpu' sched_switch '[.cpu]' \
	'printf "{ common_cpu: %10d } hitcount: %10d\n", $1, $2'
check "cpu: the trigger line says common_cpu" \
	'grep -q "^# trigger info: hist:keys=common_cpu:vals=hitcount:sort=hitcount:size=2048 \[active\]$" "$tmp/h"'
expect ".hex" 'keys=next_prio.hex' sched_switch '[.next_prio]' \
	'printf "{ next_prio: %x } hitcount: %10d\n", $1, $2'
# vals: per next_comm, the sums of prev_prio and next_prio
hist 'keys=next_comm:vals=prev_prio,next_prio' sched_switch > "$tmp/h"
jq -s -r 'group_by(.next_comm) | .[] | [.[0].next_comm, length, (map(.prev_prio) | add),
	(map(.next_prio) | add)] | @tsv' < "$tmp/rows.json" |
	awk -F'\t' '{ printf "{ next_comm: %-50s } hitcount: %10d  prev_prio: %10d  next_prio: %10d\n",
		$1, $2, $3, $4 }' | sort > "$tmp/w"
check "vals: the sums of prev_prio and next_prio" 'diff "$tmp/w" <(entries "$tmp/h")'
# common_timestamp (a key: the event's wall-clock ns; traceq --serve's
# timeline summaries) in buckets of 100 ms, per CPU; python3, not jq,
# groups the rows: jq's numbers lose a timestamp's last digits
hist 'keys=common_cpu,common_timestamp.buckets=100000000:size=8192' sched_switch > "$tmp/h"
python3 -c '
import collections, json, sys
n = collections.Counter()
for l in sys.stdin:
    r = json.loads(l)
    n[(r["cpu"], r["ts"] // 100000000 * 100000000)] += 1
for (c, t), k in n.items():
    print("{ common_cpu: %10d, common_timestamp: ~ %d-%d } hitcount: %10d" % (c, t, t + 99999999, k))
' < "$tmp/rows.json" | sort > "$tmp/w"
check "common_timestamp.buckets=100000000: the rows per CPU and 100 ms ($(wc -l < "$tmp/w") entries)" \
	'[ -s "$tmp/w" ] && diff "$tmp/w" <(entries "$tmp/h")'
# .execname on one host: the comm the store keeps for the pid; pid 0 <idle>
# (size= over the default 2048: a busy machine runs that many pids)
traceq -f json -H hist-a sched_switch > "$tmp/rows-a.json"
traceq -H hist-a --hist 'keys=common_pid.execname:size=65536' sched_switch > "$tmp/h"
jq -s -r 'group_by(.common_pid) | .[] | [.[0].common_pid,
	(if .[0].common_pid == 0 then "<idle>" else (.[0].comm // "<...>") end), length] | @tsv' \
	< "$tmp/rows-a.json" |
	awk -F'\t' '{ printf "{ common_pid: %-16s[%10d] } hitcount: %10d\n", $2, $1, $3 }' |
	sort > "$tmp/w"
# (pid 0 switches out only when a CPU went idle: not on a busy machine)
idle=$(jq -s 'map(select(.common_pid == 0)) | length' < "$tmp/rows-a.json")
check ".execname: the comm of each pid, <idle> for 0 ($(wc -l < "$tmp/w") entries, pid 0 in $idle)" \
	'diff "$tmp/w" <(entries "$tmp/h") &&
	 { [ "$idle" = 0 ] || grep -q "common_pid: <idle> *\[ *0\]" "$tmp/h"; }'

# sort: descending, and a sort within a sort
hist 'keys=next_pid:sort=hitcount.descending' sched_switch > "$tmp/h"
check "sort=hitcount.descending: counts never rise" \
	'[ "$(grep -c "^{" "$tmp/h")" -gt 100 ] &&
	 grep "^{" "$tmp/h" | sed "s/.*hitcount: *//" | sort -n -r -c'
hist 'keys=next_comm,next_pid:sort=next_comm,hitcount.descending' sched_switch > "$tmp/h"
check "sort=next_comm,hitcount.descending: by name, then counts falling" \
	'grep -q "^{" "$tmp/h" && grep "^{" "$tmp/h" | sed "s/^{ next_comm: \(.*[^ ]\) *, next_pid: *\([0-9]*\) } hitcount: *\([0-9]*\)/\1\t\3/" |
	 LC_ALL=C sort -t "	" -k1,1 -k2,2nr -c'
check "trigger line names both sort keys" \
	'grep -q "^# trigger info: hist:keys=next_comm,next_pid:vals=hitcount:sort=next_comm,hitcount.descending:size=2048 \[active\]$" "$tmp/h"'

# size=128: the first 128 keys to appear are kept, the rest are Dropped
hist 'keys=next_pid:size=128' sched_switch > "$tmp/h"
jq -s -r 'group_by(.next_pid) | map({k: .[0].next_pid, n: length, f: (map(.ts) | min)}) |
	sort_by(.f, .k) | .[:128] | .[] | [.k, .n] | @tsv' < "$tmp/rows.json" |
	awk -F'\t' '{ printf "{ next_pid: %10d } hitcount: %10d\n", $1, $2 }' | sort > "$tmp/w"
kept=$(awk '{ s += $NF } END { print s }' "$tmp/w")
check "size=128: the first 128 keys to appear" 'diff "$tmp/w" <(entries "$tmp/h")'
check "size=128: Entries 128, Hits theirs, Dropped the other rows ($((nrows - kept)))" \
	'diff <(totals "$tmp/h") <(printf "Totals:\n    Hits: %d\n    Entries: 128\n    Dropped: %d\n" \
	 "$kept" $((nrows - kept))) && [ $((nrows - kept)) -gt 0 ]'

# a filter: the rows it matches, and the trigger line says it
jq -c 'select(.prev_pid == 0)' < "$tmp/rows.json" > "$tmp/rows-f.json"
hist 'keys=next_comm' 'sched_switch where prev_pid == 0' > "$tmp/h"
jq -s -r "$(grp '[.next_comm]')" < "$tmp/rows-f.json" |
	awk -F'\t' '{ printf "{ next_comm: %-50s } hitcount: %10d\n", $1, $2 }' | sort > "$tmp/w"
check "a filter: the histogram of the rows it matches ($(wc -l < "$tmp/w") entries)" \
	'[ -s "$tmp/w" ] && diff "$tmp/w" <(entries "$tmp/h")'
check "a filter: in the trigger line as the kernel shows it" \
	'grep -q "^# trigger info: hist:keys=next_comm:vals=hitcount:sort=hitcount:size=2048 if prev_pid == 0 \[active\]$" "$tmp/h"'

# host as a key over both hosts
hist 'keys=host:sort=host' sched_switch > "$tmp/h"
printf '{ host: %-50s } hitcount: %10d\n' hist-a "$(traceq --count -H hist-a sched_switch)" \
	hist-b "$(traceq --count -H hist-b sched_switch)" > "$tmp/w"
check "host as a key: each host's count" 'diff "$tmp/w" <(grep "^{" "$tmp/h")'

# a scoped identity sees only its hosts
setpriv --reuid=5001 --regid=65534 --clear-groups -- "$tq" -s "$query" -t 30000 \
	--hist 'keys=host' sched_switch > "$tmp/h" 2>&1
check "uid 5001 (scope hist-a) sees only hist-a" \
	'diff <(grep "^{" "$tmp/h") <(grep "host: hist-a " "$tmp/w")'
setpriv --reuid=5001 --regid=65534 --clear-groups -- "$tq" -s "$query" -t 30000 \
	--hist 'keys=next_comm' sched_switch > "$tmp/h" 2>&1
check "uid 5001's histogram counts only hist-a's rows" \
	'grep -q "^    Hits: $(traceq --count -H hist-a sched_switch)$" "$tmp/h"'

# .sym: timer callbacks named from the kernel symbols the agent sent
# (its /proc/kallsyms); hrtimer functions are symbol starts, so each name
# must be one of the names /proc/kallsyms gives that very address.
( while :; do sleep 0.002; done ) &
workload=$!
tc_run_agent agent-t --cert "$tmp/pki/agent-hist-t.crt" --key "$tmp/pki/agent-hist-t.key" \
	-e timer:hrtimer_start --duration 1 --name hist-t --instance "tc-hist-t$$" \
	--spool-dir "$tmp/spool"
rc=$?
kill "$workload"; wait "$workload" 2>/dev/null
workload=
check "agent hist-t (timer:hrtimer_start) exits 0" '[ "$rc" = 0 ] || cat "$tmp/agent-t.err"'
traceq -H hist-t --hist 'keys=function.sym:sort=hitcount.descending' timer:hrtimer_start > "$tmp/h"
sed -n 's/^{ function: \[\([0-9a-f]*\)\] \([^ ]*\) *} hitcount: *\([0-9]*\)$/\1 \2 \3/p' \
	"$tmp/h" > "$tmp/syms"
check ".sym: every entry line has the kernel's [addr] name layout ($(wc -l < "$tmp/syms"))" \
	'[ -s "$tmp/syms" ] && [ "$(wc -l < "$tmp/syms")" = "$(grep -c "^{" "$tmp/h")" ] &&
	 grep "^{" "$tmp/h" | head -n 1 | grep -q "^{ function: \[[0-9a-f]*\] .\{45\} } hitcount: "'
check ".sym: each name is /proc/kallsyms' for its address" \
	'awk "NR == FNR { n[\$1] = n[\$1] \"|\" \$3 \"|\"; next }
	      index(n[\$1], \"|\" \$2 \"|\") == 0 { print \"not kallsyms:\", \$0; bad = 1 }
	      END { exit bad }" /proc/kallsyms "$tmp/syms"'
check ".sym: the hitcounts add up to the rows" \
	'[ "$(awk "{ s += \$3 } END { print s }" "$tmp/syms")" = \
	   "$(traceq --count -H hist-t timer:hrtimer_start)" ]'

# bad specs: refused, exit status 2, a sentence that says what is wrong
refused() {
	local spec=$1 words=$2 rc
	hist "$spec" sched_switch > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "refused: '$spec' (exit $rc: $(head -n 1 "$tmp/err"))" \
		'[ "$rc" = 2 ] && grep -q -- "$words" "$tmp/err" && [ ! -s "$tmp/out" ]'
}
refused 'keys=nope' "sched:sched_switch has no field 'nope'"
refused 'keys=next_comm.log2' "next_comm is not a number"
refused 'keys=next_pid.execname' "applies to common_pid only"
refused 'keys=next_pid:vals=next_comm' "is not a number"
refused 'keys=next_pid.foo' "unknown modifier '.foo'"
refused 'keys=next_pid:size=64' "65..131072"
refused 'vals=next_pid' "keys= is missing"
hist 'keys=next_pid.foo' sched_switch 2> "$tmp/err"
check "a caret under the bad modifier" \
	'grep -q "^  keys=next_pid.foo$" "$tmp/err" && grep -q "^ \{16\}\^~~$" "$tmp/err"'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 30 lines)"; tail -n 30 "$tmp/collector.log"
	exit 1
fi
echo "PASS: --hist matches the $( [ "$kernel_hist" = 1 ] && echo "kernel's hist file and the ")rows' own histograms"
