# shellcheck shell=bash disable=SC2154  # $src, $build, die, ms_of... come from bench/run
# bench/export.sh - `bench/run export`, sourced by bench/run after
# bench/query.sh (it records with its qbench_record). What it measures is
# in bench/run's header.

# xbench_collector NAME: a collector on a new SQLite store in a new
# directory $tmp (/tmp/tcbench-NAME.*), certificates in $tmp/pki, its
# query endpoint over ipc ($query: --import wants an identity, which
# plain tcp has not), tq() a traceq asking it; stopped and removed at
# exit, with the processes whose pids are added to $xb_pid.
xbench_collector() {
	tmp=$(mktemp -d "/tmp/tcbench-$1.XXXXXX")
	"$src/contrib/tracecollect-certs" -d "$tmp/pki" all >/dev/null
	"$build/tracecollectd" --foreground --listen 127.0.0.1:0 --query "ipc://$tmp/query.sock" \
		--db "$tmp/trace.db" --cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
		--ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready" --journal-size 0 \
		2> "$tmp/collector.log" &
	xb_pid=$! xb_tmp=$tmp
	trap 'kill $xb_pid 2>/dev/null; rm -rf "$xb_tmp"' EXIT
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
	query=$(sed -n 's/^query=//p' "$tmp/ready")
	[ -n "$query" ] || die "collector did not start: $(tail -3 "$tmp/collector.log")"
	tq() { "$build/traceq/traceq" -t 3600000 --server "$query" "$@"; }
}

bench_export() {
	local events=${BENCH_EVENTS:-10000000} data tmp stored ms eps bpe rss ok=0
	local reported tc_ms conv_ms conv_cmd conv_help tc_bpe out
	mkdir -p "$build"
	[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi >/dev/null)
	[ -f "$build/Makefile" ] || (cd "$build" && "$src/configure" CFLAGS="-O2 -g" >/dev/null)
	make -C "$build" -j"$(nproc)" tracecollectd traceq/traceq >/dev/null
	command -v trace-cmd >/dev/null || apt-get install -y -qq trace-cmd >/dev/null
	# trace-cmd's own recording of the same size: bench/run query's (kept)
	data=$build/bench-query-data
	if [ "$(cat "$data/events" 2>/dev/null)" != "$events" ]; then
		qbench_record "$data" "$events"
	fi
	xbench_collector export
	tq --import "$data/trace.dat" --name bench-x > /dev/null
	stored=$(tq --sync --count -H bench-x '*')
	echo "stored: $stored events of trace-cmd's $(( $(stat -c %s "$data/trace.dat") >> 20 )) MB recording"
	# the export, its wall time and peak RSS (GNU time)
	out=$tmp/export.dat
	ms=${EPOCHREALTIME/./}
	/usr/bin/time -f '%U+%S
%M' -o "$tmp/time.txt" "$build/traceq/traceq" -t 3600000 --server "$query" \
		--export "$out" -f tracedat --time raw -H bench-x > /dev/null 2> "$tmp/export.err" ||
		die "traceq --export failed: $(tail -3 "$tmp/export.err")"
	ms=$(( (${EPOCHREALTIME/./} - ms) / 1000 ))
	rss=$(( $(tail -1 "$tmp/time.txt") / 1024 ))
	eps=$(( stored * 1000 / (ms ? ms : 1) ))
	bpe=$(awk -v s="$(stat -c %s "$out")" -v n="$stored" 'BEGIN { printf "%.1f", s / (n ? n : 1) }')
	echo "export: $(( $(stat -c %s "$out") >> 20 )) MB (v7, zstd) in $ms ms, traceq's own CPU" \
	     "$(sed -n 1p "$tmp/time.txt") s (the rest: the collector reading the pages)"
	# trace-cmd reading it back: every event there, as many as stored
	tc_ms=${EPOCHREALTIME/./}
	reported=$(trace-cmd report -i "$out" 2>/dev/null | grep -c -- '-[0-9]* *\[[0-9]*\] ' || true)
	tc_ms=$(( (${EPOCHREALTIME/./} - tc_ms) / 1000 ))
	[ "$reported" = "$stored" ] && ok=1
	echo "trace-cmd report of the export: $reported events in $tc_ms ms" \
	     "$([ $ok = 1 ] && echo agree || echo MISMATCH)"
	# the peer: trace-cmd rewriting its own recording (v6) as v7 zstd
	conv_cmd=(trace-cmd convert -i "$data/trace.dat" -o "$tmp/conv.dat" --file-version 7
		  --compression zstd)
	# (its -h exits 1: read the text before grep, pipefail is on)
	conv_help=$(trace-cmd convert -h 2>&1 || true)
	if [[ $conv_help == *--compression* ]] &&
	   conv_ms=$(ms_of "${conv_cmd[@]}" 2> "$tmp/convert.err"); then
		tc_bpe=$(awk -v s="$(stat -c %s "$tmp/conv.dat")" -v n="$stored" \
			'BEGIN { printf "%.1f", s / (n ? n : 1) }')
		echo "trace-cmd convert to v7 zstd: $conv_ms ms," \
		     "$(( stored * 1000 / (conv_ms ? conv_ms : 1) )) events/s," \
		     "bytes_per_event=$tc_bpe (its own recording, v6: $(awk -v s="$(stat -c %s \
			"$data/trace.dat")" -v n="$stored" 'BEGIN { printf "%.1f", s / (n ? n : 1) }'))"
	else
		echo "trace-cmd convert --compression: not in this trace-cmd (no comparison)"
	fi
	kill $xb_pid; wait $xb_pid || true
	trap - EXIT
	rm -rf "$tmp"
	echo "export: events_per_s=$eps bytes_per_event=$bpe tracedat_report_ok=$ok rss_mb=$rss"
}
