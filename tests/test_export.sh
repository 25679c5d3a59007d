#!/bin/bash
# traceq --export -f tracedat (issue 33): what an agent recorded, written
# as trace.dat and read by its real consumers.
#
# An agent records sched, irq and timer events (mono clock, an instance
# of the test's own) while a workload runs; a second host's agent (another
# instance) records sched_switch, so the collector holds two hosts.
#
# Asserts:
#  - v7 (zstd, the default) and v6 (--tracedat-version 6) exports of one
#    host are written (exit 0) and are what their headers say
#    (trace-cmd dump);
#  - `trace-cmd report` of each prints the lines `traceq --time raw
#    --no-host -H HOST` prints for the same selection: the same number of
#    events, every line matched and identical (tests/text_compare.awk),
#    for every event and for a filtered QUERY with --cpu;
#  - round trip: the v7 export imported under a new name prints the same
#    lines as the host it came from (times included), and as many events;
#  - two hosts: PATH is made a directory with one HOST.dat each, each
#    file as many events as traceq --count gives its host; --time wall
#    gives each an OFFSET option (trace-cmd dump --options), --time raw
#    none; with DATE beside it, trace-cmd report prints the wall clock
#    (the host's first row as traceq prints it, to the millisecond);
#  - losses (a 16 KiB buffer, the agent held still): trace-cmd report of
#    the export prints "CPU:N [N EVENTS DROPPED]" where traceq does (same
#    CPU, count and next event of that CPU), the events all identical;
#    traceq --follow of the host from its start prints every row and the
#    same loss lines;
#  - a program's function graph (traceagent --exec, our ring) goes into
#    the file's "programs" instance (v7 and v6): trace-cmd report prints
#    as many of its events there as traceq --count gives;
#  - KernelShark's library (tests/kshark_count, built when configure finds
#    libkshark-dev) loads the v7 file: as many entries as traceq --count,
#    and the same count per CPU and per event;
#  - refusals: -f with another word, --export with --count or --limit
#    (exit 2).
# With TC_BACKEND=clickhouse (tests/test_ch_export.sh) the collector stores
# into a clickhouse-server of the test's own, and every assert above holds
# there too: the headers, formats, losses and symbols an export needs come
# from ClickHouse alone.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
tc_lock
tc_setup export agent collector_pid workload
tc_certs
tc_db_backend	# SQLite, or ClickHouse from tests/test_ch_export.sh
mkdir -m 755 "$tmp/run"
tc_start_collector --query "ipc://$tmp/run/query.sock" "${tc_db[@]}"	# --import wants an identity

( while :; do sleep 0.002; ls / > /dev/null; done ) &
workload=$!
tc_run_agent agent-a -e sched -e irq -e timer --trace-clock mono --name exp-a --no-user \
	--duration 2 --instance "tc-export-$$-a"
rc=$?
check "agent exp-a exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent-a.err"; false; }'
tc_run_agent agent-b -e sched:sched_switch --trace-clock mono --name exp-b --no-user \
	--duration 1 --instance "tc-export-$$-b"
rc=$?
check "agent exp-b exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent-b.err"; false; }'
kill "$workload"; wait "$workload" 2>/dev/null
workload=

n_a=$(traceq --count -H exp-a '*')
check "the collector stored exp-a's events ($n_a)" '[ "${n_a:-0}" -gt 100 ]'

# report FILE [FILTER]: trace-cmd report's event lines
report() {
	if [ -n "${2:-}" ]; then trace-cmd report -F "$2" -i "$1"; else trace-cmd report -i "$1"; fi \
		2> "$tmp/report.err" | grep -v '^cpus=' | grep -v '^ *$'
}
# same WHAT THEIRS OURS: every line matched and identical
same() {
	local line theirs=$2 ours=$3 events
	awk -v show=3 -f "$top_srcdir/tests/text_compare.awk" "$theirs" "$ours" > "$tmp/cmp.out"
	line=$(tail -1 "$tmp/cmp.out")
	events=$(grep -vc '^CPU:[0-9]* \[' "$ours")	# the loss lines are no events
	val() { printf '%s\n' "$line" | sed -n "s/.*\<$1=\([0-9]*\).*/\1/p"; }
	check "$1: $(wc -l < "$ours") lines, as many in trace-cmd report, all identical ($line)" \
		'[ "$(wc -l < "$theirs")" = "$(wc -l < "$ours")" ] &&
		 [ "$(val matched)" = "$events" ] &&
		 [ "$(val identical)" = "$(val matched)" ] || { head -20 "$tmp/cmp.out"; false; }'
}

for v in 7 6; do
	f="$tmp/a-v$v.dat"
	traceq --export "$f" -f tracedat --tracedat-version "$v" -H exp-a > "$tmp/exp.out" 2>&1
	rc=$?
	check "v$v: --export exits 0" '[ "$rc" = 0 ] || { cat "$tmp/exp.out"; false; }'
	trace-cmd dump --summary -i "$f" > "$tmp/dump.txt" 2>&1
	check "v$v: trace-cmd dump reads it as version $v" \
		'grep -q "^[[:space:]]*$v[[:space:]]*\[Version\]" "$tmp/dump.txt" || { cat "$tmp/dump.txt"; false; }'
	if [ "$v" = 7 ]; then
		check "v7 is compressed with zstd" 'grep -q zstd "$tmp/dump.txt"'
	fi
	report "$f" > "$tmp/theirs.txt"
	traceq --time raw --no-host -H exp-a '*' > "$tmp/ours.txt"
	same "v$v: every event" "$tmp/theirs.txt" "$tmp/ours.txt"
done

# a filtered selection of one CPU
cpu=$(traceq --format json -n 1 -H exp-a sched_switch | sed -n 's/.*"cpu":\([0-9]*\).*/\1/p')
q="sched_switch where prev_pid != 0"
traceq --export "$tmp/f.dat" -f tracedat -H exp-a --cpu "${cpu:-0}" "$q" > "$tmp/exp.out" 2>&1
rc=$?
check "a filtered export exits 0" '[ "$rc" = 0 ] || { cat "$tmp/exp.out"; false; }'
report "$tmp/f.dat" > "$tmp/theirs.txt"
traceq --time raw --no-host -H exp-a --cpu "${cpu:-0}" "$q" > "$tmp/ours.txt"
same "'$q' on CPU ${cpu:-0}" "$tmp/theirs.txt" "$tmp/ours.txt"

# round trip: the v7 export imported as a host of its own
traceq --import "$tmp/a-v7.dat" --name exp-rt > "$tmp/imp.out" 2>&1
rc=$?
check "the v7 export imports (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/imp.out"; false; }'
# (sorted: rows of one time on two CPUs may come in either order)
traceq --time raw --no-host -H exp-a '*' | sort > "$tmp/a.txt"
traceq --time raw --no-host -H exp-rt '*' | sort > "$tmp/rt.txt"
check "round trip: the same $(wc -l < "$tmp/a.txt") lines, times included" \
	'cmp -s "$tmp/a.txt" "$tmp/rt.txt" || { diff "$tmp/a.txt" "$tmp/rt.txt" | head; false; }'

# two hosts: a directory, a file each, OFFSET with --time wall
traceq --export "$tmp/both" -H 'exp-[ab]' > "$tmp/exp.out" 2>&1
rc=$?
check "two hosts: exit 0, a directory of two files" \
	'[ "$rc" = 0 ] && [ -s "$tmp/both/exp-a.dat" ] && [ -s "$tmp/both/exp-b.dat" ] ||
	 { cat "$tmp/exp.out"; ls -l "$tmp/both"; false; }'
for h in exp-a exp-b; do
	n=$(traceq --count -H "$h" '*')
	got=$(report "$tmp/both/$h.dat" | wc -l)
	check "$h.dat holds its $n events ($got)" '[ "$got" = "$n" ]'
	check "$h.dat has an OFFSET option (--time wall, the default for two hosts)" \
		'trace-cmd dump --options -i "$tmp/both/$h.dat" 2>&1 | grep -q "OFFSET"'
done
check "one host's --time raw file has no OFFSET option" \
	'! trace-cmd dump --options -i "$tmp/a-v7.dat" 2>&1 | grep -q "OFFSET"'
# --time wall: DATE (microseconds, what older readers take) and OFFSET (the
# nanoseconds left), which trace-cmd adds: its times are the wall clock's,
# traceq's first row of the host to the millisecond (neither offset lost
# nor counted twice; the collector's own placing may differ by its clock
# samples' drift, hence no closer)
check "exp-a.dat has a DATE option (--time wall)" \
	'trace-cmd dump --options -i "$tmp/both/exp-a.dat" 2>&1 | grep -q "DATE"'
tc_first=$(report "$tmp/both/exp-a.dat" | head -1 | sed -n 's/.* \([0-9][0-9]*\.[0-9]*\): .*/\1/p')
tq_first=$(traceq --format json -n 1 -H exp-a '*' | sed -n 's/.*"ts":\([0-9]*\).*/\1/p')
check "trace-cmd report prints exp-a's wall-clock time ($tc_first s, traceq: $tq_first ns)" \
	'awk -v a="$tc_first" -v b="$tq_first" "BEGIN { d = a * 1e9 - b; exit !(a > 0 && d < 1e6 && d > -1e6) }"'

# losses: a tiny buffer, an agent held still while a workload overruns it
# (lib.sh's tc_lossy_agent); trace-cmd reads the missed-events flag and count of
# the export's pages
tc_lossy_agent agent-l exp-loss "tc-export-$$-l" --trace-clock mono
# drops FILE: per loss line "CPU:N [...]", the CPU, what it says and the
# time of that CPU's next event, sorted
drops() {
	awk '/^CPU:[0-9]+ \[/ { c = substr($1, 5) + 0; pend[c] = pend[c] $0 "|"; next }
	     match($0, /\[[0-9]+\] +[0-9]+\.[0-9]+:/) {
		split(substr($0, RSTART, RLENGTH), f, /[][ :]+/); c = f[2] + 0
		if (pend[c] != "") { print c, pend[c], f[3]; pend[c] = "" }
	     }' "$1" | sort
}
traceq --export "$tmp/loss.dat" -H exp-loss raw_syscalls > "$tmp/exp.out" 2>&1
rc=$?
check "the lossy host exports (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/exp.out"; false; }'
traceq --time raw --no-host -H exp-loss raw_syscalls > "$tmp/ours.txt"
report "$tmp/loss.dat" > "$tmp/theirs.txt"
drops "$tmp/ours.txt" > "$tmp/ours.drops"
drops "$tmp/theirs.txt" > "$tmp/theirs.drops"
if [ -s "$tmp/ours.drops" ]; then
	check "trace-cmd report prints its $(wc -l < "$tmp/ours.drops") losses where traceq does (CPU, count, the next event's time)" \
		'cmp -s "$tmp/ours.drops" "$tmp/theirs.drops" || { diff "$tmp/ours.drops" "$tmp/theirs.drops" | head; false; }'
	same "the lossy host's events" "$tmp/theirs.txt" "$tmp/ours.txt"
	# traceq --follow prints the same loss lines: a follower from the
	# host's start (--since), which ends by itself once it has printed
	# every row select counts (--limit; a timeout bounds it should it
	# not), the loss lines compared as a set (rows come in storage
	# order, each loss before the first row at or after it). (Not one
	# started before the host came: a live follower of a host being
	# stored missed rows here, with loss lines and without: a bug of
	# the tail's own.)
	n_loss=$(traceq --count -H exp-loss raw_syscalls)
	timeout 300 "$top_builddir/traceq/traceq" --server "$query" -t 60000 --no-host --follow \
		--since 2000-01-01 --limit "$n_loss" -H exp-loss raw_syscalls \
		> "$tmp/follow.txt" 2> "$tmp/follow.err"
	rc=$?
	check "traceq --follow printed every row select counts ($(grep -vc '^CPU:' "$tmp/follow.txt") of $n_loss, exit $rc)" \
		'[ "$rc" = 0 ] && [ "$(grep -vc "^CPU:" "$tmp/follow.txt")" = "$n_loss" ] || { cat "$tmp/follow.err"; false; }'
	grep '^CPU:[0-9]* \[' "$tmp/ours.txt" | sort > "$tmp/ours.lost"
	grep '^CPU:[0-9]* \[' "$tmp/follow.txt" | sort > "$tmp/follow.lost"
	check "traceq --follow printed the $(wc -l < "$tmp/ours.lost") loss lines select prints" \
		'cmp -s "$tmp/ours.lost" "$tmp/follow.lost" ||
		 { diff "$tmp/ours.lost" "$tmp/follow.lost" | head; cat "$tmp/follow.err"; false; }'
else
	tc_skip_part "losses in trace.dat" "the kernel lost nothing this run (traceq prints no loss)"
fi

# a program's function graph (our ring, CPUs the kernel has not): the
# "programs" instance of the file
prog=$top_builddir/tests/fgraph_prog_fentry
if [ ! -x "$prog" ]; then
	tc_skip_part "programs' instance" "$prog not built (x86_64 only)"
else
	shm=$(mktemp -d /dev/shm/tc-export.XXXXXX)
	"$top_builddir/traceagent" --connect "$listen" --user-dir "$shm" \
		--cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key" \
		--ca "$tmp/pki/ca.crt" --name exp-prog -e sched:sched_switch --trace-clock mono \
		--exec -- "$prog" > "$tmp/prog.out" 2> "$tmp/prog.err"
	rc=$?
	rm -rf "$shm"
	check "agent --exec exits 0" '[ "$rc" = 0 ] || { cat "$tmp/prog.err"; false; }'
	n=$(traceq --count -H exp-prog 'ftrace:funcgraph_*')
	# which of its buffers the calls land in varies with the run; each
	# row carries its stream (>= 32768), never a number a kernel CPU has
	traceq --time raw --no-host -H exp-prog 'ftrace:funcgraph_*' > "$tmp/progrows.txt"
	read -r rows low < <(awk 'match($0, /\[[0-9]+\] +[0-9]+\.[0-9]+:/) {
		split(substr($0, RSTART, RLENGTH), f, /[][ :]+/); n++; if (f[2] + 0 < 32768) low++ }
		END { print n + 0, low + 0 }' "$tmp/progrows.txt")
	check "traceq: the program's $n calls carry their streams ($rows rows, $low below 32768)" \
		'[ "$n" -gt 0 ] && [ "$rows" = "$n" ] && [ "$low" = 0 ] || { head -3 "$tmp/progrows.txt"; false; }'
	for v in 7 6; do
		traceq --export "$tmp/prog$v.dat" --tracedat-version "$v" -H exp-prog > "$tmp/exp.out" 2>&1
		rc=$?
		report "$tmp/prog$v.dat" > "$tmp/prog$v.txt"
		got=$(grep -c '^programs: .*funcgraph_' "$tmp/prog$v.txt")
		kern=$(grep -v '^programs: ' "$tmp/prog$v.txt" | grep -c 'funcgraph_')
		# (its buffers below the host's CPU count too: rows carry their stream)
		check "v$v: the program's $n calls are the instance 'programs' ($got; $kern on kernel CPUs; exit $rc)" \
			'[ "$rc" = 0 ] && [ "$n" -gt 0 ] && [ "$got" = "$n" ] && [ "$kern" = 0 ] ||
			 { cat "$tmp/exp.out"; false; }'
	done

	# the program's losses: its ring (64 KiB) overruns while the agent is
	# held still; traceq prints them on the ring's stream numbers, the
	# export puts each into the programs instance on the CPU of that
	# buffer's rows (the collector's op 10 names the group's first stream)
	shm=$(mktemp -d /dev/shm/tc-export.XXXXXX)
	TC_FTRACE_BUFFER_KB=64 "$top_builddir/traceagent" --connect "$listen" --user-dir "$shm" \
		--cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key" \
		--ca "$tmp/pki/ca.crt" --name exp-progloss -e sched:sched_switch --trace-clock mono \
		--exec -- "$prog" pages 3000000 > "$tmp/progloss.out" 2> "$tmp/progloss.err" &
	agent=$!
	for _ in $(seq 100); do
		grep -q "host exp-progloss: program" "$tmp/collector.log" && break
		sleep 0.1
	done
	sleep 0.2
	kill -STOP "$agent"
	sleep 1.5
	kill -CONT "$agent"
	wait "$agent"; rc=$?
	agent=
	rm -rf "$shm"
	check "agent --exec (held still) exits 0" '[ "$rc" = 0 ] || { cat "$tmp/progloss.err"; false; }'
	traceq --time raw --no-host -H exp-progloss 'ftrace:funcgraph_*' > "$tmp/ours.txt"
	ours=$(grep -cE '^CPU:3[0-9]{4} \[' "$tmp/ours.txt")
	if [ "$ours" = 0 ]; then
		tc_skip_part "a program's losses in trace.dat" "the ring lost nothing this run"
	else
		# pdrops FILE: per loss line "[programs: ]CPU:N [...]" what it says
		# and the time of the next row of CPU N (traceq: the stream, rows
		# and losses alike; the file: the instance's CPU), sorted
		pdrops() {
			awk '/^(programs: )?CPU:[0-9]+ \[/ {
				c = $0; sub(/^(programs: )?CPU:/, "", c); c = c + 0
				n = $0; sub(/^[^[]*/, "", n); pend[c] = pend[c] n "|"; next }
			     match($0, /\[[0-9]+\] +[0-9]+\.[0-9]+:/) {
				split(substr($0, RSTART, RLENGTH), f, /[][ :]+/); c = f[2] + 0
				if (pend[c] != "") { print pend[c], f[3]; pend[c] = "" }
			     }' "$1" | sort
		}
		pdrops "$tmp/ours.txt" > "$tmp/ours.drops"
		for v in 7 6; do
			traceq --export "$tmp/pl$v.dat" --tracedat-version "$v" -H exp-progloss \
				'ftrace:funcgraph_*' > "$tmp/exp.out" 2>&1
			rc=$?
			report "$tmp/pl$v.dat" > "$tmp/theirs.txt"
			theirs=$(grep -cE '^programs: CPU:[0-9]+ \[' "$tmp/theirs.txt")
			pdrops "$tmp/theirs.txt" > "$tmp/theirs.drops"
			check "v$v: trace-cmd report prints the program's $ours losses in its instance ($theirs, exit $rc)" \
				'[ "$rc" = 0 ] && [ "$theirs" = "$ours" ] || { cat "$tmp/exp.out"; false; }'
			check "v$v: ... each where traceq prints it (count, the next row of its buffer)" \
				'[ -s "$tmp/ours.drops" ] && cmp -s "$tmp/ours.drops" "$tmp/theirs.drops" ||
				 { diff "$tmp/ours.drops" "$tmp/theirs.drops" | head; false; }'
		done
	fi
fi

# KernelShark's loader: its entries per CPU and per event are traceq --count's
ks="$top_builddir/tests/kshark_count"
if [ ! -x "$ks" ]; then
	tc_skip_part "KernelShark's library" "tests/kshark_count not built (apt-get install libkshark-dev, then configure)"
else
	# (libkshark 2.2.1 leaks a stream's name: not ours to report under ASan)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		"$ks" "$tmp/a-v7.dat" > "$tmp/ks.txt" 2> "$tmp/ks.err"
	rc=$?
	check "libkshark loads the v7 export (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/ks.err"; false; }'
	check "libkshark loads its $n_a entries" 'grep -qx "entries $n_a" "$tmp/ks.txt" || { head -3 "$tmp/ks.txt"; false; }'
	bad=
	while read -r what key n; do
		case $what in
		cpu) want=$(traceq --count -H exp-a --cpu "$key" '*') ;;
		event) want=$(traceq --count -H exp-a "${key%%/*}:${key#*/}") ;;
		*) continue ;;
		esac
		[ "$want" = "$n" ] || bad="$bad $what $key: libkshark $n, traceq $want;"
	done < "$tmp/ks.txt"
	check "libkshark's counts per CPU and per event are traceq --count's" \
		'[ -z "$bad" ] && grep -q "^cpu " "$tmp/ks.txt" && grep -q "^event " "$tmp/ks.txt" || { echo "$bad"; false; }'
fi

traceq --export "$tmp/x.dat" -f kernel -H exp-a > /dev/null 2>&1
rc=$?
check "-f kernel with --export: exit 2" '[ "$rc" = 2 ]'
traceq --export "$tmp/x.dat" --count '*' > /dev/null 2>&1
rc=$?
check "--export with --count: exit 2" '[ "$rc" = 2 ]'
traceq --export "$tmp/x.dat" --limit 5 -H exp-a > /dev/null 2>&1
rc=$?
check "--export with --limit: exit 2, no file" '[ "$rc" = 2 ] && [ ! -e "$tmp/x.dat" ]'

exit "$failed"
