#!/bin/bash
# Where the kernel lost events, end to end (issue 33): a tiny ring buffer,
# a busy workload of system calls and the agent held still (SIGSTOP) make
# the kernel overwrite unread pages; the page the agent reads next carries
# the missed-events flag (and, when the page has room, the count).
#
# Asserts: the collector stored the losses (traceq --format json gives
# lost_events objects); each sits at its place: after the last event of
# its CPU before the loss's time and before the first one at or after it,
# and the text layout prints "CPU:N [N EVENTS DROPPED]" (or "CPU:N
# [EVENTS DROPPED]") lines, as trace-cmd report does, at the same places
# (the same CPUs in the same order); per CPU, the counts add up to the
# kernel's overrun counter that traceq --stats shows when every loss has
# its count (so none was stored twice, though part of them came from the
# journal after a crash), and never exceed it; a CPU with losses overran
# and one that overran has losses.
# With TC_BACKEND=clickhouse (tests/test_ch_losses.sh) the collector stores
# into a clickhouse-server of the test's own: the same asserts.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup losses agent locker collector_pid
command -v python3 > /dev/null || skip "python3 is needed to read the JSON output"

tc_certs
tc_db_backend	# SQLite, or ClickHouse from tests/test_ch_losses.sh
tc_start_collector "${tc_db[@]}"

# The agent streams; held still (SIGSTOP) while the workload fills its
# buffers many times over, it then reads pages that say what was lost.
# Meanwhile another process holds the database's write lock (under the
# store's 5 s busy timeout): the collector journals and acknowledges the
# pages but stores none of them; the agent ends, and the collector is
# killed then, so what it had not stored is stored from its journal at
# the next start, after what it had (replayed once: the checks below
# count every loss). ClickHouse has no lock to hold: the server is held
# still (SIGSTOP) instead, so the collector's store waits in its request
# (a commit half sent: its rows, losses too, are deleted at the next start,
# clickhouse_txn.c); after the kill it goes on, and the collector starts
# again once the server has done with what the killed one had sent.
inst=tc-losses-$$
tc_start_agent agent -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit \
	--buffer-kb 16 --duration 3 --name loss-host --no-user --no-kernel-symbols \
	--instance "$inst"
for _ in $(seq 50); do
	grep -q "agent loss-host .* connected" "$tmp/collector.log" && break
	sleep 0.1
done
sleep 0.5
kill -STOP "$agent"
locker= ch_held=
if [ "${TC_BACKEND:-sqlite}" = sqlite ] && command -v sqlite3 > /dev/null; then
	sqlite3 -cmd ".timeout 3000" -cmd "BEGIN EXCLUSIVE;" -cmd ".system sleep 4.5" \
		"$tmp/trace.db" "COMMIT;" &
	locker=$!
elif [ "${TC_BACKEND:-}" = clickhouse ]; then
	kill -STOP "$clickhouse_pid" && ch_held=1
fi
dd if=/dev/zero of=/dev/null bs=1 count=300000 2> /dev/null
kill -CONT "$agent"
wait "$agent"; rc=$?
agent=
check "agent exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
if [ -n "$ch_held" ] || { [ -n "$locker" ] && kill -0 "$locker" 2> /dev/null; }; then
	kill -9 "$collector_pid"; wait "$collector_pid" 2>/dev/null
	if [ -n "$ch_held" ]; then
		kill -CONT "$clickhouse_pid"
		for _ in $(seq 100); do
			[ "$(tc_ch --query "SELECT count() FROM system.processes WHERE
				query NOT LIKE '%system.processes%'")" = 0 ] && break
			sleep 0.1
		done
	else
		wait "$locker"
	fi
	locker= ch_held=
	tc_start_collector "${tc_db[@]}"
	check "the restarted collector stored the journal left behind" \
		'grep -q "left by an earlier run are stored first" "$tmp/collector.log"'
else
	tc_skip_part "losses stored from the journal after a crash" \
		"${locker:+the lock was gone before the agent ended}${locker:-no sqlite3 command}"
	[ -n "$locker" ] && wait "$locker"
	locker=
fi

traceq -f json 'raw_syscalls' > "$tmp/json" 2> "$tmp/json.err"
check "traceq -f json exits 0" '[ $? = 0 ] || { cat "$tmp/json.err"; false; }'
traceq --time raw 'raw_syscalls' > "$tmp/text" 2> "$tmp/text.err"
check "traceq (text) exits 0" '[ $? = 0 ] || { cat "$tmp/text.err"; false; }'
traceq --stats > "$tmp/stats"

# One line per loss: "CPU COUNT" (COUNT -1: unknown), in output order, and
# "bad ..." for a loss not at its place.
python3 - "$tmp/json" > "$tmp/places" <<'EOF'
import json, sys
last = {}          # cpu -> ts of the last event printed
pending = []       # losses waiting for their CPU's next event
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "lost_events" in o:
        x = o["lost_events"]
        c = x["count"] if x["count"] is not None else -1
        print(x["cpu"], c)
        if x["cpu"] in last and last[x["cpu"]] >= x["ts"] and last[x["cpu"]] != x["ts"]:
            print("bad: CPU %d loss at %d after an event at %d" % (x["cpu"], x["ts"], last[x["cpu"]]))
        pending.append(x)
        continue
    for x in [p for p in pending if p["cpu"] == o["cpu"]]:
        if o["ts"] < x["ts"]:
            print("bad: CPU %d loss at %d before an event at %d" % (x["cpu"], x["ts"], o["ts"]))
        pending.remove(x)
    last[o["cpu"]] = o["ts"]
EOF
nlost=$(grep -vc "^bad" "$tmp/places")
check "losses were stored and printed ($nlost)" '[ "$nlost" -gt 0 ]'
check "each loss sits between its CPU's events before and after it" \
	'! grep "^bad" "$tmp/places"'
sed -n 's/^CPU:\([0-9]*\) \[\([0-9]*\) EVENTS DROPPED\]$/\1 \2/p; s/^CPU:\([0-9]*\) \[EVENTS DROPPED\]$/\1 -1/p' \
	"$tmp/text" > "$tmp/text-places"
check "the text layout prints trace-cmd's lines at the same places" \
	'cmp -s "$tmp/places" "$tmp/text-places" || { diff "$tmp/places" "$tmp/text-places" | head; false; }'
# --reverse: the same losses, newest first
traceq -r -f json 'raw_syscalls' | sed -n 's/^{"lost_events":{"host":"[^"]*","cpu":\([0-9]*\),.*"count":\([0-9]*\|null\),.*/\1 \2/p' |
	sed 's/ null$/ -1/' > "$tmp/rev-places"
check "--reverse prints the same losses newest first" \
	'grep -v "^bad" "$tmp/places" | tac | cmp -s - "$tmp/rev-places"'
# every DROPPED line comes before an event line (the first of its page)
dropped_then_event() {
	awk '/EVENTS DROPPED\]$/ { d = 1; next } d && /sys_e/ { d = 0 } END { exit d }' "$1"
}
check "a DROPPED line is followed by an event line" 'dropped_then_event "$tmp/text"'

# the counts against the kernel's overrun counter, per CPU
cpus=$({ awk '{ print $1 }' "$tmp/places"
	sed -n 's/^host=loss-host cpu=\([0-9]*\) .* overrun=\([1-9][0-9]*\) .*/\1/p' "$tmp/stats"
} | sort -un)
for cpu in $cpus; do
	overrun=$(sed -n "s/^host=loss-host cpu=$cpu .* overrun=\([0-9]*\) .*/\1/p" "$tmp/stats")
	sum=$(awk -v c="$cpu" '$1 == c && $2 >= 0 { s += $2 } END { print s + 0 }' "$tmp/places")
	unknown=$(awk -v c="$cpu" '$1 == c && $2 < 0 { n++ } END { print n + 0 }' "$tmp/places")
	n=$(awk -v c="$cpu" '$1 == c { n++ } END { print n + 0 }' "$tmp/places")
	check "cpu$cpu: losses ($n) where the kernel overran (${overrun:-none})" \
		'[ -n "$overrun" ] && [ "$n" -gt 0 ] && [ "$overrun" -gt 0 ]'
	if [ "$unknown" = 0 ]; then
		check "cpu$cpu: the counts ($sum) add up to the overrun (${overrun:-none})" \
			'[ "$sum" = "$overrun" ]'
	else
		tc_skip_part "cpu$cpu: sum == overrun" "$unknown of its pages had no room for the count"
		check "cpu$cpu: the known counts ($sum) stay within the overrun (${overrun:-none})" \
			'[ -n "$overrun" ] && [ "$sum" -le "$overrun" ]'
	fi
done

# read again by a restarted collector: the same losses
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null
tc_start_collector "${tc_db[@]}"
traceq -f json 'raw_syscalls' | grep -c lost_events > "$tmp/again"
check "after a restart the losses are the same ($(cat "$tmp/again") of $nlost)" \
	'[ "$(cat "$tmp/again")" = "$nlost" ]'
check "no tracefs instance left behind" '[ ! -e "$tracing/instances/$inst" ]'
if [ "$failed" != 0 ]; then
	echo "--- collector log"; cat "$tmp/collector.log"
	echo "--- agent stderr"; cat "$tmp/agent.err"
	exit 1
fi
echo "PASS: losses"
