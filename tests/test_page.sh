#!/bin/bash
# traceq --serve's page (issue 37) in a real browser: Debian's chromium,
# headless, driven by puppeteer-core from npm (tests/browser/: pinned
# package.json and package-lock.json, installed with npm ci), against a
# collector holding a real agent's sched and irq events.
#
# Asserts (tests/browser/page.test.mjs):
#  - the page without the token, or with a wrong one, gets 403;
#  - the fleet table's events in and stored, pages lost and overruns
#    equal `traceq --stats`' totals, its agent `traceq --hosts`';
#  - the query box shows the rows `traceq` prints for the same query, and
#    a wrong query's error with its caret as traceq says it;
#  - the timeline draws a known sched_switch slice (the longest of a task
#    in the run) in its task's colour: a canvas pixel sampled at the
#    middle of that time on that CPU's lane; the hover card there shows
#    the switch's fields;
#  - '+' halves the view around its middle, ArrowRight pans a fifth, the
#    wheel zooms by 0.8 keeping the time under the mouse in place;
#  - a view of more switches than the raw limit (lowered to 10 for the
#    test) is drawn from the collector's summaries (--hist over time),
#    not from events;
#  - the fleet's clock offset is the collector's measurement of the
#    host's clock, traceq --hosts' clock_disagree_ns +- clock_uncertainty_ns
#    (and its clock_source), not realtime - trace clock;
#  - the flame chart of tests/fgraph_prog_fentry, traced by an agent's
#    --exec, has the calls `traceq --graph` prints for each thread: the
#    same nesting (depth), names and durations, in the same order; the
#    hover card over its outermost call names it;
#  - live mode shows a switch stored after the page opened (an agent
#    started then), pushed over traceq --serve's event stream (/api/live:
#    traceq --follow underneath), not polled;
#  - with traceq --serve stopped the page says it lost the stream and
#    tries again; started again on the same port (a new token), it
#    refuses the old page, which says so.
# Screenshots of each view go to $top_builddir/tests/artifacts/test_page/.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
chromium=$(command -v chromium || command -v chromium-browser) ||
	skip "needs chromium (Debian package chromium)"
command -v node >/dev/null || skip "needs node (Debian package nodejs)"
command -v jq >/dev/null || skip "needs jq"
command -v python3 >/dev/null || skip "needs python3"

# puppeteer-core: tests/browser/node_modules (./setup check runs npm ci
# there), else npm ci into the build tree
bdir=$top_srcdir/tests/browser
if [ ! -d "$bdir/node_modules/puppeteer-core" ]; then
	bdir=$top_builddir/tests/browser-run
	if [ ! -d "$bdir/node_modules/puppeteer-core" ]; then
		command -v npm >/dev/null || skip "needs puppeteer-core: npm ci in tests/browser (npm)"
		mkdir -p "$bdir" && cp "$top_srcdir/tests/browser/package.json" \
			"$top_srcdir/tests/browser/package-lock.json" "$bdir/" &&
			(cd "$bdir" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) ||
			skip "npm ci of tests/browser failed (no registry?)"
	fi
	cp "$top_srcdir/tests/browser/page.test.mjs" "$bdir/"
fi

tc_lock
tc_setup page agent collector_pid serve_pid node_pid
art=$top_builddir/tests/artifacts/test_page
rm -rf "$art" && mkdir -p "$art"

tc_certs
tc_start_collector
tc_run_agent a1 --name page-host -e sched -e irq --duration 2 --instance "tc-page-$$" ||
	{ cat "$tmp/a1.err"; fail "the agent failed"; exit 1; }

# a program traced with function_graph (the user-space tracer, as
# test_ftrace.sh runs it): the flame chart's calls
prog=$top_builddir/tests/fgraph_prog_fentry
: > "$tmp/graph.txt"
if [ -x "$prog" ]; then
	tc_run_agent fg --name flame-host -e sched:sched_process_exit --exec -- "$prog" ||
		{ cat "$tmp/fg.err"; fail "the agent --exec failed"; exit 1; }
	traceq --graph funcgraph > "$tmp/graph.txt"
else
	tc_skip_part "the flame chart" "$prog not built (x86_64 only)"
fi

traceq --stats -f json | jq -s -c '[.[] | select(.cpu == "all")]' > "$tmp/stats.json"
traceq --hosts -f json | jq -s -c . > "$tmp/hosts.json"
q="sched_switch where prev_pid != 0"
traceq --limit 30 "$q" > "$tmp/rows.txt"
traceq "sched_switch where prev_pid = 0" 2> "$tmp/qerr.txt" >/dev/null
traceq -f json sched_switch > "$tmp/switches.json"

"$top_builddir/traceq/traceq" --server "$query" --serve 127.0.0.1:0 \
	> "$tmp/url" 2> "$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 100); do [ -s "$tmp/url" ] && break; sleep 0.1; done
url=$(head -1 "$tmp/url")
check "traceq --serve prints its URL ($url)" '[[ "$url" == http://127.0.0.1:*token=* ]]'

# the inputs of page.test.mjs: the known slice is the longest one of a
# task (not idle) between two switches on one CPU
python3 - "$tmp" "$url" "$q" "$chromium" "$art" > "$tmp/cfg.json" <<'PY'
import json, sys
tmp, url, q, chromium, art = sys.argv[1:]
rows = [json.loads(l) for l in open(tmp + "/switches.json") if l.strip()]
by = {}
for r in rows:
    by.setdefault((r["host"], r["cpu"]), []).append(r)
best = None
for (host, cpu), rs in by.items():
    rs.sort(key=lambda r: r["ts"])
    for a, b in zip(rs, rs[1:]):
        if a["next_pid"] != 0 and (best is None or b["ts"] - a["ts"] > best[1] - best[0]):
            best = (a["ts"], b["ts"], host, cpu, a["next_pid"])
t0, t1, host, cpu, pid = best
n = t1 - t0
# traceq --graph's calls per thread, in the order they were entered:
# (depth, name, ns) of each "f();" and of each "f() {" its "} /* f */"
# closes ("CPU) COMM-PID | DURATION | <2 spaces a level>CALL")
calls, opened = {}, {}
for line in open(tmp + "/graph.txt"):
    parts = line.rstrip("\n").split(" | ", 2)
    if len(parts) != 3:
        continue
    tid = parts[0].rsplit("-", 1)[1]
    body = parts[2]
    depth = (len(body) - len(body.lstrip(" "))) // 2
    body = body.strip()
    dur = parts[1].strip()
    ns = None
    if dur.endswith(" us"):
        whole, frac = dur[:-3].split(".")
        ns = int(whole) * 1000 + int(frac)
    mine, stack = calls.setdefault(tid, []), opened.setdefault(tid, [])
    if body.endswith("() {"):
        mine.append([depth, body[:-4], None])
        stack.append(mine[-1])
    elif body.endswith("();"):
        mine.append([depth, body[:-3], ns])
    elif body.startswith("} /* ") and stack:
        stack.pop()[2] = ns
flame = {t: [c for c in cs if c[2] is not None] for t, cs in calls.items()}
print(json.dumps({
    "url": url, "base": url.split("/?")[0], "chromium": chromium, "artifacts": art,
    "stats": json.load(open(tmp + "/stats.json")), "hosts": json.load(open(tmp + "/hosts.json")),
    "query": q, "queryLimit": 30, "queryRows": open(tmp + "/rows.txt").read(),
    "queryError": open(tmp + "/qerr.txt").read(),
    "slice": {"host": host, "cpu": cpu, "pid": pid, "t0": str(t0), "t1": str(t1),
              "from": str(t0 - n), "to": str(t1 + n)},
    "all": {"from": str(min(r["ts"] for r in rows)), "to": str(max(r["ts"] for r in rows) + 1)},
    "newest": str(max(r["ts"] for r in rows)), "liveGo": tmp + "/live-go",
    "serveStop": tmp + "/serve-stop", "serveStart": tmp + "/serve-start",
    "flame": flame,
}))
PY
check "a known slice was found in the run" 'jq -e .slice.pid "$tmp/cfg.json" >/dev/null'
jq -c .slice "$tmp/cfg.json"

(cd "$bdir" && exec node page.test.mjs "$tmp/cfg.json") > "$tmp/node.out" 2>&1 &
node_pid=$!
# live: once the page is open and following, an agent stores new switches
while kill -0 "$node_pid" 2>/dev/null && [ ! -e "$tmp/live-go" ]; do sleep 0.1; done
[ -e "$tmp/live-go" ] &&
	tc_start_agent live --name page-host -e sched --duration 20 --instance "tc-page-live-$$"
# then the page's stream loses traceq --serve: stopped, then started
# again on the same port (with a new token)
port=${url#http://127.0.0.1:}
port=${port%%/*}
while kill -0 "$node_pid" 2>/dev/null && [ ! -e "$tmp/serve-stop" ]; do sleep 0.1; done
if [ -e "$tmp/serve-stop" ]; then
	kill -TERM "$serve_pid"
	wait "$serve_pid"
	serve_pid=
fi
while kill -0 "$node_pid" 2>/dev/null && [ ! -e "$tmp/serve-start" ]; do sleep 0.1; done
if [ -e "$tmp/serve-start" ]; then
	"$top_builddir/traceq/traceq" --server "$query" --serve "127.0.0.1:$port" \
		> "$tmp/url2" 2>> "$tmp/serve.err" &
	serve_pid=$!
fi
wait "$node_pid"
rc=$?
node_pid=
cat "$tmp/node.out"
grep -q "^FAIL" "$tmp/node.out" && failed=1
check "the browser run ends well (status $rc)" '[ "$rc" = 0 ]'
echo "artifacts: $(ls "$art"/*.png 2>/dev/null | tr '\n' ' ')"
[ "$failed" = 0 ] || { cat "$tmp/serve.err"; exit 1; }
