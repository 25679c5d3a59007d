#!/bin/bash
# traceq --hist 'keys=common_stacktrace' (issue 38, "Stack traces"): the
# events' kernel stacks as a histogram key, printed as the kernel's hist
# file prints them ("{ common_stacktrace:\n" a line per frame "%*c%pS"
# with 9 columns before the name, then "} hitcount: %10llu"); %pS is
# NAME+0xOFF/0xSIZE, SIZE the distance to the next kallsyms address.
#
# Asserts:
#  (a) a recording made here with `trace-cmd record -T` (options/
#      stacktrace: a kernel_stack record after every event), imported:
#      keyed by common_stacktrace, sched_switch's histogram has the
#      kernel's layout, and its entries are those an independent count of
#      `trace-cmd report` gives (each sched_switch's stack: the
#      kernel_stack record after it on its CPU, its first 16 frames, the
#      kernel's HIST_STACKTRACE_DEPTH): the same hitcounts of the same
#      distinct stacks (by address), the same frames (by name: aliases at
#      one address count as one), Hits the sched_switch events, Entries
#      the distinct stacks; every frame exactly as the test computes it
#      from the stack's address and its own read of this boot's
#      /proc/kallsyms (the text symbols the recording carries): the
#      greatest name at the greatest symbol address at or below it (the
#      store's choice among aliases), +0xOFF from it, /0xSIZE up to the
#      next greater address; with common_pid beside it and sorted by
#      hitcount descending, the kernel's layout of two keys, the same
#      Hits, the hitcounts in order; `stacktrace` (the older spelling)
#      prints as common_stacktrace; the stack records themselves are
#      refused with a sentence; a store with no stack record gives an
#      empty histogram;
#  (b) live: an agent with a stacktrace trigger with a filter
#      (--stacktrace 'sys_enter_close where fd == 4242'): the events
#      without a stack are not counted: Hits is the number of close(4242)
#      calls, not of all close() events, and each stack names the syscall
#      entry; each frame's /0xSIZE (of a name kallsyms holds once) is the
#      distance from its address to the next one in /proc/kallsyms, the
#      table the agent shipped, followed by " [MODULE]" exactly when
#      kallsyms puts that symbol in a module (sprint_symbol()); the
#      kernel symbols stored with a module are kallsyms' (the agent ships
#      its module column); with the filter fd == 4243 in the query, no entry (the
#      stacks of the close(4242) rows the filter drops stay theirs).
#      With no module frame in the stacks (no module loaded, as where
#      kallsyms' only "[...]" is ftrace's trampolines), the test says it
#      could not check a module frame's print, and why.
# The kernel's own hist file for the same events is not compared here
# when the kernel has no hist triggers (CONFIG_HIST_TRIGGERS): the test
# says so.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v trace-cmd >/dev/null || skip "needs trace-cmd (apt-get install trace-cmd)"
command -v python3 >/dev/null || skip "needs python3"
tc_lock
tc_setup hist_stacks collector_pid agent
inst="tc_hstacks_$$"
trap 'rmdir "$tracing/instances/$inst" 2>/dev/null; tc_cleanup' EXIT

# ---- (a) trace-cmd record -T, imported ----
tc_tracecmd_record "$inst" "$tmp/st.dat" -T -e sched:sched_switch -- \
	python3 -c 'import os, time
for i in range(60):
	os.getppid()
	time.sleep(0.001)'
trace-cmd report -i "$tmp/st.dat" 2>/dev/null | grep -v '^cpus=' | sed 's/^[a-z0-9_]*: //' \
	> "$tmp/report.txt"

tc_certs
sock="$tmp/q.sock"
tc_start_collector --query "ipc://$sock"
tq() { "$top_builddir/traceq/traceq" -s "ipc://$sock" -t 120000 "$@"; }
tq --import "$tmp/st.dat" --name imp-hs > "$tmp/imp.out" 2>&1; rc=$?
check "the recording imports (exit $rc: $(cat "$tmp/imp.out"))" '[ "$rc" = 0 ]'

# canon: awk that maps a kallsyms name to the first name at its address
# (aliases: the store names an address by one of them, trace-cmd another)
# frames: python3 frames MODE ...: the frames of --hist's output checked
# against kallsyms' text symbols (what the agent and the import ship),
# one line "CHECKED BAD FIRST-BAD"; MODE exact THEIRS HIST: HIST's entries
# are THEIRS's stacks (lines " ADDR..."), their frames computed here;
# MODE size HIST: each frame of a name kallsyms holds once has its size,
# and its module as sprint_symbol() prints it (" [MOD]" for a symbol of
# module MOD in kallsyms, nothing else); a fourth value: the frames of a
# module's symbol checked
frames='import bisect, sys
names, mods = {}, {}
for line in open("/proc/kallsyms"):
	f = line.split()
	if len(f) >= 3 and f[1] in "tTwW" and int(f[0], 16):
		names.setdefault(int(f[0], 16), []).append(f[2])
		if len(f) > 3 and f[3].startswith("[") and f[3].endswith("]"):
			mods[int(f[0], 16)] = f[3][1:-1]
addrs = sorted(names)
def frame(a):
	i = bisect.bisect_right(addrs, a) - 1
	if i < 0:
		return "0x%x" % a
	s = addrs[i]
	size = "/0x%x" % (addrs[i + 1] - s) if i + 1 < len(addrs) else ""
	return "%s+0x%x%s" % (max(names[s]), a - s, size)
def entries(path):
	out, fr = [], None
	for line in open(path):
		if line.startswith("{ "):
			fr = []
		elif line.startswith("         ") and fr is not None:
			fr.append(line.strip())
		elif line.startswith("} hitcount:") and fr is not None:
			out.append((int(line.split()[2]), fr))
			fr = None
	return out
bad, checked, first, modular = 0, 0, "-", 0
def no(what):
	global bad, first
	bad += 1
	first = first if bad > 1 else what
if sys.argv[1] == "exact":
	theirs = {}
	for line in open(sys.argv[2]):
		key = " ".join(frame(int(a, 16)) for a in line.split("\t")[0].split())
		theirs[key] = theirs.get(key, 0) + 1
	ours = {" ".join(fr): n for n, fr in entries(sys.argv[3])}
	for key in set(theirs) | set(ours):
		checked += 1
		if theirs.get(key) != ours.get(key):
			no("%s: %s here, %s printed" % (key, theirs.get(key), ours.get(key)))
else:
	at = {}
	for a, ns in names.items():
		for n in ns:
			at[n] = a if n not in at else -1
	for _, fr in entries(sys.argv[2]):
		for f in fr:
			sym, _, mod = f.partition(" [")
			n, _, rest = sym.partition("+0x")
			off, _, size = rest.partition("/0x")
			if at.get(n, -1) < 0:
				continue
			i = bisect.bisect_right(addrs, at[n])
			want = addrs[i] - at[n] if i < len(addrs) else None
			checked += 1
			modular += at[n] in mods
			if not size or int(size, 16) != want or int(off, 16) >= want:
				no("%s: size 0x%x" % (f, want or 0))
			elif (mod[:-1] if mod.endswith("]") else mod or None) != mods.get(at[n]):
				no("%s: module %s" % (f, mods.get(at[n], "none")))
print(checked, bad, first.replace(" ", "_"), modular)'
canon='FILENAME == ARGV[1] { if (!($3 in at)) at[$3] = $1; if (!($1 in first)) first[$1] = $3; next }
	function canon(n) { return (n in at) ? first[at[n]] : n }'

# theirs: per sched_switch, its stack (the next record on its CPU), the
# first 16 frames up to a 0: "ADDRS<TAB>NAMES" a line
awk "$canon"'
	function flush() { if (inst) print key "\t" names; inst = 0 }
	/-[0-9]+ +\[[0-9]+\] / {
		flush()
		match($0, /-[0-9]+ +\[[0-9]+\]/); split(substr($0, RSTART + 1, RLENGTH - 1), a, /[] []+/)
		c = a[2]
		if ($0 ~ / kernel_stack: /) {
			if (last[c] == "sw") { inst = 1; n = 0; key = ""; names = "" }
			last[c] = ""
		} else {
			last[c] = ($0 ~ / sched_switch: /) ? "sw" : ""
		}
		next
	}
	/^=> / && inst && n < 16 {
		addr = $3; gsub(/[()]/, "", addr)
		if (addr ~ /^0+$/) { n = 16; next }
		key = key " " addr; names = names " " canon($2); n++
	}
	END { flush() }' /proc/kallsyms "$tmp/report.txt" > "$tmp/theirs.stacks"
nsw=$(grep -c ' sched_switch: ' "$tmp/report.txt")
nstk=$(wc -l < "$tmp/theirs.stacks")
# (a sched_switch may lack its stack: one of 940 did, in a run, at the
# recording's end; it is then not counted, by either side)
check "trace-cmd recorded stacks after sched_switch ($nstk of $nsw)" \
	'[ "$nstk" -gt 20 ] && [ "$nstk" -le "$nsw" ]'

tq --hist 'keys=common_stacktrace' 'sched_switch' > "$tmp/h1.txt" 2> "$tmp/h1.err"; rc=$?
check "--hist keys=common_stacktrace exits 0 ($rc: $(head -c 300 "$tmp/h1.err"))" '[ "$rc" = 0 ]'
# the kernel's layout: "{ common_stacktrace:", frame lines of 9 blanks and
# NAME+0xOFF/0xSIZE, "} hitcount: %10llu", nothing else between the header and Totals
awk '
	/^# / || /^#$/ || /^$/ { next }
	/^Totals:/ { tot = 1 }
	tot { next }
	/^\{ common_stacktrace:$/ { if (st) bad++; st = 1; nf = 0; next }
	/^         [^ ]+\+0x[0-9a-f]+\/0x[0-9a-f]+$/ && st { nf++; next }
	/^\} hitcount: +[0-9]+$/ && st && length($0) >= 22 { if (nf < 1 || nf > 16) bad++; st = 0; ent++; next }
	{ bad++; if (!first) first = $0 }
	END { print ent + 0, bad + 0, first }' "$tmp/h1.txt" > "$tmp/h1.layout"
read -r ent bad badline < "$tmp/h1.layout"
check "the kernel's layout: $ent entries, $bad lines out of it ${badline:+($badline)}" \
	'[ "$ent" -gt 0 ] && [ "$bad" = 0 ] &&
	 grep -qx "# trigger info: hist:keys=common_stacktrace:vals=hitcount:sort=hitcount:size=2048 \[active\]" "$tmp/h1.txt"'

# ours: "COUNT<TAB>NAMES" per entry
awk "$canon"'
	/^\{ common_stacktrace:$/ { names = ""; next }
	/^         / { n = $1; sub(/\+0x[0-9a-f]+\/0x[0-9a-f]+$/, "", n); names = names " " canon(n); next }
	/^\} hitcount:/ { print $3 "\t" names }' /proc/kallsyms "$tmp/h1.txt" > "$tmp/ours.stacks"
# the hitcounts of the distinct stacks (by address), sorted, on each side
sort "$tmp/theirs.stacks" | uniq -c | awk '{ print $1 }' | sort -n > "$tmp/theirs.counts"
cut -f1 "$tmp/ours.stacks" | sort -n > "$tmp/ours.counts"
# the frames by name, hitcounts summed per list of names
awk -F'\t' '{ n[$2]++ } END { for (k in n) print n[k] "\t" k }' "$tmp/theirs.stacks" | sort > "$tmp/theirs.names"
awk -F'\t' '{ n[$2] += $1 } END { for (k in n) print n[k] "\t" k }' "$tmp/ours.stacks" | sort > "$tmp/ours.names"
hits=$(awk '/^    Hits:/ { print $2 }' "$tmp/h1.txt")
entries=$(awk '/^    Entries:/ { print $2 }' "$tmp/h1.txt")
ndist=$(wc -l < "$tmp/theirs.counts")
check "the entries are trace-cmd report's stacks: $entries entries for $ndist distinct stacks, Hits $hits for $nstk, the same hitcounts and frames" \
	'[ "$hits" = "$nstk" ] && [ "$entries" = "$ndist" ] && [ "$ent" = "$ndist" ] &&
	 cmp -s "$tmp/theirs.counts" "$tmp/ours.counts" && cmp -s "$tmp/theirs.names" "$tmp/ours.names" ||
	 { diff "$tmp/theirs.names" "$tmp/ours.names" | head -6; false; }'
python3 -c "$frames" exact "$tmp/theirs.stacks" "$tmp/h1.txt" > "$tmp/h1.frames"
read -r nchecked nbad firstbad < "$tmp/h1.frames"
check "each frame is NAME+0xOFF/0xSIZE as computed here from kallsyms: $nchecked distinct stacks, $nbad not ($firstbad)" \
	'[ "$nchecked" = "$ndist" ] && [ "$nbad" = 0 ]'
check "hitcount ascending (the default sort)" \
	'cut -f1 "$tmp/ours.stacks" | sort -n -c'

tq --hist 'keys=common_pid,stacktrace:sort=hitcount.descending' 'sched_switch' > "$tmp/h2.txt" 2>&1
awk '
	/^\{ common_pid: +[0-9]+, common_stacktrace:$/ { st = 1; next }
	/^         / && st { next }
	/^\} hitcount:/ && st { st = 0; print $3; next }
	/^\{/ || (/^ / && !/^    (Hits|Entries|Dropped):/) || st { print "bad: " $0 }' "$tmp/h2.txt" > "$tmp/h2.counts"
check "keys=common_pid,stacktrace: the kernel's layout of two keys, sorted by hitcount descending, the same Hits ($(awk '/^    Hits:/ { print $2 }' "$tmp/h2.txt"))" \
	'! grep -q "^bad" "$tmp/h2.counts" && [ -s "$tmp/h2.counts" ] && sort -n -r -c "$tmp/h2.counts" &&
	 grep -q "trigger info: hist:keys=common_pid,common_stacktrace:vals=hitcount:sort=hitcount.descending:size=2048 " "$tmp/h2.txt" &&
	 [ "$(awk "/^    Hits:/ { print \$2 }" "$tmp/h2.txt")" = "$nstk" ] &&
	 [ "$(awk "{ s += \$1 } END { print s }" "$tmp/h2.counts")" = "$nstk" ]'

tq --hist 'keys=common_stacktrace' 'ftrace:kernel_stack' > "$tmp/h3.txt" 2>&1; rc=$?
check "the stack records themselves are refused ($rc: $(head -c 200 "$tmp/h3.txt"))" \
	'[ "$rc" != 0 ] && grep -q "holds the stacks themselves" "$tmp/h3.txt"'

# ---- (b) live: a stacktrace trigger with a filter ----
if [ -d "$tracing/events/syscalls/sys_enter_close" ]; then
	# kallsyms_mods: kallsyms' text symbols of a module, "NAME MOD", sorted
	kallsyms_mods() {
		awk '$2 ~ /^[tTwW]$/ && $1 !~ /^0+$/ && $4 ~ /^\[.*\]$/ {
			print $3, substr($4, 2, length($4) - 2) }' /proc/kallsyms | LC_ALL=C sort -u
	}
	kallsyms_mods > "$tmp/kmod.before"
	tc_start_agent trig --name trig-hs --no-user --no-comm-events --instance "tc-hs-$$-b" \
		-e syscalls:sys_enter_close --stacktrace 'sys_enter_close where fd == 4242'
	for _ in $(seq 300); do
		grep -q "agent trig-hs (" "$tmp/collector.log" && break
		kill -0 "$agent" 2>/dev/null || break
		sleep 0.1
	done
	python3 -c 'import os, time
for i in range(30):
	for fd in (4242, 4243):
		try:
			os.close(fd)
		except OSError:
			pass
	time.sleep(0.002)'
	sleep 0.5
	kill -INT "$agent"; wait "$agent"; rc=$?; agent=
	check "the agent exits 0 (exit $rc)" '[ "$rc" = 0 ] || { cat "$tmp/trig.err"; false; }'
	tqs() { tq --sync -H trig-hs "$@"; }
	n42=$(tqs --count 'sys_enter_close where fd == 4242' 2>&1)
	nall=$(tqs --count 'sys_enter_close' 2>&1)
	tqs --hist 'keys=common_stacktrace' 'sys_enter_close' > "$tmp/h4.txt" 2>&1
	h4=$(awk '/^    Hits:/ { print $2 }' "$tmp/h4.txt")
	# every entry's stack names the syscall entry
	noentry=$(awk '/^\{ common_stacktrace:$/ { st = 1; e = 0; next }
		/^         / && $1 ~ /^(do_syscall_64|entry_SYSCALL_64.*|do_int80_syscall_32|el0_svc.*|invoke_syscall)\+/ { e = 1 }
		/^\} hitcount:/ { if (!e) n++ } END { print n + 0 }' "$tmp/h4.txt")
	check "events without a stack are not counted: Hits $h4 = the $n42 close(4242) events (of $nall), each stack naming the syscall entry ($noentry not)" \
		'[ "${n42:-0}" -ge 30 ] && [ "$nall" -ge $((n42 + 30)) ] && [ "$h4" = "$n42" ] && [ "$noentry" = 0 ]'
	python3 -c "$frames" size "$tmp/h4.txt" > "$tmp/h4.frames"
	read -r nchecked nbad firstbad nmod < "$tmp/h4.frames"
	check "live: each frame's /0xSIZE is the distance to the next kallsyms address, and a module's symbol ends in \" [MODULE]\" ($nchecked frames of names held once, $nmod of a module, $nbad not: $firstbad)" \
		'[ "$nchecked" -gt 0 ] && [ "$nbad" = 0 ]'
	# the agent ships kallsyms' module column (WELCOME's sym_modules): the
	# kernel symbols stored with a module are kallsyms' text lines with one
	# ("NAME MOD"), unless those changed while the agent ran (ftrace's
	# trampolines, "[__builtin__ftrace]", come and go with other tracers)
	kallsyms_mods > "$tmp/kmod.after"
	sqlite3 -readonly "$tmp/trace.db" "SELECT s.name || ' ' || s.module FROM symbols AS s
		JOIN programs AS p ON p.id = s.program_id JOIN hosts AS h ON h.id = p.host_id
		WHERE h.name = 'trig-hs' AND p.grp = 0 AND s.module IS NOT NULL" 2>&1 |
		LC_ALL=C sort > "$tmp/kmod.stored"
	kmod=$(wc -l < "$tmp/kmod.after") smod=$(wc -l < "$tmp/kmod.stored")
	if cmp -s "$tmp/kmod.before" "$tmp/kmod.after"; then
		check "the agent's kernel symbols keep their modules ($smod stored with one, kallsyms has $kmod: $(head -n 2 "$tmp/kmod.stored" | tr '\n' ';'))" \
			'cmp -s "$tmp/kmod.stored" "$tmp/kmod.after"'
	else
		tc_skip_part "the kernel symbols' modules stored" "kallsyms' module lines changed while the agent ran"
	fi
	[ "${nmod:-0}" -gt 0 ] || tc_skip_part "a stack frame in a module (\" [MODULE]\" after %pS)" \
		"no frame of these stacks lies in a module ($kmod text symbols of modules in /proc/kallsyms: $(awk '$4 ~ /^\[/ { print $4 }' /proc/kallsyms | sort -u | tr '\n' ' '))"
	tqs --hist 'keys=common_stacktrace' 'sys_enter_close where fd == 4243' > "$tmp/h5.txt" 2>&1
	# the merge takes every row, whatever the filter: a close(4243) does not
	# take the stack of the close(4242) after it, which the filter drops
	check "close(4243), never stacked: no entry, Hits 0" \
		'grep -q "^    Hits: 0$" "$tmp/h5.txt" && ! grep -q "^{" "$tmp/h5.txt"'
else
	tc_skip_part "the filtered trigger (b)" "this kernel has no syscalls:sys_enter_close"
fi

# a store with no stack records (the recording's kernel_stack format, no
# record of it): no event has a stack, the histogram is empty
kill "$collector_pid"; wait "$collector_pid" 2>/dev/null; collector_pid=
rm -rf "$tmp/trace.db"*
tc_start_collector --query "ipc://$sock"
tc_tracecmd_record "$inst" "$tmp/plain.dat" -e sched:sched_switch -- sleep 0.05
tq --import "$tmp/plain.dat" --name imp-plain > "$tmp/imp3.out" 2>&1
tq --hist 'keys=common_stacktrace' 'sched_switch' > "$tmp/h6.txt" 2>&1; rc=$?
check "no stack records: an empty histogram, Hits 0 (exit $rc), while $(tq --count sched_switch) sched_switch are stored" \
	'[ "$rc" = 0 ] && grep -q "^    Hits: 0$" "$tmp/h6.txt" && ! grep -q "^{" "$tmp/h6.txt" &&
	 [ "$(tq --count sched_switch)" -gt 0 ]'

if [ -e "$tracing/events/sched/sched_switch/hist" ]; then
	tc_skip_part "the kernel's own hist file" "not compared yet"
else
	tc_skip_part "the kernel's own hist file" "this kernel has no hist triggers (CONFIG_HIST_TRIGGERS)"
fi

[ "$failed" = 0 ] || exit 1
echo "PASS"
