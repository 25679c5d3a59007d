# tests/lib.sh - what the daemon tests share; sourced right after `set -u`:
#   . "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
# then tc_need_tracefs (root and a writable tracefs, else skip saying why)
# and tc_lock where the test starts; with tmp set to the test's own
# directory, tc_certs and tc_start_collector give it certificates and a
# collector, tc_start_agent (tc_run_agent) agents of that collector, and
# traceq asks it.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
tracing=/sys/kernel/tracing

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; failed=1; }
check() { if eval "$2"; then echo "ok: $1"; else fail "$1"; fi; }

# tc_setup NAME VAR...: a temporary directory $tmp (/tmp/tc-NAME.*),
# failed=0, the variables VAR... empty, and an exit trap that stops the
# processes whose pids they hold by then (in that order; empty ones are
# skipped) and removes $tmp.
tc_setup() {
	local v
	tmp=$(mktemp -d "/tmp/tc-$1.XXXXXX")
	failed=0
	shift
	tc_pid_vars=("$@")
	for v in "$@"; do printf -v "$v" ''; done
	trap tc_cleanup EXIT
}

tc_cleanup() {
	local v
	for v in "${tc_pid_vars[@]}"; do
		[ -n "${!v}" ] && kill "${!v}" 2>/dev/null && wait "${!v}" 2>/dev/null
	done
	rm -rf "$tmp"
}

tc_need_tracefs() {
	[ "$(id -u)" = 0 ] || skip "needs root for tracefs (running as uid $(id -u))"
	[ -d "$tracing/instances" ] || mount -t tracefs nodev "$tracing" 2>/dev/null
	[ -w "$tracing/instances" ] || skip "$tracing/instances is not writable"
}

# tc_skip_part PART WHY: the one line saying that the test skipped PART
# (and passes without it) because WHY; the rest of the test runs.
tc_skip_part() { echo "SKIP: $1: $2"; }

# tc_has_test_aids: whether the programs have the test aids (configure
# --enable-test-aids: TRACECOLLECTD_TEST_ABORT_ON), as make check says in
# test_aids (configure's TEST_AIDS); run by hand, as the build's config.h
# says. tc_need_test_aids skips the test without them, saying so.
tc_has_test_aids() {
	[ "${test_aids:-$(grep -qx '#define TC_TEST_AIDS 1' "$top_builddir/config.h" 2>/dev/null &&
		echo yes)}" = yes ]
}
tc_test_aids_why="this build has no test aids (configure --enable-test-aids)"
tc_need_test_aids() { tc_has_test_aids || skip "$tc_test_aids_why"; }

# tc_can CAP: whether the kernel offers capability CAP (subbuf: a new
# sub-buffer size; mmap: mapping trace_pipe_raw; tsc: the x86-tsc trace
# clock; function: the function tracer; ktls: kernel TLS), as
# tests/tc_probe finds in a tracefs instance of its own; under
# tests/refuse_shim.so (TC_REFUSE) the refusals it plants count. When not,
# tc_why says why in one line. tc_can_CAP is the same.
tc_can() {
	local probe=$top_builddir/tests/tc_probe
	[ -x "$probe" ] || { echo "FAIL: $probe not built (make check builds it)"; exit 1; }
	tc_why=$("$probe" "$1" 2>&1)
}
tc_can_subbuf() { tc_can subbuf; }
tc_can_mmap() { tc_can mmap; }
tc_can_tsc() { tc_can tsc; }
tc_can_function() { tc_can function; }
tc_can_ktls() { tc_can ktls; }

# tc_refuse_env RULES: export LD_PRELOAD=tests/refuse_shim.so and
# TC_REFUSE=RULES (see tests/refuse_shim.c): from then on this test's
# processes see a kernel that refuses those knobs. The shim is not built
# with the sanitizers and comes before their runtime.
tc_refuse_env() {
	export TC_REFUSE=$1
	export LD_PRELOAD=$top_builddir/tests/refuse_shim.so
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
}

# Tests that start the daemons or load both CPUs take this lock and run
# one at a time: test_e2e needs idle CPUs (its prev_pid == 0 switches) and
# the instance checks must not see another test's agents. A flock(1) of
# its own holds it until this shell exits (tail --pid), with the lock's
# descriptor closed in what it runs (-o): no process the test starts
# inherits the lock, so a collector or agent left behind cannot hold it
# (it did, when the test's shell held it on a descriptor every child got).
tc_lock() {
	local fifo said=
	fifo=$(mktemp -u /tmp/tc-lock.XXXXXX) && mkfifo -m 600 "$fifo" ||
		{ echo "FAIL: tc_lock: no fifo"; exit 1; }
	# (the fifo opened read-write: a write that never blocks, should this
	# shell be gone by the time the lock is free; the fifo is then removed)
	{ flock -o /tmp/tracecollect-tracefs-tests.lock \
		sh -c 'echo locked 1<> "$1" && { kill -0 "$2" || rm -f "$1"; } &&
			exec tail -s 0.2 --pid="$2" -f /dev/null' sh \
		"$fifo" "$$" || echo failed 1<> "$fifo"; } < /dev/null > /dev/null 2>&1 &
	read -r said < "$fifo"
	rm -f "$fifo"
	[ "$said" = locked ] || { echo "FAIL: tc_lock: flock /tmp/tracecollect-tracefs-tests.lock"; exit 1; }
}

# tc_certs [HOST...]: in $tmp/pki (contrib/tracecollect-certs) a CA with
# its (empty) crl.pem, a server certificate for 127.0.0.1 and
# agent-tc-agent.crt/.key (CN tc-agent), and agent-HOST.crt/.key for each
# HOST; exits on failure.
tc_certs() {
	local h
	{ tc_certs_run ca && tc_certs_run server localhost 127.0.0.1 ::1 &&
		tc_certs_run agent tc-agent; } >/dev/null ||
		{ echo "FAIL: certificate helper"; exit 1; }
	for h in "$@"; do
		tc_certs_run agent "$h" >/dev/null || { echo "FAIL: certificate helper ($h)"; exit 1; }
	done
}

tc_certs_run() { "$top_srcdir/contrib/tracecollect-certs" -d "$tmp/pki" "$@"; }

# tc_start_collector [ARGS...]: tracecollectd on free loopback ports with
# $tmp/pki's server certificate and the database $tmp/trace.db (ARGS come
# last and may override either), its log in $tmp/collector.log; inside
# network namespace $tc_netns when that is set. Waits for its ready file,
# then sets collector_pid, listen and query; exits saying why if it does
# not start. The tests' agents name their hosts freely (e2e-host, sim-N,
# ...) with the one certificate agent-tc-agent.crt, so the collector maps
# that certificate to every host name (--host-map 'tc-agent *', as for a
# gateway), unless tc_strict_hosts=1: then each host name must be its
# certificate's (test_identity.sh).
tc_start_collector() {
	local run=() map=(--host-map "tc-agent *")
	[ -n "${tc_netns:-}" ] && run=(ip netns exec "$tc_netns")
	[ "${tc_strict_hosts:-0}" = 1 ] && map=()
	rm -f "$tmp/ready"
	"${run[@]}" "$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 \
		--query tcp://127.0.0.1:0 --db "$tmp/trace.db" \
		--cert "$tmp/pki/server.crt" --key "$tmp/pki/server.key" \
		--ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready" "${map[@]}" "$@" \
		2>> "$tmp/collector.log" &
	collector_pid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/ready" ] && break
		kill -0 "$collector_pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$tmp/ready" ] ||
		{ cat "$tmp/collector.log"; echo "FAIL: collector did not start"; exit 1; }
	listen=$(sed -n 's/^listen=//p' "$tmp/ready")
	query=$(sed -n 's/^query=//p' "$tmp/ready")
}

# traceq [ARGS...]: traceq asking the collector tc_start_collector started,
# once it has stored everything it received (--sync, for up to 2 minutes:
# storing runs at idle priority and the host may be busy; it acknowledges pages
# when they are in its receive journal, and stores them behind).
traceq() { "$top_builddir/traceq/traceq" --server "$query" --sync -t 120000 "$@"; }

# tc_start_agent NAME [ARGS...]: traceagent in the background, connected
# to the collector tc_start_collector started ($listen) with $tmp/pki's
# agent-tc-agent certificate (ARGS come last and may override either:
# --connect, --cert and --key), its stdout in $tmp/NAME.out and its stderr
# in $tmp/NAME.err; inside network namespace $tc_netns when that is set.
# Sets agent to its pid (list agent among tc_setup's variables and the
# exit trap stops it). ARGS give it a tracefs instance of its own
# (--instance tc-TEST-$$...) unless the test wants the default.
tc_start_agent() {
	local name=$1 run=()
	shift
	[ -n "${tc_netns:-}" ] && run=(ip netns exec "$tc_netns")
	"${run[@]}" "$top_builddir/traceagent" --connect "$listen" \
		--cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key" \
		--ca "$tmp/pki/ca.crt" "$@" \
		> "$tmp/$name.out" 2> "$tmp/$name.err" &
	agent=$!
}

# tc_run_agent NAME [ARGS...]: tc_start_agent, then wait for the agent to
# exit; returns its exit status. agent is as it was before (the pid of an
# agent the test started in the background, or empty).
tc_run_agent() {
	local rc was=${agent:-}
	tc_start_agent "$@"
	wait "$agent"; rc=$?
	agent=$was
	return "$rc"
}

# tc_done_covers FILE: the agent's total line in FILE says its DONEs cover
# everything it shipped: stored_events == events, or, from a journaling
# collector, journaled_pages == pages.
tc_done_covers() {
	local line
	line=$(grep "total:" "$1") || return 1
	val() { echo "$line" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
	if [ -n "$(val journaled_pages)" ]; then
		[ "$(val journaled_pages)" = "$(val pages)" ] && [ "$(val pages)" -gt 0 ]
	else
		[ "$(val stored_events)" = "$(val events)" ] && [ "$(val events)" -gt 0 ]
	fi
}

# tc_host_agents INSTANCE HOST...: while a busy loop makes context switches,
# one traceagent per HOST in turn (certificate agent-HOST.crt, --name
# HOST) streams sched_switch (or the -e options in $tc_agent_events) for
# 2 s in tracefs instance INSTANCE; checks
# that each exits 0 (its output in $tmp/agent-HOST.out and .err). Uses the
# tc_setup variables agent and workload.
tc_host_agents() {
	local instance=$1 h rc
	shift
	( while :; do sleep 0.002; done ) &
	workload=$!
	for h in "$@"; do
		# shellcheck disable=SC2086 # tc_agent_events: several words
		tc_run_agent "agent-$h" --cert "$tmp/pki/agent-$h.crt" \
			--key "$tmp/pki/agent-$h.key" \
			${tc_agent_events:--e sched:sched_switch} --duration 2 --name "$h" \
			--instance "$instance" --spool-dir "$tmp/spool"
		rc=$?
		check "agent $h exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent-$h.err"; false; }'
	done
	kill "$workload"; wait "$workload" 2>/dev/null
	workload=
}

# tc_check_memory WHAT TEST: check TEST, or under AddressSanitizer (whose
# quarantine and shadow memory make RSS say nothing) only say WHAT
tc_check_memory() {
	if grep -q -- '-fsanitize=address' "${top_builddir:?}/Makefile" 2>/dev/null; then
		echo "not checked (AddressSanitizer build): $1"
	else
		check "$1" "$2"
	fi
}

# tc_tracecmd_record INSTANCE FILE ARGS...: trace-cmd record into FILE in
# tracefs instance INSTANCE of the test's own, on the mono clock, ARGS
# being its options then the command to run (Debian's 3.1.6 needs -d
# --no-filter on a kernel that refuses set_ftrace_filter, exits 1 for it
# and may leave the instance: it is removed here). Exits the test saying
# why when FILE is not written; its output is in $tmp/record.log.
tc_tracecmd_record() {
	local inst=$1 file=$2
	shift 2
	trace-cmd record -B "$inst" -C mono -d --no-filter -o "$file" "$@" \
		> "$tmp/record.log" 2>&1
	rmdir "$tracing/instances/$inst" 2>/dev/null
	[ -s "$file" ] || { cat "$tmp/record.log"; echo "FAIL: trace-cmd record"; exit 1; }
}

# tc_traceq_for_all: a copy of traceq in $tmp (made 0755) that other users
# can run, into tq: the build tree may sit below a directory only root
# can enter (a clone in mktemp -d, as CI makes), and the tests that query
# as another user must run there too, not skip.
tc_traceq_for_all() {
	chmod 755 "$tmp"
	install -m 755 "$top_builddir/traceq/traceq" "$tmp/traceq" ||
		{ echo "FAIL: cannot copy traceq into $tmp"; exit 1; }
	tq=$tmp/traceq
}

# tc_lossy_agent NAME HOST INSTANCE [ARGS...]: an agent (tc_start_agent
# NAME) of raw_syscalls with a 16 KiB buffer in tracefs instance INSTANCE,
# host name HOST, held still (SIGSTOP) once connected while a workload
# overruns its buffers, then let go and waited for (6 s in all; ARGS come
# last); checks that it exits 0. The kernel then has lost events: the
# missed-events flag and count of the pages after the gap.
tc_lossy_agent() {
	local name=$1 host=$2 inst=$3 rc
	shift 3
	tc_start_agent "$name" -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit \
		--buffer-kb 16 --duration 6 --name "$host" --no-user --instance "$inst" "$@"
	for _ in $(seq 50); do
		grep -q "agent $host .* connected" "$tmp/collector.log" && break
		sleep 0.1
	done
	sleep 0.5
	kill -STOP "$agent"
	dd if=/dev/zero of=/dev/null bs=1 count=300000 2> /dev/null
	kill -CONT "$agent"
	wait "$agent"; rc=$?
	agent=
	check "agent $host exits 0" '[ "$rc" = 0 ] || { cat "$tmp/$name.err"; false; }'
}

# ---- ClickHouse and ZooKeeper (issue 32) ----------------------------------
# Debian's clickhouse-server (18.16) and zookeeper (3.8), each started for
# the one test on free loopback ports with everything it writes under $tmp,
# and stopped by tc_cleanup at the test's exit (their pid variables join
# tc_pid_vars; tc_watch kills them should the test itself be killed).

# tc_free_port: a loopback TCP port that nothing listens on now and that
# this test has not taken yet (a start that loses the race retries).
tc_free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		case " ${tc_ports_taken:-} " in *" $p "*) continue ;; esac
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && continue
		tc_ports_taken="${tc_ports_taken:-} $p"
		echo "$p"
		return
	done
}

# tc_watch PID: kill -9 PID if this test's shell dies without its exit
# trap (kill -9 of the test); ends by itself when PID ends first.
tc_watch() {
	local pid=$1 me=$$
	( while kill -0 "$me" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 1; done
	  kill -0 "$me" 2>/dev/null || kill -9 "$pid" 2>/dev/null ) < /dev/null > /dev/null 2>&1 &
}

# tc_wait_log FILE PATTERN: until a line of FILE matches grep PATTERN, for
# 10 s at most; returns 1 when none did (the test's check then says what).
tc_wait_log() {
	for _ in $(seq 100); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# tc_metric FILE SAMPLE: the value of SAMPLE, a metric's name with its
# labels as exposed (name{label="value"}), in FILE, a /metrics body in
# Prometheus's text format; nothing when FILE has no such sample.
tc_metric() { awk -v s="$2" '$1 == s { print $2; exit }' "$1"; }

# tc_have_clickhouse, tc_have_zookeeper: whether the package is installed
# (Debian puts clickhouse-server in /usr/sbin, which a user's PATH may lack)
tc_have_clickhouse() {
	tc_ch_server=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)
	[ -x "$tc_ch_server" ] && command -v clickhouse-client > /dev/null
}
# tc_need_clickhouse: skip the test (one line, why) without clickhouse-server
tc_need_clickhouse() {
	tc_have_clickhouse ||
		skip "clickhouse-server is not installed (apt-get install clickhouse-server clickhouse-client; ./setup deps)"
}
tc_have_zookeeper() {
	[ -r /usr/share/java/zookeeper.jar ] && command -v java > /dev/null
}

# tc_start_zookeeper: a standalone ZooKeeper on a free loopback port, its
# data and log in $tmp/zk, a 64 MiB heap, no admin server. Sets zk_port
# and zookeeper_pid once it answers `ruok`; skips the test when the
# zookeeper package is not installed, and exits saying why if it does
# not start. Start it before tc_start_clickhouse, which then uses it.
tc_start_zookeeper() {
	local zk=$tmp/zk cp try
	tc_have_zookeeper ||
		skip "zookeeper is not installed (apt-get install zookeeper; ./setup deps)"
	cp=$zk:/usr/share/java/zookeeper.jar	# its manifest lists the rest (Debian)
	mkdir -p "$zk/data"
	printf 'log4j.rootLogger=INFO, F\nlog4j.appender.F=org.apache.log4j.FileAppender\nlog4j.appender.F.File=%s\nlog4j.appender.F.layout=org.apache.log4j.PatternLayout\nlog4j.appender.F.layout.ConversionPattern=%%d %%p %%c: %%m%%n\n' \
		"$zk/zookeeper.log" > "$zk/log4j.properties"
	zookeeper_pid=
	tc_pid_vars+=(zookeeper_pid)
	for try in 1 2 3; do
		zk_port=$(tc_free_port)
		printf '%s\n' "tickTime=500" "dataDir=$zk/data" "clientPort=$zk_port" \
			"clientPortAddress=127.0.0.1" "maxClientCnxns=64" \
			"admin.enableServer=false" "4lw.commands.whitelist=ruok,srvr" \
			> "$zk/zoo.cfg"
		java -Xmx64m -Xss512k -XX:+UseSerialGC -Dzookeeper.log.dir="$zk" \
			-Dlog4j.configuration="file:$zk/log4j.properties" -cp "$cp" \
			org.apache.zookeeper.server.quorum.QuorumPeerMain "$zk/zoo.cfg" \
			> "$zk/stdout.log" 2>&1 &
		zookeeper_pid=$!
		tc_watch "$zookeeper_pid"
		for _ in $(seq 300); do
			[ "$(tc_zk_cmd ruok)" = imok ] && return 0
			kill -0 "$zookeeper_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$zookeeper_pid" 2>/dev/null; wait "$zookeeper_pid" 2>/dev/null
		zookeeper_pid=
		grep -q "Address already in use" "$zk/zookeeper.log" "$zk/stdout.log" ||
			break
	done
	cat "$zk/stdout.log" "$zk/zookeeper.log" 2>/dev/null | tail -20
	echo "FAIL: zookeeper did not start"
	exit 1
}

# tc_zk_cmd WORD: ZooKeeper's four-letter command WORD (ruok, srvr) on
# $zk_port, its reply on stdout.
tc_zk_cmd() {
	( exec 3<> "/dev/tcp/127.0.0.1/$zk_port" && printf '%s' "$1" >&3 &&
		timeout 5 cat <&3 ) 2>/dev/null
}

# tc_start_clickhouse: Debian's clickhouse-server for this test alone: free
# loopback ports (HTTP, native TCP, interserver), its config, users.xml,
# data, tmp and logs in $tmp/ch, small caches and pools (2 cores are
# shared with the test), ZooKeeper $zk_port when tc_start_zookeeper ran
# (macros shard=01, replica=r1, for ReplicatedMergeTree). Two users, each
# with a password of its own, both on 127.0.0.1 only:
#   ch_user (default)  profile default: all rights
#   ch_ro_user (tc_ro) profile readonly: readonly=1, max_execution_time
#                      30 s, max_result_rows 100000 (throw),
#                      max_memory_usage 256 MiB (for --sql)
# Waits until SELECT 1 answers, then sets ch_http (http://127.0.0.1:PORT/),
# ch_http_port (PORT), ch_port (native), ch_user, ch_password, ch_ro_user,
# ch_ro_password and clickhouse_pid. Skips the test when clickhouse-server is not installed;
# exits saying why when it does not start.
tc_start_clickhouse() {
	local ch=$tmp/ch http tcp inter try
	tc_need_clickhouse
	mkdir -p "$ch/data" "$ch/tmp" "$ch/log" "$ch/user_files" "$ch/format_schemas"
	ch_user=default
	ch_password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	ch_ro_user=tc_ro
	ch_ro_password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	tc_ch_users > "$ch/users.xml"
	clickhouse_pid=
	tc_stop_before_zookeeper clickhouse_pid
	for try in 1 2 3; do
		http=$(tc_free_port) tcp=$(tc_free_port) inter=$(tc_free_port)
		tc_ch_config "$ch" "$http" "$tcp" "$inter" > "$ch/config.xml"
		"$tc_ch_server" --config-file="$ch/config.xml" > "$ch/log/stdout.log" 2>&1 &
		clickhouse_pid=$!
		tc_watch "$clickhouse_pid"
		ch_port=$tcp
		ch_http_port=$http
		ch_http=http://127.0.0.1:$http/
		for _ in $(seq 600); do
			[ "$(tc_ch --query 'SELECT 1' 2>/dev/null)" = 1 ] && return 0
			kill -0 "$clickhouse_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$clickhouse_pid" 2>/dev/null; wait "$clickhouse_pid" 2>/dev/null
		clickhouse_pid=
		grep -q "Address already in use" "$ch/log/stdout.log" "$ch/log/error.log" \
			2>/dev/null || break
	done
	tail -20 "$ch/log/stdout.log" "$ch/log/error.log" 2>/dev/null
	echo "FAIL: clickhouse-server did not start"
	exit 1
}

# tc_stop_before_zookeeper VAR: have tc_cleanup stop the process in VAR
# before the ZooKeeper (a server that loses it waits to reconnect).
tc_stop_before_zookeeper() {
	local v vars=()
	for v in "${tc_pid_vars[@]}"; do [ "$v" = zookeeper_pid ] || vars+=("$v"); done
	vars+=("$1")
	[ -n "${zookeeper_pid:-}" ] && vars+=(zookeeper_pid)
	tc_pid_vars=("${vars[@]}")
}

# tc_ch ARGS...: clickhouse-client as $ch_user on the server
# tc_start_clickhouse started (e.g. --query 'SELECT 1', --multiquery).
tc_ch() {
	clickhouse-client --host 127.0.0.1 --port "$ch_port" --user "$ch_user" \
		--password "$ch_password" "$@"
}

# tc_restart_clickhouse: the server tc_start_clickhouse started, again
# after it was stopped (its config, ports, users and data); sets
# clickhouse_pid once SELECT 1 answers, or exits saying why.
tc_restart_clickhouse() {
	"$tc_ch_server" --config-file="$tmp/ch/config.xml" >> "$tmp/ch/log/stdout.log" 2>&1 &
	clickhouse_pid=$!
	tc_watch "$clickhouse_pid"
	for _ in $(seq 600); do
		[ "$(tc_ch --query 'SELECT 1' 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	echo "FAIL: clickhouse-server did not start again"; exit 1
}

# tc_ch_config DIR HTTP TCP INTERSERVER: the server's config.xml (with
# $tc_ch_config_extra, more of it, when set: bench/run scale's compression)
tc_ch_config() {
	cat <<XML
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>$1/log/server.log</log>
        <errorlog>$1/log/error.log</errorlog>
        <size>10M</size>
        <count>1</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>$2</http_port>
    <tcp_port>$3</tcp_port>
    <interserver_http_port>$4</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <max_connections>64</max_connections>
    <keep_alive_timeout>10</keep_alive_timeout>
    <max_concurrent_queries>32</max_concurrent_queries>
    <uncompressed_cache_size>16777216</uncompressed_cache_size>
    <mark_cache_size>16777216</mark_cache_size>
    <path>$1/data/</path>
    <tmp_path>$1/tmp/</tmp_path>
    <user_files_path>$1/user_files/</user_files_path>
    <format_schema_path>$1/format_schemas/</format_schema_path>
    <users_config>$1/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
$( [ -n "${zk_port:-}" ] && cat <<ZK
    <zookeeper>
        <node><host>127.0.0.1</host><port>$zk_port</port></node>
        <session_timeout_ms>10000</session_timeout_ms>
    </zookeeper>
    <macros><shard>01</shard><replica>r1</replica></macros>
ZK
)
${tc_ch_config_extra:-}
</yandex>
XML
}

# tc_ch_users: the server's users.xml (tc_start_clickhouse says who is who)
tc_ch_users() {
	cat <<XML
<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>2147483648</max_memory_usage>
            <max_threads>2</max_threads>
            <background_pool_size>4</background_pool_size>
            <background_schedule_pool_size>4</background_schedule_pool_size>
        </default>
        <readonly>
            <readonly>1</readonly>
            <max_threads>2</max_threads>
            <max_execution_time>30</max_execution_time>
            <max_result_rows>100000</max_result_rows>
            <result_overflow_mode>throw</result_overflow_mode>
            <max_memory_usage>268435456</max_memory_usage>
        </readonly>
    </profiles>
    <users>
        <$ch_user>
            <password>$ch_password</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </$ch_user>
        <$ch_ro_user>
            <password>$ch_ro_password</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>readonly</profile>
            <quota>default</quota>
        </$ch_ro_user>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
XML
}

# tc_ch_db_args: after tc_start_clickhouse, the collector's options to
# store into database tc there as $ch_user (its password in $tmp/ch.pw,
# mode 600; the journal in $tmp/journal) in the array ch_db_args.
tc_ch_db_args() {
	printf '%s\n' "$ch_password" > "$tmp/ch.pw"
	chmod 600 "$tmp/ch.pw"
	ch_db_args=(--db "clickhouse://$ch_user@127.0.0.1:${ch_http_port}/tc"
		--db-password-file "$tmp/ch.pw" --journal-dir "$tmp/journal")
}

# ---- trace-cmd recordings imported into ClickHouse --------------------------
# tc_ch_import_test NAME VAR...: the start of a test that imports
# trace-cmd recordings into collectors on a clickhouse-server of its own:
# skips without a writable tracefs, trace-cmd, clickhouse-server or the
# test aids, takes the tracefs lock, then tc_setup NAME VAR...
tc_ch_import_test() {
	tc_need_tracefs
	command -v trace-cmd > /dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
	tc_need_clickhouse
	tc_need_test_aids
	tc_lock
	tc_setup "$@"
}
# tc_sched_record NAME WORKLOAD [OPTION...]: $tmp/NAME.dat, trace-cmd's
# recording of sched_switch and sched_wakeup while sh -c WORKLOAD runs
# (tc_tracecmd_record, in instance tc_sched_PID_NAME), OPTIONs before them.
tc_sched_record() {
	local name=$1 work=$2
	shift 2
	tc_tracecmd_record "tc_sched_$$_$name" "$tmp/$name.dat" "$@" -e sched:sched_switch \
		-e sched:sched_wakeup sh -c "$work"
}
# tc_ch_import_start: once the recordings are made, the test's
# certificates, its clickhouse-server and the collectors' options for it
# (tc_ch_db_args).
tc_ch_import_start() {
	tc_certs
	tc_start_clickhouse
	tc_ch_db_args
}

# ---- one test, either store (issues 32, 33) ---------------------------------
# tc_db_backend: the collector's store options for the store the test
# runs against, into the array tc_db, for tc_start_collector: none (SQLite
# in $tmp/trace.db) unless TC_BACKEND=clickhouse: then a clickhouse-server
# of the test's own (tc_start_clickhouse; skips without the package) and
# tc_ch_db_args' options. A test's ClickHouse twin is a script that sets
# TC_BACKEND and runs the test (tests/test_ch_export.sh).
tc_db_backend() {
	tc_db=()
	case ${TC_BACKEND:-sqlite} in
	sqlite) ;;
	clickhouse) tc_start_clickhouse; tc_ch_db_args; tc_db=("${ch_db_args[@]}") ;;
	*) echo "FAIL: TC_BACKEND=$TC_BACKEND: sqlite or clickhouse"; exit 1 ;;
	esac
}

# ---- a host whose realtime lies (issue 36) ----------------------------------
# tc_need_faketime: skip without Debian's faketime; sets libft to its
# libfaketime.so.1. tc_faked_agent NAME FAKETIME ARGS...: tc_start_agent NAME
# ARGS... with its realtime as FAKETIME says (FAKETIME_DONT_FAKE_MONOTONIC=1:
# its monotonic clock, the trace clock, left alone).
tc_need_faketime() {
	command -v faketime >/dev/null || skip "needs faketime (apt-get install faketime)"
	libft=$(dirname "$(readlink -f "$(command -v faketime)")")/../lib/$(gcc -print-multiarch 2>/dev/null)/faketime/libfaketime.so.1
	[ -e "$libft" ] || libft=$(find /usr/lib -name libfaketime.so.1 2>/dev/null | head -1)
	[ -e "$libft" ] || skip "no libfaketime.so.1 found"
}
tc_faked_agent() {
	local name=$1 ft=$2
	shift 2
	# libfaketime is preloaded before an ASan build's own runtime, which
	# ASan refuses unless told the order does not matter here
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	FAKETIME_DONT_FAKE_MONOTONIC=1 LD_PRELOAD="$libft" FAKETIME="$ft" tc_start_agent "$name" "$@"
}
