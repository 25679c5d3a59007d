#!/bin/bash
# tests/test_cli.sh - one command line across traceagent, tracecollectd and
# traceq (issue 17, "Errors and one command line"):
#  * a short option letter means the same in every program that has it (the
#    table in each man page; -s is "the collector to talk to": traceq's
#    --server, traceagent's --connect);
#  * -C FILE is the config file of both daemons; the old spellings that no
#    other program gives another meaning still work, saying so;
#  * an unknown option, or one missing its argument, prints one line and the
#    hint "Try 'PROG --help'." and exits 2, in all three;
#  * the three --version lines have one form: "PROG (tracecollect) VERSION".
# Needs only the built programs: no root, no daemons.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
tc_setup cli
progs="traceagent tracecollectd traceq"
bin() { [ "$1" = traceq ] && echo "$top_builddir/traceq/traceq" || echo "$top_builddir/$1"; }

# help_pairs PROG: "S LONG" for each option --help gives a short form.
help_pairs() {
	"$(bin "$1")" --help | sed -n 's/^ \{1,8\}-\([A-Za-z0-9]\), --\([a-z][a-z0-9-]*\).*/\1 \2/p'
}

# One meaning per letter: the long names of a letter, the agent's --connect
# read as --server (both: the collector to talk to), are one name.
for p in $progs; do help_pairs "$p"; done | sed 's/ connect$/ server/' | sort -u > "$tmp/pairs"
clash=$(awk '{ n[$1]++; l[$1] = l[$1] " --" $2 } END { for (s in n) if (n[s] > 1) print "-" s ":" l[s] }' \
	"$tmp/pairs" | tr '\n' ';')
check "each short option means one thing in all three programs${clash:+ (not so: $clash)}" \
	'[ -z "$clash" ]'
for p in traceagent tracecollectd; do
	check "$p: -C is --config" 'help_pairs $p | grep -qx "C config"'
done
check "traceagent: -s is --connect" 'help_pairs traceagent | grep -qx "s connect"'
check "traceq: -s is --server" 'help_pairs traceq | grep -qx "s server"'

# bad PROG NAME ARGS...: PROG ARGS... with its stderr in $tmp/NAME.err, exit in rc.
bad() {
	local p=$1 name=$2
	shift 2
	"$(bin "$p")" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" < /dev/null
	rc=$?
}

for p in $progs; do
	for o in --foo -Z; do
		bad "$p" "$p$o" "$o"
		printf "%s: unknown option '%s'\nTry '%s --help'.\n" "$p" "$o" "$p" > "$tmp/want"
		check "$p $o: one line and the hint, exit 2 (exit $rc: $(head -c 300 "$tmp/$p$o.err"))" \
			'[ "$rc" = 2 ] && cmp -s "$tmp/want" "$tmp/$p$o.err" && [ ! -s "$tmp/$p$o.out" ]'
	done
	bad "$p" "$p-noarg" --cert
	printf "%s: option '--cert' needs an argument\nTry '%s --help'.\n" "$p" "$p" > "$tmp/want"
	check "$p --cert without its file: one line and the hint, exit 2 (exit $rc: $(head -c 300 "$tmp/$p-noarg.err"))" \
		'[ "$rc" = 2 ] && cmp -s "$tmp/want" "$tmp/$p-noarg.err"'
	v=$("$(bin "$p")" --version)
	check "$p --version: '$p (tracecollect) VERSION' (got '$v')" \
		'[[ "$v" =~ ^$p\ \(tracecollect\)\ [0-9]+\.[0-9]+ ]]'
	check "$p -V is --version" '[ "$("$(bin "$p")" -V)" = "$v" ]'
done

# -C FILE: the collector's config file (a bad value in it shows it is read).
printf 'retain-age = never\n' > "$tmp/bad.conf"
bad tracecollectd conf-C -C "$tmp/bad.conf" --foreground --insecure-plain --db "$tmp/x/trace.db"
check "tracecollectd -C FILE reads FILE (exit $rc: $(head -c 300 "$tmp/conf-C.err"))" \
	'[ "$rc" = 2 ] && grep -q "bad.conf:1" "$tmp/conf-C.err"'
# the old spellings: -c FILE and -f, said to be old; -c for --connect in the agent
bad tracecollectd conf-c -f -c "$tmp/bad.conf" --insecure-plain --db "$tmp/x/trace.db"
check "tracecollectd -c FILE still reads FILE, saying -C is its name (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "bad.conf:1" "$tmp/conf-c.err" &&
	 grep -q "^tracecollectd: -c is the old spelling of -C (--config)" "$tmp/conf-c.err" &&
	 grep -q "^tracecollectd: -f is the old spelling of -F (--foreground)" "$tmp/conf-c.err"'
bad traceagent connect-c -c 127.0.0.1:bad
check "traceagent -c HOST:PORT still means --connect, saying -s is its name (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "^traceagent: -c is the old spelling of -s (--connect)" \
	 "$tmp/connect-c.err" && grep -q "bad --connect .127.0.0.1:bad." "$tmp/connect-c.err"'
bad traceagent connect-s -s 127.0.0.1:bad
check "traceagent -s HOST:PORT is --connect (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "bad --connect .127.0.0.1:bad." "$tmp/connect-s.err" &&
	 ! grep -q "old spelling" "$tmp/connect-s.err"'

# --freeze-on: one event and a filter, checked at once (agent/freezewatch.h)
bad traceagent freeze-glob --freeze-on 'sched_*'
check "traceagent --freeze-on with a glob: one line and the hint, exit 2 (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "bad --freeze-on .sched_\*.: name one event" "$tmp/freeze-glob.err"'
bad traceagent freeze-syntax --freeze-on 'sched_switch where prev_pid =='
check "traceagent --freeze-on with a bad filter points at it, exit 2 (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "^ *\^$" "$tmp/freeze-syntax.err"'
printf 'freeze-on = sched_switch,sched_wakeup\n' > "$tmp/freeze.conf"
bad traceagent freeze-conf -C "$tmp/freeze.conf"
check "traceagent's freeze-on = in -C FILE is checked too (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "freeze.conf:1" "$tmp/freeze-conf.err"'
"$top_builddir/traceagent" --freeze-on 'sched:sched_switch where prev_pid == 1' --help \
	> /dev/null 2> "$tmp/freeze-ok.err"; rc=$?
check "traceagent takes a good --freeze-on (exit $rc: $(head -c 300 "$tmp/freeze-ok.err"))" \
	'[ "$rc" = 0 ]'

# collector NAME ARGS...: tracecollectd in the foreground on $tmp/NAME/ (plain
# TCP on loopback: no certificates needed) until it is ready or gone; rc is
# its exit status ("ran": it got ready, and was stopped). Its stderr in
# $tmp/NAME.err.
collector() {
	local name=$1 pid
	shift
	"$top_builddir/tracecollectd" --foreground --insecure-plain --listen 127.0.0.1:0 \
		--query tcp://127.0.0.1:0 --db "$tmp/$name/trace.db" \
		--ready-file "$tmp/$name.ready" "$@" > /dev/null 2> "$tmp/$name.err" &
	pid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/$name.ready" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ -s "$tmp/$name.ready" ]; then
		kill "$pid"; wait "$pid"; rc=ran
	else
		wait "$pid"; rc=$?
	fi
}

# A bad --listen, --query or --query-tls is refused before anything is made:
# no database directory, database, lock or journal.
for l in 127.0.0.1:99999 127.0.0.1:-1 127.0.0.1 nonsense:7000x; do
	collector listen --listen "$l"
	check "--listen $l is refused, exit 2, nothing made (exit $rc: $(head -c 300 "$tmp/listen.err"))" \
		'[ "$rc" = 2 ] && grep -q -- "--listen $l" "$tmp/listen.err" && [ ! -e "$tmp/listen" ]'
	rm -rf "$tmp/listen"
done
collector query --query tcp://0.0.0.0:7001
check "--query tcp://0.0.0.0:7001 is refused, exit 2, nothing made (exit $rc)" \
	'[ "$rc" = 2 ] && [ ! -e "$tmp/query" ]'
collector qtls --query-tls 127.0.0.1:70000
check "--query-tls 127.0.0.1:70000 is refused, exit 2, nothing made (exit $rc: $(head -c 300 "$tmp/qtls.err"))" \
	'[ "$rc" = 2 ] && grep -q -- "--query-tls 127.0.0.1:70000" "$tmp/qtls.err" && [ ! -e "$tmp/qtls" ]'
collector good --listen 127.0.0.1:0
check "a good --listen runs (exit $rc: $(head -c 300 "$tmp/good.err"))" '[ "$rc" = ran ]'

# A value in the wrong form names the form, from the file and the command line.
while IFS='|' read -r key value form; do
	printf '%s = %s\n' "$key" "$value" > "$tmp/form.conf"
	bad tracecollectd form-file -C "$tmp/form.conf"
	check "tracecollectd.conf '$key = $value' says '$key: expected $form' (exit $rc: $(head -c 300 "$tmp/form-file.err"))" \
		'[ "$rc" = 2 ] && grep -qF "$key: expected $form" "$tmp/form-file.err"'
	bad tracecollectd form-cli "--$key" "$value"
	check "tracecollectd --$key '$value' says '$key: expected $form' (exit $rc: $(head -c 300 "$tmp/form-cli.err"))" \
		'[ "$rc" = 2 ] && grep -qF "$key: expected $form" "$tmp/form-cli.err"'
done <<'FORMS'
retain-age|7 days|a duration like 7d, 12h, 30m
retain-size|10 GB|a size like 500M, 10G
journal-size|lots|a size like 500M, 10G, or 0
handshake-timeout|soon|a duration like 10s, 500ms, 1m
idle-timeout|-5|a duration like 5m, 30s, or 0
max-handshakes|many|a whole number in 1..1000000
query-threads|100|a whole number in 1..64
store-priority|low|idle or normal
pushdown|maybe|yes or no
input-memory|100k|a size like 64M, 1G (at least 1M)
FORMS

# traceq's values in the wrong form name the form too (exit 2)
while IFS='|' read -r opt value form; do
	bad traceq "tq-form" "$opt" "$value" sched_switch
	check "traceq $opt '$value' says '$opt: expected $form' (exit $rc: $(head -c 300 "$tmp/tq-form.err"))" \
		'[ "$rc" = 2 ] && grep -qF -- "$opt: expected $form" "$tmp/tq-form.err"'
done <<'FORMS'
--limit|x|a whole number of events (0: all)
--limit|-3|a whole number of events (0: all)
--timeout|0|milliseconds, a whole number in 1..
--timeout|10s|milliseconds, a whole number in 1..
FORMS

exit $failed
