#!/usr/bin/env python3
# tests/clock_pairs.py A B [--dist]: the same kernel events stored from two
# agents (test_clocks.sh, bench/run clocks). A and B hold one line per
# sched_switch row of a host, "cpu trace_ts ts prev_pid next_pid
# prev_state". Each agent has its own tracefs instance, so one event has
# two trace clock readings, one per ring buffer: it is the row of the
# other host on the same CPU with the same fields whose trace_ts is
# nearest (and within 100 us: else no pair). Prints "pairs worst_ns
# trace_apart_ns": how many pairs, the largest |ts_B - ts_A|, the largest
# distance of their trace clock readings; with --dist, "pairs median_ns
# p99_ns" of |ts_B - ts_A| instead.
import bisect
import sys


def load(path):
    rows = {}
    for line in open(path):
        cpu, t, ts, *sig = line.split()
        rows.setdefault((cpu, *sig), []).append((int(t), int(ts)))
    for v in rows.values():
        v.sort()
    return rows


a, b = load(sys.argv[1]), load(sys.argv[2])
diffs, apart = [], 0
for key, evs in b.items():
    cand = a.get(key, [])
    times = [t for t, _ in cand]
    for t, ts in evs:
        i = bisect.bisect_left(times, t)
        near = [j for j in (i - 1, i) if 0 <= j < len(cand)]
        if not near:
            continue
        j = min(near, key=lambda k: abs(times[k] - t))
        if abs(times[j] - t) > 100000:
            continue
        diffs.append(abs(ts - cand[j][1]))
        apart = max(apart, abs(t - times[j]))
if "--dist" in sys.argv[3:]:
    diffs.sort()
    pick = lambda q: diffs[min(len(diffs) - 1, int(q * len(diffs)))] if diffs else 0
    print(len(diffs), pick(0.5), pick(0.99))
else:
    print(len(diffs), max(diffs, default=0), apart)
