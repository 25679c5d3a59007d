# shellcheck shell=bash disable=SC2154  # $src, $build, die come from bench/run
# bench/page.sh - `bench/run page`, sourced by bench/run after
# bench/query.sh (it records with its qbench_record) and bench/export.sh
# (its collector is xbench_collector's): traceq --serve's
# timeline in headless chromium (puppeteer-core from tests/browser/) over
# a window of BENCH_PAGE_EVENTS (default 1M) events, imported from
# trace-cmd's recording of the query benchmark's workload. What it
# measures is in bench/run's header.

bench_page() {
	local events=${BENCH_PAGE_EVENTS:-1000000} data url stored switches
	local first last bdir
	mkdir -p "$build"
	[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi >/dev/null)
	[ -f "$build/Makefile" ] || (cd "$build" && "$src/configure" CFLAGS="-O2 -g" >/dev/null)
	make -C "$build" -j"$(nproc)" tracecollectd traceq/traceq >/dev/null
	command -v chromium >/dev/null || die "needs chromium (Debian package chromium)"
	command -v node >/dev/null || die "needs node (Debian package nodejs)"
	bdir=$src/tests/browser
	[ -d "$bdir/node_modules/puppeteer-core" ] ||
		(cd "$bdir" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null) ||
		die "npm ci in tests/browser failed"
	command -v trace-cmd >/dev/null || apt-get install -y -qq trace-cmd >/dev/null
	data=$build/bench-page-data
	if [ "$(cat "$data/events" 2>/dev/null)" != "$events" ]; then
		qbench_record "$data" "$events"
	fi
	xbench_collector page	# bench/export.sh
	tq --import "$data/trace.dat" --name bench-p > /dev/null
	stored=$(tq --sync --count -H bench-p '*')
	switches=$(tq --count -H bench-p sched_switch)
	first=$(tq -f json --limit 1 -H bench-p '*' | sed -n 's/.*"ts":\([0-9]*\).*/\1/p')
	last=$(tq -f json --limit 1 --reverse -H bench-p '*' | sed -n 's/.*"ts":\([0-9]*\).*/\1/p')
	echo "window: $stored events ($switches sched_switch) over $(( (last - first) / 1000000 )) ms"
	"$build/traceq/traceq" -t 3600000 --server "$query" --serve 127.0.0.1:0 \
		> "$tmp/url" 2> "$tmp/serve.err" &
	xb_pid="$xb_pid $!"
	for _ in $(seq 100); do [ -s "$tmp/url" ] && break; sleep 0.1; done
	url=$(head -1 "$tmp/url")
	[ -n "$url" ] || die "traceq --serve did not start: $(cat "$tmp/serve.err")"
	cp "$src/bench/page.mjs" "$bdir/bench-page.mjs"
	(cd "$bdir" && node bench-page.mjs "$url" "$first" "$((last + 1))" "$stored" \
		"$(command -v chromium)") || { rm -f "$bdir/bench-page.mjs"; die "the browser run failed"; }
	rm -f "$bdir/bench-page.mjs"
}
