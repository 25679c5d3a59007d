#!/bin/bash
# Selecting (issue 17): selector lists and globs over real kernel events,
# the kernel's subsystem-filter semantics, --since/--until in their human
# forms (end-relative included), --cpu, --limit, --reverse, and discovery
# (--hosts, --events, --fields), also for a scoped identity.
#
# Two agents (hosts sel-a, sel-b) record sched and irq events of a busy
# loop into one collector. Asserts:
#  - count over sched:* == the sum of the per-event counts; a bare "sched"
#    and "*" select the same as sched:* and every stored event;
#  - rows of sched_switch,sched_wakeup == the two counts summed, no row
#    twice, in ts order across the two types (over several pages);
#    --reverse is exactly that list backwards; -n 10 its first 10; the
#    text is each event's own trace-cmd text, merged; csv refuses two types;
#  - "sched:* where prev_pid == 0" filters sched_switch and leaves the
#    sched events without prev_pid unfiltered (the kernel's subsystem
#    filter); a filter no selected event takes is an error;
#  - --since end-1s and an ISO 8601 time select what the raw windows
#    (@NNNns) select; a bare number is refused listing the forms;
#  - --cpu 0 == "where CPU == 0"; -H twice == the two hosts summed;
#  - --hosts, --events, --fields show what was stored; uid 5001, scoped
#    to sel-a, sees only sel-a in all three.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
tc_lock
tc_setup select agent workload collector_pid

tc_certs sel-a sel-b
chmod 755 "$tmp"
mkdir -m 755 "$tmp/run"
tc_traceq_for_all
sock="$tmp/run/query.sock"
tc_start_collector --query "ipc://$sock" --query-group nogroup --scope 'uid:5001 sel-a'
query="ipc://$sock"

tc_agent_events="-e sched -e irq" tc_host_agents "tc-select-$$" sel-a sel-b

# ---- selectors ----
sw=$(traceq --count sched_switch)
wk=$(traceq --count sched_wakeup)
check "both events were stored (sched_switch $sw, sched_wakeup $wk)" \
	'[ "$sw" -gt 0 ] && [ "$wk" -gt 0 ]'
sum=0
for e in $(traceq --events 'sched:*' | awk 'NR > 1 { print $1 }'); do
	sum=$((sum + $(traceq --count "$e")))
done
all=$(traceq --count 'sched:*')
check "count sched:* ($all) == the sum of its events' counts ($sum)" \
	'[ "$all" -gt 0 ] && [ "$all" = "$sum" ]'
check "a bare subsystem name selects as sched:*" '[ "$(traceq --count sched)" = "$all" ]'
check "sched:sched_* selects as sched:*" '[ "$(traceq --count "sched:sched_*")" = "$all" ]'
irq=$(traceq --count 'irq:*')
task=$(traceq --count 'task:*' 2>/dev/null || echo 0)	# the agents' task name events
check "* counts every stored event (sched $all + irq $irq + task $task)" \
	'[ "$(traceq --count "*")" = $((all + irq + task)) ]'

# rows only: where the kernel lost events, select prints a lost_events
# object (and text a "CPU:N [N EVENTS DROPPED]" line) in each query that
# spans the place, so they are not rows to count or compare
rows() { grep -v '^{"lost_events"\|^ *\([^ ]*: \)\?CPU:[0-9]* \[[0-9]* *EVENTS DROPPED\]$'; }
traceq -f json 'sched_switch,sched_wakeup' 2> "$tmp/two.err" | rows > "$tmp/two"
n=$(wc -l < "$tmp/two")
check "rows of sched_switch,sched_wakeup ($n) == $sw + $wk, several pages" \
	'[ "$n" = $((sw + wk)) ] && [ "$n" -gt 1000 ]'
check "both events are among them" \
	'grep -q "\"event\":\"sched:sched_switch\"" "$tmp/two" &&
	 grep -q "\"event\":\"sched:sched_wakeup\"" "$tmp/two"'
check "no row comes twice" '[ -z "$(sort "$tmp/two" | uniq -d | head -1)" ]'
sed -n 's/.*"ts":\([0-9]*\).*/\1/p' "$tmp/two" > "$tmp/two.ts"
check "the rows are in ts order" \
	'[ "$(wc -l < "$tmp/two.ts")" = "$n" ] && sort -n -c "$tmp/two.ts"'
traceq -f json -r 'sched_switch,sched_wakeup' 2>&1 | rows > "$tmp/rev"
check "--reverse is the same rows backwards" 'tac "$tmp/two" | cmp -s - "$tmp/rev"'
traceq -f json -n 10 'sched_switch,sched_wakeup' 2>&1 | rows | head -n 10 > "$tmp/ten"
check "-n 10 is the first 10" 'head -n 10 "$tmp/two" | cmp -s - "$tmp/ten"'
# trace-cmd's text over two types: each type rendered with its own format
traceq --no-host -H sel-a 'sched_switch,sched_wakeup' 2> "$tmp/two.txt.err" | rows > "$tmp/two.txt"
{ traceq --no-host -H sel-a sched_switch; traceq --no-host -H sel-a sched_wakeup; } | rows |
	sort > "$tmp/one.txt"
check "text of sched_switch,sched_wakeup is the two events' own text, merged ($(wc -l < "$tmp/two.txt") lines)" \
	'[ ! -s "$tmp/two.txt.err" ] && grep -q " ==> " "$tmp/two.txt" &&
	 grep -q "sched_wakeup: .*target_cpu=\|sched_wakeup: .*CPU:" "$tmp/two.txt" &&
	 sort "$tmp/two.txt" | cmp -s - "$tmp/one.txt"'
traceq -f csv 'sched_switch,sched_wakeup' > /dev/null 2> "$tmp/csv.err"; rc=$?
check "--format csv over two types is refused with a reason (exit $rc)" \
	'[ "$rc" = 1 ] && grep -q "csv prints one event type" "$tmp/csv.err"'

# ---- the subsystem filter ----
sw0=$(traceq --count 'sched_switch where prev_pid == 0')
f=$(traceq --count 'sched:* where prev_pid == 0')
check "sched:* where prev_pid == 0 ($f) filters sched_switch ($sw0 of $sw) and passes the rest ($((all - sw)))" \
	'[ "$sw0" -lt "$sw" ] && [ "$f" = $((sw0 + all - sw)) ]'
traceq --count 'sched_wakeup,sched_waking where prev_pid == 0' > "$tmp/none" 2>&1; rc=$?
check "a filter no selected event takes is an error (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "prev_pid" "$tmp/none"'
traceq --count 'sched_switch,nosuch_event' > "$tmp/unk" 2>&1; rc=$?
check "an unknown selector is named (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "nosuch_event" "$tmp/unk"'

# ---- time ----
newest=$(traceq -f json -r -n 1 sched_switch | sed -n 's/.*"ts":\([0-9]*\).*/\1/p')
oldest=$(traceq -f json -n 1 sched_switch | sed -n 's/.*"ts":\([0-9]*\).*/\1/p')
a=$(traceq --count --since end-1s sched_switch)
b=$(traceq --count --since "@$((newest - 1000000000))ns" sched_switch)
check "--since end-1s ($a) == --since @(newest-1s)ns ($b)" '[ "$a" = "$b" ] && [ "$a" -gt 0 ]'
a=$(traceq --count --until end sched_switch)
check "--until end ($a) leaves out the rows at the newest ts" \
	'[ "$a" = "$(traceq --count --until "@${newest}ns" sched_switch)" ] && [ "$a" -lt "$sw" ]'
mid=$(( (oldest + newest) / 2000000000 ))	# whole seconds between them
iso=$(date -u -d "@$mid" +%Y-%m-%dT%H:%M:%SZ)
a=$(traceq --count --since "$iso" sched_switch)
b=$(traceq --count --since "@${mid}s" sched_switch)
c=$(traceq --count --until "$iso" sched_switch)
check "--since $iso ($a) == --since @${mid}s ($b), and with --until it adds up" \
	'[ "$a" = "$b" ] && [ $((a + c)) = "$sw" ]'
traceq --count --since 10 sched_switch > "$tmp/bare" 2>&1; rc=$?
check "a bare number is refused with the forms (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "end-10s" "$tmp/bare"'

# ---- CPUs and hosts ----
a=$(traceq --count --cpu 0 sched_switch)
b=$(traceq --count 'sched_switch where CPU == 0')
check "--cpu 0 ($a) == where CPU == 0 ($b)" '[ "$a" = "$b" ] && [ "$a" -gt 0 ]'
cpus=$(nproc)
a=$(traceq --count --cpu "0-$((cpus - 1))" sched_switch)
check "--cpu 0-$((cpus - 1)) selects every row" '[ "$a" = "$sw" ]'
ha=$(traceq --count -H sel-a sched_switch)
hb=$(traceq --count -H sel-b sched_switch)
check "-H sel-a -H sel-b ($ha + $hb) selects both hosts" \
	'[ "$ha" -gt 0 ] && [ "$hb" -gt 0 ] &&
	 [ "$(traceq --count -H sel-a -H sel-b sched_switch)" = "$sw" ] &&
	 [ "$(traceq --count -H sel-a -H nothing sched_switch)" = "$ha" ]'

# ---- discovery ----
traceq --hosts > "$tmp/hosts" 2>&1
check "--hosts lists both hosts with kernel and CPUs" \
	'grep -q "^sel-a .*$(uname -r) *$cpus .* agent " "$tmp/hosts" &&
	 grep -q "^sel-b " "$tmp/hosts"'
traceq --events > "$tmp/events" 2>&1
check "--events lists sched:sched_switch with its count" \
	'grep -q "^sched:sched_switch  *$sw " "$tmp/events" &&
	 grep -q "^irq:" "$tmp/events"'
traceq --fields sched_switch > "$tmp/fields" 2>&1
check "--fields lists sched_switch's fields and types" \
	'grep -q "^sched:sched_switch *prev_pid *int" "$tmp/fields" &&
	 grep -q "^sched:sched_switch *next_comm *string" "$tmp/fields"'

as5001() { setpriv --reuid=5001 --regid=65534 --clear-groups -- "$tq" -s "$query" -t 30000 "$@"; }
as5001 --hosts > "$tmp/s.hosts" 2>&1
check "scoped --hosts shows only sel-a" \
	'grep -q "^sel-a " "$tmp/s.hosts" && ! grep -q "^sel-b" "$tmp/s.hosts"'
as5001 --events 'sched:sched_switch' > "$tmp/s.events" 2>&1
check "scoped --events counts only sel-a's rows ($ha)" \
	'grep -q "^sched:sched_switch  *$ha " "$tmp/s.events"'
n=$(as5001 --count "sched:*")
check "scoped count over sched:* ($n) == root's -H sel-a" \
	'[ "$n" -gt 0 ] && [ "$n" = "$(traceq --count -H sel-a "sched:*")" ]'
as5001 --fields sched_switch > "$tmp/s.fields" 2>&1
check "scoped --fields still works" 'grep -q "^sched:sched_switch *prev_pid" "$tmp/s.fields"'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 30 lines)"; tail -n 30 "$tmp/collector.log"
	exit 1
fi
echo "PASS: selectors, subsystem filters, times, CPUs, hosts, order and discovery"
