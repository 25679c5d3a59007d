#!/usr/bin/env python3
"""oracle_compare.py - a flight recorder's stored snapshot against the
kernel's own answer (issue 38): a tracefs instance in overwrite mode with
the agent's buffer size, sub-buffer size, trace clock, events and trigger,
frozen by the same `traceoff if FILTER` at the same event.

  oracle_compare.py [--drop CPU:N] ORACLE.txt SNAPSHOT.jsonl FIRE

ORACLE.txt: `trace-cmd report -t` of the oracle instance (ns timestamps).
SNAPSHOT.jsonl: `traceq --snapshot-id N -f json` of the agent's host.
FIRE: the trigger's prev_comm.

The same tracepoint writes each event into both buffers, one probe after
the other (the agent's instance first: it was made first), each with its
own read of the clock; between the two an interrupt, or on a virtual
machine the host, may hold the CPU for tens of microseconds. So events
are matched by order, not by time: per CPU, each side is a run of the
same sequence of (event, pid), a suffix of it that starts where that
side's buffer last wrapped (the two started apart, so their pages split
the stream at other points) and ends at the freeze. The run of the side
that starts later is anchored in the other (ANCHOR events that agree, the
nearest in time), then both are walked in step; where they disagree, the
skip on one side (up to SKIP_MAX events) after which ANCHOR events agree
again, the nearest in time, counts those events as missing from the
other side.

Compared on each CPU: the span both hold, from the later side's first
event to the trigger. Before it, one side alone has the events its buffer
kept longer (counted, "before"). After it: on the trigger's CPU nothing
(the trigger event is the last of both); on another CPU the kernel may
have written an event into one instance only while the two stopped (the
agent's at its trigger event, the oracle's one probe later): such an
event must lie between the two trigger stamps, widened by the largest
difference seen between an event's two stamps on its CPU ("edge"); one
later fails ("late"), one earlier is missing from the side that ended
first.

Asserts (exit 1 and a "FAIL:" line, else 0): one trigger event on each
side, the same CPU and pid; on its CPU it is the last event of both sides;
per CPU no event missing either way inside the span, none late, at least
one event compared. Prints the figures per CPU and a total line.
--drop CPU:N: first remove N consecutive oracle events of CPU from the
middle of its common span (a hole, as a lost page would leave): the run
must then fail with N missing (test_recorder_oracle.sh proves the
comparison can fail this way).
"""
import json
import re
import sys

ANCHOR = 8		# events that must agree to anchor or resync
SKIP_MAX = 2000		# the longest hole looked for
WINDOW_NS = 10000000	# where the later side's first event is looked for

LINE = re.compile(r'^(?:\S+: )?\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?(\d+)\.(\d{9}): +(\w+): +(.*)$')


def read_oracle(path, fire):
    """[(cpu, ts, event, pid, is_trigger)] of trace-cmd report -t's lines"""
    out = []
    for line in open(path, errors='replace'):
        m = LINE.match(line.rstrip('\n'))
        if not m:
            continue
        ts = int(m.group(4)) * 1000000000 + int(m.group(5))
        ev = m.group(6)
        trig = ev == 'sched_switch' and m.group(7).startswith(fire + ':')
        out.append((int(m.group(3)), ts, ev, int(m.group(2)), trig))
    return out


def read_snapshot(path, fire):
    out = []
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if 'trace_ts' not in r:
            continue
        ev = r['event'].split(':')[-1]
        pid = r.get('common_pid', r.get('pid'))
        trig = ev == 'sched_switch' and r.get('prev_comm') == fire
        out.append((int(r['cpu']), int(r['trace_ts']), ev, int(pid), trig))
    return out


def by_cpu(evs):
    cpus = {}
    for e in evs:
        cpus.setdefault(e[0], []).append(e)
    for l in cpus.values():
        l.sort(key=lambda e: e[1])	# stable: equal times keep their order
    return cpus


def agree(a, i, b, j, n=ANCHOR):
    """whether a[i:i+n] and b[j:j+n] are the same (event, pid) run (or both end)"""
    if i + n > len(a) or j + n > len(b):
        n = min(len(a) - i, len(b) - j)
        if n <= 0:
            return False
    return all(a[i + k][2:4] == b[j + k][2:4] for k in range(n))


def anchor(a, b):
    """(i, j): the first pair of the span both hold, or None"""
    late, early, swap = (a, b, False) if a[0][1] >= b[0][1] else (b, a, True)
    t = late[0][1]
    cands = [k for k, e in enumerate(early) if abs(e[1] - t) <= WINDOW_NS and agree(late, 0, early, k)]
    if not cands:
        return None
    k = min(cands, key=lambda k: cost(late, 0, early, k))
    return (k, 0) if swap else (0, k)


def cost(a, i, b, j, n=ANCHOR):
    """how far apart in time the pairs a[i:i+n], b[j:j+n] are, summed"""
    n = min(n, len(a) - i, len(b) - j)
    return sum(abs(a[i + k][1] - b[j + k][1]) for k in range(n))


def resync(a, i, b, j):
    """(da, db): the skip after which they agree again, the nearest in time
    among those up to SKIP_MAX (a run of one pid's syscalls repeats: the
    nearest is the skip whose pairs are each one event's two stamps), or None"""
    cands = [(d, 0) for d in range(1, SKIP_MAX + 1) if agree(a, i + d, b, j)]
    cands += [(0, d) for d in range(1, SKIP_MAX + 1) if agree(a, i, b, j + d)]
    if not cands:
        return None
    return min(cands, key=lambda c: cost(a, i + c[0], b, j + c[1]))


def walk(a, b, i, j):
    """step through both from (i, j): (pairs, [missing from b], [missing from a], i, j)"""
    pairs, only_a, only_b = [], [], []
    while i < len(a) and j < len(b):
        if a[i][2:4] == b[j][2:4]:
            pairs.append((a[i], b[j]))
            i += 1
            j += 1
            continue
        r = resync(a, i, b, j)
        if r is None:
            break
        only_a += a[i:i + r[0]]
        only_b += b[j:j + r[1]]
        i, j = i + r[0], j + r[1]
    return pairs, only_a, only_b, i, j


def compare_cpu(cpu, a, b, ta, tb, trig_cpu, figs):
    """a: the oracle's, b: the snapshot's events of @cpu; returns the failures"""
    fails = []
    at = anchor(a, b)
    if at is None:
        figs.append('cpu %d: no common span (oracle %d events, snapshot %d)' % (cpu, len(a), len(b)))
        return ['cpu %d: the two sides share no run of %d events' % (cpu, ANCHOR)], 0, 0
    i0, j0 = at
    pairs, only_a, only_b, i, j = walk(a, b, i0, j0)
    tail_a, tail_b = a[i:], b[j:]
    dmax = max([0] + [abs(y[1] - x[1]) for x, y in pairs])
    lo, hi = min(ta, tb) - dmax - 1000, max(ta, tb) + dmax + 1000
    if cpu == trig_cpu:
        lo = hi = min(ta, tb)	# both end at the trigger event: no edge
    only_a += [e for e in tail_a if e[1] < lo]	# one side ended early
    only_b += [e for e in tail_b if e[1] < lo]
    edge = sum(1 for e in tail_a + tail_b if lo <= e[1] <= hi and cpu != trig_cpu)
    late = sum(1 for e in tail_a + tail_b if e[1] > hi or (cpu == trig_cpu and e[1] >= lo))
    span = (pairs[-1][0][1] - pairs[0][0][1]) if pairs else 0
    figs.append('cpu %d: compared=%d span_ms=%.1f missing_from_snapshot=%d '
                'missing_from_oracle=%d edge=%d late=%d max_dts_ns=%d '
                'oracle_before=%d snapshot_before=%d oracle=%d snapshot=%d'
                % (cpu, len(pairs), span / 1e6, len(only_a), len(only_b), edge, late, dmax,
                   i0, j0, len(a), len(b)))
    if not pairs:
        fails.append('cpu %d: no event compared' % cpu)
    if only_a or only_b:
        fails.append('cpu %d: %d oracle events missing from the snapshot (first %s), %d '
                     'snapshot events not in the oracle (first %s)'
                     % (cpu, len(only_a), only_a[:1], len(only_b), only_b[:1]))
    if late:
        fails.append('cpu %d: %d events after the span (first %s)'
                     % (cpu, late, (tail_a + tail_b)[:1]))
    if cpu == trig_cpu and not (a[-1][4] and b[-1][4]):
        fails.append('cpu %d: the trigger event is not the last of both sides '
                     '(oracle ends %s, snapshot %s)' % (cpu, a[-1], b[-1]))
    return fails, len(pairs), len(only_a) + len(only_b)


def drop(oracle, spec, snap):
    cpu, cnt = (int(x) for x in spec.split(':'))
    mine = [i for i, e in enumerate(oracle) if e[0] == cpu]
    s = max(oracle[mine[0]][1], min(e[1] for e in snap if e[0] == cpu))
    inside = [i for i in mine if oracle[i][1] > s]
    mid = inside[len(inside) // 2 - cnt // 2:][:cnt]
    gone = set(mid)
    return [e for i, e in enumerate(oracle) if i not in gone]


def main(argv):
    dropspec = None
    if argv[:1] == ['--drop']:
        dropspec, argv = argv[1], argv[2:]
    opath, spath, fire = argv
    oracle, snap = read_oracle(opath, fire), read_snapshot(spath, fire)
    if dropspec:
        oracle = drop(oracle, dropspec, snap)
    ta = [e for e in oracle if e[4]]
    tb = [e for e in snap if e[4]]
    if len(ta) != 1 or len(tb) != 1:
        print('FAIL: trigger events: %d in the oracle, %d in the snapshot (want 1 each)'
              % (len(ta), len(tb)))
        return 1
    ta, tb = ta[0], tb[0]
    print('trigger: cpu %d pid %d, oracle ts %d, snapshot ts %d (%+d ns)'
          % (tb[0], tb[3], ta[1], tb[1], tb[1] - ta[1]))
    if ta[0] != tb[0] or ta[3] != tb[3]:
        print('FAIL: the two trigger events differ: oracle %s, snapshot %s' % (ta, tb))
        return 1
    ca, cb = by_cpu(oracle), by_cpu(snap)
    fails, figs, total, missing = [], [], 0, 0
    if set(ca) != set(cb):
        fails.append('CPUs differ: oracle %s, snapshot %s' % (sorted(ca), sorted(cb)))
    for cpu in sorted(set(ca) & set(cb)):
        f, n, m = compare_cpu(cpu, ca[cpu], cb[cpu], ta[1], tb[1], tb[0], figs)
        fails += f
        total += n
        missing += m
    for f in figs:
        print(f)
    print('total: compared=%d missing=%d cpus=%d' % (total, missing, len(ca)))
    for f in fails:
        print('FAIL: ' + f)
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
