# tests/text_compare.awk - match the events of two text listings in
# trace-cmd report's layout and compare their lines byte for byte.
#
#   awk -f text_compare.awk [-v strip=INSTANCE] [-v show=N] [-v nolat=1] A.txt B.txt
#
# Both list events as "COMM-PID [CPU] [FLAGS] SECS.USECS: NAME: TEXT" (the
# latency FLAGS in the kernel's trace file only). A line of A
# (optionally after the "strip: " prefix trace-cmd report puts before the
# events of an instance) and a line of B are the same event when they have
# the same CPU, event name and pid and their times lie within 20 us: two
# tracefs instances see the same events in the same order per CPU, but
# each buffer stamps an event with its own read of the clock. Pairs are
# taken in order per (CPU, event name), two pointers walking the times;
# where one side lacks an event among several of one pid within 20 us, the
# lines' text decides which one is missing; a pair that differs and is
# the first or last of its CPU and event on either side is two events, one
# on each side (the instances start and stop apart), not a difference.
# nolat=1 compares the lines with their latency flags made dots.
# Prints "matched=N identical=N ts_only=N exit_state=N comm_unknown=N
# comm_other=N comm_exec=N peer_unknown=N differ=N a_only=N b_only=N tick=N" (exit_state: the lines
# differ only in an exiting task's prev_state, Z or X; tick: only in
# timer_expire_entry's now, the jiffies; comm_other: only in the
# COMM, neither <...>, of a pid that did not exec in either listing;
# comm_exec: likewise of a pid that did (a sched_process_exec of it),
# which had two names and either side may print the one it read
# before or after; comm_unknown: B's COMM is <...>, the
# rest of the line A's; peer_unknown: A's COMM is <...> and B names the
# pid, the rest the same) and,
# for up to `show` differing pairs, both lines; only events inside the
# time span both listings cover are counted as unmatched.
function parse(line, f,    m, head, rest, i, j, tok) {
	if (!match(line, /\[[0-9][0-9][0-9]\] +([^ ]+ +)?[0-9]+\.[0-9]+: [^ ]+: /))
		return 0
	head = substr(line, 1, RSTART - 1)
	rest = substr(line, RSTART, RLENGTH)
	f["line"] = line
	if (nolat) {	# the latency flags made dots: "dNs2." -> "....."
		i = index(rest, "] ")
		j = index(substr(rest, i + 2), " ")
		tok = substr(rest, i + 2, j - 1)
		if (tok !~ /^[0-9]/) {
			gsub(/./, ".", tok)
			f["line"] = head substr(rest, 1, i + 1) tok substr(rest, i + 1 + j) \
				substr(line, RSTART + RLENGTH)
		}
	}
	sub(/ +$/, "", head)
	f["pid"] = head; sub(/.*-/, "", f["pid"])
	f["cpu"] = substr(rest, 2, 3) + 0
	m = rest; sub(/^\[[0-9]+\] +/, "", m)
	if (m !~ /^[0-9]+\.[0-9]+: /)
		sub(/^[^ ]+ +/, "", m)	# the kernel's latency flags
	f["ts"] = m; sub(/:.*/, "", f["ts"])
	f["us"] = f["ts"]; sub(/\..*/, "", f["us"])
	f["us"] = f["us"] * 1000000 + substr(f["ts"], index(f["ts"], ".") + 1)
	f["name"] = m; sub(/^[^ ]+ /, "", f["name"]); sub(/: $/, "", f["name"])
	return 1
}
FNR == 1 { file++ }
{
	line = $0
	if (file == 1 && strip != "") {
		if (index(line, strip ": ") != 1)
			next
		line = substr(line, length(strip) + 3)
	}
	if (!parse(line, f))
		next
	line = f["line"]
	if (f["name"] == "sched_process_exec" && match(line, / pid=[0-9]+ /))
		execd[substr(line, RSTART + 5, RLENGTH - 6)] = 1
	k = f["cpu"] SUBSEP f["name"]
	keys[k] = 1
	n = ++cnt[file, k]
	us[file, k, n] = f["us"]; pid[file, k, n] = f["pid"]; txt[file, k, n] = line
	if (!(file in lo) || f["us"] < lo[file]) lo[file] = f["us"]
	if (!(file in hi) || f["us"] > hi[file]) hi[file] = f["us"]
}
function tsless(l) { x = l; sub(/ +[0-9]+\.[0-9]+: /, " ", x); return x }
# the line without its COMM, from "-PID" on (with the thread group, if
# any, after it)
function commless(l) { x = tsless(l)
	if (match(x, /-[0-9]+ +(\( *[0-9]+\) +)?\[[0-9]+\] /)) x = substr(x, RSTART)
	return x }
# sched_switch's prev_state of a task that is exiting, made "?": the
# tracepoint evaluates it for each instance on its own, and the task may go
# from zombie (Z) to dead (X) in between.
function stateless(l) { x = tsless(l); sub(/\] [XZ] ==> /, "] ? ==> ", x);
	sub(/ prev_state=[XZ] ==> /, " prev_state=? ==> ", x); return x }
# timer_expire_entry's now, made "?": the tracepoint reads jiffies for
# each instance on its own, and a tick may come in between.
function tickless(l) { x = tsless(l)
	if (x ~ / timer_expire_entry: /) sub(/ now=[0-9]+ /, " now=? ", x)
	return x }
# the pid of a line's COMM-PID column
function pidof(l) { x = l; sub(/ +(\( *[0-9]+\) +)?\[[0-9]+\] .*/, "", x); sub(/.*-/, "", x); return x }
function inside(t) { return t >= from && t <= to }
# pair(k, i, j): A's i-th and B's j-th event of k are the same event by pid
# and time, and their lines agree but for the time.
function pair(k, i, j,    d) {
	if (i > cnt[1, k] || j > cnt[2, k] || pid[1, k, i] != pid[2, k, j])
		return 0
	d = us[1, k, i] - us[2, k, j]
	return d <= 20 && d >= -20 && tsless(txt[1, k, i]) == tsless(txt[2, k, j])
}
END {
	from = lo[1] > lo[2] ? lo[1] : lo[2]
	to = hi[1] < hi[2] ? hi[1] : hi[2]
	for (k in keys) {
		i = 1; j = 1
		while (i <= cnt[1, k] && j <= cnt[2, k]) {
			d = us[1, k, i] - us[2, k, j]
			# Several events of one pid within 20 us (an idle CPU's timers
			# expiring together) and one of them seen by one side only:
			# pair by text with the next one instead of shifting every pair.
			if (!pair(k, i, j) && pair(k, i, j + 1)) {
				b_only += inside(us[2, k, j]); j++
				continue
			}
			if (!pair(k, i, j) && pair(k, i + 1, j)) {
				a_only += inside(us[1, k, i]); i++
				continue
			}
			if (pid[1, k, i] == pid[2, k, j] && d <= 20 && d >= -20) {
				matched++
				if (txt[1, k, i] == txt[2, k, j])
					identical++
				else if (tsless(txt[1, k, i]) == tsless(txt[2, k, j]))
					ts_only++
				else if (stateless(txt[1, k, i]) == stateless(txt[2, k, j]))
					exit_state++
				else if (tickless(txt[1, k, i]) == tickless(txt[2, k, j]))
					tick++
				else if (txt[2, k, j] ~ /^ *<\.\.\.>-/ &&
					 commless(txt[1, k, i]) == commless(txt[2, k, j]))
					comm_unknown++
				else if (txt[1, k, i] ~ /^ *<\.\.\.>-/ &&
					 commless(txt[1, k, i]) == commless(txt[2, k, j]))
					peer_unknown++
				else if (commless(txt[1, k, i]) == commless(txt[2, k, j])) {
					if (pidof(txt[1, k, i]) in execd)
						comm_exec++
					else if (comm_other++ < show)
						printf("COMM A: %s\nCOMM B: %s\n", txt[1, k, i], txt[2, k, j])
				}
				else if (i == 1 || j == 1 || i == cnt[1, k] || j == cnt[2, k]) {
					# the first or last of its kind on a side: two
					# different events, each seen by one instance only
					# (they start and stop apart), paired by time
					matched--
					a_only += inside(us[1, k, i]); b_only += inside(us[2, k, j])
				} else {
					differ++
					split(k, kk, SUBSEP)
					differ_in[kk[2]]++
					if (shown++ < show)
						printf("A: %s\nB: %s\n", txt[1, k, i], txt[2, k, j])
				}
				i++; j++
			} else if (d < 0) {
				a_only += inside(us[1, k, i]); i++
			} else {
				b_only += inside(us[2, k, j]); j++
			}
		}
		for (; i <= cnt[1, k]; i++) a_only += inside(us[1, k, i])
		for (; j <= cnt[2, k]; j++) b_only += inside(us[2, k, j])
	}
	for (e in differ_in)
		printf("differ in %s: %d\n", e, differ_in[e])
	printf("matched=%d identical=%d ts_only=%d exit_state=%d comm_unknown=%d comm_other=%d comm_exec=%d peer_unknown=%d differ=%d a_only=%d b_only=%d tick=%d\n",
	       matched, identical, ts_only, exit_state, comm_unknown, comm_other, comm_exec, peer_unknown,
	       differ, a_only, b_only, tick)
}
