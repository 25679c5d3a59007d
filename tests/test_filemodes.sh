#!/bin/bash
# Private files (issue 15): whatever the umask tracecollectd starts with,
# the database, its -wal and -shm, the receive journal, the lock files and
# the directories it makes for them are 0600/0700, so another user cannot
# read what agents sent; with --group G they are 0640/0750 of group G, for
# its members.
#
# Asserts, with umask 000 and a database in a directory that does not
# exist yet: the modes above after an agent's events are stored; user
# nobody can neither read the database file nor open it with sqlite3;
# then, with --group nogroup (nobody's group), the same files are
# 0640/0750 of group nogroup and nobody can read them.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (runs a check as user nobody)"
id nobody >/dev/null 2>&1 || skip "no user nobody"
command -v runuser >/dev/null || skip "no runuser"
tc_lock
tc_setup filemodes collector_pid
tc_certs
chmod 755 "$tmp"	# mktemp -d made it 0700: let nobody reach what is below

mode() { stat -c %a "$1"; }
group_of() { stat -c %G "$1"; }
lg() {
	timeout 120 "$top_builddir/bench/loadgen" --connect "$listen" \
		--cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key" \
		--ca "$tmp/pki/ca.crt" --data "$top_srcdir/tests/data" --pages 3 --name "$1" \
		> "$tmp/$1.out" 2>&1
}
as_nobody() { runuser -u nobody -- "$@"; }

# run DIR [ARGS...]: a collector with umask 000 on DIR/db/trace.db, one
# agent's pages stored, the files checked while it runs.
run() {
	local dir=$1
	shift
	mkdir -p "$dir"
	chmod 755 "$dir"
	( umask 000; tc_start_collector --db "$dir/db/trace.db" "$@" ) || exit 1
	listen=$(sed -n 's/^listen=//p' "$tmp/ready")
	query=$(sed -n 's/^query=//p' "$tmp/ready")
	collector_pid=$(sed -n 's/^pid=//p' "$tmp/ready")
	lg "$(basename "$dir")" || { cat "$tmp/$(basename "$dir").out"; fail "loadgen"; }
	traceq --count sched_switch > /dev/null
}
# stop: the collector is not our child (its subshell had the umask): wait for it
stop() {
	kill "$collector_pid"
	for _ in $(seq 300); do kill -0 "$collector_pid" 2>/dev/null || break; sleep 0.1; done
	collector_pid=
}

run "$tmp/private"
db=$tmp/private/db/trace.db
for f in "$db" "$db-wal" "$db-shm" "$db.lock" "$db.journal/lock"; do
	check "$(basename "$f") is 0600 under umask 000 ($(mode "$f"))" '[ "$(mode "$f")" = 600 ]'
done
for d in "$tmp/private/db" "$db.journal"; do
	check "directory $(basename "$d") is 0700 under umask 000 ($(mode "$d"))" '[ "$(mode "$d")" = 700 ]'
done
# A journal file is removed once what it holds is stored: one listed may be
# gone when it is looked at, so take the first whose mode could be read.
jm=
for _ in $(seq 20); do
	jf=$(ls "$db.journal"/*.tcj 2>/dev/null | head -1)
	[ -n "$jf" ] || break
	jm=$(mode "$jf" 2>/dev/null) && [ -n "$jm" ] && break
	jm=
done
[ -n "$jm" ] && check "journal file $(basename "$jf") is 0600 ($jm)" '[ "$jm" = 600 ]'
check "nobody cannot read the database file" '! as_nobody cat "$db" > /dev/null 2>&1'
check "... though it reaches it (the directories above are 0755)" \
	'as_nobody ls "$tmp/private" > /dev/null && ! as_nobody ls "$tmp/private/db" > /dev/null 2>&1'
if command -v sqlite3 >/dev/null; then
	check "nobody cannot open it with sqlite3" \
		'! as_nobody sqlite3 "file:$db?immutable=1" "select count(*) from hosts" > /dev/null 2>&1'
fi
check "root still can (the rows are there)" '[ "$(traceq --count sched_switch)" -gt 0 ]'
stop

run "$tmp/shared" --group nogroup
db=$tmp/shared/db/trace.db
for f in "$db" "$db-wal" "$db-shm"; do
	check "with --group: $(basename "$f") is 0640 of group nogroup ($(mode "$f") $(group_of "$f"))" \
		'[ "$(mode "$f")" = 640 ] && [ "$(group_of "$f")" = nogroup ]'
done
for d in "$tmp/shared/db" "$db.journal"; do
	check "with --group: directory $(basename "$d") is 0750 of nogroup ($(mode "$d") $(group_of "$d"))" \
		'[ "$(mode "$d")" = 750 ] && [ "$(group_of "$d")" = nogroup ]'
done
check "nobody, of group nogroup, can read the database" 'as_nobody cat "$db" > /dev/null'
stop

exit $failed
