#!/bin/bash
# Formats per host and boot (issue 30, "Formats are global").
#
# A fleet runs different kernels, and a host may send any format: one
# host's format must never change how another host's rows are stored,
# filtered or printed. Two hosts go through the ingest path (traceq
# --import of trace-cmd recordings: the sinks agents' connections use):
#   web1  a v6 recording of sched_switch as the kernel wrote it;
#   vm    the same recording with a hostile sched_switch format of the
#         same length: prev_pid declared char[4], prev_prio renamed
#         prev_prix, and the print fmt's prev_comm and next_comm swapped.
#
# Asserts: web1's text, kernel and json output of sched_switch and its
# `prev_pid == 0` filter are byte for byte what they were before vm's
# format arrived; the filter over every host works (no "is a string") and
# gives web1's rows; vm's rows are in json with their own fields (prev_prix,
# prev_pid a string) and web1's have none of them; vm's text prints its own
# (swapped) format; --fields names both kinds of prev_pid with their hosts.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
command -v python3 >/dev/null || skip "needs python3"
tc_lock
tc_setup formats collector_pid
inst="tc_formats_$$"
formats_cleanup() {
	rmdir "$tracing/instances/$inst" 2>/dev/null
	tc_cleanup
}
trap formats_cleanup EXIT


tc_tracecmd_record "$inst" "$tmp/web1.dat" -e sched:sched_switch --file-version 6 \
	sh -c 'for i in $(seq 20); do sleep 0.01; ls / > /dev/null; done'

# vm's file: the same bytes but for the format text, patched in place at
# the same length (v6 keeps each format's size before it).
python3 - "$tmp/web1.dat" "$tmp/vm.dat" <<'EOF' || { echo "FAIL: patching the format"; exit 1; }
import sys
d = open(sys.argv[1], 'rb').read()
i = d.find(b'name: sched_switch\n')
j = d.find(b'\n', d.find(b'print fmt:', i))
f = d[i:j]
g = (f.replace(b'field:pid_t prev_pid;', b'field:char prev_pid[4];')
      .replace(b'prev_state=%s%s ==> ', b'prev_state=%s%s==>')
      .replace(b'prev_prio', b'prev_prix')
      .replace(b'REC->prev_comm', b'REC->@@@@_comm')
      .replace(b'REC->next_comm', b'REC->prev_comm')
      .replace(b'REC->@@@@_comm', b'REC->next_comm'))
assert i > 0 and len(g) == len(f) and g != f
open(sys.argv[2], 'wb').write(d[:i] + g + d[j:])
EOF

tc_certs
tc_traceq_for_all
mkdir -m 755 "$tmp/run"
sock="$tmp/run/query.sock"
tc_start_collector --query "ipc://$sock"
tq() { "$tq" -s "ipc://$sock" -t 120000 "$@"; }

tq --import "$tmp/web1.dat" --name web1 > "$tmp/imp1.out" 2>&1
check "web1's recording imports ($(tr '\n' ' ' < "$tmp/imp1.out"))" '[ $? = 0 ]'

# The filter's pid: 0 when the recording has idle's switches; a CPU that
# never idled (a loaded machine) leaves none, then the first row's prev_pid
fpid=0
if [ "$(tq -H web1 --count 'sched_switch where prev_pid == 0' 2>&1)" = 0 ]; then
	fpid=$(tq -H web1 -f json --limit 1 sched_switch 2>/dev/null |
		sed -n 's/.*"prev_pid":\([0-9]*\).*/\1/p')
	echo "no switch from pid 0 recorded; filtering on prev_pid == $fpid"
fi

# outputs NAME: web1's sched_switch in each layout, and its prev_pid == $fpid
outputs() {
	tq -H web1 --time raw sched_switch > "$tmp/$1.text" 2>&1
	tq -H web1 --time raw -f kernel sched_switch > "$tmp/$1.kernel" 2>&1
	tq -H web1 -f json sched_switch > "$tmp/$1.json" 2>&1
	tq -H web1 --time raw "sched_switch where prev_pid == $fpid" > "$tmp/$1.filter" 2>&1
}
outputs before
n=$(wc -l < "$tmp/before.text")
z=$(wc -l < "$tmp/before.filter")
check "web1 has sched_switch rows ($n) and some from pid $fpid ($z)" \
	'[ "$n" -gt 20 ] && [ "$z" -gt 0 ] && ! grep -q "CANT FIND" "$tmp/before.text"'

tq --import "$tmp/vm.dat" --name vm > "$tmp/imp2.out" 2>&1
check "vm's recording with its own format imports ($(tr '\n' ' ' < "$tmp/imp2.out"))" '[ $? = 0 ]'
m=$(tq -H vm sched_switch 2>/dev/null | wc -l)
check "vm's rows are stored ($m)" '[ "$m" = "$n" ]'

outputs after
for f in text kernel json filter; do
	check "web1's $f output is what it was before vm's format ($(diff "$tmp/before.$f" "$tmp/after.$f" | head -3 | tr '\n' ' '))" \
		'cmp -s "$tmp/before.$f" "$tmp/after.$f"'
done

tq --time raw --no-host "sched_switch where prev_pid == $fpid" > "$tmp/all.filter" 2>&1
check "prev_pid == $fpid over both hosts works and gives web1's rows ($(head -2 "$tmp/all.filter" | tr '\n' ' '))" \
	'cmp -s "$tmp/all.filter" "$tmp/before.filter"'

c=$(tq --count sched_switch 2>&1)
cz=$(tq --count "sched_switch where prev_pid == $fpid" 2>&1)
check "counts take both formats: all rows ($c = 2 x $n), prev_pid == $fpid web1's ($cz = $z)" \
	'[ "$c" = $((2 * n)) ] && [ "$cz" = "$z" ]'

tq -H vm -f json sched_switch > "$tmp/vm.json" 2>&1
check "vm's json rows have their own fields (prev_prix, prev_pid a string)" \
	'head -1 "$tmp/vm.json" | grep -q "\"prev_prix\":" &&
	 ! head -1 "$tmp/vm.json" | grep -q "\"prev_prio\":" &&
	 head -1 "$tmp/vm.json" | grep -q "\"prev_pid\":\""'
check "web1's json rows have none of vm's fields" \
	'! grep -q "prev_prix" "$tmp/after.json" && grep -q "\"prev_pid\":[0-9]" "$tmp/after.json"'

# vm prints with its own print fmt (kernel layout): prev_comm= shows the
# next task's name
tq -H vm --time raw -f kernel sched_switch > "$tmp/vm.kernel" 2>&1
w1=$(head -1 "$tmp/before.kernel" | sed -n 's/.*next_comm=\(.*\) next_pid=.*/\1/p')
v1=$(head -1 "$tmp/vm.kernel" | sed -n 's/.*prev_comm=\(.*\) prev_pid=.*/\1/p')
check "vm's rows print with its own (swapped) format ('$w1' = '$v1')" \
	'[ -n "$w1" ] && [ "$w1" = "$v1" ] && ! cmp -s "$tmp/vm.kernel" "$tmp/before.kernel"'

tq --fields sched_switch > "$tmp/fields" 2>&1
check "--fields names both kinds of prev_pid and their hosts ($(grep prev_pid "$tmp/fields" | tr '\n' ' '))" \
	'grep prev_pid "$tmp/fields" | grep -q "char\[4\].*vm" &&
	 grep prev_pid "$tmp/fields" | grep -q "pid_t.*web1"'

check "the collector is still running" 'kill -0 "$collector_pid"'
exit $failed
