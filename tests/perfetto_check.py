#!/usr/bin/env python3
"""perfetto_check.py - a Perfetto file of traceq --export held to the rules
of Perfetto's importer, as google/perfetto
ec5d16b14b743ba6063d720956d6d6af6610fd72 has them (no Perfetto code runs
here; test_perfetto.sh and tests/test_perfetto.c say which rules).

  perfetto_check.py FILE.json [ROWS.jsonl]
  perfetto_check.py --calls N FILE.json
  perfetto_check.py --losses TEXT FILE.json
  perfetto_check.py --zip FILE.zip

FILE.json: valid JSON (strict UTF-8); systemTraceEvents ends each line in
"\\n"; every line that is not '#' or empty matches the pattern of
src/trace_processor/importers/systrace/systrace_line_tokenizer.cc; every
sched_switch has the seven fields systrace_line_parser.cc reads (numbers
where it wants numbers), every sched_waking comm and pid. With ROWS.jsonl
(traceq -f json of the host's sched_switch rows): the CPU slices rebuilt
from the lines are the slices of the rows (times rebased on the file's
tracecollect_base_ns, to the microsecond the text has).
--calls N: FILE.json has N complete events ("X"), and on each thread they
nest (two calls are apart or one holds the other: SliceTracker spills any
other onto an overlap track); prints the names of the first thread's
outermost calls.
--losses TEXT: the loss markers of FILE.json ('#' lines "CPU:N [...]" of
its text, global instants of its traceEvents) are traceq's (TEXT: its text
of the same host and events, --no-host): the same CPU, words and time of
that CPU's next event (the file's times plus its base's whole seconds).
--zip: every member but the manifest passes the above; the manifest names
each member once, a machine each, version 1.
Prints one "ok: ..." line per check; exits 1 at the first failure.
"""
import json
import re
import sys
import zipfile

# systrace_line_tokenizer.cc, SystraceLineTokenizer::SystraceLineTokenizer()
LINE_RE = re.compile(
    r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):")
SEVEN = ("prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio")


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def args_of(text):
    """systrace_line_parser.cc: split on ' ', then '='; the first key wins."""
    args = {}
    for tok in [t for t in text.split(" ") if t]:
        if "=" not in tok:
            args.setdefault("name", tok)
            continue
        parts = [p for p in tok.split("=") if p]
        if parts:
            args.setdefault(parts[0], parts[-1] if len(parts) > 1 else "")
    return args


def is_int(s):
    return s is not None and re.fullmatch(r"-?\d+", s) is not None


def check_trace(name, data):
    try:
        doc = json.loads(data.decode("utf-8", errors="strict"))
    except (UnicodeDecodeError, ValueError) as e:
        die("%s: not valid JSON: %s" % (name, e))
    if not isinstance(doc.get("traceEvents"), list) or not isinstance(doc.get("systemTraceEvents"), str):
        die("%s: no traceEvents array or systemTraceEvents string" % name)
    text = doc["systemTraceEvents"]
    if text and not text.endswith("\n"):
        die("%s: the text's last line has no \\n (the importer drops it)" % name)
    lines = []
    nswitch = 0
    for line in text.split("\n")[:-1]:
        if line.startswith("#") or not line:
            continue
        m = LINE_RE.search(line)
        if not m:
            die("%s: the importer refuses the line (and the whole file): %r" % (name, line))
        args = args_of(line[m.end():].strip())
        ev = m.group(6)
        if ev == "sched_switch":
            nswitch += 1
            for k in SEVEN:
                if k not in args:
                    die("%s: sched_switch without %s: %r" % (name, k, line))
            for k in ("prev_pid", "prev_prio", "next_pid", "next_prio"):
                if not is_int(args[k]):
                    die("%s: sched_switch %s is not a number: %r" % (name, k, line))
        if ev == "sched_waking" and not (is_int(args.get("pid")) and "comm" in args):
            die("%s: sched_waking without comm and pid: %r" % (name, line))
        lines.append((int(m.group(3)), int(float(m.group(5)) * 1e9), ev, args))
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and not all(k in e for k in ("ts", "dur", "pid", "tid", "name")):
            die("%s: a complete event without ts, dur, pid, tid or name: %r" % (name, e))
    print("ok: %s: %d lines match the importer's pattern, %d sched_switch with seven fields"
          % (name, len(lines), nswitch))
    return doc, lines


def slices(switches):
    """(cpu, pid, start, end) per CPU from (cpu, ts, prev_pid, next_pid) in order,
    as FtraceSchedEventTracker closes them: a switch ends the CPU's open slice
    whoever its prev_pid names (a recording that lost a switch, or whose agent
    left its own out, says another); and how many said another."""
    run, out, breaks = {}, [], 0
    for cpu, ts, prev, nxt in switches:
        if cpu in run:
            pid, start = run[cpu]
            breaks += pid != prev
            out.append((cpu, pid, start, ts))
        run[cpu] = (nxt, ts)
    return out, breaks


def check_slices(doc, lines, rows_path):
    base = int(doc["metadata"]["tracecollect_base_ns"])
    got, gbreaks = slices([(c, ts, int(a["prev_pid"]), int(a["next_pid"]))
                  for c, ts, ev, a in lines if ev == "sched_switch"])
    rows = []
    with open(rows_path) as f:
        for ln in f:
            r = json.loads(ln)
            us = (int(r["ts"]) - base + 500) // 1000    # the text's rounded microseconds
            rows.append((int(r["cpu"]), us * 1000, int(r["prev_pid"]), int(r["next_pid"])))
    want, wbreaks = slices(rows)
    if gbreaks != wbreaks:
        die("%d switches name another prev_pid than the one running in the lines, %d in the rows"
            % (gbreaks, wbreaks))
    if len(got) != len(want) or not want:
        die("%d slices rebuilt from the lines, %d from the rows" % (len(got), len(want)))
    for g, w in zip(got, want):
        if g[0] != w[0] or g[1] != w[1] or abs(g[2] - w[2]) > 1 or abs(g[3] - w[3]) > 1:
            die("slice %r from the lines, %r from the rows" % (g, w))
    print("ok: %d CPU slices rebuilt from the lines are the rows' slices (%d switches after a gap)"
          % (len(got), wbreaks))


def check_calls(doc, n):
    calls = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    if len(calls) != n:
        die("%d complete events, %d calls" % (len(calls), n))
    by_tid = {}
    for e in calls:
        ns = round(float(e["ts"]) * 1000), round(float(e["dur"]) * 1000)
        by_tid.setdefault(e["tid"], []).append((ns[0], ns[0] + ns[1], e["name"]))
    for tid, cs in by_tid.items():
        cs.sort(key=lambda c: (c[0], -c[1]))
        stack = []
        for start, end, name in cs:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                die("tid %s: %s [%d, %d] overlaps %s [%d, %d] without nesting"
                    % (tid, name, start, end, stack[-1][2], stack[-1][0], stack[-1][1]))
            stack.append((start, end, name))
    print("ok: %d calls as complete events, nested on each of %d threads" % (n, len(by_tid)))


def drops(lines):
    """(cpu, marker, time of the cpu's next event) for each 'CPU:N [...]' line."""
    pend, out = {}, []
    for line in lines:
        m = re.match(r"#? ?(CPU:(\d+) \[.*\])$", line)
        if m:
            pend.setdefault(int(m.group(2)), []).append(m.group(1))
            continue
        m = re.search(r"\[(\d+)\] +(?:\S+ +)?(\d+)\.(\d+):", line)
        if m and pend.get(int(m.group(1))):
            for d in pend.pop(int(m.group(1))):
                out.append((int(m.group(1)), d, (int(m.group(2)), m.group(3))))
    return sorted(out)


def check_losses(doc, text_path):
    base_s = int(doc["metadata"]["tracecollect_base_ns"]) // 1000000000
    with open(text_path) as f:
        want = drops(f.read().split("\n"))
    got = [(c, d, (s + base_s, us))
           for c, d, (s, us) in drops(doc["systemTraceEvents"].split("\n"))]
    got.sort()
    inst = [e for e in doc["traceEvents"] if e.get("cat") == "loss" and e.get("ph") == "i"]
    if not want:
        die("traceq's text has no loss")
    if got != want:
        die("losses in the file %r, in traceq's text %r" % (got[:5], want[:5]))
    if len(inst) != len(want) or sorted(e["name"] for e in inst) != sorted(d for _, d, _ in want):
        die("%d loss instants, %d losses" % (len(inst), len(want)))
    print("ok: %d losses where traceq prints them (CPU, words, the next event's time), "
          "each a global instant" % len(want))


def check_zip(path):
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        man = None
        for n in names:
            data = z.read(n)
            if data.lstrip().startswith(b'{"perfetto_manifest"'):
                if man is not None:
                    die("two manifests")
                man = json.loads(data)["perfetto_manifest"]
            else:
                check_trace(n, data)
        if man is None or man.get("version") != 1:
            die("no perfetto_manifest of version 1 in %r" % names)
        files = [f["path"] for f in man["files"]]
        if sorted(files) != sorted(n for n in names if not n.startswith("perfetto_manifest")):
            die("the manifest names %r, the archive has %r" % (files, names))
        for f in man["files"]:
            if not f.get("machine", {}).get("name"):
                die("%s: no machine name" % f["path"])
            c = f.get("clocks")
            if c and (c["sync_to"]["file"] not in files or not isinstance(c["offset_ns"], int)):
                die("%s: bad clocks %r" % (f["path"], c))
        print("ok: the manifest names %d files, one machine each" % len(files))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--zip":
        check_zip(sys.argv[2])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--losses":
        with open(sys.argv[3], "rb") as f:
            doc, _ = check_trace(sys.argv[3], f.read())
        check_losses(doc, sys.argv[2])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--calls":
        with open(sys.argv[3], "rb") as f:
            doc, _ = check_trace(sys.argv[3], f.read())
        check_calls(doc, int(sys.argv[2]))
        return
    with open(sys.argv[1], "rb") as f:
        doc, lines = check_trace(sys.argv[1], f.read())
    if len(sys.argv) > 2:
        check_slices(doc, lines, sys.argv[2])


main()
