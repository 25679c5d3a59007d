# shellcheck shell=bash disable=SC2154  # $src, $build, die, val come from bench/run
# bench/fleet.sh - `bench/run fleet`, sourced by bench/run: three
# collectors on one ClickHouse (issue 35), on this machine. What it
# reports, and how each figure is measured:
#
#   events_per_s        events stored across the fleet / wall time: three
#                       bench/loadgen runs at once, one per collector
#                       (BENCH_AGENTS agents in all, default 6, split
#                       evenly), each replaying bench/run ingest's captured
#                       pages until its share of BENCH_EVENTS (default 3M)
#                       is stored; from the start of the three to the end
#                       of the last. The collectors run without a receive
#                       journal (--journal-size 0), so loadgen's DONE comes
#                       once ClickHouse holds the pages, and loadgen fails
#                       unless stored == shipped for each agent.
#   one_collector_events_per_s  the same three loadgen runs first, all into
#                       collector A (B and C idle): the baseline.
#   collector_cpu_s_per_Mev  the three collectors' CPU seconds (utime +
#                       stime, /proc/PID/stat) over the run, per million
#                       stored events.
#   clickhouse_cpu_s_per_Mev the clickhouse-server's, likewise.
#   failover_gap_ms     a real traceagent (sched_switch in a tracefs
#                       instance of its own, --connect A,B) 2 s into its
#                       run; collector A killed (-9); the time until the
#                       agent's log says it failed over to B (polled every
#                       20 ms, so up to 20 ms late). Median of 3 kills
#                       (A started again between them).
#
# The clickhouse-server, collectors and loadgen share the machine's CPUs:
# the rate is what this box does with all of them on it, not what a
# collector would do on its own machine (doc/SCALING.md).

fleet_tq() { "$build/traceq/traceq" --server "$1" -t 600000 "${@:2}"; }

# fleet_start NAME ID: collector NAME (--collector-id ID) on free ports, no
# journal; its pid in fpid_NAME, its agent port in flisten_NAME
fleet_start() {
	tc_strict_hosts=1 tc_start_collector "${ch_db_args[@]}" --journal-size 0 \
		--collector-name "$1" --collector-id "$2" \
		--host-map "$(hostname) bench-*" --host-map "tc-agent *" \
		--query "ipc://$tmp/q-$1.sock"
	printf -v "fpid_$1" '%s' "$collector_pid"
	printf -v "flisten_$1" '%s' "$listen"
}

# fleet_cpu PID...: their CPU seconds so far (utime + stime)
fleet_cpu() {
	local p t=0 hz
	hz=$(getconf CLK_TCK)
	for p in "$@"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	awk -v t="$t" -v hz="$hz" 'BEGIN{printf "%.2f", t / hz}'
}

# fleet_load NAME C C C: the three loadgen runs into collectors C C C; the
# figures into $tmp/NAME.res
fleet_load() {
	local name=$1 targets=("${@:2}") per=$(( ${BENCH_EVENTS:-3000000} / 3 )) agents=$(( (${BENCH_AGENTS:-6} + 2) / 3 ))
	local c pids=() t0 t1 c0 c1 h0 h1 stored=0 n
	c0=$(fleet_cpu "$fpid_A" "$fpid_B" "$fpid_C")
	h0=$(fleet_cpu "$clickhouse_pid")
	t0=$(date +%s%N)
	for i in 0 1 2; do
		l=flisten_${targets[$i]}
		"$build/bench/loadgen" --connect "${!l}" --cert "$tmp/pki/agent-$(hostname).crt" \
			--key "$tmp/pki/agent-$(hostname).key" --ca "$tmp/pki/ca.crt" \
			--data "$data" --agents "$agents" --events "$per" --name "bench-$name$i" \
			> "$tmp/load-$i.out" 2>&1 &
		pids+=($!)
	done
	for n in "${pids[@]}"; do wait "$n" || die "loadgen failed: $(tail -3 "$tmp"/load-*.out)"; done
	t1=$(date +%s%N)
	c1=$(fleet_cpu "$fpid_A" "$fpid_B" "$fpid_C")
	h1=$(fleet_cpu "$clickhouse_pid")
	for i in 0 1 2; do
		tail -1 "$tmp/load-$i.out" > "$tmp/load-$i.last"
		n=$(val stored_events "$tmp/load-$i.last")
		echo "  $name: collector ${targets[$i]}: $(cat "$tmp/load-$i.last")"
		stored=$((stored + n))
	done
	awk -v n="$stored" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v h0="$h0" \
		-v h1="$h1" -v a="$((agents * 3))" 'BEGIN{
		s = (t1 - t0) / 1e9; c = c1 - c0; h = h1 - h0
		printf "stored=%d seconds=%.1f agents=%d events_per_s=%.0f collector_cpu_s=%.1f" \
			" clickhouse_cpu_s=%.1f collector_cpu_s_per_Mev=%.2f clickhouse_cpu_s_per_Mev=%.2f\n",
			n, s, a, n / s, c, h, c / (n / 1e6), h / (n / 1e6) }' > "$tmp/$name.res"
	echo "  $name: $(cat "$tmp/$name.res")"
}

# fleet_gap: one kill of A under a real agent; the gap in ms into $gap
fleet_gap() {
	local inst="tc-fleetbench-$$" k t1 ms=
	"$build/traceagent" --connect "$flisten_A,$flisten_B" \
		--cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key" \
		--ca "$tmp/pki/ca.crt" -e sched:sched_switch --duration 6 --name tc-agent \
		--no-user --instance "$inst" --spool-dir "$tmp" > "$tmp/agent.out" 2> "$tmp/agent.err" &
	fagent=$!
	for _ in $(seq 100); do grep -q "connected" "$tmp/agent.err" && break; sleep 0.05; done
	sleep 2
	k=$(date +%s%N)
	kill -9 "$fpid_A"; wait "$fpid_A" 2>/dev/null || true
	for _ in $(seq 500); do
		if grep -q "failed over to the collector at" "$tmp/agent.err"; then
			t1=$(date +%s%N); ms=$(( (t1 - k) / 1000000 )); break
		fi
		sleep 0.02
	done
	wait "$fagent" || true
	fagent=
	fleet_start A 1
	[ -n "$ms" ] || die "the agent did not fail over: $(tail -3 "$tmp/agent.err")"
	gap=$ms
}

fleet_cleanup() {
	local p
	for p in ${fagent:-} ${fpid_A:-} ${fpid_B:-} ${fpid_C:-} ${clickhouse_pid:-}; do
		kill "$p" 2>/dev/null || true
	done
	wait || true
	rm -rf "$tmp"
}

bench_fleet() {
	local data gaps=() g
	make -C "$build" -j"$(nproc)" tracecollectd traceagent traceq/traceq bench/loadgen >/dev/null
	data=$build/bench-data
	[ -s "$data/formats.txt" ] || "$src/bench/capture.sh" "$data"
	top_srcdir=$src top_builddir=$build
	# shellcheck source=tests/lib.sh
	. "$src/tests/lib.sh"
	tc_have_clickhouse || die "needs clickhouse-server and clickhouse-client (./setup deps)"
	[ -w /sys/kernel/tracing/instances ] || die "needs a writable tracefs (the failover agent)"
	tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/tcbench-fleet.XXXXXX")
	fpid_A= fpid_B= fpid_C= clickhouse_pid= fagent= tc_pid_vars=()
	trap fleet_cleanup EXIT
	"$src/contrib/tracecollect-certs" -d "$tmp/pki" all >/dev/null
	"$src/contrib/tracecollect-certs" -d "$tmp/pki" agent tc-agent >/dev/null
	set +e	# tests/lib.sh's functions are written for set -u only
	tc_start_clickhouse
	tc_ch_db_args
	fleet_start A 1
	fleet_start B 2
	fleet_start C 3
	set -e
	echo "fleet: 3 collectors, one clickhouse-server ($(clickhouse-client --version 2>&1 |
		head -1)), $(nproc) CPUs shared by all of them and loadgen"
	fleet_load one A A A	# the same load into one collector: the baseline
	fleet_load three A B C
	for _ in 1 2 3; do
		fleet_gap
		echo "  failover: agent on A, A killed (-9): failed over to B after $gap ms"
		gaps+=("$gap")
	done
	g=$(printf '%s\n' "${gaps[@]}" | sort -n | sed -n 2p)
	res="collectors=3 agents=$(val agents "$tmp/three.res")"
	res+=" events_per_s=$(val events_per_s "$tmp/three.res")"
	res+=" one_collector_events_per_s=$(val events_per_s "$tmp/one.res")"
	res+=" collector_cpu_s_per_Mev=$(val collector_cpu_s_per_Mev "$tmp/three.res")"
	res+=" clickhouse_cpu_s_per_Mev=$(val clickhouse_cpu_s_per_Mev "$tmp/three.res")"
	trap - EXIT
	fleet_cleanup
	echo "fleet: $res failover_gap_ms=$g"
}
