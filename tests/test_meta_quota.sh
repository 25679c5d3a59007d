#!/bin/bash
# Metadata counts against a host's limits (issue 30). Two simulated agents
# (bench/loadgen --meta) each send 40 rounds of metadata, each round a
# CMDLINES of 4096 new pids, 1024 new kernel symbols and 1024 new printk
# formats (~6 MB in all), before their pages: host meta-q under
# quota=1M, host meta-r under rate=10 (events/s). Metadata is charged like
# pages (an event per 64 bytes; its bytes count as stored for the quota),
# so both are held early: the database, its WAL and the receive journal
# stay small (175 MB and 400 MB of WAL in the attack), meta-q's held
# messages are counted
# (traceq --stats quota_held_pages) and logged, and another host is
# served meanwhile.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_lock
tc_setup meta_quota q_pid r_pid collector_pid
tc_certs
tc_start_collector --host-limit 'meta-q-* quota=1M' --host-limit 'meta-r-* rate=10'

lg() {
	"$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
		--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" \
		--data "$top_srcdir/tests/data" "$@"
}
# lg_bg OUT ARGS...: lg in the background, its pid in bg_pid
lg_bg() {
	local out=$1
	shift
	"$top_builddir/bench/loadgen" --connect "$listen" --cert "$tmp/pki/agent-tc-agent.crt" \
		--key "$tmp/pki/agent-tc-agent.key" --ca "$tmp/pki/ca.crt" \
		--data "$top_srcdir/tests/data" "$@" > "$out" 2>&1 &
	bg_pid=$!
}
size() { du -cb "$tmp"/trace.db* 2>/dev/null | tail -1 | cut -f1; }

lg --agents 1 --pages 5 --name warm > "$tmp/warm.out" 2>&1
before=$(size)
lg_bg "$tmp/q.out" --agents 1 --pages 5 --meta 40 --name meta-q
q_pid=$bg_pid
lg_bg "$tmp/r.out" --agents 1 --pages 5 --meta 40 --name meta-r
r_pid=$bg_pid
for _ in $(seq 50); do		# 5 s of flooding (or until both are done)
	kill -0 "$q_pid" 2>/dev/null || kill -0 "$r_pid" 2>/dev/null || break
	sleep 0.1
done
lg --agents 1 --pages 20 --name other > "$tmp/other.out" 2>&1
check "meanwhile another host is stored" '[ $? = 0 ] || { cat "$tmp/other.out"; false; }'
check "meta-q is held at its quota (logged)" \
	'grep -q "host meta-q-0 is over its quota" "$tmp/collector.log"'
kill "$q_pid" "$r_pid"; wait "$q_pid" "$r_pid" 2>/dev/null
q_pid= r_pid=
traceq --stats > "$tmp/stats.out"	# everything received is stored
after=$(size)
echo "database, WAL and journal: $before bytes before the flood, $after after"
# 1 MB of metadata is ~2.5 MB of rows and indexes, and SQLite's WAL holds
# copies of the pages written until its checkpoint
check "the two floods added less than 8 MB ($((after - before)) bytes)" \
	'[ $((after - before)) -lt 8388608 ]'
held=$(sed -n 's/^host=meta-q-0 cpu=all .*quota_held_pages=\([0-9]*\) .*/\1/p' "$tmp/stats.out")
echo "meta-q-0 quota_held_pages: ${held:-none}"
check "the held metadata is counted in --stats" '[ "${held:-0}" -gt 0 ]'

exit $failed
