# shellcheck shell=bash disable=SC2154  # $src, $build, die come from bench/run
# bench/recorder.sh - `bench/run recorder` (issue 38), sourced by bench/run.
# What it measures is in bench/run's header; the figures:
#
#   armed_cpu_pct      an armed agent's CPU time (/proc/PID/schedstat: user
#                      and system, ns exact) over BENCH_RECORDER_ARMED_S,
#                      in % of one core, the mean of the agents (the
#                      largest on the "armed:" line);
#   armed_bytes_per_s  an armed agent's traffic with the collector, both
#                      ways: TCP payload (ss: bytes_sent + bytes_received
#                      of its sockets, TLS records whole) plus 66 bytes a
#                      segment (Ethernet, IPv4 and TCP headers with
#                      timestamps) for the wire, per second, the mean of
#                      the agents;
#   freeze_ms_p50/max  from the trigger event's time (its stored wall-clock
#                      ts in the trigger host's snapshot) to each other
#                      agent's freeze: the last event its snapshot holds
#                      (snapshot_hosts.last_ts; every agent records the
#                      same busy workload, so its last event is within
#                      microseconds of its tracing_on 0); the median and
#                      the largest over the 7 agents the collector froze
#                      (the trigger's own agent was frozen by the kernel
#                      at the event);
#   stack_bytes_ratio  bench/stack_bytes.sh's ratio, its sched_switch
#                      agent run with this bench's workload.

# rbench_workload: what the agents record: a shell loop of 1 ms sleeps
# (a fork, an exec and a few context switches and dozens of syscalls each
# time, on both CPUs), as tests/test_recorder.sh runs.
rbench_workload() {
	while :; do sleep 0.001; done
}

# rbench_cpu_ns PID: the CPU time PID ran so far, ns.
rbench_cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }

# rbench_net PID: "SENT RECEIVED SEGMENTS" of PID's TCP sockets so far
# (payload bytes each way, segments both ways).
rbench_net() {
	ss -tinpH | awk -v p="pid=$1," '
	function num(k,   v) { if (match($0, k ":[0-9]+")) { v = substr($0, RSTART, RLENGTH)
		sub(/.*:/, "", v); return v + 0 } return 0 }
	index($0, p) { getline; o += num("bytes_sent"); i += num("bytes_received")
		s += num("segs_out") + num("segs_in") }
	END { print o + 0, i + 0, s + 0 }'
}

# rbench_json_rows FILE KEY...: the KEYs of each JSON line of FILE, one
# line each (for read).
rbench_json_rows() {
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    print(" ".join(str(r.get(k)) for k in sys.argv[2:]))' "$@"
}

bench_recorder() (
	local tmp n=${BENCH_RECORDER_AGENTS:-8} secs=${BENCH_RECORDER_ARMED_S:-30} i wl pid
	local fire listen query id trig cpu0 net0 t0 t1 line o0 i0 s0 o1 i1 s1 armed_cpu armed_bytes
	local freeze_p50 freeze_max
	mkdir -p "$build"
	[ "$(id -u)" = 0 ] || die "needs root (tracefs)"
	command -v ss > /dev/null || die "needs ss (iproute2)"
	tmp=$(mktemp -d /tmp/tcbench-recorder.XXXXXX)
	build_daemons "$tmp"
	rb_tmp=$tmp rb_pids=()
	trap 'kill "${rb_pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$rb_tmp"
	      for i in /sys/kernel/tracing/instances/tcbench-*; do rmdir "$i" 2>/dev/null || true; done' EXIT
	# it loads both CPUs and makes instances: one at a time with the kernel tests
	exec 9> /tmp/tracecollect-tracefs-tests.lock && flock 9
	"$build/tracecollectd" --foreground --listen 127.0.0.1:0 --query tcp://127.0.0.1:0 \
		--db "$tmp/trace.db" --cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
		--ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready" --host-map "tc-agent *" \
		--freeze-group "g rec-*" 2> "$tmp/collector.log" &
	pid=$!
	rb_pids+=("$pid")
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
	listen=$(sed -n 's/^listen=//p' "$tmp/ready")
	query=$(sed -n 's/^query=//p' "$tmp/ready")
	[ -n "$query" ] || die "collector did not start: $(tail -3 "$tmp/collector.log")"
	tq() { "$build/traceq/traceq" -t 600000 --server "$query" "$@"; }
	rbench_workload &
	wl=$!
	rb_pids+=("$wl")
	fire="tcfire-$$"
	cp "$(command -v sleep)" "$tmp/$fire"
	local apid=()
	for i in $(seq "$n"); do
		local on=()
		[ "$i" = 1 ] && on=(--freeze-on "sched_switch where prev_comm == \"$fire\" && prev_state == 1")
		"$build/traceagent" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
			--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" --name "rec-$i" \
			--instance "tcbench-$$-r$i" -e sched:sched_switch -e raw_syscalls:sys_enter \
			--no-comm-events --flight-recorder 1 --group g "${on[@]}" \
			> /dev/null 2> "$tmp/rec-$i.err" &
		apid+=("$!")
		rb_pids+=("$!")
	done
	for _ in $(seq 200); do
		[ "$(tq --hosts 2>/dev/null | grep -c '^rec-[0-9]*  *yes ')" = "$n" ] && break
		sleep 0.1
	done
	[ "$(tq --hosts | grep -c '^rec-[0-9]*  *yes ')" = "$n" ] ||
		die "not all $n recorders connected: $(tail -2 "$tmp"/rec-*.err)"
	echo "recorder: $n armed agents (1 MiB per CPU each, overwrite mode, sched_switch and" \
	     "sys_enter, a tracefs instance each; rec-1 with --freeze-on and its watch instance)," \
	     "one collector on SQLite, loopback TLS, workload: a 1 ms sleep loop"
	# past the first periodic report (kernel symbols, printk formats: once)
	sleep 12
	cpu0=() net0=()
	for i in "${!apid[@]}"; do
		cpu0+=("$(rbench_cpu_ns "${apid[$i]}")") net0+=("$(rbench_net "${apid[$i]}")")
	done
	t0=$(date +%s%N)
	sleep "$secs"
	t1=$(date +%s%N)
	for i in "${!apid[@]}"; do
		read -r o0 i0 s0 <<< "${net0[$i]}"
		read -r o1 i1 s1 < <(rbench_net "${apid[$i]}")
		echo "rec-$((i + 1)) $(( $(rbench_cpu_ns "${apid[$i]}") - cpu0[i] ))" \
		     "$((o1 - o0 + i1 - i0)) $((s1 - s0)) $((o1 - o0)) $((i1 - i0))"
	done > "$tmp/armed"
	awk -v ns=$((t1 - t0)) '{ c = $2 / ns * 100; w = ($3 + 66 * $4) / ns * 1e9
		printf "armed %s: cpu %.4f%% of a core, %.1f bytes/s (payload sent %.1f, received" \
		       " %.1f; %.1f segments/s)\n", $1, c, w, $5 / ns * 1e9, $6 / ns * 1e9, $4 / ns * 1e9
		}' "$tmp/armed"
	awk -v ns=$((t1 - t0)) '{ c = $2 / ns * 100; w = ($3 + 66 * $4) / ns * 1e9
		sc += c; sw += w; if (c > mc) mc = c; if (w > mw) mw = w }
		END { printf "armed: %.1f s, per agent mean cpu %.4f%% (max %.4f%%), %.1f bytes/s (max %.1f)\n",
		      ns / 1e9, sc / NR, mc, sw / NR, mw
		      printf "%.4f %.1f\n", sc / NR, sw / NR > "/dev/stderr" }' "$tmp/armed" 2> "$tmp/armed.sum"
	read -r armed_cpu armed_bytes < "$tmp/armed.sum"

	# the trigger: a program of that name sleeps once on rec-1's host
	"$tmp/$fire" 0.01
	id=
	for _ in $(seq 300); do
		tq --snapshots -f json > "$tmp/snaps.json" 2>/dev/null || true
		id=$(rbench_json_rows "$tmp/snaps.json" id reason | awk '$2 == "trigger" { print $1; exit }')
		[ -n "$id" ] && [ "$(rbench_json_rows "$tmp/snaps.json" id 'done' |
			awk -v id="$id" '$1 == id && $2 == 1' | wc -l)" = "$n" ] && break
		sleep 0.1
	done
	[ -n "$id" ] || die "the trigger froze nothing: $(grep snapshot "$tmp/collector.log" | tail -3)"
	tq --sync --snapshot-id "$id" -f json "sched_switch where prev_comm == \"$fire\"" \
		> "$tmp/trig.json"
	trig=$(rbench_json_rows "$tmp/trig.json" host ts | awk '$1 == "rec-1" { print $2 }' |
		sort -n | tail -1)
	[ -n "$trig" ] && [ "$trig" != None ] || die "no trigger event stored in snapshot $id"
	grep "snapshot $id:" "$tmp/collector.log" | sed 's/^[^:]*: //' || true
	rbench_json_rows "$tmp/snaps.json" id host last_ts events lost |
		awk -v id="$id" -v t="$trig" '$1 == id {
			printf "freeze %s: %s events, %s overwritten before, last event %.3f ms after the trigger\n",
			       $2, $4, $5, ($3 - t) / 1e6 }' | sort -V
	rbench_json_rows "$tmp/snaps.json" id host last_ts |
		awk -v id="$id" -v t="$trig" '$1 == id && $2 != "rec-1" { print ($3 - t) / 1e6 }' |
		sort -n > "$tmp/freeze_ms"
	[ "$(wc -l < "$tmp/freeze_ms")" = $((n - 1)) ] || die "not every agent's snapshot was stored"
	freeze_p50=$(awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }' "$tmp/freeze_ms")
	freeze_max=$(tail -1 "$tmp/freeze_ms")
	for i in "${apid[@]}"; do kill -INT "$i"; done
	for i in "${apid[@]}"; do wait "$i" || true; done
	[ -z "${BENCH_KEEP_LOGS:-}" ] || cp "$tmp"/*.err "$tmp"/*.log "$BENCH_KEEP_LOGS/"
	kill "$wl" "$pid" 2>/dev/null || true
	wait "$wl" "$pid" 2>/dev/null || true
	exec 9>&-

	echo "peer: none side by side: trace-cmd (and LTTng, Perfetto) have no fleet freeze; the" \
	     "floor an armed agent is compared with is the kernel's overwrite buffer alone" \
	     "(trace-cmd start, no process reading: 0% CPU, 0 bytes/s)"
	# bytes per stored event with and without stacks, this bench's workload
	# shellcheck disable=SC2317  # called by sbbench_store
	sbbench_workload() { rbench_workload; }
	bench_stack_bytes | tee "$tmp/stacks.out"
	line=$(tail -1 "$tmp/stacks.out")
	case $line in stack_bytes:\ ratio=*) ;; *) die "bench_stack_bytes: $line" ;; esac
	echo "recorder: freeze_ms_p50=$freeze_p50 freeze_ms_max=$freeze_max" \
	     "armed_cpu_pct=$armed_cpu armed_bytes_per_s=$armed_bytes" \
	     "stack_bytes_ratio=$(echo "$line" | sed -n 's/^stack_bytes: ratio=\([0-9.]*\).*/\1/p')"
)
