#!/bin/bash
# Database failures a person can act on (issue 17): the collector says
# which, not "database error". Each case starts tracecollectd on a database
# in a state it cannot use and expects it to stop (exit 1) saying why:
#  - a file that is not an SQLite database: "not an SQLite database";
#  - a database it may not open (nobody's file of mode 0000 in nobody's
#    directory, the collector run as nobody): "permission denied" (a
#    database or directory of another user's is refused before, as not
#    the collector's: test_files.sh);
#  - a full file system (a 1 MiB tmpfs the test mounts itself and fills):
#    "disk full";
#  - a database another process (not a collector: python's sqlite3, holding
#    an exclusive transaction) has locked: "locked by another process";
#  - a read-only file system (that tmpfs remounted read-only, the database
#    made before): "read-only".
# Needs root (mount, setpriv); no tracefs, no certificates (--insecure-plain).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (mount, setpriv)"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
command -v python3 >/dev/null || skip "needs python3 (a process that locks the database)"
tc_setup db_errors locker
trap 'tc_cleanup; mountpoint -q "$mnt" && umount "$mnt"' EXIT
mnt=$tmp/mnt
mkdir "$mnt"

# collector NAME DB [RUN...]: tracecollectd on DB (run through RUN...) until
# it is ready (then stopped: rc=ran) or exits (rc); its stderr in $tmp/NAME.err.
collector() {
	local name=$1 db=$2 pid
	shift 2
	"$@" "${tcd:-$top_builddir/tracecollectd}" --foreground --insecure-plain --listen 127.0.0.1:0 \
		--query tcp://127.0.0.1:0 --db "$db" --journal-size 0 \
		--ready-file "$tmp/$name.ready" > /dev/null 2> "$tmp/$name.err" &
	pid=$!
	for _ in $(seq 300); do
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

# says NAME TEXT: NAME's collector exited 1 saying TEXT about its database
says() {
	local err=$tmp/$1.err want=$2
	check "$1: exit 1 saying '$2' (exit $rc: $(grep -v ' info: \| warning: ' "$err" | head -c 400))" \
		'[ "$rc" = 1 ] && grep -qi "database .*$want" "$err" && ! grep -q "database error" "$err"'
}

head -c 8192 /dev/urandom > "$tmp/garbage.db"
collector notdb "$tmp/garbage.db"
says notdb "not an SQLite database"

mkdir -m 0755 "$tmp/perm"
collector perm-made "$tmp/perm/trace.db"
check "a database to refuse was made (exit $rc)" '[ "$rc" = ran ] && [ -s "$tmp/perm/trace.db" ]'
rm -f "$tmp/perm/trace.db-wal" "$tmp/perm/trace.db-shm" "$tmp/perm/trace.db.lock"
chown -R nobody "$tmp/perm"
chmod 0000 "$tmp/perm/trace.db"
chmod 0755 "$tmp"
# a copy nobody can run: the build tree may sit below a directory only
# root can enter (a clone in mktemp -d, as CI makes)
install -m 755 "$top_builddir/tracecollectd" "$tmp/tracecollectd" ||
	{ echo "FAIL: cannot copy tracecollectd into $tmp"; exit 1; }
tcd=$tmp/tracecollectd collector perm "$tmp/perm/trace.db" setpriv --reuid=nobody \
	--regid=nogroup --clear-groups
says perm "permission denied"

mount -t tmpfs -o size=1m,mode=0700 tc-db-errors "$mnt" || skip "cannot mount a tmpfs"
head -c 2m /dev/zero > "$mnt/filler" 2>/dev/null
collector full "$mnt/trace.db"
says full "disk full"
rm -f "$mnt"/*

collector ro-made "$mnt/trace.db"
check "a database on the small file system was made (exit $rc)" '[ "$rc" = ran ]'
rm -f "$mnt/trace.db.lock"
mount -o remount,ro "$mnt"
collector ro "$mnt/trace.db"
says ro "read-only"
umount "$mnt"

collector lock-made "$tmp/locked.db"
python3 -c '
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").write("locked\n")
time.sleep(600)
' "$tmp/locked.db" "$tmp/locked" &
locker=$!
for _ in $(seq 100); do [ -s "$tmp/locked" ] && break; sleep 0.1; done
collector lock "$tmp/locked.db"
says lock "locked by another process"
kill "$locker"; wait "$locker" 2>/dev/null
locker=

exit $failed
