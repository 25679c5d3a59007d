#!/bin/bash
# traceq --count and select on the ClickHouse store give SQLite's answers
# (issue 32):
# one trace-cmd recording (sched events, in a tracefs instance of the
# test's own) imported into a collector on a clickhouse-server of the
# test's own (tests/lib.sh tc_start_clickhouse), then into one on SQLite.
#
# Asserts:
#  - the import into ClickHouse exits 0;
#  - for each query (no filter, numbers of each width and sign, &, globs
#    of each form, CPU, CPUS{}, a subsystem filter, a kernel '!' glob,
#    COMM: the saved cmdlines' names and <idle>, as an import has them),
#    the count from ClickHouse == the count from SQLite, and the queries
#    discriminate (most count some events, not all);
#  - traceq prints the same events from both (stdout byte for byte), for
#    the whole answer (several pages), -n, -r and -n -r;
#  - traceq names the same symbols from both (hrtimer_expire_entry's
#    function, through the store's symbol_name);
#  - a tracedat export from each carries the same printk formats, header
#    page, header event, event formats and kernel symbols (trace-cmd dump),
#    some of each;
#  - COMM in counts and selects gives SQLite's answers.
# COMM from a live agent's task names (renames) is test_ch_comm.sh's.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd > /dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
tc_need_clickhouse
tc_lock
tc_setup ch_count collector_pid
tc_tracecmd_record "tc_chcount_$$" "$tmp/rec.dat" -e sched:sched_switch -e sched:sched_wakeup \
	-e timer:hrtimer_expire_entry \
	sh -c 'for i in $(seq 30); do sleep 0.01; ls / > /dev/null; done'

queries=(
	"sched_switch"
	"sched_switch where prev_pid == 0"
	"sched_switch where prev_pid != 0 && next_pid > 100"
	"sched_switch where prev_prio < 120 || next_prio >= 120"
	"sched_switch where prev_state & 1"
	"sched_switch where !(prev_state & 0x7f)"
	"sched_switch where next_comm == \"sh\""
	"sched_switch where prev_comm ~ \"sw*\""
	"sched_switch where next_comm ~ \"*[0-9]\""
	"sched_switch where prev_comm ~ \"*o*\""
	"sched_switch where next_comm ~ \"k?o*\""
	"sched_switch where prev_comm ~ \"!sw*\""
	"sched_switch where CPU == 0"
	"sched_switch where CPU & CPUS{1-3}"
	"sched_wakeup where comm ~ \"[a-m]*\" && target_cpu >= 1"
	"sched where prev_pid == 0"
	"sched_switch where COMM == \"sh\""
	"sched_switch where COMM != \"ls\" && prev_pid != 0"
	"sched_switch where COMM ~ \"*o*\" || next_pid == 0"
	"sched_wakeup where COMM ~ \"<*\""
	"sched where COMM == \"<idle>\""
	"sched_switch where !(COMM ~ \"[k-t]*\") && CPU & CPUS{0-1}"
)

# counts: traceq --count of each query, one a line ("error" where it fails)
counts() {
	local q out
	for q in "${queries[@]}"; do
		if out=$("$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 \
			--count "$q" 2> /dev/null); then
			echo "$out"
		else
			echo error
		fi
	done
}

# the events select prints: the whole answer, -n, -r and -n -r, of three queries
selects=(
	""
	"-n 7"
	"-r"
	"-n 300 -r"
)
select_queries=(
	"sched_switch where prev_comm ~ \"*o*\" || next_pid == 0"
	"sched_wakeup"
	"sched where prev_pid == 0"
	"timer:hrtimer_expire_entry"
	"sched_switch where COMM ~ \"s*\" || CPU == 1"
)

# selects NAME: traceq's output of each select into $tmp/NAME.select.I.J
# (hrtimer_expire_entry's function=%ps names its address through the
# store's symbol_name, so the symbols are compared too)
selects() {
	local i j
	for i in "${!selects[@]}"; do
		for j in "${!select_queries[@]}"; do
			# shellcheck disable=SC2086 # the options: several words
			"$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 \
				${selects[$i]} "${select_queries[$j]}" > "$tmp/$1.select.$i.$j" \
				2> "$tmp/$1.select.$i.$j.err" ||
				echo "exit $?" >> "$tmp/$1.select.$i.$j"
		done
	done
}

tc_certs
tc_start_clickhouse
tc_ch_db_args
tc_start_collector "${ch_db_args[@]}" --query "ipc://$tmp/q.sock"
tq() { "$top_builddir/traceq/traceq" -s "ipc://$tmp/q.sock" -t 120000 "$@"; }
tq --import "$tmp/rec.dat" --name imp-ch > "$tmp/imp.out" 2>&1; rc=$?
check "the recording imports into ClickHouse (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/imp.out"; false; }'
counts > "$tmp/ch.counts"
selects ch
tq --export "$tmp/ch.dat" -f tracedat -H imp-ch > "$tmp/ch.exp" 2>&1 ||
	cat "$tmp/ch.exp"
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=

tc_start_collector --query "ipc://$tmp/q.sock"
tq --import "$tmp/rec.dat" --name imp-ch > "$tmp/imp2.out" 2>&1 || cat "$tmp/imp2.out"
counts > "$tmp/sqlite.counts"
selects sqlite
tq --export "$tmp/sqlite.dat" -f tracedat -H imp-ch > "$tmp/sqlite.exp" 2>&1 ||
	cat "$tmp/sqlite.exp"

total=$(head -1 "$tmp/sqlite.counts")
some=0
for i in "${!queries[@]}"; do
	c=$(sed -n "$((i + 1))p" "$tmp/ch.counts") s=$(sed -n "$((i + 1))p" "$tmp/sqlite.counts")
	check "${queries[$i]}: ClickHouse $c == SQLite $s" '[ "$c" = "$s" ] && [ "$c" != error ]'
	case $s in '' | *[!0-9]*) continue ;; esac
	[ "$s" -gt 0 ] && [ "$s" -lt "$total" ] && some=$((some + 1))
done
for i in "${!selects[@]}"; do
	for j in "${!select_queries[@]}"; do
		n=$(wc -l < "$tmp/sqlite.select.$i.$j")
		check "traceq ${selects[$i]} '${select_queries[$j]}' prints the same $n lines" \
			'[ "$n" -gt 1 ] && cmp -s "$tmp/ch.select.$i.$j" "$tmp/sqlite.select.$i.$j" ||
			{ diff "$tmp/ch.select.$i.$j" "$tmp/sqlite.select.$i.$j" | head -5; false; }'
	done
done
check "the recording has events ($total)" '[ "${total:-0}" -gt 0 ]'
# (the same lines, and names in them: symbol_name answered from ClickHouse)
n=$(grep -c 'function=[A-Za-z_]' "$tmp/ch.select.0.3")
check "hrtimer_expire_entry's functions are named from ClickHouse ($n lines)" '[ "$n" -gt 0 ]'
# what an export carries of the host besides its rows is SQLite's: the
# printk formats (store_printk_list), the boot's headers and every
# format it sent (store_boot_get, store_boot_formats: in format id order,
# which differs between the stores, so sorted), the kernel's symbols
for part in printk head-page head-event events kallsyms; do
	trace-cmd dump --"$part" "$tmp/ch.dat" 2>&1 | sort > "$tmp/ch.$part"
	trace-cmd dump --"$part" "$tmp/sqlite.dat" 2>&1 | sort > "$tmp/sqlite.$part"
	n=$(grep -c . "$tmp/sqlite.$part")
	check "an export from ClickHouse carries SQLite's $part ($n lines)" \
		'[ "$n" -gt 1 ] && cmp -s "$tmp/ch.$part" "$tmp/sqlite.$part" ||
		{ diff "$tmp/ch.$part" "$tmp/sqlite.$part" | head -5; false; }'
done
check "the queries discriminate ($some of ${#queries[@]} count some events, not all)" \
	'[ "$some" -ge $(( ${#queries[@]} / 2 )) ]'
exit "$failed"
