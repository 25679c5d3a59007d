#!/bin/bash
# traceq --serve (issue 37, the page): the HTTP side, asked with curl,
# against a collector holding a real agent's sched events.
#
# Asserts:
#  - it prints http://127.0.0.1:PORT/?token=HEX (32 hex digits) and
#    listens on loopback only;
#  - every request without the token, or with a wrong one, gets 403: the
#    page, its script, /api/stats, /api/query;
#  - /api/stats' rows equal `traceq --stats -f json`'s and its hosts
#    `traceq --hosts -f json`'s;
#  - /api/query's rows, a page at a time (the second page from the
#    first's "after"), equal traceq's text for the same query; --count
#    and --hist answers equal traceq's; a wrong query answers 400 with
#    traceq's error and caret; an argument over 8192 bytes answers 400;
#  - the page's files are served with the token in index.html's links;
#  - /api/export answers traceq --export's trace.dat of a window (trace-cmd
#    report reads as many sched_switch as traceq --count says) and its
#    Perfetto JSON; a wrong format answers 400, a failed export (a host
#    not stored) 400 with traceq --export's error;
#  - /api/live (traceq --follow underneath) answers an event stream that
#    pushes every switch stored after it opened, the rows as traceq -f
#    json prints them, each event's id its cursor; Last-Event-ID resumes
#    after it; a wrong query answers 400 with traceq's caret; no token 403;
#  - SIGTERM stops it with status 0, and ends the live stream cleanly.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v curl >/dev/null || skip "needs curl"
command -v jq >/dev/null || skip "needs jq"
tc_lock
tc_setup serve agent collector_pid serve_pid live_pid

tc_certs
tc_start_collector
tc_run_agent a1 --name serve-host -e sched --duration 2 --instance "tc-serve-$$" ||
	{ cat "$tmp/a1.err"; fail "the agent failed"; exit 1; }
traceq --stats > /dev/null	# --sync: all stored before the page asks

"$top_builddir/traceq/traceq" --server "$query" --serve 127.0.0.1:0 \
	> "$tmp/url" 2> "$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 100); do [ -s "$tmp/url" ] && break; sleep 0.1; done
url=$(head -1 "$tmp/url")
base=${url%%/\?*}
token=${url##*token=}
check "it prints the page's URL with a token ($url)" \
	'[[ "$url" =~ ^http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{32}$ ]]'

# get PATH [CURL ARGS...]: the body into $tmp/body, the status on stdout.
get() {
	local path=$1
	shift
	curl -sS -G -o "$tmp/body" -w '%{http_code}' "$@" "$base$path" 2>> "$tmp/curl.err"
}
# api PATH [NAME=VALUE...]: get with the token and each argument URL-encoded.
api() {
	local path=$1 a args=()
	shift
	for a in "$@"; do args+=(--data-urlencode "$a"); done
	get "$path" --data-urlencode "token=$token" "${args[@]}"
}

for p in / /index.html /app.js /api/stats "/api/query?q=sched_switch"; do
	check "$p without the token gets 403" '[ "$(get "$p")" = 403 ]'
done
check "a wrong token gets 403" \
	'[ "$(get /api/stats --data-urlencode token=00000000000000000000000000000000)" = 403 ]'
check "a token with a byte more gets 403" \
	'[ "$(get /api/stats --data-urlencode "token=${token}0")" = 403 ]'

check "the page is served, its links carry the token" \
	'[ "$(api /)" = 200 ] && grep -q "app.js?token=$token" "$tmp/body"'
check "its script is served" '[ "$(api /app.js)" = 200 ] && grep -q "api/stats" "$tmp/body"'

# ---- the fleet: /api/stats against traceq --stats and --hosts ----
traceq --stats -f json | jq -c . > "$tmp/stats.want"
traceq --hosts -f json | jq -c . > "$tmp/hosts.want"
check "/api/stats answers" '[ "$(api /api/stats)" = 200 ] && jq -e .ok "$tmp/body" >/dev/null'
jq -c '.stats[]' "$tmp/body" > "$tmp/stats.got"
jq -c '.hosts[]' "$tmp/body" > "$tmp/hosts.got"
check "its stats rows equal traceq --stats -f json ($(wc -l < "$tmp/stats.want") rows)" \
	'[ -s "$tmp/stats.want" ] && cmp -s "$tmp/stats.want" "$tmp/stats.got"'
check "its hosts rows equal traceq --hosts -f json" \
	'grep -q serve-host "$tmp/hosts.want" && cmp -s "$tmp/hosts.want" "$tmp/hosts.got"'
check "the host's totals are there (cpu all, events > 0)" \
	'jq -e "[.stats[] | select(.cpu == \"all\" and .host == \"serve-host\" and .events > 0)] |
	 length == 1" "$tmp/body" >/dev/null'

# ---- the query box: /api/query against traceq ----
q="sched_switch where prev_pid != 0 && next_comm ~ \"*\""
traceq --limit 40 "$q" > "$tmp/rows.want"
check "/api/query's first page answers" \
	'[ "$(api /api/query "q=$q" limit=25)" = 200 ] && jq -e ".ok and .more" "$tmp/body" >/dev/null'
jq -j .text "$tmp/body" > "$tmp/rows.got"
after=$(jq -r '"after_ts=\(.after.ts) after_id=\(.after.id) after_type=\(.after.type)"' "$tmp/body")
# shellcheck disable=SC2086
check "its second page answers from the first's after" \
	'[ "$(api /api/query "q=$q" limit=15 $after)" = 200 ] && jq -e .ok "$tmp/body" >/dev/null'
jq -j .text "$tmp/body" >> "$tmp/rows.got"
check "the two pages are traceq's 40 rows ($(wc -l < "$tmp/rows.want") lines)" \
	'[ "$(wc -l < "$tmp/rows.want")" = 40 ] && cmp -s "$tmp/rows.want" "$tmp/rows.got"'

traceq --limit 10 -f json "sched_wakeup" > "$tmp/json.want"
check "format json rows equal traceq -f json" \
	'[ "$(api /api/query q=sched_wakeup limit=10 format=json)" = 200 ] &&
	 jq -j .text "$tmp/body" | cmp -s - "$tmp/json.want"'

n=$(traceq --count sched_switch)
check "mode=count equals traceq --count ($n)" \
	'[ "$(api /api/query q=sched_switch mode=count)" = 200 ] &&
	 [ "$(jq -r .count "$tmp/body")" = "$n" ] && [ "$n" -gt 0 ]'
traceq --hist "keys=common_cpu" sched_switch > "$tmp/hist.want"
check "mode=hist equals traceq --hist" \
	'[ "$(api /api/query q=sched_switch mode=hist hist=keys=common_cpu)" = 200 ] &&
	 jq -j .text "$tmp/body" | cmp -s - "$tmp/hist.want"'

bad="sched_switch where prev_pid = 0"
traceq "$bad" > /dev/null 2> "$tmp/err.want"
check "a wrong query answers 400 with traceq's error and caret" \
	'[ "$(api /api/query "q=$bad")" = 400 ] && jq -e ".ok == false" "$tmp/body" >/dev/null &&
	 jq -j .error "$tmp/body" | cmp -s - "$tmp/err.want"'
check "an unknown event answers 400, saying so" \
	'[ "$(api /api/query q=no_such_event)" = 400 ] && jq -r .error "$tmp/body" | grep -qi "no_such_event"'
long=$(head -c 9000 /dev/zero | tr '\0' a)
check "an argument over 8192 bytes answers 400" \
	'[ "$(api /api/query "q=$long")" = 400 ] && jq -r .error "$tmp/body" | grep -q "longer than"'
check "limit past 5000 answers 400" '[ "$(api /api/query q=sched_switch limit=5001)" = 400 ]'
check "a page after those still answers" '[ "$(api /api/query q=sched_switch mode=count)" = 200 ]'

# ---- downloads: traceq --export of a window ----
since=$(traceq -f json --limit 1 sched_switch | jq -r .ts)
until=$((since + 500000000))
traceq --count --since "@${since}ns" --until "@${until}ns" sched_switch > "$tmp/n.want"
check "/api/export format=tracedat answers a trace.dat of the window" \
	'[ "$(api /api/export format=tracedat "since=@${since}ns" "until=@${until}ns" \
	     host=serve-host)" = 200 ] && cp "$tmp/body" "$tmp/win.dat" &&
	 head -c 10 "$tmp/win.dat" | grep -q "tracing"'
if command -v trace-cmd >/dev/null; then
	check "trace-cmd report reads it: as many sched_switch as traceq --count ($(cat "$tmp/n.want"))" \
		'[ "$(trace-cmd report -i "$tmp/win.dat" 2>/dev/null | grep -c " sched_switch: ")" = \
		   "$(cat "$tmp/n.want")" ]'
else
	tc_skip_part "trace-cmd report of the download" "no trace-cmd"
fi
check "/api/export format=perfetto answers Perfetto's JSON" \
	'[ "$(api /api/export format=perfetto "since=@${since}ns" "until=@${until}ns")" = 200 ] &&
	 jq -e ".systemTraceEvents | length > 0" "$tmp/body" >/dev/null'
check "/api/export without a format answers 400" \
	'[ "$(api /api/export)" = 400 ] && jq -r .error "$tmp/body" | grep -q "tracedat or perfetto"'
check "/api/export of a host not stored answers 400 with the export's error" \
	'[ "$(api /api/export format=tracedat host=no-such-host)" = 400 ] &&
	 jq -r .error "$tmp/body" | grep -q "no host matches --host"'
check "no export is left in TMPDIR" '! ls -d "${TMPDIR:-/tmp}"/traceq-export.* 2>/dev/null'

# ---- live: /api/live pushes what traceq --follow -f json prints ----
# live_data FILE: the rows of FILE's "rows" events (data lines), one a line,
# without "comm": the name of the pid the collector knew when it answered,
# which a later answer may know better (a pid reused, its table come later)
nocomm() { jq -c 'del(.comm)'; }
live_data() { sed -n 's/^data: //p' "$1" | grep '"event"' | nocomm; }
newest=$(traceq -f json sched_switch | jq -s 'map(.ts) | max')
check "/api/live without the token gets 403" '[ "$(get "/api/live?q=sched_switch")" = 403 ]'
check "/api/live of a wrong query answers 400 with traceq's error and caret" \
	'[ "$(api /api/live "q=$bad")" = 400 ] && jq -j .error "$tmp/body" | cmp -s - "$tmp/err.want"'
curl -sS -N -G --max-time 300 "$base/api/live" --data-urlencode "token=$token" \
	--data-urlencode q=sched_switch -D "$tmp/live.hdr" > "$tmp/live.sse" 2>> "$tmp/curl.err" &
live_pid=$!
for _ in $(seq 300); do grep -q '"following"' "$tmp/live.sse" && break; sleep 0.1; done
check "/api/live answers an event stream" \
	'grep -qi "^content-type: text/event-stream" "$tmp/live.hdr"'
tc_run_agent a2 --name serve-host -e sched --duration 1 --instance "tc-serve-live-$$" ||
	fail "the second agent failed"
traceq -f json sched_switch | jq -c "select(.ts > $newest)" | nocomm | sort > "$tmp/live.want"
for _ in $(seq 600); do
	[ "$(live_data "$tmp/live.sse" | wc -l)" -ge "$(wc -l < "$tmp/live.want")" ] && break
	sleep 0.1
done
live_data "$tmp/live.sse" | sort > "$tmp/live.got"
check "/api/live pushed every switch stored after it opened, as traceq -f json prints them \
($(wc -l < "$tmp/live.got") of $(wc -l < "$tmp/live.want") rows)" \
	'[ -s "$tmp/live.want" ] && cmp -s "$tmp/live.want" "$tmp/live.got"'
check "each rows event carries its cursor as its id" \
	'[ "$(grep -c "^event: rows" "$tmp/live.sse")" -gt 0 ] &&
	 [ "$(grep -c "^event: rows" "$tmp/live.sse")" = "$(grep -c "^id: [0-9]" "$tmp/live.sse")" ]'
# a reconnecting EventSource sends the last id back: the stream goes on from there
first=$(sed -n 's/^id: //p' "$tmp/live.sse" | head -1)
curl -sS -N -G --max-time 5 "$base/api/live" -H "Last-Event-ID: $first" \
	--data-urlencode "token=$token" --data-urlencode q=sched_switch > "$tmp/live2.sse" 2>/dev/null
awk -v id="$first" '$0 == "id: " id { on = 1; next } on == 1 && $0 == "" { on = 2; next }
	on == 2 && /^data: / { print substr($0, 7) }' "$tmp/live.sse" | grep '"event"' |
	nocomm > "$tmp/live.rest"
check "Last-Event-ID resumes the stream after that cursor" \
	'[ -s "$tmp/live.rest" ] && cmp -s <(head -n "$(wc -l < "$tmp/live.rest")" \
	   <(live_data "$tmp/live2.sse")) "$tmp/live.rest"'

kill -TERM "$serve_pid"
wait "$serve_pid"
rc=$?
serve_pid=
check "SIGTERM stops it with status 0 (was $rc)" '[ "$rc" = 0 ]'
wait "$live_pid"
rc=$?
check "and ends the live stream cleanly (curl's status $rc)" '[ "$rc" = 0 ]'
[ "$failed" = 0 ] || { diff "$tmp/rows.want" "$tmp/rows.got" | head
	diff "$tmp/live.want" "$tmp/live.got" | head -4 | cut -c1-400
	diff "$tmp/live.rest" <(live_data "$tmp/live2.sse") | head -4 | cut -c1-400; cat "$tmp/serve.err" "$tmp/curl.err" 2>/dev/null; exit 1; }
