#!/bin/bash
# Per-host limits (tracecollectd --host-limit, issue 14): two simulated
# agents (bench/loadgen, each with a certificate of its own host name) on
# one collector whose limits name only one of them.
#
# Rate: 'limited-* rate=R'. Asserts: between two counts of the limited
# host's stored events (traceq --sync: everything received before the
# first count is in it) it gains at most R * (time between them, measured
# around both counts) + the burst (R) + one page's events; its throttle is
# in traceq --stats (rate_held_pages) and its agent needs at least
# (shipped - burst - a page) / R seconds to ship; the other host's throttle counters
# stay 0 and it stores what it shipped; both agents get DONEs covering
# what they shipped and stored + dropped == shipped for each host (nothing
# acknowledged goes missing because of the throttle).
#
# Quota: 'limited-* quota=Q' from a config file. Asserts: the limited host
# stops being stored (its count does not move between two reads while its
# agent still has pages; quota_held_pages > 0; the log says so once, with
# its name), the other host stores all it shipped meanwhile; after the
# config raises the quota and SIGHUP, the limited host stores the rest:
# stored == shipped, nothing dropped.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_lock
tc_setup hostlimits collector_pid lim_pid free_pid

certs=$top_srcdir/contrib/tracecollect-certs
"$certs" -d "$tmp/pki" ca >/dev/null &&
"$certs" -d "$tmp/pki" server 127.0.0.1 >/dev/null &&
"$certs" -d "$tmp/pki" agent limited-0 >/dev/null &&
mkdir "$tmp/pki2" && cp "$tmp/pki/ca.crt" "$tmp/pki/ca.key" "$tmp/pki2/" &&
"$certs" -d "$tmp/pki2" agent free-0 >/dev/null ||
	{ echo "FAIL: certificate helper"; exit 1; }

rate=2000
pages_limited=400
pages_free=600

# loadgen PKI NAME PAGES OUT: one simulated agent named NAME-0, in the background.
loadgen() {
	"$top_builddir/bench/loadgen" --connect "$listen" --cert "$1/agent-$2-0.crt" \
		--key "$1/agent-$2-0.key" --ca "$1/ca.crt" --data "$top_srcdir/tests/data" \
		--agents 1 --pages "$3" --name "$2" > "$4" 2>&1
}

# shipped FILE: the events the loadgen run in FILE shipped.
shipped() { sed -n 's/^loadgen: agents=.* shipped_events=\([0-9]*\).*/\1/p' "$1"; }

# stored HOST: the events stored for HOST (all three event types of the capture).
stored() {
	local total=0 n ev
	for ev in sched:sched_switch sched:sched_wakeup ftrace:print; do
		n=$(traceq --host "$1" --count "$ev" 2>/dev/null) || n=0
		total=$((total + n))
	done
	echo "$total"
}

# stat HOST KEY: KEY of traceq --stats summed over HOST's CPUs.
stat() {
	traceq --stats | awk -v h="host=$1" -v k="$2" '$1 == h && $2 != "cpu=all" {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) s += kv[2] } }
		END { print s + 0 }'
}

# dropped HOST: every event counted in traceq --drops for HOST.
dropped() {
	traceq --drops | awk -v h="host=$1" '$1 == h { split($NF, kv, "="); s += kv[2] }
		END { print s + 0 }'
}

now_ns() { date +%s%N; }

# wait_for SECONDS CMD: until CMD succeeds (polling), at most SECONDS.
wait_for() {
	local i
	for i in $(seq $(($1 * 10))); do
		eval "$2" && return 0
		sleep 0.1
	done
	return 1
}

# ---- settings: a bad value is refused at start, naming the form expected ----
out=$("$top_builddir/tracecollectd" --foreground --host-rate 5k 2>&1); rc=$?
check "--host-rate 5k is refused ($rc): $out" \
	'[ "$rc" = 2 ] && echo "$out" | grep -q "expected EVENTS\[/s\]"'
printf 'host-limit = web-* quota=lots\n' > "$tmp/bad.conf"
out=$("$top_builddir/tracecollectd" --foreground -C "$tmp/bad.conf" 2>&1); rc=$?
check "a bad host-limit in the config is refused ($rc): $out" \
	'[ "$rc" = 2 ] && echo "$out" | grep -q "bad.conf:1:.*host-limit" &&
	 echo "$out" | grep -q "expected quota=SIZE"'

# ---- rate ----
tc_start_collector --host-limit "limited-* rate=$rate"
loadgen "$tmp/pki2" free "$pages_free" "$tmp/free.out" &
free_pid=$!
loadgen "$tmp/pki" limited "$pages_limited" "$tmp/limited.out" &
lim_pid=$!

# the most events one page of the capture holds (the bucket's debt)
page_max=$(awk -F= '/_entries=/ { if ($2 > m) m = $2 } END { print m + 0 }' \
	"$top_srcdir/tests/data/capture.txt")
wait_for 60 '[ "$(stored limited-0)" -gt 0 ]'
t0=$(now_ns)
n0=$(stored limited-0)
sleep 2
n1=$(stored limited-0)
t1=$(now_ns)
running="finished by then"
kill -0 "$lim_pid" 2>/dev/null && running="still shipping"
bound=$(( rate * (t1 - t0) / 1000000000 + rate + page_max ))
# (the bound holds either way; the agent's own time below shows the throttle)
echo "limited-0: $n0 -> $n1 events stored in $(( (t1 - t0) / 1000000 )) ms" \
	"(bound $bound; the agent $running)"
check "the limited host gains at most rate * elapsed + burst + a page ($((n1 - n0)) <= $bound)" \
	'[ $((n1 - n0)) -le "$bound" ]'

wait "$free_pid"; rc_free=$?; free_pid=
wait "$lim_pid"; rc_lim=$?; lim_pid=
cat "$tmp/free.out" "$tmp/limited.out"
check "the free agent gets DONEs covering what it shipped" '[ "$rc_free" = 0 ]'
check "the limited agent gets DONEs covering what it shipped" '[ "$rc_lim" = 0 ]'
secs=$(sed -n 's/^loadgen: agents=.* seconds=\([0-9.]*\).*/\1/p' "$tmp/limited.out")
shl=$(shipped "$tmp/limited.out")
check "the limited agent needed (shipped - burst - a page) / rate s at least ($secs s)" \
	'awk -v s="$secs" -v n="$shl" -v r="$rate" -v p="$page_max" \
		"BEGIN { exit !(s >= (n - r - p) / r) }"'
sf=$(stored free-0); shf=$(shipped "$tmp/free.out")
sl=$(stored limited-0); shl=$(shipped "$tmp/limited.out")
df=$(dropped free-0); dl=$(dropped limited-0)
check "the free host stored what it shipped ($sf == $shf)" '[ "$sf" = "$shf" ] && [ "$df" = 0 ]'
check "the limited host: stored + dropped == shipped ($sl + $dl == $shl)" \
	'[ $((sl + dl)) = "$shl" ] && [ "$shl" -gt 0 ]'
held=$(stat limited-0 rate_held_pages)
check "traceq --stats shows the limited host's throttle (rate_held_pages=$held)" \
	'[ "$held" -gt 0 ]'
check "traceq --stats: no throttle for the free host" \
	'[ "$(stat free-0 rate_held_pages)" = 0 ] && [ "$(stat free-0 quota_held_pages)" = 0 ]'
kill "$collector_pid"; wait "$collector_pid"; collector_pid=

# ---- quota ----
rm -rf "$tmp/trace.db"*
# the page bytes of a third of what the limited agent ships
quota=$(( pages_limited * 4096 / 3 ))
echo "host-limit = limited-* quota=$quota" > "$tmp/limits.conf"
tc_start_collector -C "$tmp/limits.conf"
loadgen "$tmp/pki" limited "$pages_limited" "$tmp/limited2.out" &
lim_pid=$!
wait_for 120 '[ "$(stat limited-0 quota_held_pages)" -gt 0 ]'
check "traceq --stats shows the limited host held for its quota" \
	'[ "$(stat limited-0 quota_held_pages)" -gt 0 ]'
loadgen "$tmp/pki2" free "$pages_free" "$tmp/free2.out"
rc_free=$?
cat "$tmp/free2.out"
check "the free agent stores at full speed while the other is held" \
	'[ "$rc_free" = 0 ] && [ "$(stored free-0)" = "$(shipped "$tmp/free2.out")" ]'
b0=$(stat limited-0 bytes); n0=$(stored limited-0)
sleep 1
b1=$(stat limited-0 bytes); n1=$(stored limited-0)
kill -0 "$lim_pid" 2>/dev/null
check "the limited agent still has pages to ship" '[ $? = 0 ]'
echo "limited-0: $n0 events, $b0 bytes stored (quota $quota)"
check "the held host stores nothing more ($n0 == $n1, $b0 == $b1)" \
	'[ "$n0" = "$n1" ] && [ "$b0" = "$b1" ]'
check "the held host stored its quota and at most a page more ($quota <= $b0 <= $((quota + 4096)))" \
	'[ "$b0" -ge "$quota" ] && [ "$b0" -le $((quota + 4096)) ]'
check "the log says once that the host is over its quota" \
	'[ "$(grep -c "host limited-0 is over its quota" "$tmp/collector.log")" = 1 ]'

echo "host-limit = limited-* quota=1G" > "$tmp/limits.conf"
kill -HUP "$collector_pid"
wait "$lim_pid"; rc_lim=$?; lim_pid=
cat "$tmp/limited2.out"
sl=$(stored limited-0); shl=$(shipped "$tmp/limited2.out"); dl=$(dropped limited-0)
check "after SIGHUP raised the quota, the limited agent gets its DONEs" '[ "$rc_lim" = 0 ]'
check "... and everything it shipped is stored ($sl + $dl == $shl)" \
	'[ "$sl" = "$shl" ] && [ "$dl" = 0 ]'
grep -E "host limit|quota|hostlimit" "$tmp/collector.log"
exit $failed
