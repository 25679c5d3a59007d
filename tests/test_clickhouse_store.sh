#!/bin/bash
# End-to-end on the ClickHouse store (issue 32, the writer side): a real
# clickhouse-server (Debian's, started here with a config made in $tmp, on
# free loopback ports, its own data directory; stopped at the end), a real
# tracecollectd with --db clickhouse://, a real traceagent tracing
# sched_switch in its own tracefs instance.
#
# Asserts: the events stored in ClickHouse (counted with its own SQL) ==
# the events the agent shipped, and no event twice (distinct (host, cpu,
# trace_ts, table) == stored); traceq --hosts and --stats answer from
# ClickHouse (the host, stored events == shipped); then, the collector
# killed (-9) while an agent streams and started again, and ClickHouse
# killed (-9) and restarted while another streams: stored == shipped and
# distinct == stored, each time; every commit row is whole (no row of a
# commit past the last one in commits); no password in the collector's
# log; max-event-types caps a host's types (schema-cap drops). Skips,
# saying why, when clickhouse-server is not installed.
#
# Starts its own server (ch_start below) until tests/lib.sh has
# tc_start_clickhouse (branch ch-query), which should then replace it.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

command -v clickhouse-server >/dev/null ||
	skip "clickhouse-server is not installed (apt-get install clickhouse-server)"
tc_need_tracefs
tc_lock
tc_setup clickhouse_store agent collector_pid ch_pid

# A free loopback TCP port.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ch_start: clickhouse-server on free loopback ports with its data in
# $tmp/ch (kept across restarts); sets ch_pid, ch_http.
ch_start() {
	local d=$tmp/ch
	mkdir -p "$d/data" "$d/tmp" "$d/log" "$d/user_files" "$d/fs"
	if [ ! -f "$d/config.xml" ]; then
		ch_http=$(free_port)
		cat > "$d/users.xml" <<-X
		<yandex>
		 <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
		 <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
		  <profile>default</profile><quota>default</quota></default>
		  <tc><password>pw-$$-secret</password><networks><ip>127.0.0.1</ip></networks>
		  <profile>default</profile><quota>default</quota></tc></users>
		 <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
		  <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
		 </interval></default></quotas>
		</yandex>
		X
		cat > "$d/config.xml" <<-X
		<yandex>
		 <logger><level>warning</level><log>$d/log/server.log</log>
		  <errorlog>$d/log/err.log</errorlog><console>0</console></logger>
		 <http_port>$ch_http</http_port><tcp_port>$(free_port)</tcp_port>
		 <listen_host>127.0.0.1</listen_host>
		 <path>$d/data/</path><tmp_path>$d/tmp/</tmp_path>
		 <user_files_path>$d/user_files/</user_files_path><format_schema_path>$d/fs/</format_schema_path>
		 <users_config>$d/users.xml</users_config>
		 <default_profile>default</default_profile><default_database>default</default_database>
		 <mark_cache_size>268435456</mark_cache_size><timezone>UTC</timezone>
		</yandex>
		X
	fi
	clickhouse-server --config-file="$d/config.xml" > "$d/log/stdout" 2>&1 &
	ch_pid=$!
	for _ in $(seq 100); do
		[ "$(ch_sql 'SELECT 1' 2>/dev/null)" = 1 ] && return 0
		kill -0 "$ch_pid" 2>/dev/null || break
		sleep 0.2
	done
	cat "$d/log/err.log" "$d/log/stdout" 2>/dev/null | tail -20
	echo "FAIL: clickhouse-server did not start"
	exit 1
}

# ch_sql SQL: run SQL on the test's server (user tc; tables as tc.T), TabSeparated out.
ch_sql() {
	curl -sS -u "tc:pw-$$-secret" "http://127.0.0.1:$ch_http/" --data-binary "$1"
}

# stored events: every event table's rows; distinct: by table, host, cpu, trace_ts
ch_stored() {
	ch_sql "SELECT count() FROM merge('tc', '^ev_')"
}
ch_distinct() {
	ch_sql "SELECT count() FROM (SELECT DISTINCT _table, host_id, cpu, trace_ts
		FROM merge('tc', '^ev_'))"
}

ch_start
echo "clickhouse-server: http on 127.0.0.1:$ch_http"
printf 'pw-%s-secret\n' "$$" > "$tmp/ch.pw"
chmod 600 "$tmp/ch.pw"
db="clickhouse://tc@127.0.0.1:$ch_http/tc"
tc_certs
start_collector() {
	tc_start_collector --db "$db" --db-password-file "$tmp/ch.pw" \
		--journal-dir "$tmp/journal" "$@"
}
start_collector
echo "collector: agents on $listen, queries on $query"

( for _ in $(seq 200); do sleep 0.005; done ) &
workload=$!
tc_run_agent agent -e sched:sched_switch --duration 3 --name ch-host --no-user \
	--instance "tc-chs-$$-a"
agent_rc=$?
wait "$workload"
check "agent exits 0" '[ "$agent_rc" = 0 ] || { cat "$tmp/agent.err"; false; }'
shipped=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/agent.out")
check "agent shipped events ($shipped)" '[ -n "$shipped" ] && [ "$shipped" -gt 0 ]'

traceq --hosts > "$tmp/hosts.txt"; rc=$?
check "traceq --hosts exits 0 on ClickHouse" '[ "$rc" = 0 ] || cat "$tmp/hosts.txt"'
check "traceq --hosts lists ch-host" 'grep -q "ch-host" "$tmp/hosts.txt"'
# the collector measured the agent's clock (issue 36): kept in ClickHouse
traceq --hosts -f json > "$tmp/hosts.json" 2>&1
clk=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["host"] == "ch-host":
        print(r["clock_source"], r["clock_uncertainty_ns"])' "$tmp/hosts.json")
# (its realtime is the collector's: the host's own clock places its events)
unc=$(ch_sql "SELECT argMax(uncertainty_ns, version) FROM tc.clock_points")
check "--hosts: ch-host placed by its own clock, the uncertainty of its latest clock_points row ($clk; $unc)" \
	'[ -n "$unc" ] && [ "$clk" = "host $unc" ]'
stored=$(ch_stored)
check "stored in ClickHouse ($stored) == shipped ($shipped)" '[ "$stored" = "$shipped" ]'
distinct=$(ch_distinct)
check "no event twice (distinct $distinct == stored $stored)" '[ "$distinct" = "$stored" ]'
traceq --stats > "$tmp/stats.txt" 2>&1; rc=$?
check "traceq --stats exits 0 on ClickHouse" '[ "$rc" = 0 ] || cat "$tmp/stats.txt"'
check "traceq --stats names ch-host" 'grep -q "ch-host" "$tmp/stats.txt"'
check "no password in the collector's log" '! grep -q "pw-$$-secret" "$tmp/collector.log"'

# kill -9 of the collector while an agent streams, then start it again
before=$(ch_stored)
tc_start_agent agent2 -e sched:sched_switch --duration 6 --name ch-host2 --no-user \
	--instance "tc-chs-$$-b"
sleep 2.5
kill -9 "$collector_pid"; wait "$collector_pid" 2>/dev/null
# commit ids are never reused: every id a row carries is reserved in commit_ids
# (even one a kill left without a commits row), and the restart numbers above it
pre_last=$(ch_sql "SELECT max(id) FROM tc.commits")
used=$(ch_sql "SELECT max(_tc_commit) FROM merge('tc', '^ev_')")
for t in cpu_counts drops freed stream_marks journal_marks; do
	u=$(ch_sql "SELECT max(_tc_commit) FROM tc.$t")
	[ "${u:-0}" -gt "${used:-0}" ] && used=$u
done
hw=$(ch_sql "SELECT max(hw) FROM tc.commit_ids")
check "every commit id a row carries is reserved ($used <= $hw)" \
	'[ -n "$hw" ] && [ "$used" -le "$hw" ]'
start_collector --listen "$listen"	# the same port: the agent reconnects and resends
wait "$agent"; agent_rc=$?; agent=
check "agent 2 exits 0 across the collector's kill -9" '[ "$agent_rc" = 0 ] || cat "$tmp/agent2.err"'
shipped2=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/agent2.out")
traceq --hosts > /dev/null	# --sync: what the journal holds is stored
stored=$(ch_stored)
check "after the collector's kill -9: stored ($((stored - before))) == shipped ($shipped2)" \
	'[ -n "$shipped2" ] && [ "$((stored - before))" = "$shipped2" ]'
distinct=$(ch_distinct)
check "after the collector's kill -9: no event twice ($distinct == $stored)" \
	'[ "$distinct" = "$stored" ]'
first_new=$(ch_sql "SELECT min(id) FROM tc.commits WHERE id > $pre_last")
check "the restarted collector numbers above every id used before ($first_new > $used)" \
	'[ -n "$first_new" ] && [ "$first_new" -gt "$used" ]'
dup_ids=$(ch_sql "SELECT count() - uniqExact(id) FROM tc.commits")
not_up=$(ch_sql "SELECT arrayExists((a, b) -> b <= a, arrayPopBack(s), arrayPopFront(s))
	FROM (SELECT arraySort((i, t) -> t, groupArray(id), groupArray(ts)) AS s FROM tc.commits)")
check "commit ids: none twice ($dup_ids), increasing in commit order (a drop: $not_up)" \
	'[ "$dup_ids" = 0 ] && [ "$not_up" = 0 ]'

# kill -9 of ClickHouse while an agent streams, then start it again
before=$stored
tc_start_agent agent3 -e sched:sched_switch --duration 6 --name ch-host3 --no-user \
	--instance "tc-chs-$$-c"
sleep 2.5
kill -9 "$ch_pid"; wait "$ch_pid" 2>/dev/null
sleep 1.5
ch_start
wait "$agent"; agent_rc=$?; agent=
check "agent 3 exits 0 across ClickHouse's kill -9" '[ "$agent_rc" = 0 ] || cat "$tmp/agent3.err"'
shipped3=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/agent3.out")
traceq --hosts > /dev/null
stored=$(ch_stored)
check "after ClickHouse's kill -9: stored ($((stored - before))) == shipped ($shipped3)" \
	'[ -n "$shipped3" ] && [ "$((stored - before))" = "$shipped3" ]'
distinct=$(ch_distinct)
check "after ClickHouse's kill -9: no event twice ($distinct == $stored)" \
	'[ "$distinct" = "$stored" ]'
check "the collector said storing was held up, once per outage" \
	'[ "$(grep -c "storing is held up" "$tmp/collector.log")" = 1 ]'
orphans=$(ch_sql "SELECT count() FROM merge('tc', '^ev_') WHERE _tc_commit > (SELECT max(id) FROM tc.commits)")
check "no event row of an unfinished commit ($orphans)" '[ "$orphans" = 0 ]'

# max-event-types on ClickHouse: a new host with two types, a cap of one
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
start_collector --max-event-types 1
tc_run_agent agent4 -e sched:sched_switch -e sched:sched_wakeup --duration 2 --name ch-host4 \
	--no-user --instance "tc-chs-$$-d"
traceq --drops > "$tmp/drops.txt" 2>&1
check "max-event-types 1: a host's second type is counted as a schema-cap drop" \
	'grep "ch-host4" "$tmp/drops.txt" | grep -q "schema-cap"'

kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
check "the collector's log has no sanitizer report (a --enable-sanitizers build)" \
	'! grep -q "Sanitizer\|runtime error:" "$tmp/collector.log"'
kill "$ch_pid"; wait "$ch_pid" 2>/dev/null; ch_pid=
[ "$failed" = 0 ] || { tail -40 "$tmp/collector.log"; exit 1; }
