#!/bin/bash
# Kernel stack traces end to end (issue 38, "Stack traces").
#
# Asserts:
#  (a) a recording made here with `trace-cmd record -T`, imported with
#      traceq --import: `traceq --time raw --no-host -H HOST` prints what
#      `trace-cmd report` prints, line for line, the kernel_stack records'
#      "=> func (addr)" lines included (the decoder reads a stack record's
#      caller[] to the record's end, not the 8 its format declares);
#      -f json gives each kernel stack record's frames as an array of
#      addresses, as many as its lines; a trace.dat export of the import, read by
#      trace-cmd report, prints the recording's lines, stacks included;
#  (b) live: an agent with --stacktrace on a syscall event: the stack of
#      each of its events names the syscall's entry (do_syscall_64 or
#      entry_SYSCALL_64*);
#      with --user-stacktrace, each has its ftrace:user_stack too;
#  (c) live: a stacktrace trigger with a filter (--stacktrace 'EVENT
#      where FILTER') stacks only the events that match it, and the agent
#      removes its trigger at exit;
#  (d) the recording of (a) imported into a collector on ClickHouse prints
#      the same, frames named from the kallsyms that store keeps, and that
#      store too keeps each stack once (skipped, saying so, without
#      clickhouse-server);
#  (e) SQLite keeps each distinct stack once (sql/0016-stacks.sql): its
#      stacks table has fewer rows than the stack records stored, every
#      stack row's id is one of them, and a store of before 0016 (frames in
#      the rows, no stacks table) is migrated and prints as it did; a
#      recording imported into it then prints what trace-cmd report prints;
#      retention that removes the stack records removes their stacks.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
command -v python3 >/dev/null || skip "needs python3"
command -v sqlite3 >/dev/null || skip "needs sqlite3 (apt-get install sqlite3)"
tc_lock
tc_setup stacks collector_pid agent clickhouse_pid
inst="tc_stacks_$$"
trap 'rmdir "$tracing/instances/$inst" 2>/dev/null; tc_cleanup' EXIT

# ---- (a) trace-cmd record -T, imported ----
sys_ev=syscalls:sys_enter_getppid
[ -d "$tracing/events/syscalls/sys_enter_getppid" ] || sys_ev=raw_syscalls:sys_enter
# record DAT: trace-cmd record -T of a workload into DAT, its report in DAT.txt
record() {
	tc_tracecmd_record "$inst" "$1" -T -O userstacktrace -e "$sys_ev" -e sched:sched_switch -- \
		python3 -c 'import os, time
for i in range(40):
	os.getppid()
	time.sleep(0.001)'
	trace-cmd report -i "$1" 2>/dev/null | grep -v '^cpus=' | sed 's/^[a-z0-9_]*: //' \
		> "$1.txt"
}
record "$tmp/st.dat"
cp "$tmp/st.dat.txt" "$tmp/theirs.txt"
check "trace-cmd recorded stacks, kernel and user" \
	'grep -q "kernel_stack: *<stack trace >" "$tmp/theirs.txt" && grep -q "user_stack: " "$tmp/theirs.txt"'

tc_certs
sock="$tmp/q.sock"
tc_start_collector --query "ipc://$sock"
tq() { "$top_builddir/traceq/traceq" -s "ipc://$sock" -t 120000 "$@"; }
tq --import "$tmp/st.dat" --name imp-stacks > "$tmp/imp.out" 2>&1; rc=$?
check "the recording imports (exit $rc: $(cat "$tmp/imp.out"))" '[ "$rc" = 0 ]'
tq -H imp-stacks --time raw --no-host '*' > "$tmp/ours.txt" 2> "$tmp/ours.err"
# Line by line. A stack line may name another alias of the same address
# ("=> __x64_sys_vfork (ffffffff81360206)" where trace-cmd, which takes
# the first of kallsyms' names there, says __do_sys_vfork): the store's
# symbols keep no file order. Such a line counts as an alias when both
# names start at one address in this host's /proc/kallsyms (the
# recording was made here). A line may also name a task trace-cmd shows
# as <...> (its pid missed the kernel's saved_cmdlines; the store learns
# names from the events too): it counts as named when that is the only
# difference and the line itself gives the pid that name (a
# sched_switch's "bash:23076"). Any other difference fails.
# tie_order FILE: FILE's events (a line and the "=>" lines under it) with
# those that print one timestamp put in CPU order, as trace-cmd report
# takes them at a tie (the lower CPU first); the store keeps such a tie in
# its rows' order. Both sides go through it, so only the order across CPUs
# within one printed microsecond is left out of the comparison.
tie_order() {
	awk 'function flush(   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && cpu[j] < cpu[j - 1]; j--) {
				t = rec[j]; rec[j] = rec[j - 1]; rec[j - 1] = t
				t = cpu[j]; cpu[j] = cpu[j - 1]; cpu[j - 1] = t
			}
		for (i = 1; i <= n; i++) printf "%s", rec[i]
		n = 0; ts = ""
	}
	/^=> / && n { rec[n] = rec[n] $0 "\n"; next }
	match($0, /\[[0-9]+\] +[0-9]+\.[0-9]+:/) {
		f = substr($0, RSTART, RLENGTH); c = f; sub(/\].*/, "", c); sub(/\[/, "", c)
		t = f; sub(/^[^]]*\] +/, "", t)
		if (t != ts) flush()
		ts = t; rec[++n] = $0 "\n"; cpu[n] = c + 0; next
	}
	{ flush(); print }
	END { flush() }' "$1"
}

# cmp_report THEIRS OURS: the comparison's counts (differ=0: the same),
# ties in CPU order on both sides (tie_order)
cmp_report() {
	tie_order "$1" > "$1.tie"
	tie_order "$2" > "$2.tie"
	set -- "$1.tie" "$2.tie"
	awk 'FILENAME == ARGV[1] { if (!($3 in at)) at[$3] = $1; next }
	FILENAME == ARGV[2] { a[FNR] = $0; na = FNR; next }
	{ nb = FNR
	  if (a[FNR] == $0) { same++; next }
	  split(a[FNR], x, / /)
	  if (x[1] == "=>" && $1 == "=>" && x[3] == $3 && (x[2] in at) && ($2 in at) &&
	      at[x[2]] == at[$2]) { alias++; next }
	  t = a[FNR]
	  if (match(t, /<\.\.\.>-[0-9]+ /) && match($0, /[^ ]+-[0-9]+ /)) {
		task = substr($0, RSTART, RLENGTH - 1); pid = task; sub(/.*-/, "", pid)
		name = substr(task, 1, length(task) - length(pid) - 1)
		u = t; sub(/<\.\.\.>-[0-9]+ /, task " ", u); sub(/^ +/, "", u)
		o = $0; sub(/^ +/, "", o)	# the task is right-aligned in 16
		if (u == o && index(t, "<...>-" pid " ") && index(t, " " name ":" pid " ")) {
			named++; next
		}
	  }
	  differ++; if (!first) first = FNR ": " a[FNR] " | " $0 }
	END { printf "lines=%d same=%d alias=%d named=%d differ=%d %s\n", na, same, alias,
		named, differ + (na > nb ? na - nb : nb - na), first }' \
	/proc/kallsyms "$1" "$2"
}
cmp_report "$tmp/theirs.txt" "$tmp/ours.txt" > "$tmp/cmp.txt"
cmp_line=$(cat "$tmp/cmp.txt")
check "traceq --time raw prints trace-cmd report's lines, stacks included ($cmp_line)" \
	'grep -q " differ=0 " "$tmp/cmp.txt" && [ "$(grep -c "^=> " "$tmp/ours.txt")" -gt 0 ] &&
	 [ "$(wc -l < "$tmp/ours.txt")" = "$(wc -l < "$tmp/theirs.txt")" ]'
# The same stacks out again: -f json gives each kernel stack record's
# frames as an array of addresses (as many as its "=>" lines above), and a trace.dat
# export carries the stack records, so that trace-cmd report of it prints
# what it printed of the recording.
tq -H imp-stacks -f json kernel_stack > "$tmp/stacks.json" 2> "$tmp/stacks.err"
jframes=$(python3 -c 'import json, sys
n = recs = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    c = r.get("caller")
    if not isinstance(c, list) or not all(isinstance(a, int) for a in c):
        sys.exit("not an array of addresses: %r" % l[:200])
    n += len(c); recs += 1
print(recs, n)' "$tmp/stacks.json" 2>&1)
nlines=$(awk '/^=> / { n += k; next } { k = / kernel_stack: / } END { print n + 0 }' "$tmp/ours.txt")
check "-f json: each stack record's frames an array of addresses ($jframes: records, frames; $nlines => lines)" \
	'[ "${jframes#* }" = "$nlines" ] && [ "${jframes% *}" -gt 0 ]'
tq --export "$tmp/exp.dat" -f tracedat --time raw -H imp-stacks > "$tmp/exp.out" 2>&1; rc=$?
trace-cmd report -i "$tmp/exp.dat" 2>/dev/null | grep -v '^cpus=' | sed 's/^[a-z0-9_]*: //' \
	> "$tmp/exp.txt"
cmp_report "$tmp/theirs.txt" "$tmp/exp.txt" > "$tmp/cmp-exp.txt"
check "its trace.dat export: trace-cmd report prints the recording's lines, stacks included (exit $rc; $(cat "$tmp/cmp-exp.txt"))" \
	'[ "$rc" = 0 ] && grep -q " differ=0 " "$tmp/cmp-exp.txt" && [ "$(grep -c "^=> " "$tmp/exp.txt")" -gt 0 ]'

# ---- (b) live: --stacktrace on a syscall event ----
# run_agent NAME HOST INSTANCE ARGS...: an agent that traces while the
# workload (a python of getppid() and close() calls) runs, then stops;
# sets wpid to the workload's pid
run_agent() {
	local name=$1 host=$2 in=$3; shift 3
	tc_start_agent "$name" --name "$host" --no-user --no-comm-events --instance "$in" "$@"
	for _ in $(seq 300); do
		grep -q "agent $host (" "$tmp/collector.log" && break
		kill -0 "$agent" 2>/dev/null || break
		sleep 0.1
	done
	python3 -c 'import os, time
print(os.getpid(), flush=True)
for i in range(30):
	os.getppid()
	for fd in (4242, 4243):
		try:
			os.close(fd)
		except OSError:
			pass
	time.sleep(0.002)' > "$tmp/$name.wpid"
	wpid=$(cat "$tmp/$name.wpid")
	sleep 0.5
	kill -INT "$agent"; wait "$agent"; rc=$?; agent=
	check "agent $name exits 0 (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/$name.err"; false; }'
}
tq() { "$top_builddir/traceq/traceq" -s "ipc://$sock" --sync -t 120000 "$@"; }

run_agent live live-stacks "tc-stacks-$$-b" -e "$sys_ev" --stacktrace --user-stacktrace
check "the agent's instance had options/stacktrace and userstacktrace (no warning)" \
	'! grep -q "without kernel stacks\|without user stacks" "$tmp/live.err"'
tq -H live-stacks --time raw --no-host "$sys_ev,ftrace:kernel_stack" > "$tmp/live.txt" 2>&1
# the events of the workload's pid, and the stack after each (the next
# record on its CPU)
awk -v pid="$wpid" '
	/-[0-9]+ +\[[0-9]+\] / {
		match($0, /-[0-9]+ +\[[0-9]+\]/); split(substr($0, RSTART + 1, RLENGTH - 1), a, /[] []+/)
		instack = 0
		if ($0 ~ /kernel_stack:/) {
			if (last[a[2]] == pid) { stacks++; instack = 1; entry[stacks] = 0 }
			last[a[2]] = ""
		} else {
			last[a[2]] = a[1]
			if (a[1] == pid) evs++
		}
		next
	}
	/^=> / && instack {
		if ($2 ~ /^(do_syscall_64|entry_SYSCALL_64.*|do_int80_syscall_32|el0_svc.*|invoke_syscall)$/) entry[stacks] = 1
	}
	END { n = 0; for (i = 1; i <= stacks; i++) n += entry[i]; print evs + 0, stacks + 0, n }' \
	"$tmp/live.txt" > "$tmp/live.counts"
read -r evs stacks with_entry < "$tmp/live.counts"
check "live: each of the workload's $evs syscall events has a stack ($stacks) naming the syscall entry ($with_entry)" \
	'[ "$evs" -ge 30 ] && [ "$stacks" = "$evs" ] && [ "$with_entry" = "$stacks" ]'

ustacks=$(tq -H live-stacks --time raw --no-host ftrace:user_stack | grep -c -- "-$wpid .*user_stack: *	=> 0x")
check "live: --user-stacktrace stored the workload's user stacks ($ustacks for $evs events)" \
	'[ "$ustacks" -ge "$evs" ]'

# ---- (c) a stacktrace trigger with a filter ----
if [ -d "$tracing/events/syscalls/sys_enter_close" ]; then
	inc="tc-stacks-$$-c"
	run_agent trig trig-stacks "$inc" -e syscalls:sys_enter_close \
		--stacktrace 'sys_enter_close where fd == 4242'
	check "the trigger is gone with the agent" '[ ! -d "$tracing/instances/$inc" ]'
	tq -H trig-stacks --time raw --no-host 'sys_enter_close,ftrace:kernel_stack' \
		> "$tmp/trig.txt" 2>&1
	# per workload event: its fd, and whether a stack follows it
	awk -v pid="$wpid" '
		/-[0-9]+ +\[[0-9]+\] / {
			match($0, /-[0-9]+ +\[[0-9]+\]/); split(substr($0, RSTART + 1, RLENGTH - 1), a, /[] []+/)
			c = a[2]
			if ($0 ~ /kernel_stack:/) { if (last[c] != "") stacked[last[c]]++; last[c] = ""; next }
			if (a[1] != pid) { last[c] = ""; next }
			last[c] = ($0 ~ /fd: 0x0*1092/) ? "4242" : ($0 ~ /fd: 0x0*1093/) ? "4243" : "other"
			seen[last[c]]++
		}
		END { print seen["4242"] + 0, stacked["4242"] + 0, seen["4243"] + 0, stacked["4243"] + 0,
			    stacked["other"] + 0 }' "$tmp/trig.txt" > "$tmp/trig.counts"
	read -r n42 s42 n43 s43 so < "$tmp/trig.counts"
	check "trigger 'stacktrace if fd == 4242': $s42 of $n42 close(4242) stacked, $s43 of $n43 close(4243), $so others" \
		'[ "$n42" -ge 30 ] && [ "$s42" = "$n42" ] && [ "$n43" -ge 30 ] && [ "$s43" = 0 ] && [ "$so" = 0 ]'
else
	tc_skip_part "the filtered trigger (c)" "this kernel has no syscalls:sys_enter_close"
fi

# ---- (e) stacks stored once each (SQLite) ----
# sq "SQL": the collector's SQLite file, read while it runs (WAL)
sq() { sqlite3 -batch -noheader "$tmp/trace.db" "$1"; }
stack_tabs=$(sq "SELECT table_name FROM event_types WHERE system = 'ftrace'
	AND name IN ('kernel_stack', 'user_stack') ORDER BY name")
nrows=0; nids=0; dangling=0
for t in $stack_tabs; do
	nrows=$((nrows + $(sq "SELECT count(*) FROM \"$t\"")))
	nids=$((nids + $(sq "SELECT count(*) FROM \"$t\" WHERE typeof(caller) = 'integer'")))
	dangling=$((dangling + $(sq "SELECT count(*) FROM \"$t\" WHERE typeof(caller) = 'integer'
		AND caller NOT IN (SELECT id FROM stacks)")))
done
nstacks=$(sq "SELECT count(*) FROM stacks")
check "stacks stored once each: $nstacks stacks for $nrows stack records ($nids by id, $dangling without their stack)" \
	'[ -n "$stack_tabs" ] && [ "$nrows" -gt 0 ] && [ "$nids" = "$nrows" ] && [ "$dangling" = 0 ] &&
	 [ "$nstacks" -gt 0 ] && [ "$nstacks" -lt "$nrows" ]'
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
# the file as a collector before 0016 left it: frames in the rows, no stacks table
{ for t in $stack_tabs; do
	echo "UPDATE \"$t\" SET caller = (SELECT frames FROM stacks WHERE id = caller)
		WHERE typeof(caller) = 'integer';"
  done
  # and without the tables and columns of the migrations after 0016
  # (0017-snapshots, 0018-symbol-modules, ...)
  for m in "$top_srcdir"/sql/00[0-9][0-9]-*.sql; do
	n=$(basename "$m"); n=$((10#${n%%-*}))
	[ "$n" -gt 16 ] || continue
	sed -n -e 's/^CREATE TABLE \(IF NOT EXISTS \)\{0,1\}\([a-z_0-9]*\).*/DROP TABLE IF EXISTS \2;/p' \
		-e 's/^ALTER TABLE \([a-z_0-9]*\) ADD COLUMN \([a-z_0-9]*\).*/ALTER TABLE \1 DROP COLUMN \2;/p' "$m"
  done
  echo "DROP TABLE stacks; PRAGMA user_version = 15;"; } > "$tmp/old.sql"
sqlite3 -batch "$tmp/trace.db" < "$tmp/old.sql"
old_ok=$(sq "SELECT count(*) FROM sqlite_master WHERE name = 'stacks'")
tc_start_collector --query "ipc://$sock"
check "a store of before 0016 is migrated (stacks table: $old_ok before, $(sq "SELECT count(*) FROM sqlite_master WHERE name = 'stacks'") after)" \
	'[ "$old_ok" = 0 ] && [ "$(sq "PRAGMA user_version")" -ge 16 ]'
tq -H imp-stacks --time raw --no-host '*' > "$tmp/ours-old.txt" 2>&1
check "its rows, frames in the row, print as before" \
	'cmp -s "$tmp/ours.txt" "$tmp/ours-old.txt" || { diff "$tmp/ours.txt" "$tmp/ours-old.txt" | head -5; false; }'
# a recording imported into the migrated store: stacks by id again
record "$tmp/st2.dat"
tq --import "$tmp/st2.dat" --name imp-again > "$tmp/imp2.out" 2>&1; rc=$?
tq -H imp-again --time raw --no-host '*' > "$tmp/ours-again.txt" 2>&1
cmp_report "$tmp/st2.dat.txt" "$tmp/ours-again.txt" > "$tmp/cmp2.txt"
check "imported into it (exit $rc: $(cat "$tmp/imp2.out")), by id ($(sq "SELECT count(*) FROM stacks") stacks), it prints trace-cmd report's lines ($(cat "$tmp/cmp2.txt"))" \
	'[ "$rc" = 0 ] && [ "$(sq "SELECT count(*) FROM stacks")" -gt 0 ] && grep -q " differ=0 " "$tmp/cmp2.txt"'
# retention: the stacks no row references any more go with their rows
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
tc_start_collector --query "ipc://$sock" --retain-age 1
stack_rows() {
	local n=0 t
	for t in $stack_tabs; do n=$((n + $(sq "SELECT count(*) FROM \"$t\""))); done
	echo "$n"
}
for _ in $(seq 150); do
	[ "$(stack_rows)" = 0 ] && [ "$(sq "SELECT count(*) FROM stacks")" = 0 ] && break
	sleep 0.2
done
check "retention removed the stack records ($(stack_rows) left) and the stacks they referenced ($(sq "SELECT count(*) FROM stacks") left)" \
	'[ "$(stack_rows)" = 0 ] && [ "$(sq "SELECT count(*) FROM stacks")" = 0 ]'

# ---- (d) ClickHouse ----
if tc_have_clickhouse; then
	kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
	tc_start_clickhouse
	tc_ch_db_args
	tc_start_collector "${ch_db_args[@]}" --query "ipc://$sock"
	tq --import "$tmp/st.dat" --name imp-ch > "$tmp/imp-ch.out" 2>&1; rc=$?
	check "the recording imports into ClickHouse (exit $rc: $(cat "$tmp/imp-ch.out"))" '[ "$rc" = 0 ]'
	tq -H imp-ch --time raw --no-host '*' > "$tmp/ours-ch.txt" 2> "$tmp/ours-ch.err"
	check "from ClickHouse, traceq prints what it printed from SQLite, stacks included" \
		'[ "$(grep -c "^=> " "$tmp/ours-ch.txt")" -gt 0 ] && cmp -s "$tmp/ours.txt" "$tmp/ours-ch.txt" ||
		 { diff "$tmp/ours.txt" "$tmp/ours-ch.txt" | head -5; cat "$tmp/ours-ch.err"; false; }'
	# stacks once each there too: a stack row's caller is a 9-byte reference
	read -r chrows chrefs < <(tc_ch --query "SELECT count(), countIf(length(caller) = 9)
		FROM tc.ev_ftrace_kernel_stack")
	chstacks=$(tc_ch --query "SELECT uniqExact(host_id, id) FROM tc.stacks")
	check "ClickHouse keeps each stack once: $chstacks stacks for $chrows kernel_stack rows ($chrefs by reference)" \
		'[ "${chrows:-0}" -gt 0 ] && [ "$chrefs" = "$chrows" ] && [ "${chstacks:-0}" -gt 0 ] &&
		 [ "$chstacks" -lt "$chrows" ]'
else
	tc_skip_part "ClickHouse (d)" "clickhouse-server is not installed"
fi

[ "$failed" = 0 ] || exit 1
echo "PASS"
