#!/bin/bash
# What a peer wrote must not drive the terminal (issue 30, "Terminal
# injection"). A process renames itself (/proc/self/comm) to ESC[2J CR
# "forged" and writes three trace_marker texts with ESC[2J, CR, LF, a tab,
# a backslash and the UTF-8 of U+009B (C1 CSI) into the instance of an
# agent recording ftrace:print: the events' comm and their string field
# (buf) carry them. A recording is imported under a host name with an OSC
# title sequence, BEL, CR and LF in it.
#
# Asserts:
#  - text, kernel, fields and csv print the three events as three lines
#    (csv: and its header), and not one control byte or C1 character of
#    the peers' (ESC, CR, BEL, U+009B): they read \x1b, \r, \xc2\x9b;
#  - --hosts and --stats (text) list the imported host on one line each,
#    without a control byte;
#  - JSON gives the exact strings back: buf and comm of each event, the
#    host's name in --hosts (a JSON parser reads them as they were written).
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
command -v python3 >/dev/null || skip "needs python3"
tc_lock
tc_setup escape agent collector_pid

tc_certs
mkdir -m 755 "$tmp/run"
tc_start_collector --query "ipc://$tmp/run/query.sock"
query="ipc://$tmp/run/query.sock"
inst="tc-escape-$$"

tc_start_agent agent -e ftrace:print --name tc-escape --instance "$inst" --no-user \
	--flush-ms 20 --duration 60
for _ in $(seq 100); do
	[ "$(cat "$tracing/instances/$inst/tracing_on" 2>/dev/null)" = 1 ] && break
	sleep 0.1
done
check "the agent runs with -e ftrace:print ($(tail -c 300 "$tmp/agent.err"))" \
	'kill -0 "$agent" 2>/dev/null'

comm=$'\e[2J\rforged'	# no LF: saved_cmdlines is read by lines
mark=$'mark \e[2J\r\nforged row\t\\ \xc2\x9b2J end'
printf '%s' "$comm" > "$tmp/comm"
printf '%s' "$mark" > "$tmp/mark"
# the writer renames itself, writes each mark in one write(), and lives on
# until the agent has read the kernel's saved cmdlines (its comm) again
python3 - "$tmp" "$tracing/instances/$inst/trace_marker" <<'EOF'
import os, sys, time
t, marker = sys.argv[1], sys.argv[2]
comm, mark = open(t + "/comm", "rb").read(), open(t + "/mark", "rb").read()
with open("/proc/self/comm", "wb") as f:
    f.write(comm)
fd = os.open(marker, os.O_WRONLY)
for _ in range(3):
    for _ in range(100):	# EBADF while the agent still sets its buffer up
        try:
            os.write(fd, mark)
            break
        except OSError:
            time.sleep(0.05)
os.close(fd)
time.sleep(3)
EOF
for _ in $(seq 100); do
	[ "$(traceq --count -H tc-escape print 2>/dev/null)" = 3 ] && break
	sleep 0.1
done
kill -INT "$agent"; wait "$agent"; agent=
check "three print events stored" '[ "$(traceq --count -H tc-escape print)" = 3 ]'

host=$'imp\e]0;pwned\a\r\nX'
printf '%s' "$host" > "$tmp/host"
traceq --import "$top_srcdir/tests/fuzz/corpus/tracedat/v7zstd.dat" --name "$host" \
	> "$tmp/imp.out" 2>&1; rc=$?
check "a recording imports under a host name with control characters (exit $rc)" '[ "$rc" = 0 ]'

# clean FILE LINES: FILE has LINES lines and no control byte but LF (CR LF
# for CSV), no C1
clean() {
	python3 - "$1" "$2" <<'EOF'
import sys
b = open(sys.argv[1], 'rb').read().replace(b'\r\n', b'\n')	# csv's line ends
bad = [c for c in b if (c < 0x20 and c != 0x0a) or c == 0x7f]
c1 = [i for i in range(len(b) - 1) if b[i] == 0xc2 and 0x80 <= b[i + 1] <= 0x9f]
lines = b.count(b'\n')
ok = not bad and not c1 and lines == int(sys.argv[2])
if not ok:
    print("%s: %d lines (want %s), control bytes %s, C1 at %s" %
          (sys.argv[1], lines, sys.argv[2], sorted(set(bad)), c1[:5]))
sys.exit(0 if ok else 1)
EOF
}
for f in text kernel fields csv; do
	want=3; [ "$f" = csv ] && want=4
	traceq -f "$f" -H tc-escape print > "$tmp/out.$f" 2> "$tmp/err.$f"
	check "-f $f: $want lines, no control byte of the peers' ($(head -c 200 "$tmp/out.$f" | cat -v))" \
		'clean "$tmp/out.$f" "$want" && grep -q "forged" "$tmp/out.$f"'
done
check "-f text shows the comm and the text escaped" \
	'grep -qF "\x1b[2J\rforged-" "$tmp/out.text" && grep -qF "\r\nforged row\t\\\\ \xc2\x9b2J end" "$tmp/out.text"'
traceq --hosts > "$tmp/hosts" 2>&1
check "--hosts: a line per host, no control byte ($(cat -v "$tmp/hosts" | tail -2))" \
	'clean "$tmp/hosts" 3 && grep -qF "imp\x1b]0;pwned\x07\r\nX " "$tmp/hosts"'
traceq --stats > "$tmp/stats" 2>&1
check "--stats: no control byte" \
	'clean "$tmp/stats" "$(wc -l < "$tmp/stats")" && grep -qF "host=imp\x1b]0;pwned\x07\r\nX " "$tmp/stats"'

# JSON: the exact strings
traceq -f json -H tc-escape print > "$tmp/out.json" 2>&1
traceq -f json --hosts > "$tmp/hosts.json" 2>&1
check "JSON gives back buf and comm exactly, and the host's name" \
	'python3 - "$tmp" <<"EOF"
import json, sys
t = sys.argv[1]
rd = lambda n: open(t + "/" + n, "rb").read().decode()
comm, mark, host = rd("comm"), rd("mark"), rd("host")
rows = [json.loads(l) for l in open(t + "/out.json", "rb").read().decode().splitlines()]
hosts = [json.loads(l) for l in open(t + "/hosts.json", "rb").read().decode().splitlines()]
ok = len(rows) == 3 and all(r["buf"] in (mark, mark + "\n") and r["comm"] == comm for r in rows)
ok = ok and any(h["host"] == host for h in hosts)
if not ok:
    print(rows[:1], [h["host"] for h in hosts])
sys.exit(0 if ok else 1)
EOF'

if [ "$failed" != 0 ]; then
	echo "--- collector (last 20 lines)"; tail -n 20 "$tmp/collector.log"
	exit 1
fi
echo "PASS: peers' control characters are escaped in every human output, exact in JSON"
