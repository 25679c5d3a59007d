#!/bin/bash
# Files only we write (issue 30): a local user who can write where the
# collector keeps its files must not inject events, nor make the collector
# (root) write into a file of root's.
#
#  1. Directories: a database directory, a journal directory writable by
#     others (0777) or owned by another user (nobody), and a quarantine
#     directory writable by others are refused at start, exit 1, with the
#     reason.
#  2. The ready file: a symlink planted at PATH.tmp (to a file of root's)
#     is not followed: the file it points to is unchanged and PATH is a
#     regular file with the collector's addresses.
#  3. tracecollect-certs under umask 000: keys 0600, certificates and
#     crl.pem 0644, the directory 0700 (0750 of group tracecollect where
#     that group exists: the collector's user reads its certificate).
#  4. A journal file we did not write: collector A (killed by the test aid
#     TRACECOLLECTD_TEST_ABORT_ON while it decodes a FORMAT) leaves a
#     journal file; a copy of it planted in collector B's journal
#     directory (ours, 0700, the file root's 0600: only its MAC tells) is
#     not replayed: B stores no event, --hosts shows no host, and the log
#     says why.
#  5. Quarantine: A starts again and quarantines the record that killed
#     it; a symlink planted at the quarantine entry's name (to a file of
#     root's) is not followed: that file is unchanged, the entry is a
#     regular file with the record.
#  4 and 5 need the test aid (configure --enable-test-aids); a build
#  without it skips them, saying so in one line.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (chown to nobody)"
id nobody >/dev/null 2>&1 || skip "no user nobody"
tc_lock
tc_setup files pid collector_pid
tc_certs

# start NAME READY ARGS...: a collector (log $tmp/NAME.log, ready file
# READY) on fresh ports; waits until READY is written or the collector
# exits. Sets pid (running) or rc (its exit status; "up" when running).
start() {
	local name=$1 ready=$2
	shift 2
	rm -f "$ready"
	"$top_builddir/tracecollectd" --foreground --listen 127.0.0.1:0 \
		--query tcp://127.0.0.1:0 --cert "$tmp/pki/server.crt" \
		--key "$tmp/pki/server.key" --ca "$tmp/pki/ca.crt" --host-map "tc-agent *" \
		--ready-file "$ready" "$@" 2>> "$tmp/$name.log" &
	pid=$!
	rc=up
	for _ in $(seq 200); do
		[ -s "$ready" ] && [ ! -L "$ready" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"; rc=$?
		pid=
	fi
}
stop() {
	[ -n "$pid" ] && { kill "$pid"; wait "$pid"; }
	pid=
}
# refused WHAT REASON ARGS...: the collector with ARGS exits 1 at start and
# logs REASON (a grep pattern).
refused() {
	local what=$1 reason=$2 name
	shift 2
	name=refused-$((++nref))
	start "$name" "$tmp/$name.ready" "$@"
	stop
	check "$what: refused at start (exit $rc): $(grep -m1 error "$tmp/$name.log")" \
		'[ "$rc" = 1 ] && grep -q -- "$reason" "$tmp/$name.log"'
}
nref=0

# ---- 1. directories
mkdir -m 0700 "$tmp/good"
mkdir "$tmp/open" && chmod 0777 "$tmp/open"
refused "a database directory of mode 0777" "writable by others" --db "$tmp/open/trace.db"
mkdir "$tmp/gw" && chmod 0770 "$tmp/gw"
refused "a database directory of mode 0770" "writable by its group" --db "$tmp/gw/trace.db"
mkdir "$tmp/open/journal" && chmod 0777 "$tmp/open/journal"
refused "a journal directory of mode 0777" "writable by others" \
	--db "$tmp/good/b.db" --journal-dir "$tmp/open/journal"
mkdir -m 0700 "$tmp/jnobody" && chown nobody "$tmp/jnobody"
refused "a journal directory owned by nobody" "owned by uid $(id -u nobody)" \
	--db "$tmp/good/c.db" --journal-dir "$tmp/jnobody"
mkdir -p -m 0700 "$tmp/good/d.db.journal/quarantine" && chmod 0777 "$tmp/good/d.db.journal/quarantine"
refused "a quarantine directory of mode 0777" "quarantine.*writable by others" \
	--db "$tmp/good/d.db"

# ---- 2. the ready file
mkdir -m 0700 "$tmp/r"
echo precious > "$tmp/precious"
ln -s "$tmp/precious" "$tmp/r/ready.tmp"
start ready "$tmp/r/ready" --db "$tmp/good/r.db"
check "the collector started with a symlink at the ready file's .tmp (rc $rc)" '[ "$rc" = up ]'
stop
check "the file the symlink points to is unchanged ($(head -c 40 "$tmp/precious"))" \
	'[ "$(cat "$tmp/precious")" = precious ]'
check "the symlink was not renamed onto the ready file" \
	'[ -L "$tmp/r/ready.tmp" ] || [ ! -e "$tmp/r/ready.tmp" ]'

# ---- 3. tracecollect-certs under umask 000
( umask 000; cd "$tmp" &&
  "$top_srcdir/contrib/tracecollect-certs" -d "$tmp/pki0" ca &&
  "$top_srcdir/contrib/tracecollect-certs" -d "$tmp/pki0" server localhost 127.0.0.1 &&
  "$top_srcdir/contrib/tracecollect-certs" -d "$tmp/pki0" agent h1 ) > "$tmp/certs.log" 2>&1 ||
	{ cat "$tmp/certs.log"; fail "tracecollect-certs under umask 000"; }
mode() { stat -c %a "$1"; }
dirmode=700 keymode=600
getent group tracecollect > /dev/null && dirmode=750 keymode=640
check "the PKI directory is $dirmode ($(mode "$tmp/pki0"))" '[ "$(mode "$tmp/pki0")" = "$dirmode" ]'
for f in ca.key agent-h1.key; do
	check "$f is 600 ($(mode "$tmp/pki0/$f"))" '[ "$(mode "$tmp/pki0/$f")" = 600 ]'
done
check "server.key is $keymode ($(mode "$tmp/pki0/server.key"))" \
	'[ "$(mode "$tmp/pki0/server.key")" = "$keymode" ]'
for f in ca.crt crl.pem server.crt agent-h1.crt; do
	check "$f is 644 ($(mode "$tmp/pki0/$f"))" '[ "$(mode "$tmp/pki0/$f")" = 644 ]'
done
check "nothing in it is writable by group or others" \
	'[ -z "$(find "$tmp/pki0" -perm /0022)" ]'

tc_has_test_aids || { tc_skip_part "4, 5 (journal, quarantine)" "$tc_test_aids_why"; exit $failed; }

# ---- 4. a journal file we did not write
lg() {
	"$top_builddir/bench/loadgen" --connect "$(sed -n 's/^listen=//p' "$1")" \
		--cert "$tmp/pki/agent-tc-agent.crt" --key "$tmp/pki/agent-tc-agent.key" \
		--ca "$tmp/pki/ca.crt" --data "$top_srcdir/tests/data" --agents 1 --pages 10 \
		--name "$2" > "$tmp/$2.out" 2>&1
}
mkdir -m 0700 "$tmp/a"
export TRACECOLLECTD_TEST_ABORT_ON=FORMAT:sched_wakeup
start a "$tmp/a.ready" --db "$tmp/a/trace.db"
[ "$rc" = up ] || { cat "$tmp/a.log"; echo "FAIL: collector A"; exit 1; }
lg "$tmp/a.ready" files-a
for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -9 "$pid" 2>/dev/null
wait "$pid"
pid=
jfile=$(ls "$tmp/a/trace.db.journal/"*.tcj 2>/dev/null | head -1)
check "collector A died decoding the FORMAT and left a journal file ($jfile)" \
	'[ -n "$jfile" ] && grep -q "aborting on FORMAT sched_wakeup" "$tmp/a.log"'
unset TRACECOLLECTD_TEST_ABORT_ON
mkdir -p -m 0700 "$tmp/b/trace.db.journal"
[ -n "$jfile" ] && cp "$jfile" "$tmp/b/trace.db.journal/" &&
	chmod 0600 "$tmp/b/trace.db.journal/"*.tcj
start b "$tmp/b.ready" --db "$tmp/b/trace.db"
[ "$rc" = up ] || { cat "$tmp/b.log"; echo "FAIL: collector B"; exit 1; }
query=$(sed -n 's/^query=//p' "$tmp/b.ready")
for _ in $(seq 200); do
	grep -q "stored [0-9]* journal file(s)\|not written by this collector" "$tmp/b.log" && break
	sleep 0.05
done
n=$(traceq --count sched_switch 2>/dev/null) || n=0
hosts=$(traceq --hosts 2>/dev/null | grep -c "files-a")
check "the planted journal file's events are not stored (sched_switch: $n)" '[ "$n" = 0 ]'
check "--hosts shows no planted host ($hosts)" '[ "$hosts" = 0 ]'
check "the log says why: $(grep -m1 "not written by" "$tmp/b.log")" \
	'grep -q "not written by this collector" "$tmp/b.log"'
stop

# ---- 5. a symlink in quarantine/
export TRACECOLLECTD_TEST_ABORT_ON=FORMAT:sched_wakeup
lock=$tmp/a/trace.db.journal/lock
# the unit in progress when A died (journal.c: struct jprogress, host order)
file=$(od -An -t x8 -j 8 -N 8 "$lock" | tr -d ' ')
end=$(od -An -t x8 -j 16 -N 8 "$lock" | tr -d ' ')
page=$(od -An -t x4 -j 24 -N 4 "$lock" | tr -d ' ')
entry=$tmp/a/trace.db.journal/quarantine/$file-$end-$page
echo "the unit that killed A: $file-$end-$page"
mkdir -p -m 0700 "$tmp/a/trace.db.journal/quarantine"
echo precious > "$tmp/precious2"
ln -s "$tmp/precious2" "$entry.rec"
start a2 "$tmp/a.ready" --db "$tmp/a/trace.db"
for _ in $(seq 200); do
	grep -q "stored [0-9]* journal file(s)" "$tmp/a2.log" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.05
done
check "collector A's restart quarantined the record ($(grep -m1 -o "quarantine[^,]*" "$tmp/a2.log"))" \
	'[ -e "$entry.txt" ]'
stop
unset TRACECOLLECTD_TEST_ABORT_ON
check "the file the planted symlink pointed to is unchanged ($(head -c 40 "$tmp/precious2" | tr -c "[:print:]" .))" \
	'[ "$(cat "$tmp/precious2")" = precious ]'
check "the quarantine entry is a regular file holding the record" \
	'[ -f "$entry.rec" ] && [ ! -L "$entry.rec" ] && grep -q "name: sched_wakeup" "$entry.rec"'

exit $failed
