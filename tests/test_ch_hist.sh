#!/bin/bash
# traceq --hist on the ClickHouse store gives SQLite's answers (issue 32):
# one trace-cmd recording (sched events, in a tracefs instance of the
# test's own) imported into a collector on a clickhouse-server of the
# test's own (tests/lib.sh tc_start_clickhouse), then into one on SQLite.
#
# Asserts:
#  - the import into ClickHouse exits 0;
#  - for each spec (one and two keys, .log2, .buckets, cpu, host, .hex,
#    .execname, vals, each sort, size= with drops, a filter, a spec with
#    no matching row, COMM keys and a COMM filter, common_stacktrace keys:
#    the recording is made with -T, a stack after every event), traceq prints the same
#    histogram from both (stdout byte for byte: entries, their order,
#    Totals), and those of whole events are not empty;
#  - the stacks' frames are the kernel's %pS, NAME+0xOFF/0xSIZE (the
#    size, measured at query time, among the bytes compared);
#  - both stores keep the recording's kallsyms modules alike: the symbols
#    with a module, "ADDR NAME MODULE", are the same in ClickHouse and in
#    the SQLite file, and as many as the recording's kallsyms has (none
#    where no module symbol exists: then said).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd > /dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
tc_need_clickhouse
tc_lock
tc_setup ch_hist collector_pid
tc_tracecmd_record "tc_chhist_$$" "$tmp/rec.dat" -T -e sched:sched_switch -e sched:sched_wakeup \
	sh -c 'for i in $(seq 80); do sleep 0.01; ls / > /dev/null; done'

# spec<TAB>query
specs=(
	"keys=next_comm	sched_switch"
	"keys=next_comm,next_pid:size=8192	sched_switch"
	"keys=prev_pid.log2	sched_switch"
	"keys=next_pid.buckets=100	sched_switch"
	"keys=prev_state.buckets=3:vals=prev_prio	sched_switch"
	"keys=cpu	sched_switch"
	"keys=host	sched_switch"
	"keys=next_prio.hex	sched_switch"
	"keys=next_comm:vals=prev_prio,next_prio	sched_switch"
	"keys=common_pid.execname:size=65536	sched_switch"
	"keys=next_pid:sort=hitcount.descending	sched_switch"
	"keys=next_comm,next_pid:sort=next_comm,hitcount.descending	sched_switch"
	"keys=prev_comm:vals=prev_prio:sort=prev_prio.descending	sched_switch"
	"keys=next_pid:size=128	sched_switch"
	"keys=prev_comm,next_comm:size=128:sort=hitcount.descending	sched_switch"
	"keys=next_comm	sched_switch where prev_pid == 0"
	"keys=next_comm	sched_switch where prev_comm ~ \"*o*\""
	"keys=target_cpu:vals=prio	sched_wakeup"
	"keys=pid.log2,target_cpu	sched_wakeup"
	"keys=next_pid,prev_pid,cpu:size=128:sort=next_pid.descending	sched_switch"
	"keys=next_comm	sched_switch where next_pid == -5"
	"keys=COMM	sched_switch"
	"keys=COMM,cpu:sort=hitcount.descending	sched_wakeup"
	"keys=next_pid,COMM:size=128	sched_switch where COMM ~ \"*[a-s]*\""
	"keys=common_stacktrace	sched_switch"
	"keys=common_pid,stacktrace:sort=hitcount.descending	sched_switch"
	"keys=common_stacktrace,next_comm:vals=prev_prio:size=128	sched_switch"
	"keys=common_stacktrace:sort=common_stacktrace.descending	sched_switch where prev_pid == 0"
	"keys=common_stacktrace,COMM	sched_wakeup"
)

# hists NAME: traceq --hist's output of each spec into $tmp/NAME.hist.I
hists() {
	local i spec query
	for i in "${!specs[@]}"; do
		spec=${specs[$i]%%	*} query=${specs[$i]#*	}
		"$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 \
			--hist "$spec" "$query" > "$tmp/$1.hist.$i" 2> "$tmp/$1.hist.$i.err" ||
			echo "exit $?" >> "$tmp/$1.hist.$i"
	done
}

tc_certs
tc_start_clickhouse
tc_ch_db_args
tc_start_collector "${ch_db_args[@]}" --query "ipc://$tmp/q.sock"
tq() { "$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 "$@"; }
tq --import "$tmp/rec.dat" --name imp-h > "$tmp/imp.out" 2>&1; rc=$?
check "the recording imports into ClickHouse (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/imp.out"; false; }'
hists ch
tc_ch --query "SELECT lower(hex(addr)), name, module FROM tc.symbols FINAL WHERE module != ''
	ORDER BY addr, name FORMAT TSV" > "$tmp/ch.mods" 2>&1
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=

tc_start_collector --query "ipc://$tmp/q.sock"
tq --import "$tmp/rec.dat" --name imp-h > "$tmp/imp2.out" 2>&1 || cat "$tmp/imp2.out"
hists sqlite

empty=
for i in "${!specs[@]}"; do
	n=$(grep -c '^{' "$tmp/sqlite.hist.$i")
	# every spec over a whole event has entries (a filter's may match nothing)
	case ${specs[$i]} in *where*) ;; *) [ "$n" -gt 0 ] || empty+=" $i" ;; esac
	check "--hist '${specs[$i]%%	*}' '${specs[$i]#*	}': the same $n entries and Totals" \
		'! grep -q "^exit" "$tmp/sqlite.hist.$i" && grep -q "^Totals:" "$tmp/sqlite.hist.$i" &&
		 cmp -s "$tmp/ch.hist.$i" "$tmp/sqlite.hist.$i" ||
		{ diff "$tmp/ch.hist.$i" "$tmp/sqlite.hist.$i" | head -5; cat "$tmp/ch.hist.$i.err"; false; }'
done
check "the histograms of whole events have entries (empty:${empty:- none})" '[ -z "$empty" ]'
nframes=0 unsized=0
for i in "${!specs[@]}"; do
	case ${specs[$i]%%	*} in *stacktrace*) ;; *) continue ;; esac
	nframes=$((nframes + $(grep -c '^         ' "$tmp/sqlite.hist.$i")))
	unsized=$((unsized + $(grep '^         ' "$tmp/sqlite.hist.$i" |
		grep -cv '^         [^ ]*+0x[0-9a-f]*/0x[0-9a-f]*$')))
done
check "the stacks' $nframes frames are NAME+0xOFF/0xSIZE ($unsized not)" \
	'[ "$nframes" -gt 0 ] && [ "$unsized" = 0 ]'
# SQLite keeps an address with its top bit flipped (sqlite_symbols.c)
python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT addr, name, module FROM symbols WHERE module IS NOT NULL AND module != \"\"")
out = sorted(((a ^ (1 << 63)) & ((1 << 64) - 1), n, m) for a, n, m in rows)
for a, n, m in out: print("%x\t%s\t%s" % (a, n, m))' "$tmp/trace.db" > "$tmp/sqlite.mods" 2>&1
nmods=$(trace-cmd dump --kallsyms "$tmp/rec.dat" 2>/dev/null | grep -c '^[0-9a-f]* [tTwW] [^ ]*[[:space:]]*\[')
[ "$nmods" -gt 0 ] || echo "note: the recording's kallsyms has no module symbol: both stores' empty lists compared"
check "both stores keep the same $(wc -l < "$tmp/ch.mods") module symbols (the recording's kallsyms: $nmods)" \
	'cmp -s "$tmp/ch.mods" "$tmp/sqlite.mods" && [ "$(wc -l < "$tmp/ch.mods")" -ge 1 -o "$nmods" = 0 ] ||
	{ diff "$tmp/ch.mods" "$tmp/sqlite.mods" | head -5; false; }'
check "size=128 drops keys (the size semantics are exercised)" \
	'grep -q "Dropped: *[1-9]" "$tmp/sqlite.hist.13"'
exit "$failed"
