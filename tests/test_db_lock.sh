#!/bin/bash
# One collector per database: a second tracecollectd given the same --db is
# refused even when it would not share the first one's receive journal (its
# own --journal-dir, or --journal-size 0), so two writers never store into
# one file. The lock is "DB.lock" beside the database.
#
# Asserts: with another --journal-dir, and with --journal-size 0, the second
# collector exits non-zero without getting ready, saying "database DB is in
# use by another tracecollectd (pid PID" with the first one's pid; the first
# keeps working: an agent's events are all stored; the lock file is 0600.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup db_lock agent workload second collector_pid

tc_certs
tc_start_collector

# second NAME ARGS...: another collector on the same database; waits until
# it is ready or gone. Sets rc2 (empty: it got ready, and is stopped).
second() {
	local name=$1
	shift
	rm -f "$tmp/ready2"
	"$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 \
		--query tcp://127.0.0.1:0 --db "$tmp/trace.db" --cert "$tmp/pki/server.crt" \
		--key "$tmp/pki/server.key" --ca "$tmp/pki/ca.crt" --ready-file "$tmp/ready2" \
		"$@" > /dev/null 2> "$tmp/$name.log" &
	second=$!
	for _ in $(seq 100); do
		[ -s "$tmp/ready2" ] && break
		kill -0 "$second" 2>/dev/null || break
		sleep 0.1
	done
	rc2=
	if [ -s "$tmp/ready2" ]; then
		kill "$second"; wait "$second"
	else
		wait "$second"; rc2=$?
	fi
	second=
}

msg="database $tmp/trace.db is in use by another tracecollectd (pid $collector_pid"
second other-journal --journal-dir "$tmp/journal2"
check "a second collector with its own journal directory is refused (exit ${rc2:-none: it ran})" \
	'[ -n "$rc2" ] && [ "$rc2" != 0 ] && grep -qF "$msg" "$tmp/other-journal.log" ||
	 { cat "$tmp/other-journal.log"; false; }'
second no-journal --journal-size 0
check "a second collector without a journal is refused (exit ${rc2:-none: it ran})" \
	'[ -n "$rc2" ] && [ "$rc2" != 0 ] && grep -qF "$msg" "$tmp/no-journal.log" ||
	 { cat "$tmp/no-journal.log"; false; }'
check "the lock file is 0600" '[ "$(stat -c %a "$tmp/trace.db.lock")" = 600 ]'

( while :; do sleep 0.002; done ) &
workload=$!
tc_run_agent agent -e sched:sched_switch --duration 2 --name lock-host --instance "tc-dblock-$$" \
	--spool-dir "$tmp/spool"
rc=$?
kill "$workload"; wait "$workload" 2>/dev/null
workload=
shipped=$(sed -n "s/.*total:.* events=\([0-9]*\).*/\1/p" "$tmp/agent.out")
stored=$(traceq --count '*')	# with the agent's task name events
check "the first collector keeps working: stored ($stored) == shipped ($shipped)" \
	'[ "$rc" = 0 ] && [ -n "$shipped" ] && [ "$shipped" -gt 0 ] && [ "$stored" = "$shipped" ]'
check "the first collector is still running" 'kill -0 "$collector_pid"'

if [ "$failed" != 0 ]; then
	echo "--- collector"; cat "$tmp/collector.log"
	exit 1
fi
echo "PASS: a second collector on the same database is refused"
