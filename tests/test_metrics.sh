#!/bin/bash
# tracecollectd --metrics (issue 37): /metrics in Prometheus's text format
# and /healthz, with real certificates, a real agent and Debian's promtool.
#
# Asserts:
#  - plain HTTP off loopback (0.0.0.0, another address, on the command line
#    or in the config file) and a right for a local user are refused at
#    start (exit 2, saying why); nothing listens;
#  - after a real agent run, `promtool check metrics` passes, and every
#    per-host counter equals what `traceq --stats` (summed over CPUs) and
#    `traceq --drops` say; the host's agent version is a label of
#    tracecollect_host_info; no series has a cpu label;
#  - a host name with a double quote, a backslash and a line break (an
#    import's) comes out escaped, and promtool still passes;
#  - 1,000 scrapes at once while an agent ships a known number of events
#    (trace_marker writes) all answer 200, and the collector stores as
#    many events as in the same run without them (counts only);
#  - over HTTPS: a query client certificate that a `metrics = cert:CN`
#    line names gets 200; one that no line names gets 403, and so does an
#    agent's certificate; no certificate fails the TLS handshake; plain
#    HTTP to the HTTPS port gets no answer.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v promtool >/dev/null || skip "needs promtool (Debian package prometheus)"
command -v curl >/dev/null || skip "needs curl"
command -v jq >/dev/null || skip "needs jq"
command -v python3 >/dev/null || skip "needs python3"
tc_lock
tc_setup metrics agent collector_pid storm

tc_certs
tc_certs_run client prom >/dev/null && tc_certs_run client other >/dev/null ||
	{ echo "FAIL: certificate helper (clients)"; exit 1; }
pki=$tmp/pki
collectd=$top_builddir/tracecollectd

# refused CMDLINE...: tracecollectd exits 2 at start, saying why in $tmp/refused.
refused() {
	"$collectd" --foreground --listen 127.0.0.1:0 --query "tcp://127.0.0.1:0" \
		--db "$tmp/refused.db" --cert "$pki/server.crt" --key "$pki/server.key" \
		--ca "$pki/ca.crt" "$@" > "$tmp/refused" 2>&1
	[ $? = 2 ] && [ ! -e "$tmp/refused.db" ]
}
check "plain HTTP on 0.0.0.0 is refused at start" \
	'refused --metrics 0.0.0.0:0 && grep -q "plain HTTP.*numeric loopback" "$tmp/refused"'
check "plain HTTP on 192.0.2.1 (http://) is refused at start" \
	'refused --metrics http://192.0.2.1:9100 && grep -q "plain HTTP" "$tmp/refused"'
check "a name (localhost) is not taken for loopback" \
	'refused --metrics localhost:0 && grep -q "plain HTTP" "$tmp/refused"'
printf 'metrics = [::]:9100\n' > "$tmp/bad.conf"
check "metrics = [::]:9100 in the config file is refused at start" \
	'refused -C "$tmp/bad.conf" && grep -q "plain HTTP" "$tmp/refused"'
check "metrics = user:NAME (a local user) is refused at start" \
	'refused --metrics user:root && grep -q "cert:CN" "$tmp/refused"'

# scrape URL [CURL ARGS...]: the body into $tmp/body, the status on stdout.
scrape() {
	local url=$1
	shift
	curl -sS -o "$tmp/body" -w '%{http_code}' "$@" "$url" 2>"$tmp/curl.err"
}

# metric NAME HOST: the value of NAME{host="HOST"} in $tmp/body.
metric() {
	awk -v k="$1{host=\"$2\"}" '$1 == k { print $2 }' "$tmp/body"
}

# ---- plain HTTP on loopback: a real agent, the counters, promtool ----

mkdir -m 755 "$tmp/run"
tc_start_collector --query "ipc://$tmp/run/query.sock" --metrics 127.0.0.1:0
query="ipc://$tmp/run/query.sock"
murl=$(sed -n 's/^metrics=//p' "$tmp/ready")
check "the ready file says where /metrics is ($murl)" '[[ "$murl" == http://127.0.0.1:* ]]'
check "an empty store's /metrics passes promtool" \
	'[ "$(scrape "$murl/metrics")" = 200 ] && promtool check metrics < "$tmp/body" &&
	 grep -qx "tracecollect_hosts 0" "$tmp/body"'

tc_run_agent agent -e sched:sched_switch --duration 2 --name tc-metrics --no-user \
	--instance "tc-metrics-$$-a"
rc=$?
check "an agent of tc-metrics ships sched_switch for 2 s (exit $rc)" \
	'[ "$rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
traceq -f json --stats > "$tmp/stats.json"
traceq -f json --drops > "$tmp/drops.json"
traceq -f json --hosts > "$tmp/hosts.json"

check "GET /healthz says ok" '[ "$(scrape "$murl/healthz")" = 200 ] && [ "$(cat "$tmp/body")" = ok ]'
check "GET /nothing is 404" '[ "$(scrape "$murl/nothing")" = 404 ]'
check "GET /metrics is 200 in the text format 0.0.4" \
	'[ "$(scrape "$murl/metrics" -D "$tmp/headers")" = 200 ] &&
	 grep -qi "^content-type: text/plain; version=0.0.4" "$tmp/headers"'
cp "$tmp/body" "$tmp/scrape1"
promtool check metrics < "$tmp/scrape1" > "$tmp/promtool" 2>&1; rc=$?
check "promtool check metrics passes ($(head -c 300 "$tmp/promtool"))" '[ "$rc" = 0 ]'
check "no series is per CPU" '! grep -q "cpu=" "$tmp/scrape1"'

# the sum over the host's CPU rows of traceq --stats' KEY
stat_sum() {
	jq -s --arg k "$1" '[.[] | select(.host == "tc-metrics" and .cpu != "all") | .[$k]] | add // 0' \
		"$tmp/stats.json"
}
drop_sum() {
	jq -s --arg r "$1" '[.[] | select(.host == "tc-metrics" and .reason == $r) | .count] |
		add // 0' "$tmp/drops.json"
}
for pair in events_received_total:agent_events events_stored_total:events \
	    pages_received_total:agent_pages pages_stored_total:pages \
	    bytes_received_total:agent_bytes bytes_stored_total:bytes \
	    kernel_overruns_total:overrun lost_pages_total:lost_pages bad_pages_total:bad_pages; do
	name=tracecollect_${pair%%:*} key=${pair#*:}
	want=$(stat_sum "$key") got=$(metric "$name" tc-metrics)
	check "$name ($got) == traceq --stats $key ($want)" '[ -n "$got" ] && [ "$got" = "$want" ]'
done
for pair in events_filtered_total:filter events_aged_out_total:retention; do
	name=tracecollect_${pair%%:*} reason=${pair#*:}
	want=$(drop_sum "$reason") got=$(metric "$name" tc-metrics)
	check "$name ($got) == traceq --drops $reason ($want)" '[ -n "$got" ] && [ "$got" = "$want" ]'
done
stored=$(metric tracecollect_events_stored_total tc-metrics)
check "events were stored ($stored)" '[ "${stored:-0}" -gt 0 ]'
check "the agent's version is a label of tracecollect_host_info" \
	'grep -qE "^tracecollect_host_info\{host=\"tc-metrics\",agent_version=\"traceagent [^\"]+\"\} 1$" "$tmp/scrape1"'
check "the host is not connected any more; agents_connected 0" \
	'[ "$(metric tracecollect_host_connected tc-metrics)" = 0 ] &&
	 grep -qx "tracecollect_agents_connected 0" "$tmp/scrape1"'
check "last_seen is a Unix time of today" \
	'[ "$(metric tracecollect_host_last_seen_seconds tc-metrics | cut -d. -f1)" -gt $(( $(date +%s) - 86400 )) ]'
# the collector's own clock measurement, as traceq --hosts reports it
# (nanoseconds there, seconds here)
for pair in disagree:clock_disagree_ns uncertainty:clock_uncertainty_ns; do
	name=tracecollect_host_clock_${pair%%:*}_seconds key=${pair#*:}
	want=$(jq -r --arg k "$key" 'select(.host == "tc-metrics") | .[$k] // empty' "$tmp/hosts.json" | head -1)
	got=$(metric "$name" tc-metrics)
	check "$name ($got s) == traceq --hosts $key ($want ns)" \
		'[ -n "$want" ] && [ -n "$got" ] &&
		 [ "$(awk -v g="$got" "BEGIN { printf \"%.0f\", g * 1e9 }")" = "$want" ]'
done
check "commits were timed" \
	'awk "\$1 == \"tracecollect_commit_duration_seconds_count\" && \$2 > 0 { ok = 1 } END { exit !ok }" "$tmp/scrape1"'
check "queries were timed (traceq --stats, --drops)" \
	'awk "\$1 == \"tracecollect_query_duration_seconds_count\" && \$2 >= 2 { ok = 1 } END { exit !ok }" "$tmp/scrape1"'
check "the store's size is there" \
	'awk "\$1 == \"tracecollect_store_bytes\" && \$2 > 0 { ok = 1 } END { exit !ok }" "$tmp/scrape1"'

# a peer's host name with a double quote, a backslash and a line break
host=$'we"ird\\host\nX'
"$top_builddir/traceq/traceq" --server "$query" --import \
	"$top_srcdir/tests/fuzz/corpus/tracedat/v7zstd.dat" --name "$host" > "$tmp/imp.out" 2>&1
rc=$?
check "a recording imports under a name with \", \\ and a line break (exit $rc)" '[ "$rc" = 0 ]'
scrape "$murl/metrics" > /dev/null
promtool check metrics < "$tmp/body" > "$tmp/promtool" 2>&1; rc=$?
check "promtool still passes ($(head -c 300 "$tmp/promtool"))" '[ "$rc" = 0 ]'
check "the name is escaped in its label (traceq's escaping, then the format's)" \
	'grep -qF "tracecollect_events_stored_total{host=\"we\\\"ird\\\\\\\\host\\\\nX\"}" "$tmp/body"'

# ---- 1,000 scrapes at once do not slow ingest: counts with and without ----

# marks HOST: an agent of HOST in its own instance; 20000 trace_marker
# writes; the agent stopped (it drains) and what was stored counted in
# $stored_marks.
marks=20000
marks() {
	local inst="tc-metrics-$$-$1" rc
	tc_start_agent "marks-$1" -e ftrace:print --name "$1" --instance "$inst" --no-user \
		--buffer-kb 8192
	for _ in $(seq 100); do
		[ "$(cat "$tracing/instances/$inst/tracing_on" 2>/dev/null)" = 1 ] && break
		sleep 0.1
	done
	python3 - "$tracing/instances/$inst/trace_marker" "$marks" <<'EOF'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
for i in range(int(sys.argv[2])):
    for _ in range(100):	# EBADF while the agent still sets its buffer up
        try:
            os.write(fd, b"mark %d" % i)
            break
        except OSError:
            time.sleep(0.05)
os.close(fd)
EOF
	kill -INT "$agent"
	wait "$agent"; rc=$?
	agent=
	check "agent of $1 exits 0" '[ "$rc" = 0 ] || { tail -5 "$tmp/marks-$1.err"; false; }'
	stored_marks=$(traceq --count -H "$1" print)
}

marks calm
calm=$stored_marks
check "without scrapes: every mark is stored ($calm of $marks)" '[ "$calm" = "$marks" ]'

for _ in $(seq 1000); do echo "url = \"$murl/metrics\""; echo "output = /dev/null"; done \
	> "$tmp/storm.cfg"
# rounds of 1,000 parallel scrapes until $tmp/stop, each status a line of $tmp/storm.codes
( while :; do
	curl -s --parallel --parallel-immediate --parallel-max 1000 -K "$tmp/storm.cfg" \
		-w '%{http_code}\n' >> "$tmp/storm.codes" 2>/dev/null
	[ -e "$tmp/stop" ] && break
  done ) &
storm=$!
for _ in $(seq 300); do	# the first answers are in: the storm is on
	[ -s "$tmp/storm.codes" ] && break
	sleep 0.1
done
marks busy
touch "$tmp/stop"
wait "$storm"
storm=
busy=$stored_marks
answers=$(wc -l < "$tmp/storm.codes")
ok=$(grep -cx 200 "$tmp/storm.codes")
check "at least one round of 1,000 parallel scrapes ($answers answers)" '[ "$answers" -ge 1000 ]'
check "every scrape answered 200 ($ok of $answers)" '[ "$ok" = "$answers" ]'
check "with 1,000 parallel scrapes as many marks are stored as without ($busy == $calm)" \
	'[ "$busy" = "$calm" ]'
scrape "$murl/metrics" > /dev/null
check "neither run lost pages or events in the kernel" \
	'for h in calm busy; do
		[ "$(metric tracecollect_lost_pages_total $h)" = 0 ] &&
		[ "$(metric tracecollect_kernel_overruns_total $h)" = 0 ] || exit 1
	 done'
kill "$collector_pid"; wait "$collector_pid"; collector_pid=

# ---- HTTPS: client certificates of the query CA with a metrics right ----

tc_start_collector --metrics https://127.0.0.1:0 --metrics cert:prom
surl=$(sed -n 's/^metrics=//p' "$tmp/ready")
tls() { scrape "$surl/metrics" --cacert "$pki/ca.crt" --cert "$pki/$1.crt" --key "$pki/$1.key"; }
check "the ready file says https ($surl)" '[[ "$surl" == https://127.0.0.1:* ]]'
check "a certificate with the right gets 200" '[ "$(tls client-prom)" = 200 ]'
promtool check metrics < "$tmp/body" > "$tmp/promtool" 2>&1; rc=$?
check "promtool passes over HTTPS too" '[ "$rc" = 0 ]'
check "a certificate without the right gets 403, saying why" \
	'[ "$(tls client-other)" = 403 ] && grep -q "no .metrics = cert:CN. line" "$tmp/body"'
check "an agent's certificate gets 403, saying why" \
	'[ "$(tls agent-tc-agent)" = 403 ] && grep -q "made for an agent" "$tmp/body"'
check "no certificate: the TLS handshake fails" \
	'[ "$(scrape "$surl/metrics" --cacert "$pki/ca.crt")" = 000 ]'
check "plain HTTP to the HTTPS port gets no answer" \
	'[ "$(scrape "http://${surl#https://}/metrics")" = 000 ]'
check "the refusal is logged" 'grep -q "scrape from .* refused" "$tmp/collector.log"'
kill -HUP "$collector_pid"
for _ in $(seq 50); do	# the reload is logged once done
	grep -q "reload: certificate" "$tmp/collector.log" && break
	sleep 0.1
done
check "after SIGHUP (certificates read again) the right still gets 200" \
	'[ "$(tls client-prom)" = 200 ]'
check "the collector is still up" 'kill -0 "$collector_pid"'
check "no sanitizer report in the collector's log" \
	'! grep -qE "runtime error|Sanitizer" "$tmp/collector.log"'

[ "$failed" = 0 ] || { tail -20 "$tmp/collector.log"; exit 1; }
echo "PASS: /metrics is Prometheus's, says what traceq --stats says, and only to whom it may"
