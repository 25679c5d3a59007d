# shellcheck shell=bash disable=SC2154  # $src, $build, die come from bench/run
# bench/stack_bytes.sh - `bench/run stack_bytes` (issue 38), sourced by
# bench/run; a later bench may source it too and call bench_stack_bytes,
# whose last line it reads. What it measures is in bench/run's header.

# sbbench_workload: what the agent records, until killed: `perf bench sched
# messaging` over and over. A bench that calls bench_stack_bytes may
# define its own before the call (bench/recorder.sh does).
sbbench_workload() {
	while :; do perf bench sched messaging -g 2 -l 200 > /dev/null 2>&1 || sleep 0.01; done
}

# sbbench_store TMP NAME [AGENT ARGS...]: a collector on a new SQLite file
# and one agent tracing sched_switch in a tracefs instance of its own for
# BENCH_STACK_SECONDS while sbbench_workload runs; prints
# "BYTES EVENTS": the pages of the event tables, their indexes, the time
# index and the stacks table (dbstat), and the sched_switch events stored.
sbbench_store() (
	local tmp=$1 name=$2 secs=${BENCH_STACK_SECONDS:-10} pid='' apid='' wl='' listen query n bytes
	shift 2
	trap 'kill $pid $wl $apid 2>/dev/null' EXIT
	rm -f "$tmp/$name.db"* "$tmp/ready"
	"$build/tracecollectd" --foreground --listen 127.0.0.1:0 --query tcp://127.0.0.1:0 \
		--db "$tmp/$name.db" --cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
		--ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready" --host-map "tc-agent *" \
		--journal-size 0 2> "$tmp/$name-collector.log" &
	pid=$!
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
	listen=$(sed -n 's/^listen=//p' "$tmp/ready")
	query=$(sed -n 's/^query=//p' "$tmp/ready")
	[ -n "$query" ] || die "collector did not start: $(tail -3 "$tmp/$name-collector.log")"
	sbbench_workload &
	wl=$!
	"$build/traceagent" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
		--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" --name "sb-$name" \
		--instance "tcbench-$$-$name" -e sched:sched_switch --no-user --no-comm-events \
		--duration "$secs" --spool-dir "$tmp/spool-$name" "$@" \
		> /dev/null 2> "$tmp/$name-agent.err" &
	apid=$!
	wait "$apid" || die "agent $name failed: $(tail -2 "$tmp/$name-agent.err")"
	kill "$wl"; wait "$wl" 2>/dev/null || true
	n=$("$build/traceq/traceq" -t 3600000 --server "$query" --sync --count sched_switch)
	kill "$pid"; wait "$pid" 2>/dev/null || true
	bytes=$(sqlite3 "$tmp/$name.db" "SELECT sum(pgsize) FROM dbstat WHERE name IN
		(SELECT name FROM sqlite_master WHERE tbl_name LIKE 'ev\\_%' ESCAPE '\\'
		 OR tbl_name IN ('ts_blocks', 'stacks'))")
	echo "$bytes $n"
)

# bench_stack_bytes: the bytes the store spends per sched_switch event with
# kernel stacks (traceagent --stacktrace) and without; last line
# "stack_bytes: ratio=<with/without> with=<bytes/ev> without=<bytes/ev>".
# A subshell: its EXIT trap (and a die) stay its own, so another bench
# may call it and read the last line.
bench_stack_bytes() (
	local tmp nw nn stacks rows bw bn
	mkdir -p "$build"
	[ "$(id -u)" = 0 ] || die "needs root (tracefs)"
	command -v perf > /dev/null || apt-get install -y -qq linux-perf > /dev/null
	command -v sqlite3 > /dev/null || apt-get install -y -qq sqlite3 > /dev/null
	tmp=$(mktemp -d /tmp/tcbench-stacks.XXXXXX)
	build_daemons "$tmp"
	trap 'rm -rf "$tmp"
	      for i in /sys/kernel/tracing/instances/tcbench-*; do rmdir "$i" 2>/dev/null || true; done' EXIT
	read -r bn nn < <(sbbench_store "$tmp" without)
	read -r bw nw < <(sbbench_store "$tmp" with --stacktrace)
	stacks=$(sqlite3 "$tmp/with.db" "SELECT count(*) FROM stacks" 2>/dev/null || echo "?")
	rows=$(sqlite3 "$tmp/with.db" "SELECT count(*) FROM ev_ftrace_kernel_stack" 2>/dev/null || echo "?")
	echo "without stacks: $nn sched_switch events, $bn bytes of event tables, indexes and time index"
	echo "with --stacktrace: $nw sched_switch events, $rows stack records, $stacks distinct stacks, $bw bytes"
	if [ "${nn:-0}" = 0 ] || [ "${nw:-0}" = 0 ]; then
		die "no events stored"
	fi
	awk -v bw="$bw" -v nw="$nw" -v bn="$bn" -v nn="$nn" 'BEGIN {
		w = bw / nw; n = bn / nn
		printf "stack_bytes: ratio=%.2f with=%.1f without=%.1f\n", w / n, w, n }'
)
