#!/bin/bash
# traceq --follow with two collectors on one ClickHouse (issue 35): their
# commit ids interleave and complete out of order, so the follower keeps a
# cursor per collector (QOP_TAIL_WRITERS, server/store/clickhouse_tail.c).
#
# One clickhouse-server of the test's own; collectors A and B
# (--collector-id 1 and 2); followers of sched_switch since the test's
# start on B (fb) and on A (fa), started before any event is stored; four
# agents, h1 and h2 on A (--connect A,B), h3 and h4 on B (--connect B,A),
# 10 s each. Midway A is stopped (TERM) and started again on the same
# journal, database and query socket: its agents fail over to B, fa asks
# A again (nng redials the socket; a page not answered in time is asked
# again with the same cursors); then a fifth agent, h5, ships 3 s to the
# restarted A, whose commit ids now lie above B's (a restarted collector
# numbers above every id reserved), while B goes on committing. Asserts: both collectors committed (their ids interleave);
# each follower printed exactly the rows a plain query of the same
# selection returns at the end (as many, no line twice, the same lines).
# The page's live stream does the same on B (traceq --serve, /api/live),
# each event's id the follower's position, every collector's cursor in it:
# a stream resumed from a mid-stream id (Last-Event-ID) sends exactly the
# rows the first stream sent after that id.
# Skips, saying why, without clickhouse-server or a writable tracefs.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_clickhouse
tc_need_tracefs
tc_lock
tc_setup fleet_follow workload a1 a2 a3 a4 a5 fa fb pid_A pid_B clickhouse_pid serve_pid live_pid

tc_start_clickhouse
tc_ch_db_args
tc_certs
. "$top_srcdir/tests/fleet_lib.sh"

# collector NAME ID: fleet_collector with an ipc query socket of a fixed path
collector() { fleet_collector "$1" "$2" --query "ipc://$tmp/q-$1.sock" "${@:3}"; }
tq() { "$top_builddir/traceq/traceq" --server "ipc://$tmp/q-$1.sock" -t 120000 "${@:2}"; }
follow() {	# NAME COLLECTOR: a follower of sched_switch since t0, in the background
	"$top_builddir/traceq/traceq" --server "ipc://$tmp/q-$2.sock" -t 3000 -f json --follow \
		--since "@${t0}ns" sched_switch > "$tmp/$1" 2> "$tmp/$1.err" &
	printf -v "$1" '%s' "$!"
}
lines() { wc -l < "$1"; }

collector A 1
collector B 2
t0=$(date +%s%N)
follow fa A
follow fb B
# the page on B, and its live stream of sched_switch
"$top_builddir/traceq/traceq" --server "ipc://$tmp/q-B.sock" --serve 127.0.0.1:0 \
	> "$tmp/url" 2> "$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 100); do [ -s "$tmp/url" ] && break; sleep 0.1; done
url=$(head -1 "$tmp/url")
live() {	# OUT [CURL ARGS...]: /api/live?q=sched_switch into OUT
	local out=$1
	shift
	curl -sS -N -G "$@" "${url%%/\?*}/api/live" --data-urlencode "token=${url##*token=}" \
		--data-urlencode q=sched_switch > "$out" 2>> "$tmp/curl.err"
}
live "$tmp/live.sse" --max-time 600 &
live_pid=$!
for _ in $(seq 300); do grep -q '"following"\|"waiting"' "$tmp/live.sse" && break; sleep 0.1; done
( while :; do sleep 0.002; done ) &
workload=$!
fleet_agent 1 "$listen_A,$listen_B" 10
fleet_agent 2 "$listen_A,$listen_B" 10
fleet_agent 3 "$listen_B,$listen_A" 10
fleet_agent 4 "$listen_B,$listen_A" 10
sleep 3
kill -TERM "$pid_A"; wait "$pid_A" 2>/dev/null; pid_A=
echo "stopped collector A midway"
sleep 1
collector A 1
# h5 on A again: A's commit ids now start above every id reserved, B's
# block too, while B goes on committing lower ones (one cursor would pass them)
fleet_agent 5 "$listen_A,$listen_B" 3
fleet_wait_agents 1 2 3 4 5
kill "$workload"; wait "$workload" 2>/dev/null; workload=

check "both collectors committed: their commit ids interleave" \
	'[ "$(fleet_ch "SELECT uniqExact(id % 64) FROM commits")" = 2 ]'
# an A commit with an id above all of B's, and a B commit completed after it
a_high="SELECT min(ts) FROM commits WHERE id % 64 = 1 AND id > (SELECT max(id) FROM commits
	WHERE id % 64 = 2)"
late=$(fleet_ch "SELECT count() FROM commits WHERE id % 64 = 2 AND ts > ($a_high) AND
	($a_high) > 0")
check "B committed after a commit of A with a higher id ($late commits)" '[ "$late" -gt 0 ]'
tq A --sync --hosts > /dev/null
tq B --sync -f json --since "@${t0}ns" sched_switch > "$tmp/plain"
check "the plain query has rows of every host" \
	'[ "$(python3 -c "import json,sys
print(len({json.loads(l).get(\"host\") for l in open(sys.argv[1]) if l.strip()}))" "$tmp/plain")" = 5 ]'
want=$(lines "$tmp/plain")
for _ in $(seq 300); do
	[ "$(lines "$tmp/fa")" -ge "$want" ] && [ "$(lines "$tmp/fb")" -ge "$want" ] && break
	sleep 0.2
done
# live_data FILE: the rows of FILE's "rows" events, comm left out
live_data() { sed -n 's/^data: //p' "$1" | grep '"event"' | sed -E 's/"_?comm":[^,]*,//'; }
for _ in $(seq 300); do [ "$(live_data "$tmp/live.sse" | wc -l)" -ge "$want" ] && break; sleep 0.2; done
sleep 1	# a row repeated would show up as more lines
for f in fa fb; do
	kill -TERM "${!f}"; wait "${!f}"; rc=$?
	printf -v "$f" ''
	check "$f exits 0 on SIGTERM" '[ "$rc" = 0 ] || { cat "$tmp/$f.err"; false; }'
done
# comm is what the pid's name was when asked: later queries know more
sed -E 's/"_?comm":[^,]*,//' "$tmp/plain" | sort > "$tmp/plain.sorted"
for f in fa fb; do
	n=$(lines "$tmp/$f")
	sed -E 's/"_?comm":[^,]*,//' "$tmp/$f" | sort > "$tmp/$f.sorted"
	u=$(sort -u "$tmp/$f.sorted" | wc -l)
	check "$f printed every stored row once ($n lines, $u distinct, the plain query $want)" \
		'[ "$n" = "$want" ] && [ "$u" = "$n" ]'
	check "$f printed the plain query's rows" \
		'cmp -s "$tmp/$f.sorted" "$tmp/plain.sorted" ||
		 { diff "$tmp/$f.sorted" "$tmp/plain.sorted" | head -5; false; }'
done

# the page's live stream: every row once, then a resume from mid-stream
kill "$live_pid"; wait "$live_pid" 2>/dev/null; live_pid=
live_data "$tmp/live.sse" | sort > "$tmp/live.sorted"
n=$(lines "$tmp/live.sorted")
check "/api/live on B sent every stored row once ($n lines, $(sort -u "$tmp/live.sorted" | wc -l) distinct, the plain query $want)" \
	'[ "$n" = "$want" ] && [ "$(sort -u "$tmp/live.sorted" | wc -l)" = "$n" ] &&
	 cmp -s "$tmp/live.sorted" "$tmp/plain.sorted"'
ids=$(grep -c '^id: ' "$tmp/live.sse")
mid=$(sed -n 's/^id: //p' "$tmp/live.sse" | sed -n "$(( (ids + 1) / 2 ))p")
check "its ids carry a cursor per collector ($mid)" '[[ "$mid" =~ ^[0-9]+:[0-9]+(,[0-9]+)+$ ]]'
awk -v id="$mid" '$0 == "id: " id { on = 1; next } on == 1 && $0 == "" { on = 2; next }
	on == 2 && /^data: / { print substr($0, 7) }' "$tmp/live.sse" | grep '"event"' |
	sed -E 's/"_?comm":[^,]*,//' | sort > "$tmp/live.rest"
live "$tmp/live2.sse" --max-time 600 -H "Last-Event-ID: $mid" &
live_pid=$!
for _ in $(seq 300); do
	[ "$(live_data "$tmp/live2.sse" | wc -l)" -ge "$(lines "$tmp/live.rest")" ] && break
	sleep 0.2
done
sleep 1
kill "$live_pid"; wait "$live_pid" 2>/dev/null; live_pid=
live_data "$tmp/live2.sse" | sort > "$tmp/live2.sorted"
check "Last-Event-ID $mid resumes with exactly the rows sent after it ($(lines "$tmp/live2.sorted") of $(lines "$tmp/live.rest"))" \
	'[ -s "$tmp/live.rest" ] && cmp -s "$tmp/live.rest" "$tmp/live2.sorted"'
kill -TERM "$serve_pid"; wait "$serve_pid"; rc=$?; serve_pid=
check "traceq --serve exits 0 on SIGTERM" '[ "$rc" = 0 ] || { cat "$tmp/serve.err"; false; }'
[ "$failed" = 0 ] || { tail -20 "$tmp/fa.err" "$tmp/fb.err" "$tmp/serve.err"; tail -30 "$tmp/collector.log"; }
exit "$failed"
