# shellcheck shell=bash disable=SC2154  # $src, $build, die... come from bench/run
# bench/scale.sh - `bench/run scale`, sourced by bench/run (it uses its
# $src, $build, die and median_ms_of): the ClickHouse store against SQLite
# on one machine (issue 32). What it reports is in bench/run's header; the
# definitions:
#
#   events_per_s     stored events / wall time, from bench/loadgen's first
#                    connection to the last agent's DONE. Both collectors
#                    run without a receive journal (--journal-size 0), so
#                    DONE comes once the collector's store has committed
#                    every page (SQLite: its commit; ClickHouse: the commit
#                    row after the acknowledged INSERTs), and loadgen fails
#                    unless stored == shipped for every agent. The same
#                    pages (bench/run ingest's capture, BENCH_AGENTS agents
#                    bench-0.., each round later in time than the last:
#                    loadgen shifts the timestamps by the capture's span, so
#                    no two events are alike) and the same count for both.
#   bytes_per_event  SQLite: the database file plus its WAL (stat sizes);
#                    ClickHouse: sum(bytes_on_disk) of the active parts of
#                    our database in system.parts (every table: events,
#                    marks, names), after the fill, merges as they stand.
#   glob_count_ms,   whole traceq runs (start-up and connection included),
#   hist_ms          median of 3, after one warm-up run: --count of
#                    SCALE_GLOB and --hist 'keys=next_comm' sched_switch.
#
# The ClickHouse server is started as the tests start theirs (tests/lib.sh
# tc_start_clickhouse: Debian's clickhouse-server, free loopback ports,
# everything under the bench's temp dir) and stopped at the end.
#
# Both stores live in the temp dir (BENCH_TMP, default /tmp), and its
# filesystem matters to ClickHouse: every INSERT and merge writes a part
# of two files per column, and on an ext4 without a journal (this
# project's machines' root) the kernel looks for a free inode past every
# recently deleted one (ext4's recently_deleted()): measured with perf,
# ~40% of the server's insert threads, and half its CPU per event against
# a journaled ext4 (a loop-mounted image on the same disk). A "scale: fs"
# line says which filesystem the run had; BENCH_TMP on another one
# measures there. SQLite writes two files and is not affected.
#
# BENCH_CH_COMPRESSION=zstd gives the server <compression> with zstd for
# parts past 10 MiB (18.16 has no per-column codecs; the default is LZ4
# for all): inserts stay LZ4, merges write zstd. Measured on 10M events
# here: 12.5 instead of 22.4 bytes an event, and 189K stored events/s
# (SQLite 634K in that run) instead of 634K (SQLite 1.37M); zstd for every
# part: 10.9 bytes, 140K events/s (SQLite 855K). The "scale: ch" line says which the run had.

SCALE_GLOB='sched_switch where next_comm ~ "kworker*"'
SCALE_HIST=(--hist 'keys=next_comm' sched_switch)

# scale_collector DB-ARGS...: a tracecollectd storing into DB-ARGS (no
# journal; tests/lib.sh's tc_start_collector, its log in
# $tmp/collector.log, the bench's hosts mapped to this host's
# certificate); sets scale_pid, listen, query.
scale_collector() {
	tc_strict_hosts=1 tc_start_collector --journal-size 0 \
		--host-map "$(hostname) bench-*" "$@"
	scale_pid=$collector_pid
}

scale_tq() { "$build/traceq/traceq" --server "$query" -t 1800000 "$@"; }

# scale_progress NAME: every 30 s, the events stored so far (traceq
# --stats' stored events, the hosts' totals) and the rate since the last line.
scale_progress() {
	local name=$1 t0=$SECONDS last=0 n
	while sleep 30; do
		n=$(scale_tq --stats -f json 2>/dev/null | awk -F '"events":' \
			'/"cpu":"all"/ {split($2, v, ","); n += v[1]} END {print n + 0}') || continue
		echo "  $name: $((SECONDS - t0)) s, $n events stored ($(( (n - last) / 30 ))/s)"
		last=$n
	done
}

# scale_fill NAME: loadgen replays the capture into the running collector
# until ~$events are stored; its line into $tmp/NAME.fill.
scale_fill() {
	local name=$1 prog out
	scale_progress "$name" &
	prog=$!
	out=$("$build/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-$(hostname).crt" \
		--key "$tmp/pki/agent-$(hostname).key" --ca "$tmp/pki/ca.crt" --data "$data" \
		--agents "${BENCH_AGENTS:-4}" --events "$events" --name bench) ||
		{ kill "$prog"; die "$name: loadgen failed: $out $(tail -3 "$tmp/collector.log")"; }
	kill "$prog"; wait "$prog" 2>/dev/null || true
	echo "$out" | tail -1 | tee "$tmp/$name.fill"
}

# scale_queries NAME: the glob count and the histogram, their answers kept
# in $tmp/NAME.count and NAME.hist, their times in NAME.times.
scale_queries() {
	local name=$1 c h
	scale_tq --count "$SCALE_GLOB" > "$tmp/$name.count" || die "$name: count failed"
	c=$(median_ms_of 3 scale_tq --count "$SCALE_GLOB")
	scale_tq "${SCALE_HIST[@]}" > "$tmp/$name.hist" || die "$name: hist failed"
	h=$(median_ms_of 3 scale_tq "${SCALE_HIST[@]}")
	echo "  $name: glob count ${c#* } ms (answer $(cat "$tmp/$name.count")), hist ${h#* } ms"
	echo "count_ms=${c%% *} hist_ms=${h%% *}" > "$tmp/$name.times"
}

# scale_per_event NAME BYTES: bytes per stored event of fill NAME.
scale_per_event() {
	awk -v b="$2" -v n="$(val stored_events "$tmp/$1.fill")" 'BEGIN{printf "%.1f", b / n}'
}

scale_sqlite() {
	local bytes
	echo "sqlite: filling $events events"
	scale_collector --db "$tmp/trace.db"
	scale_fill sqlite
	bytes=$(( $(stat -c %s "$tmp/trace.db") + $(stat -c %s "$tmp/trace.db-wal" 2>/dev/null || echo 0) ))
	echo "bytes=$bytes per_event=$(scale_per_event sqlite "$bytes")" > "$tmp/sqlite.disk"
	echo "  sqlite: $(cat "$tmp/sqlite.disk") (DB file + WAL)"
	scale_queries sqlite
	kill "$scale_pid"; wait "$scale_pid" || true
	scale_pid=
	rm -f "$tmp"/trace.db*	# room for the next store
}

scale_clickhouse() {
	local bytes
	echo "clickhouse: starting Debian's clickhouse-server ($(clickhouse-client --version 2>&1 | head -1))"
	case ${BENCH_CH_COMPRESSION:-lz4} in
	lz4) tc_ch_config_extra= ;;
	zstd) tc_ch_config_extra='<compression><case><min_part_size>10485760</min_part_size><min_part_size_ratio>0</min_part_size_ratio><method>zstd</method></case></compression>' ;;
	*) die "BENCH_CH_COMPRESSION: lz4 or zstd" ;;
	esac
	echo "scale: ch: the server's compression ${BENCH_CH_COMPRESSION:-lz4}"
	# tests/lib.sh's functions are written for set -u only
	set +e
	tc_start_clickhouse
	tc_ch_db_args
	set -e
	echo "clickhouse: filling $events events"
	scale_collector "${ch_db_args[@]}" --journal-size 0
	scale_fill clickhouse
	bytes=$(tc_ch --query "SELECT sum(bytes_on_disk) FROM system.parts
		WHERE active AND database = 'tc'") || die "system.parts"
	echo "bytes=$bytes per_event=$(scale_per_event clickhouse "$bytes")" > "$tmp/clickhouse.disk"
	echo "  clickhouse: $(cat "$tmp/clickhouse.disk") (active parts; largest tables:" \
	     "$(tc_ch --query "SELECT table, sum(rows), sum(bytes_on_disk), count()
		FROM system.parts WHERE active AND database = 'tc'
		GROUP BY table ORDER BY sum(bytes_on_disk) DESC LIMIT 3" | tr '\t\n' ' ;'))"
	scale_queries clickhouse
	kill "$scale_pid"; wait "$scale_pid" || true
	scale_pid=
	kill "$clickhouse_pid"; wait "$clickhouse_pid" || true
	clickhouse_pid=
}

# scale_cleanup: at exit, what is still running stopped, the temp dir removed.
scale_cleanup() {
	local p
	for p in $scale_pid $clickhouse_pid; do kill "$p" 2>/dev/null || true; done
	wait || true
	rm -rf "$tmp"
}

# scale_fs: the "scale: fs" line, the temp dir's filesystem (and for an
# ext4, whether it has a journal).
scale_fs() {
	local fs dev j=
	read -r fs dev < <(findmnt -no FSTYPE,SOURCE -T "$tmp")
	if [ "$fs" = ext4 ] && [ -r "/sys/fs/ext4/${dev##*/}/journal_task" ]; then
		j=$(cat "/sys/fs/ext4/${dev##*/}/journal_task")
		[ "$j" = "<none>" ] && j=" without a journal" || j=" with a journal"
	fi
	echo "scale: fs: $tmp on $dev, $fs$j"
}

bench_scale() {
	local events=${BENCH_EVENTS:-100000000} data n c s
	make -C "$build" -j"$(nproc)" tracecollectd traceq/traceq bench/loadgen >/dev/null
	data=$build/bench-data
	[ -s "$data/formats.txt" ] || "$src/bench/capture.sh" "$data"
	top_srcdir=$src top_builddir=$build
	# shellcheck source=tests/lib.sh
	. "$src/tests/lib.sh"
	tc_have_clickhouse || die "needs clickhouse-server and clickhouse-client (./setup deps)"
	tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/tcbench-scale.XXXXXX")
	scale_pid= clickhouse_pid= tc_pid_vars=()
	trap scale_cleanup EXIT
	"$src/contrib/tracecollect-certs" -d "$tmp/pki" all >/dev/null
	scale_fs
	echo "scale: $events events from $data, ${BENCH_AGENTS:-4} agents; the machine's" \
	     "$(nproc) CPUs are shared with the collector, the server and loadgen"
	scale_sqlite
	scale_clickhouse
	trap - EXIT
	if cmp -s "$tmp/sqlite.count" "$tmp/clickhouse.count" &&
	   cmp -s "$tmp/sqlite.hist" "$tmp/clickhouse.hist"; then
		s=agree
	else
		s=MISMATCH
	fi
	n=$(val stored_events "$tmp/clickhouse.fill")
	c=$(val stored_events "$tmp/sqlite.fill")
	echo "scale: stores' answers: $s; sqlite_hist_ms=$(val hist_ms "$tmp/sqlite.times")"
	echo "scale: events=$n (sqlite $c)"
	echo "scale: ch_events_per_s=$(val events_per_s "$tmp/clickhouse.fill")" \
	     "sqlite_events_per_s=$(val events_per_s "$tmp/sqlite.fill")" \
	     "ch_bytes_per_event=$(val per_event "$tmp/clickhouse.disk")" \
	     "sqlite_bytes_per_event=$(val per_event "$tmp/sqlite.disk")" \
	     "ch_glob_count_ms=$(val count_ms "$tmp/clickhouse.times")" \
	     "sqlite_glob_count_ms=$(val count_ms "$tmp/sqlite.times")" \
	     "ch_hist_ms=$(val hist_ms "$tmp/clickhouse.times")"
	rm -rf "$tmp"
}
