#!/bin/bash
# test_agent_config: traceagent -C FILE (traceagent.conf(5)). The file's
# keys are the long options and it is read first: its connect is used, a
# command-line -c wins, a command-line -e replaces its event lines, flag
# keys take yes/no, exec takes a command line, and an unknown key, a bad
# value or insecure-plain (command line only) is a usage error naming the
# file and line. The agent gets as far as connecting (to a closed port),
# which shows what it was told.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
tc_need_tracefs
tc_lock
tc_setup agentconf
agent=$top_builddir/traceagent
conf=$tmp/traceagent.conf

# run LINES ARGS...: the agent with a config file of LINES and ARGS; its
# output in $out, its exit status in $rc.
run() {
	printf '%s\n' "$1" > "$conf"
	shift
	out=$("$agent" -C "$conf" --instance "tc-agentconf-$$" --insecure-plain "$@" 2>&1)
	rc=$?
}

run "connect = 127.0.0.1:1"
check "the file's connect is used (rc $rc: $out)" \
	'[ "$rc" = 1 ] && [[ $out == *"cannot connect to 127.0.0.1 port 1:"* ]]'
run "connect = 127.0.0.1:1" -c 127.0.0.1:2
check "a command-line -c wins" '[[ $out == *"127.0.0.1 port 2:"* ]]'
run $'connect = 127.0.0.1:1\nevent = nosuchsystem_tc'
check "the file's event is enabled (rc $rc)" '[ "$rc" = 1 ] && [[ $out == *nosuchsystem_tc* ]]'
run $'connect = 127.0.0.1:1\nevent = nosuchsystem_tc' -e sched
check "a command-line -e replaces the file's events" '[[ $out == *"port 1:"* ]]'
run $'connect = 127.0.0.1:1\nno-user = yes\nexec = /bin/true -x'
check "no-user = yes and exec: the usage error --exec makes (rc $rc)" \
	'[ "$rc" = 2 ] && [[ $out == *"--exec needs the programs"* ]]'
run $'connect = 127.0.0.1:1\nno-user = no\nverbose = no\nquiet = yes'
check "flag keys take yes and no" '[ "$rc" = 1 ] && [[ $out == *"port 1:"* ]]'
run $'# comment\nbogus = 1'
check "an unknown key: usage error at FILE:2" '[ "$rc" = 2 ] && [[ $out == *"$conf:2: unknown key '"'bogus'"'"* ]]'
run "duration = soon"
check "a bad value: usage error naming the line" \
	'[ "$rc" = 2 ] && [[ $out == *"--duration wants"* ]] && [[ $out == *"$conf:1: duration = soon"* ]]'
run "insecure-plain = yes"
check "insecure-plain is no key" '[ "$rc" = 2 ] && [[ $out == *"unknown key"* ]]'
run "no-pushdown = maybe"
check "a flag key wants yes or no" '[ "$rc" = 2 ] && [[ $out == *"wants yes or no"* ]]'
check "no instance left behind" '[ ! -e "$tracing/instances/tc-agentconf-$$" ]'
exit "$failed"
