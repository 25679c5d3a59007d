# shellcheck shell=bash disable=SC2154  # $src, $build, die... come from bench/run
# bench/query.sh - `bench/run query`, sourced by bench/run (it uses its
# $src, $build, die, ms_of and median_ms_of). What it measures is in
# bench/run's header.

# How the collector gets the events of the trace.dat: "loadgen" replays the
# pages of its per-CPU sections (bench/loadgen, as bench/run ingest
# replays captured pages); "import" is traceq --import (issue 17). Once
# --import is on main, this line is the one to change.
QBENCH_FILL=${BENCH_QUERY_FILL:-loadgen}

# The five filters no index serves (the collector indexes sched_switch by
# prev_pid/next_pid, sched_wakeup/waking by pid): kind, ours, trace-cmd's
# -F (libtraceevent's filter: =~ is its regex match, unanchored, so the
# glob kworker* is =~ "^kworker"; it compares a signed long field as
# unsigned, so no filter here asks for a negative one: see the "signed:"
# line).
QBENCH_KINDS=(num_eq num_range str_eq glob or)
QBENCH_OURS=(
	'sys_enter where id == 0'
	'sys_exit where ret >= 1 && ret <= 64'
	'sched_switch where next_comm == "cat"'
	'sched_switch where prev_comm ~ "kworker*"'
	'sched_switch where next_comm == "dd" || prev_prio < 120'
)
QBENCH_THEIRS=(
	'raw_syscalls/sys_enter: id == 0'
	'raw_syscalls/sys_exit: ret >= 1 && ret <= 64'
	'sched/sched_switch: next_comm == "cat"'
	'sched/sched_switch: prev_comm =~ "^kworker"'
	'sched/sched_switch: next_comm == "dd" || prev_prio < 120'
)

# qbench_record DIR N: trace-cmd records a busy workload (1-byte pipe
# writes: syscalls, wakeups, switches; short sleeps: timers; and the
# interrupts they bring) until about N events are in DIR/trace.dat
# (uncompressed, version 6: the per-CPU sections are the kernel's raw
# pages). In the top-level buffer: trace-cmd 3.1.6's report -F does not
# filter the events of an instance's buffer (-B) in the file, it prints
# them all, which would make the counts meaningless; what trace-cmd
# changes there (buffer size, clock, tracing_on, the events) is put back
# after. Then DIR gets what bench/loadgen replays (capture.txt,
# header_page, the formats, cpuN.raw cut from the file's sections).
qbench_record() {
	local dir=$1 n=$2 T=/sys/kernel/tracing top_on top_kb top_clock before i line
	local off size cpu ncpus=0 e f d name sys
	rm -rf "$dir"
	mkdir -p "$dir"
	cat > "$dir/workload.sh" <<'W'
recorded() {
	cat /sys/kernel/tracing/per_cpu/cpu*/stats |
		awk '/^entries:|^read events:/ {n += $NF} END {print n + 0}'
}
while [ "$(recorded)" -lt "$1" ]; do
	for _ in 1 2; do
		dd if=/dev/zero bs=1 count=40000 status=none | cat > /dev/null &
		( for _ in $(seq 50); do sleep 0.001; done ) &
	done
	wait
done
W
	before=$(ls $T/instances)
	top_on=$(cat $T/tracing_on)
	# "7 (expanded: 1408)": a buffer not yet allocated; put back its real size
	top_kb=$(sed -E 's/.*expanded: ([0-9]+).*/\1/; s/ .*//' $T/buffer_size_kb)
	top_clock=$(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
	# (-d --no-filter: this kernel refuses trace-cmd's function-tracer and
	# pid filter set-up; neither matters for events.)
	trace-cmd record -d --no-filter -C mono -b 8192 --file-version 6 \
		-e sched -e irq -e timer -e raw_syscalls -o "$dir/trace.dat" \
		sh "$dir/workload.sh" "$n" > "$dir/trace-cmd.log" 2>&1 || true
	for e in sched irq timer raw_syscalls; do echo 0 > "$T/events/$e/enable"; done
	echo "$top_kb" > $T/buffer_size_kb 2>/dev/null || true
	echo "$top_clock" > $T/trace_clock 2>/dev/null || true
	echo "$top_on" > $T/tracing_on 2>/dev/null || true
	for i in $(ls $T/instances); do
		echo "$before" | grep -qx "$i" || rmdir "$T/instances/$i" 2>/dev/null || true
	done
	[ -s "$dir/trace.dat" ] || die "trace-cmd record failed: $(tail -3 "$dir/trace-cmd.log")"
	# the file's per-CPU sections: "   OFFSET   SIZE  [offset, size of cpu N]"
	while read -r line; do
		off=${line%% *}; line=${line#* }; line=${line#"${line%%[! ]*}"}
		size=${line%% *}; cpu=${line##* }; cpu=${cpu%]}
		dd if="$dir/trace.dat" of="$dir/cpu$cpu.raw" iflag=skip_bytes,count_bytes \
			skip="$off" count="$size" bs=1M status=none
		ncpus=$(( cpu + 1 > ncpus ? cpu + 1 : ncpus ))
	done < <(trace-cmd dump -i "$dir/trace.dat" --flyrecord 2>/dev/null |
		 sed -nE 's/^[[:space:]]*([0-9]+)[[:space:]]+([0-9]+)[[:space:]]+\[offset, size of cpu ([0-9]+)\]/\1 \2 \3]/p')
	[ $ncpus -gt 0 ] || die "no per-CPU data in $dir/trace.dat"
	{
		echo "page_size=$(trace-cmd dump -i "$dir/trace.dat" --summary 2>/dev/null |
			sed -n 's/^[[:space:]]*\([0-9]*\)[[:space:]]*\[Page size, bytes\]/\1/p' | sed -n 1p)"
		echo "long_size=$(( $(getconf LONG_BIT) / 8 ))"
		echo "ncpus=$ncpus"
	} > "$dir/capture.txt"
	cp $T/events/header_page "$dir/header_page"
	: > "$dir/formats.txt"
	for f in $T/events/{sched,irq,timer,raw_syscalls}/*/format; do
		d=${f%/format}; name=${d##*/}; sys=${d%/*}; sys=${sys##*/}
		cp "$f" "$dir/$sys.$name.format"
		echo "$sys $name $sys.$name.format" >> "$dir/formats.txt"
	done
	echo "$n" > "$dir/events"
}

# qbench_fill DIR: the collector ($listen, $query) stores DIR's events.
qbench_fill() {
	local dir=$1 pages=0 f
	case $QBENCH_FILL in
	import)
		"$build/traceq/traceq" -t 3600000 --server "$query" \
			--import "$dir/trace.dat" --name bench-0 ;;
	loadgen)
		# one agent, each page once, in file order per CPU
		for f in "$dir"/cpu*.raw; do pages=$(( pages + $(stat -c %s "$f") / 4096 )); done
		"$build/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-$(hostname).crt" \
			--key "$tmp/pki/agent-$(hostname).key" --ca "$tmp/pki/ca.crt" --data "$dir" \
			--agents 1 --pages "$pages" --name bench ;;
	*) die "BENCH_QUERY_FILL: loadgen or import" ;;
	esac
}

# qbench_follow: p99 of the ms from a trace_marker write to traceq --follow
# printing it (see bench/run's header), or "na".
qbench_follow() {
	local inst=tcqbench-follow-$$ aps tpid rpid i n=${BENCH_FOLLOW_MARKS:-300} m
	if ! "$build/traceq/traceq" --help 2>&1 | grep -q -- --follow; then
		echo na
		return
	fi
	"$build/traceagent" --connect "$listen" --cert "$tmp/pki/agent-$(hostname).crt" \
		--key "$tmp/pki/agent-$(hostname).key" --ca "$tmp/pki/ca.crt" \
		-e ftrace:print --instance "$inst" --no-user --flush-ms 20 \
		> "$tmp/agent.out" 2> "$tmp/agent.err" &
	aps=$!
	for _ in $(seq 100); do
		[ "$(cat "/sys/kernel/tracing/instances/$inst/tracing_on" 2>/dev/null)" = 1 ] && break
		sleep 0.1
	done
	# the print event's format stored (a selector names stored types only)
	for _ in $(seq 100); do
		"$build/traceq/traceq" --server "$query" --count print > /dev/null 2>&1 && break
		sleep 0.1
	done
	# each printed line gets the wall-clock time it was read
	mkfifo "$tmp/follow.fifo"
	"$build/traceq/traceq" -t 3600000 --server "$query" --follow 'print where buf ~ "*qbench-mark*"' \
		> "$tmp/follow.fifo" &
	tpid=$!
	while IFS= read -r line; do echo "${EPOCHREALTIME/./} $line"; done \
		< "$tmp/follow.fifo" > "$tmp/follow.out" &
	rpid=$!
	sleep 1
	for ((i = 0; i < n; i++)); do
		echo "qbench-mark $i ${EPOCHREALTIME/./}" > "/sys/kernel/tracing/instances/$inst/trace_marker"
		sleep 0.02
	done
	for _ in $(seq 50); do
		[ "$(grep -c 'qbench-mark' "$tmp/follow.out")" -ge $n ] && break
		sleep 0.1
	done
	kill "$tpid" 2>/dev/null || true
	wait "$tpid" "$rpid" 2>/dev/null || true
	kill -INT "$aps" 2>/dev/null; wait "$aps" 2>/dev/null || true
	rmdir "/sys/kernel/tracing/instances/$inst" 2>/dev/null || true
	m=$(grep -c 'qbench-mark' "$tmp/follow.out" || true)
	echo "follow: marks=$n printed=$m" >&2
	# printed time - written time, per mark; p99 (a mark never printed counts as missing)
	sed -nE 's/^([0-9]+) .*qbench-mark ([0-9]+) ([0-9]+).*/\1 \3/p' "$tmp/follow.out" |
		awk '{print ($1 - $2) / 1000}' | sort -n |
		awk '{v[NR] = $1} END { if (!NR) { print "na"; exit }
			i = int(NR * 0.99 + 0.999); if (i > NR) i = NR; printf "%d\n", v[i] }'
}

bench_query() {
	local events=${BENCH_EVENTS:-10000000} data tmp pid i k ours theirs hdr
	local rss5 all_rows capped t0 rows count_ms tc_ms print_ms tc_print_ms worst=0 cratio= pratio= bad=0 rss all_ms all_n tc_all_ms tc_all_n
	local hist_ms=na sql_ms follow fill_ms
	mkdir -p "$build"
	[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi >/dev/null)
	[ -f "$build/Makefile" ] || (cd "$build" && "$src/configure" CFLAGS="-O2 -g" >/dev/null)
	make -C "$build" -j"$(nproc)" tracecollectd traceagent traceq/traceq bench/loadgen >/dev/null
	command -v trace-cmd >/dev/null || apt-get install -y -qq trace-cmd >/dev/null
	data=$build/bench-query-data
	if [ "$(cat "$data/events" 2>/dev/null)" != "$events" ]; then
		qbench_record "$data" "$events"
	fi
	echo "trace.dat: $(( $(stat -c %s "$data/trace.dat") >> 20 )) MB, $(ls "$data"/cpu*.raw | wc -l) CPUs"
	tmp=$(mktemp -d /tmp/tcbench-query.XXXXXX)
	"$src/contrib/tracecollect-certs" -d "$tmp/pki" all >/dev/null
	"$build/tracecollectd" --foreground --listen 127.0.0.1:0 --query tcp://127.0.0.1:0 \
		--db "$tmp/trace.db" --cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
		--ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready" --journal-size 0 \
		--host-map "$(hostname) bench-*" 2> "$tmp/collector.log" &
	pid=$!
	# (globals: the trap runs outside this function)
	qb_pid=$pid qb_tmp=$tmp
	trap 'kill "$qb_pid" 2>/dev/null; rm -rf "$qb_tmp"' EXIT
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
	listen=$(sed -n 's/^listen=//p' "$tmp/ready")
	query=$(sed -n 's/^query=//p' "$tmp/ready")
	[ -n "$query" ] || die "collector did not start: $(tail -3 "$tmp/collector.log")"
	tq() { "$build/traceq/traceq" -t 3600000 --server "$query" "$@"; }
	fill_ms=$(ms_of qbench_fill "$data")
	tq --sync --count sched_switch > /dev/null
	echo "stored: $(tq --count '*') events by $QBENCH_FILL in ${fill_ms} ms"
	# trace-cmd report's lines before the first event ("cpus=2")
	hdr=$( (trace-cmd report -i "$data/trace.dat" 2>/dev/null || true) | head -100 |
		awk '!d && /-[0-9]+ +\[[0-9]+\] / {print NR - 1; d = 1}')
	# -F goes before -i: trace-cmd 3.1.6 ignores a -F after -i without a
	# word (fixed upstream by 04ad2c60, "Ensure filter is applied to
	# single input file")
	tcf() { trace-cmd report -F "$1" -i "$data/trace.dat" 2>/dev/null; }
	echo 5 > "/proc/$pid/clear_refs"
	for k in "${!QBENCH_KINDS[@]}"; do
		ours=$(tq --count "${QBENCH_OURS[$k]}")
		theirs=$(( $(tcf "${QBENCH_THEIRS[$k]}" | wc -l) - hdr ))
		[ "$ours" = "$theirs" ] || bad=1
		count_ms=$(median_ms_of 3 tq --count "${QBENCH_OURS[$k]}")
		tc_ms=$(ms_of sh -c 'trace-cmd report -F "$2" -i "$1" 2>/dev/null | wc -l' sh \
			"$data/trace.dat" "${QBENCH_THEIRS[$k]}")
		# ours at most BENCH_PRINT_S s: past it, the ms it would take at
		# the rate it kept so far ("capped", a lower bound: a slower tail
		# only adds to it; the ratio from it is then an upper bound)
		capped= t0=${EPOCHREALTIME/./}
		rows=$(timeout "${BENCH_PRINT_S:-60}" "$build/traceq/traceq" -t 3600000 \
			--server "$query" "${QBENCH_OURS[$k]}" | wc -l || true)
		print_ms=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
		if [ "$rows" -lt "$ours" ]; then
			capped=" (capped: $rows of $ours rows in $print_ms ms)"
			print_ms=$(( print_ms * ours / (rows ? rows : 1) ))
		fi
		tc_print_ms=$(ms_of sh -c 'trace-cmd report -F "$2" -i "$1" 2>/dev/null' sh \
			"$data/trace.dat" "${QBENCH_THEIRS[$k]}")
		count_ms=${count_ms%% *}
		echo "${QBENCH_KINDS[$k]}: '${QBENCH_OURS[$k]}' count=$ours tracecmd_count=$theirs" \
		     "$([ "$ours" = "$theirs" ] && echo agree || echo MISMATCH)" \
		     "count_ms=$count_ms tracecmd_count_ms=$tc_ms print_ms=$print_ms$capped tracecmd_print_ms=$tc_print_ms"
		worst=$(( count_ms > worst ? count_ms : worst ))
		cratio=$(awk -v r="$cratio" -v a="$tc_ms" -v b="$count_ms" \
			'BEGIN { x = a / (b ? b : 1); printf "%.1f", (r == "" || x < r) ? x : r }')
		pratio=$(awk -v r="$pratio" -v a="$tc_print_ms" -v b="$print_ms" \
			'BEGIN { x = a / (b ? b : 1); printf "%.1f", (r == "" || x < r) ? x : r }')
	done
	[ $bad = 0 ] || echo "query: COUNTS DISAGREE (a bug: see the MISMATCH lines)" >&2
	rss5=$(awk '/VmHWM/ {printf "%d", $2 / 1024}' "/proc/$pid/status")
	echo "signed: 'sys_exit where ret < 0' count=$(tq --count 'sys_exit where ret < 0')" \
	     "tracecmd_count=$(( $(tcf 'raw_syscalls/sys_exit: ret < 0' | wc -l) - hdr ))" \
	     "(libtraceevent compares the long unsigned)"
	# every stored row printed (at most BENCH_PRINT_ALL_S seconds); the
	# collector's peak RSS during it alone (VmHWM reset by clear_refs 5)
	all_n=$(tq --count '*')
	echo 5 > "/proc/$pid/clear_refs"
	all_ms=${EPOCHREALTIME/./}
	all_rows=$(timeout "${BENCH_PRINT_ALL_S:-60}" "$build/traceq/traceq" -t 3600000 \
		--server "$query" '*' | wc -l || true)
	all_ms=$(( (${EPOCHREALTIME/./} - all_ms) / 1000 ))
	rss=$(awk '/VmHWM/ {printf "%d", $2 / 1024}' "/proc/$pid/status")
	tc_all_n=$(( $(trace-cmd report -i "$data/trace.dat" 2>/dev/null | wc -l) - hdr ))
	tc_all_ms=$(ms_of trace-cmd report -i "$data/trace.dat")
	echo "print '*': stored=$all_n tracecmd_events=$tc_all_n" \
	     "$([ "$all_n" = "$tc_all_n" ] && echo agree || echo MISMATCH)" \
	     "printed=$all_rows in ms=$all_ms (at most ${BENCH_PRINT_ALL_S:-60} s)" \
	     "collector_peak_rss_mb=$rss tracecmd_print_all_ms=$tc_all_ms"
	echo "collector peak RSS over the five prints: ${rss5} MB"
	if tq --help 2>&1 | grep -q -- --hist; then
		tq --hist 'keys=next_comm' sched_switch | tail -n 4
		hist_ms=$(median_ms_of 3 tq --hist 'keys=next_comm' sched_switch)
		echo "hist (ms, 3 runs): ${hist_ms#* }"
		hist_ms=${hist_ms%% *}
	fi
	k='SELECT next_comm, count(*) AS n FROM sched_switch GROUP BY next_comm ORDER BY n DESC'
	tq --sql "$k" | sed -n 1,4p
	sql_ms=$(median_ms_of 3 tq --sql "$k")
	echo "sql (ms, 3 runs): ${sql_ms#* }"
	sql_ms=${sql_ms%% *}
	follow=$(qbench_follow)
	kill "$pid"; wait "$pid" || true
	trap - EXIT
	rm -rf "$tmp"
	echo "query: worst_count_ms=$worst count_ratio=$cratio print_ratio=$pratio" \
	     "hist_ms=$hist_ms sql_ms=$sql_ms follow_p99_ms=$follow rss_mb=$(( rss > rss5 ? rss : rss5 ))"
}
