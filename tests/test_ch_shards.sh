#!/bin/bash
# A ClickHouse store over two servers, the shards (issue 32,
# server/store/clickhouse_shards.h): two clickhouse-servers of the test's
# own on loopback, each with the cluster tc_shards of both in its
# remote_servers, and a collector on
# clickhouse://USER@HOST:PORT1,HOST:PORT2/tc?cluster=tc_shards.
# Four trace-cmd recordings (sched and timer events, in a tracefs instance
# of the test's own) imported as four hosts into the sharded collector,
# then into one on SQLite; a live agent on real kernel events into the
# sharded one.
#
# Asserts:
#  - the collector starts on the shards, the imports exit 0;
#  - each shard's database tc_shard holds event rows, and the first
#    server's tc holds the Distributed tables (reads go through them);
#  - for each query (all hosts, filters of each kind, COMM, CPU, a
#    subsystem, one host), the count from the shards == SQLite's, and
#    most queries discriminate;
#  - select prints the same events from both (byte for byte) for a host
#    of each shard and for all hosts (rows of both shards merged), whole
#    answers and -n / -r;
#  - --hist gives the same histograms over all hosts (keys, values,
#    host, COMM);
#  - the live agent's events: traceq's count of its host == the rows of
#    its host in the two shards' local tables, counted on each server
#    directly, and > 0;
#  - the collector killed (-9) while an agent streams into the second
#    shard, then started again: the shards hold every event it shipped,
#    none twice, all on that shard;
#  - an address whose server count differs from the cluster's is refused
#    at start, saying why;
#  - traceq --sql is refused on the shards as on one server, saying why.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd > /dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
tc_need_clickhouse
tc_lock
tc_setup ch_shards collector_pid agent workload ch1_pid ch2_pid
# four recordings, one per host: the collector stores a file once, whatever --name
# (by host id, imp-a and imp-c go to the second shard, imp-b and imp-d to the first)
hosts=(imp-a imp-b imp-c imp-d)
for h in "${hosts[@]}"; do
	tc_tracecmd_record "tc_chshards_$$" "$tmp/rec.$h.dat" -e sched:sched_switch \
		-e sched:sched_wakeup -e timer:hrtimer_expire_entry \
		sh -c 'for i in $(seq 20); do sleep 0.01; ls / > /dev/null; done'
done

# start_shards: two servers (tests/lib.sh's config and users) whose
# remote_servers both list cluster tc_shards of the two, one shard each;
# sets http1 http2 tcp1 tcp2 ch1_pid ch2_pid once both answer SELECT 1.
start_shards() {
	local i try d ok
	ch_user=default
	ch_password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	ch_ro_user=tc_ro
	ch_ro_password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	for try in 1 2 3; do
		http1=$(tc_free_port) tcp1=$(tc_free_port) int1=$(tc_free_port)
		http2=$(tc_free_port) tcp2=$(tc_free_port) int2=$(tc_free_port)
		tc_ch_config_extra="    <remote_servers><tc_shards>
        <shard><replica><host>127.0.0.1</host><port>$tcp1</port><user>$ch_user</user><password>$ch_password</password></replica></shard>
        <shard><replica><host>127.0.0.1</host><port>$tcp2</port><user>$ch_user</user><password>$ch_password</password></replica></shard>
    </tc_shards></remote_servers>"
		for i in 1 2; do
			d=$tmp/ch$i
			mkdir -p "$d/data" "$d/tmp" "$d/log" "$d/user_files" "$d/format_schemas"
			tc_ch_users > "$d/users.xml"
			if [ "$i" = 1 ]; then
				tc_ch_config "$d" "$http1" "$tcp1" "$int1" > "$d/config.xml"
			else
				tc_ch_config "$d" "$http2" "$tcp2" "$int2" > "$d/config.xml"
			fi
			"$tc_ch_server" --config-file="$d/config.xml" > "$d/log/stdout.log" 2>&1 &
			printf -v "ch${i}_pid" '%s' "$!"
			tc_watch "$!"
		done
		for _ in $(seq 600); do
			ok=0
			[ "$(chc "$tcp1" --query 'SELECT 1' 2>/dev/null)" = 1 ] && ok=$((ok + 1))
			[ "$(chc "$tcp2" --query 'SELECT 1' 2>/dev/null)" = 1 ] && ok=$((ok + 1))
			[ "$ok" = 2 ] && return 0
			kill -0 "$ch1_pid" 2>/dev/null && kill -0 "$ch2_pid" 2>/dev/null || break
			sleep 0.1
		done
		for i in ch1_pid ch2_pid; do
			kill "${!i}" 2>/dev/null; wait "${!i}" 2>/dev/null; printf -v "$i" ''
		done
		grep -q "Address already in use" "$tmp"/ch?/log/*.log 2>/dev/null || break
		rm -rf "$tmp/ch1" "$tmp/ch2"
	done
	tail -20 "$tmp"/ch?/log/stdout.log "$tmp"/ch?/log/error.log 2>/dev/null
	echo "FAIL: the two clickhouse-servers did not start"
	exit 1
}
# chc PORT ARGS...: clickhouse-client on the server of native port PORT
chc() {
	local port=$1
	shift
	clickhouse-client --host 127.0.0.1 --port "$port" --user "$ch_user" \
		--password "$ch_password" "$@"
}

# [OPTIONS]|QUERY
queries=(
	"|sched_switch"
	"|sched_switch where prev_pid == 0"
	"|sched_switch where prev_pid != 0 && next_pid > 100"
	"|sched_switch where prev_state & 1"
	"|sched_switch where next_comm ~ \"*[0-9]\""
	"|sched_switch where prev_comm ~ \"!sw*\""
	"|sched_switch where CPU & CPUS{1-3}"
	"|sched_wakeup where comm ~ \"[a-m]*\" && target_cpu >= 1"
	"|sched where prev_pid == 0"
	"|sched_switch where COMM == \"sh\""
	"|sched where COMM == \"<idle>\""
	"-H imp-c|sched_switch where next_pid > 0"
	"-H imp-[ad]|timer:hrtimer_expire_entry"
)
selects=("" "-n 7" "-n 300 -r")
select_queries=(
	"sched_switch where prev_comm ~ \"*o*\" || next_pid == 0"
	"sched where prev_pid == 0"
	"timer:hrtimer_expire_entry"
	"sched_switch where COMM ~ \"s*\" || CPU == 1"
)
specs=(
	"keys=next_comm	sched_switch"
	"keys=host	sched_switch"
	"keys=prev_state.buckets=3:vals=prev_prio	sched_switch"
	"keys=next_comm,next_pid:sort=next_comm,hitcount.descending	sched_switch"
	"keys=COMM,cpu:sort=hitcount.descending	sched_wakeup"
	"keys=next_pid:size=128	sched_switch"
)

tq() { "$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 "$@"; }
# outputs NAME: counts, selects (per host) and histograms into $tmp/NAME.*
outputs() {
	local q i j h spec
	for q in "${queries[@]}"; do
		# shellcheck disable=SC2086 # the options: several words
		tq ${q%%|*} --count "${q#*|}" 2> /dev/null || echo error
	done > "$tmp/$1.counts"
	for i in "${!selects[@]}"; do
		for j in "${!select_queries[@]}"; do
			for h in imp-a imp-b 'imp-*'; do
				# shellcheck disable=SC2086 # the options: several words
				tq -H "$h" ${selects[$i]} "${select_queries[$j]}" \
					> "$tmp/$1.select.$i.$j.${h/\*/all}" 2>&1 ||
					echo "exit $?" >> "$tmp/$1.select.$i.$j.${h/\*/all}"
			done
		done
	done
	for i in "${!specs[@]}"; do
		spec=${specs[$i]%%	*}
		tq --hist "$spec" "${specs[$i]#*	}" > "$tmp/$1.hist.$i" 2>&1 ||
			echo "exit $?" >> "$tmp/$1.hist.$i"
	done
}
imports() {
	local h rc
	for h in "${hosts[@]}"; do
		tq --import "$tmp/rec.$h.dat" --name "$h" > "$tmp/imp.$1.$h" 2>&1; rc=$?
		check "the recording imports into $1 as $h (exit $rc)" \
			'[ "$rc" = 0 ] || { cat "$tmp/imp.$1.$h"; false; }'
	done
}

tc_certs
start_shards
printf '%s\n' "$ch_password" > "$tmp/ch.pw"
chmod 600 "$tmp/ch.pw"
db="clickhouse://$ch_user@127.0.0.1:$http1,127.0.0.1:$http2/tc?cluster=tc_shards"

# an address of three servers on a cluster of two: refused, saying why
"$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 --query "ipc://$tmp/bad.sock" \
	--db "clickhouse://$ch_user@127.0.0.1:$http1,127.0.0.1:$http2,127.0.0.1:$http2/tc?cluster=tc_shards" \
	--db-password-file "$tmp/ch.pw" --journal-dir "$tmp/badjournal" \
	--cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" --ca "$tmp/pki/ca.crt" \
	> /dev/null 2> "$tmp/bad.log"; rc=$?
check "three servers on a cluster of two shards: refused (exit $rc)" \
	'[ "$rc" != 0 ] && grep -q "has 2 shards" "$tmp/bad.log" || { cat "$tmp/bad.log"; false; }'

tc_start_collector --db "$db" --db-password-file "$tmp/ch.pw" --journal-dir "$tmp/journal" \
	--query "ipc://$tmp/q.sock"
check "the collector starts on two shards" '[ -n "$collector_pid" ]'
imports shards

outputs shards
# a live agent on real kernel events, into the shards
inst="tc_chshl_$$"
tc_start_agent live -e sched:sched_switch -e sched:sched_wakeup --no-user --instance "$inst" \
	--name live-a
for _ in $(seq 100); do
	[ "$(cat "$tracing/instances/$inst/events/sched/sched_switch/enable" 2>/dev/null)" = 1 ] &&
		break
	kill -0 "$agent" 2>/dev/null || break
	sleep 0.1
done
for _ in $(seq 100); do ls / > /dev/null; sleep 0.02; done
kill -INT "$agent"; wait "$agent"; rc=$?; agent=
check "the live agent stops cleanly (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/live.err"; false; }'

# the live host's rows as each shard holds them (its local tables), and as traceq counts them
live_id=$(chc "$tcp1" --query "SELECT any(host_id) FROM tc.hosts WHERE name = 'live-a'")
# shard_rows PORT TABLE COND: the rows of tc_shard.TABLE WHERE host_id COND on that server
shard_rows() {
	chc "$1" --query "SELECT count() FROM tc_shard.$2 WHERE host_id $3" 2>/dev/null || echo x
}
sw=ev_sched_sched_switch
for _ in $(seq 100); do	# the collector stores what it ACKed: until it has
	live=$(tq -H live-a --count 'sched_switch' 2>/dev/null)
	s1=$(shard_rows "$tcp1" $sw "= $live_id") s2=$(shard_rows "$tcp2" $sw "= $live_id")
	[ -n "$live" ] && [ "$live" = $((s1 + s2)) ] && break
	sleep 0.2
done
check "the live agent's sched_switch: traceq counts $live, the shards hold $s1 + $s2" \
	'[ "${live:-0}" -gt 0 ] && [ "$live" = $((s1 + s2)) ]'
a1=$(shard_rows "$tcp1" $sw "!= 0") a2=$(shard_rows "$tcp2" $sw "!= 0")
check "both shards hold event rows (first $a1, second $a2)" '[ "$a1" -gt 0 ] && [ "$a2" -gt 0 ]'
dist=$(chc "$tcp1" --query "SELECT count() FROM system.tables WHERE database = 'tc' AND
	startsWith(name, 'ev_') AND engine = 'Distributed'")
check "the first server reads through Distributed tables ($dist)" '[ "$dist" -ge 3 ]'
# kill -9 of the collector while an agent streams into the second shard
# (host kill-a, by its host id), started again on the same port: the agent
# resends, the unfinished commit's rows are deleted on each shard
all_rows() {	# every event row on both shards (their local tables), and distinct ones
	local p s=0 d=0 a b
	for p in "$tcp1" "$tcp2"; do
		a=$(chc "$p" --query "SELECT count() FROM merge('tc_shard', '^ev_')") || a=x
		b=$(chc "$p" --query "SELECT count() FROM (SELECT DISTINCT _table, host_id, cpu,
			trace_ts FROM merge('tc_shard', '^ev_'))") || b=x
		s=$((s + a)) d=$((d + b))
	done
	echo "$s $d"
}
tq --sync --hosts > /dev/null
read -r n _ < <(all_rows)
( for _ in $(seq 800); do sleep 0.005; ls / > /dev/null; done ) &
workload=$!
tc_start_agent kill -e sched:sched_switch --duration 8 --name kill-a --no-user \
	--instance "tc_chshk_$$"
for _ in $(seq 100); do
	[ "$(tq -H kill-a --count sched_switch 2>/dev/null || echo 0)" -gt 0 ] && break
	sleep 0.1
done
sleep 1
kill -9 "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
tc_start_collector --db "$db" --db-password-file "$tmp/ch.pw" --journal-dir "$tmp/journal" \
	--query "ipc://$tmp/q.sock" --listen "$listen"
wait "$agent"; rc=$?; agent=
wait "$workload"
check "the agent exits 0 across the collector's kill -9 (exit $rc)" \
	'[ "$rc" = 0 ] || cat "$tmp/kill.err"'
shipped=$(sed -n 's/.*total:.* events=\([0-9]*\).*/\1/p' "$tmp/kill.out")
tq --sync --hosts > /dev/null
read -r m d < <(all_rows)
check "after the kill -9: the shards hold what it shipped once ($((m - n)) == $shipped)" \
	'[ "${shipped:-0}" -gt 0 ] && [ "$((m - n))" = "$shipped" ]'
check "after the kill -9: no event twice on the shards ($d == $m)" '[ "$d" = "$m" ]'
k1=$(shard_rows "$tcp1" $sw "= $(chc "$tcp1" --query "SELECT any(host_id) FROM tc.hosts WHERE name = 'kill-a'")")
k2=$(shard_rows "$tcp2" $sw "= $(chc "$tcp1" --query "SELECT any(host_id) FROM tc.hosts WHERE name = 'kill-a'")")
check "kill-a's rows are on the second shard only ($k1, $k2)" '[ "$k1" = 0 ] && [ "$k2" -gt 0 ]'

tq --sql "SELECT count(*) FROM hosts" > "$tmp/sql.out" 2>&1; rc=$?
check "--sql is refused on the shards, saying why (exit $rc)" \
	'[ "$rc" != 0 ] && grep -q "sql is not answered from ClickHouse" "$tmp/sql.out" ||
	{ cat "$tmp/sql.out"; false; }'
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=

tc_start_collector --query "ipc://$tmp/q.sock"
imports SQLite
outputs sqlite

total=$(head -1 "$tmp/sqlite.counts")
some=0
for i in "${!queries[@]}"; do
	c=$(sed -n "$((i + 1))p" "$tmp/shards.counts") s=$(sed -n "$((i + 1))p" "$tmp/sqlite.counts")
	check "${queries[$i]}: shards $c == SQLite $s" '[ "$c" = "$s" ] && [ "$c" != error ]'
	case $s in '' | *[!0-9]*) continue ;; esac
	[ "$s" -gt 0 ] && [ "$s" -lt "$total" ] && some=$((some + 1))
done
check "the queries discriminate ($some of ${#queries[@]} count some events, not all)" \
	'[ "$some" -ge $(( ${#queries[@]} / 2 )) ]'
for f in "$tmp"/sqlite.select.* "$tmp"/sqlite.hist.*; do
	g=$tmp/shards.${f#"$tmp"/sqlite.}
	n=$(wc -l < "$f")
	check "${f#"$tmp"/sqlite.}: the same $n lines" \
		'[ "$n" -gt 1 ] && ! grep -q "^exit" "$f" && cmp -s "$g" "$f" ||
		{ diff "$g" "$f" | head -5; head -3 "$f"; false; }'
done
exit "$failed"
