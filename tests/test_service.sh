#!/bin/bash
# test_service: what make install gives a packager and systemd.
#  1. A DESTDIR install: both units (with the configured paths) in
#     systemd's unit directory, the sysusers.d file, the example configs
#     (a second install keeps an edited one), man pages that man renders
#     without a warning, bash completion for every program.
#  2. systemd-analyze verify on both units (no systemd as PID 1 needed) and
#     their offline security scores: tracecollectd <= 2.0, traceagent <= 5.0.
#  3. The collector started the way its unit starts it: the unit's
#     ExecStart line on the installed example config (edited for this
#     host), as the tracecollect user with no capabilities and UMask=0027,
#     NOTIFY_SOCKET and WATCHDOG_USEC from tests/notify_listen (our end of
#     sd_notify), stderr as a journal stream: READY=1 with the bound
#     addresses, then an agent started the way its unit starts it (the
#     unit's ExecStart, only its capabilities) is stored whole, a member of
#     the tracecollect group gets the rows over the default ipc endpoint
#     (moved from /run/tracecollect into the test's RuntimeDirectory) and
#     a non-member is refused, a second collector's error line carries
#     <3>, watchdog pings arrive, SIGTERM gives STOPPING=1 and exit 0, and
#     the collector's files are its own and not others'.
# The tracecollect group is the machine's, else the one sysusers.d makes in
# the DESTDIR: then the collector and tracecollect-certs run in a mount
# namespace whose /etc/group has it, as an installed system's has.
# tracecollect-certs server makes server.key 0640 of that group (the
# collector's user must read it), not 0600 root's.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
tc_setup service listener_pid collector_pid
dest=$tmp/root

# set_key FILE KEY VALUE: KEY's line (commented out or not) becomes KEY = VALUE.
set_key() {
	grep -q "^#\{0,1\}$2 = " "$1" || { echo "FAIL: no key $2 in $1"; exit 1; }
	sed -i "0,/^#\{0,1\}$2 = .*/s||$2 = $3|" "$1"
}

# ---- 1. the install
make -s -C "$top_builddir" install DESTDIR="$dest" > "$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; echo "FAIL: make install DESTDIR"; exit 1; }
eval "$(make -s -C "$top_builddir" install-dirs)"
cunit=$dest$unitdir/tracecollectd.service
aunit=$dest$unitdir/traceagent.service
cconf=$dest$sysconfdir/tracecollect/tracecollectd.conf
aconf=$dest$sysconfdir/tracecollect/traceagent.conf
check "both units in the unit directory ($unitdir)" '[ -f "$cunit" ] && [ -f "$aunit" ]'
check "the units carry the configured paths" \
	'grep -qx "ExecStart=$sbindir/tracecollectd --foreground -C $sysconfdir/tracecollect/tracecollectd.conf" "$cunit" &&
	 grep -qx "ExecStart=$bindir/traceagent -C $sysconfdir/tracecollect/traceagent.conf" "$aunit" &&
	 ! grep -q "@[a-z]*@" "$cunit" "$aunit"'
check "the sysusers.d file makes the tracecollect user" \
	'grep -q "^u tracecollect " "$dest$sysusersdir/tracecollect.conf"'
check "both example configs in $sysconfdir/tracecollect" '[ -f "$cconf" ] && [ -f "$aconf" ]'
check "the certificate helper" '[ -x "$dest$sbindir/tracecollect-certs" ]'
for page in man1/traceq.1 man5/tracecollectd.conf.5 man5/traceagent.conf.5 \
	man8/tracecollectd.8 man8/traceagent.8; do
	check "man -l $page renders without warnings" \
		'[ -f "$dest$mandir/$page" ] &&
		 [ -z "$(MANWIDTH=80 man --warnings -l "$dest$mandir/$page" 2>&1 >/dev/null)" ]'
done
for p in traceq traceagent tracecollectd tracecollect-certs; do
	check "bash completion for $p" '[ -f "$dest$completiondir/$p" ]'
done
# complete WORD...: what bash completion offers for the last word
complete_words() {
	PATH="$dest$bindir:$dest$sbindir:$PATH" bash -c '
		. /usr/share/bash-completion/bash_completion
		. "$0"
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		_tracecollect "$1" "${@: -1}" "${@: -2:1}"
		echo "${COMPREPLY[*]}"' "$dest$completiondir/$1" "$@"
}
if [ -f /usr/share/bash-completion/bash_completion ]; then
	check "traceq --sy completes to --sync" '[ "$(complete_words traceq --sy)" = --sync ]'
	check "traceagent --read-mode offers the modes" \
		'[ "$(complete_words traceagent --read-mode "")" = "auto read mmap splice" ]'
fi
echo "# edited" >> "$cconf"
make -s -C "$top_builddir" install DESTDIR="$dest" > "$tmp/install2.log" 2>&1 ||
	{ cat "$tmp/install2.log"; fail "second make install"; }
check "a second install keeps an edited config, the new one beside it" \
	'tail -1 "$cconf" | grep -qx "# edited" && cmp -s "$top_srcdir/contrib/tracecollectd.conf" "$cconf.example"'
rm -f "$dest$sysconfdir"/tracecollect/*.example
sed -i '$d' "$cconf"

# ---- 2. systemd-analyze
# The units as installed, their programs looked up under $dest; the man
# pages of Documentation= from $dest too.
if command -v systemd-analyze > /dev/null; then
	mkdir "$tmp/units"
	for u in "$cunit" "$aunit"; do
		sed "s|^ExecStart=|ExecStart=$dest|" "$u" > "$tmp/units/${u##*/}"
		check "systemd-analyze verify ${u##*/}" \
			'MANPATH="$dest$mandir" systemd-analyze verify "$tmp/units/${u##*/}" > "$tmp/verify.log" 2>&1 ||
			 { cat "$tmp/verify.log"; false; }'
		systemd-analyze security --offline=yes "$u" > "$tmp/security.log" 2>&1
		score=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' "$tmp/security.log")
		echo "# ${u##*/}: systemd-analyze security --offline=yes: $score"
		max=2.0; [ "${u##*/}" = traceagent.service ] && max=5.0
		check "${u##*/} exposure $score <= $max" \
			'[ -n "$score" ] && awk "BEGIN { exit !($score <= $max) }"'
	done
else
	echo "# no systemd-analyze: units not verified"
fi

# ---- 3. the collector and the agent as their units start them
[ "$(id -u)" = 0 ] && [ -d "$tracing/instances" ] && [ -w "$tracing/instances" ] || {
	echo "# not root or no writable tracefs: the services are not started"
	exit "$failed"
}
tc_lock
tc_certs
# User=tracecollect: the machine's, else the one the sysusers.d file makes in $dest.
if getent passwd tracecollect > /dev/null; then
	uid=$(id -u tracecollect); gid=$(id -g tracecollect)
else
	mkdir -p "$dest/etc"
	systemd-sysusers --root="$dest" "$dest$sysusersdir/tracecollect.conf" ||
		{ echo "FAIL: systemd-sysusers"; exit 1; }
	uid=$(awk -F: '$1 == "tracecollect" { print $3 }' "$dest/etc/passwd")
	gid=$(awk -F: '$1 == "tracecollect" { print $3 }' "$dest/etc/group")
fi
echo "# tracecollect is uid $uid gid $gid"
# "${with_group[@]}" CMD...: CMD where the group tracecollect exists (gid $gid).
with_group=()
if ! getent group tracecollect > /dev/null; then
	{ cat /etc/group; echo "tracecollect:x:$gid:"; } > "$tmp/group"
	with_group=(unshare -m sh -c 'mount --bind "$0" /etc/group && exec "$@"' "$tmp/group")
fi
chmod 0711 "$tmp"
# StateDirectory= and RuntimeDirectory= (mode 0750, the user's). The
# collector's key: as tracecollect-certs makes it where the group exists.
install -d -m 0750 -o "$uid" -g "$gid" "$tmp/state" "$tmp/run"
rm -f "$tmp/pki/server.key" "$tmp/pki/server.crt"
"${with_group[@]}" "$top_srcdir/contrib/tracecollect-certs" -d "$tmp/pki" server localhost 127.0.0.1 \
	> "$tmp/certs.log" 2>&1 || { cat "$tmp/certs.log"; echo "FAIL: tracecollect-certs server"; exit 1; }
check "tracecollect-certs server: server.key is 0640, group tracecollect ($(stat -c '%a %u:%g' "$tmp/pki/server.key"))" \
	'[ "$(stat -c "%a %u:%g" "$tmp/pki/server.key")" = "640 0:$gid" ]'
check "and says so" 'grep -q "server.key.*group tracecollect" "$tmp/certs.log"'
set_key "$cconf" listen 127.0.0.1:0
# The default endpoint, ipc:///run/tracecollect/query.sock, in our
# RuntimeDirectory; query-group is left at its default (tracecollect).
set_key "$cconf" query "ipc://$tmp/run/query.sock"
set_key "$cconf" db "$tmp/state/trace.db"
set_key "$cconf" cert "$tmp/pki/server.crt"
set_key "$cconf" key "$tmp/pki/server.key"
set_key "$cconf" ca "$tmp/pki/ca.crt"

"$top_builddir/tests/notify_listen" "$tmp/notify.sock" "$tmp/notify.out" &
listener_pid=$!
for _ in $(seq 100); do [ -S "$tmp/notify.sock" ] && break; sleep 0.1; done

# run_as_unit LOG CMD...: CMD with the unit's user, no capabilities, no new
# privileges, UMask=0027, cwd /, a clean environment with NOTIFY_SOCKET,
# WATCHDOG_USEC and JOURNAL_STREAM naming LOG (its stderr); in the background.
run_as_unit() {
	local log=$1; shift
	: > "$log"
	(umask 0027; cd / && exec "${with_group[@]}" env -i PATH=/usr/bin:/bin \
		NOTIFY_SOCKET="$tmp/notify.sock" WATCHDOG_USEC=1000000 \
		JOURNAL_STREAM="$(stat -c %d:%i "$log")" setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all \
		--bounding-set=-all --no-new-privs "$@") 2>> "$log" &
}
# The unit's ExecStart, with $dest before the program and the config.
read -r -a cmd <<< "$(sed -n 's/^ExecStart=//p' "$cunit")"
cmd[0]=$dest${cmd[0]}
cmd[3]=$dest${cmd[3]}
run_as_unit "$tmp/collector.log" "${cmd[@]}"
collector_pid=$!
for _ in $(seq 100); do
	grep -q '^READY=1' "$tmp/notify.out" 2>/dev/null && break
	kill -0 "$collector_pid" 2>/dev/null || break
	sleep 0.1
done
grep -q '^READY=1' "$tmp/notify.out" ||
	{ cat "$tmp/collector.log"; echo "FAIL: no READY=1 from the collector"; exit 1; }
status=$(grep '^STATUS=listening' "$tmp/notify.out")
listen=$(echo "$status" | sed -n 's/^STATUS=listening for agents on \([^,]*\), .*/\1/p')
query=$(echo "$status" | sed -n 's/.*, queries on \(.*\)$/\1/p')
check "READY=1 with a STATUS= naming the bound addresses ($listen, $query)" \
	'[ -n "$listen" ] && [ -n "$query" ]'
check "the collector runs as uid $uid" '[ "$(stat -c %u /proc/$collector_pid)" = "$uid" ]'

# The agent: its unit's ExecStart on the installed example config, with
# only the capabilities its unit keeps.
set_key "$aconf" connect "$listen"
set_key "$aconf" cert "$tmp/pki/agent-tc-agent.crt"
set_key "$aconf" key "$tmp/pki/agent-tc-agent.key"
set_key "$aconf" ca "$tmp/pki/ca.crt"
set_key "$aconf" spool-dir "$tmp/spool"
set_key "$aconf" instance "tc-service-$$"
set_key "$aconf" duration 3
read -r -a acmd <<< "$(sed -n 's/^ExecStart=//p' "$aunit")"
acmd[0]=$dest${acmd[0]}
acmd[2]=$dest${acmd[2]}
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$aunit" | tr 'A-Z' 'a-z' |
	sed 's/cap_/+/g; s/ /,/g')
mkdir -m 0700 "$tmp/spool"
(umask 0077; cd / && exec setpriv --bounding-set=-all,"$caps" --inh-caps=-all --no-new-privs \
	"${acmd[@]}") > "$tmp/agent.out" 2>&1
arc=$?
check "the agent (capabilities ${caps//+/}) ran and exited 0 (got $arc)" \
	'[ "$arc" = 0 ] || { cat "$tmp/agent.out"; false; }'
check "the agent's DONE covers what it shipped" 'tc_done_covers "$tmp/agent.out"'
check "its instance is gone" '[ ! -e "$tracing/instances/tc-service-$$" ]'
check "the query socket is $tmp/run/query.sock, mode 0660, group tracecollect" \
	'[ "$query" = "ipc://$tmp/run/query.sock" ] &&
	 [ "$(stat -c "%a %g" "$tmp/run/query.sock")" = "660 $gid" ]'
n=$(setpriv --reuid=65534 --regid=65534 --groups="$gid" --inh-caps=-all --no-new-privs \
	"$dest$bindir/traceq" --server "$query" --sync -t 120000 --count sched_switch 2>&1)
check "a member of the group counts the sched_switch rows ($n)" \
	'[ -n "$n" ] && [ "$n" -gt 0 ] 2>/dev/null'
check "its query is logged with its uid" \
	'grep -q "query from uid 65534 .*sched_switch" "$tmp/collector.log"'
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --no-new-privs \
	"$dest$bindir/traceq" --server "$query" -t 5000 --count sched_switch 2>&1)
qrc=$?
check "a user not in the group is refused (exit $qrc: $out)" \
	'[ "$qrc" = 1 ] && ! [ "$out" -ge 0 ] 2>/dev/null'

run_as_unit "$tmp/second.log" "${cmd[@]}"
second_pid=$!
wait "$second_pid"
check "a second collector on the same database fails with a <3> line" \
	'grep -q "^<3>error: database .* is in use" "$tmp/second.log" || { cat "$tmp/second.log"; false; }'

kill -TERM "$collector_pid"
wait "$collector_pid"
crc=$?
collector_pid=""
check "SIGTERM: the collector exits 0 (got $crc)" '[ "$crc" = 0 ]'
check "STOPPING=1 after READY=1" \
	'[ "$(grep -n "^STOPPING=1" "$tmp/notify.out" | cut -d: -f1)" -gt \
	   "$(grep -n "^READY=1" "$tmp/notify.out" | cut -d: -f1)" ]'
pings=$(grep -c '^WATCHDOG=1' "$tmp/notify.out")
check "watchdog pings from the event loop ($pings)" '[ "$pings" -ge 2 ]'
check "every log line carries a syslog priority, <6> for info" \
	'[ -s "$tmp/collector.log" ] && ! grep -qv "^<[3467]>" "$tmp/collector.log" &&
	 grep -q "^<6>info: " "$tmp/collector.log"'
check "the collector's files are its own, nothing for others (UMask=0027)" \
	'[ -f "$tmp/state/trace.db" ] && [ -z "$(find "$tmp/state" ! -user "$uid")" ] &&
	 [ -z "$(find "$tmp/state" -perm /0007)" ]'
[ "$failed" = 0 ] || { echo "--- collector log"; cat "$tmp/collector.log"; echo "--- notify"; cat "$tmp/notify.out"; }
exit "$failed"
