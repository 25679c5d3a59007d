# shellcheck shell=bash disable=SC2154  # $src, $build, die come from bench/run
# bench/clocks.sh - `bench/run clocks` (issue 36), sourced by bench/run. What
# it measures is in bench/run's header.

# cbench_pair TMP NAME FAKETIME: two agents (NAME-a, and NAME-b with its
# realtime as FAKETIME says, "" for none) tracing sched_switch in tracefs
# instances of their own for BENCH_CLOCKS_SECONDS on the mono trace clock,
# while a loop makes context switches.
cbench_pair() {
	local tmp=$1 name=$2 ft=$3 secs=${BENCH_CLOCKS_SECONDS:-60} pa pb wl i
	local libft args
	libft=$(find /usr/lib -name libfaketime.so.1 2>/dev/null | head -1)
	args=(--connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key"
	      --ca "$tmp/pki/ca.crt" -e sched:sched_switch --no-user --trace-clock mono
	      --duration "$secs" --spool-dir "$tmp/spool-$name")
	( while :; do sleep 0.002; done ) &
	wl=$!
	"$build/traceagent" "${args[@]}" --name "$name-a" --instance "tcbench-$$-$name-a" \
		> /dev/null 2> "$tmp/$name-a.err" &
	pa=$!
	if [ -n "$ft" ]; then
		FAKETIME_DONT_FAKE_MONOTONIC=1 LD_PRELOAD=$libft FAKETIME=$ft "$build/traceagent" \
			"${args[@]}" --name "$name-b" --instance "tcbench-$$-$name-b" \
			> /dev/null 2> "$tmp/$name-b.err" &
	else
		"$build/traceagent" "${args[@]}" --name "$name-b" --instance "tcbench-$$-$name-b" \
			> /dev/null 2> "$tmp/$name-b.err" &
	fi
	pb=$!
	wait "$pa" || die "agent $name-a failed: $(tail -2 "$tmp/$name-a.err")"
	wait "$pb" || die "agent $name-b failed: $(tail -2 "$tmp/$name-b.err")"
	kill "$wl"; wait "$wl" 2>/dev/null || true
	for i in a b; do
		"$build/traceq/traceq" -t 3600000 --server "$query" --sync sched_switch -H "$name-$i" \
			-f json | python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["cpu"], r["trace_ts"], r["ts"], r["prev_pid"], r["next_pid"], r["prev_state"])' \
			> "$tmp/rows-$name-$i"
	done
	python3 "$src/tests/clock_pairs.py" "$tmp/rows-$name-a" "$tmp/rows-$name-b" --dist
}

bench_clocks() {
	local tmp pid n med p99 sn smed sp99 unc
	mkdir -p "$build"
	[ "$(id -u)" = 0 ] || die "needs root (tracefs)"
	command -v faketime >/dev/null || apt-get install -y -qq faketime >/dev/null
	tmp=$(mktemp -d /tmp/tcbench-clocks.XXXXXX)
	build_daemons "$tmp"
	"$build/tracecollectd" --foreground --listen 127.0.0.1:0 --query tcp://127.0.0.1:0 \
		--db "$tmp/trace.db" --cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
		--ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready" --host-map "tc-agent *" \
		2> "$tmp/collector.log" &
	pid=$!
	cb_pid=$pid cb_tmp=$tmp
	trap 'kill "$cb_pid" 2>/dev/null; rm -rf "$cb_tmp"
	      for i in /sys/kernel/tracing/instances/tcbench-*; do rmdir "$i" 2>/dev/null || true; done' EXIT
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
	listen=$(sed -n 's/^listen=//p' "$tmp/ready")
	query=$(sed -n 's/^query=//p' "$tmp/ready")
	[ -n "$query" ] || die "collector did not start: $(tail -3 "$tmp/collector.log")"
	read -r n med p99 < <(cbench_pair "$tmp" same "")
	echo "same clock: $n events stored by both agents; |difference| median $((med / 1000)) us, p99 $((p99 / 1000)) us"
	read -r sn smed sp99 < <(cbench_pair "$tmp" shifted +5s)
	echo "one agent's realtime +5 s: $sn events; |difference| median $((smed / 1000)) us, p99 $((sp99 / 1000)) us"
	unc=$("$build/traceq/traceq" --server "$query" --hosts -f json | python3 -c 'import json,sys
print(max((json.loads(l)["clock_uncertainty_ns"] or 0) for l in sys.stdin))')
	grep "disagrees" "$tmp/collector.log" | sed 's/^[^:]*: //' || true
	echo "clocks: median_us=$((med / 1000)) p99_us=$((p99 / 1000)) shifted_median_us=$((smed / 1000))" \
	     "shifted_p99_us=$((sp99 / 1000)) uncertainty_us=$((unc / 1000))"
}
