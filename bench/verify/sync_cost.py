#!/usr/bin/env python3
"""What verifier.cuda_sync changes (issue 54: does a sample's spinning wait for the GPU burn the
cores its neighbours' compiles need?): scripts/gpu/timing-cost's runs with a sync suffix
(`off-block`, `on-yield`, ... : RUN-block|yield|spin) each against its base, the same run
without the suffix where there is one, else `off`.

For each such run: the wall time and the host's busy CPU seconds (/proc/stat over the run,
every process of the machine) against the base's, the samples' own CPU (report.pool.cpu_ms,
the sample process and its children), the CPU by phase where it matters (the test's compiles
and runs, the bounds replay, the skip-launch run, the speed label: bench/verify/phase_diff.py's
split), how many samples' processes had the setting applied (report.sandbox.cuda_sync), and the
samples whose verdict or flags differ from the base's (flags_repeat.py's comparison; speed-label
flags counted apart: they depend on timing by nature).

    python3 bench/verify/sync_cost.py DIR RUN... [--times FILE] [--host-cpu FILE]

DIR holds verdicts-RUN.jsonl (timing-cost's $OUT); --times: lines `RUN START END` (seconds),
--host-cpu: lines `RUN BUSY_S IDLE_S` (timing-cost's scratch files). Runs without a sync suffix
are bases only. Exit status 0 (1 on unreadable input).
"""

import argparse
import collections
import os
import re
import sys

from flags_repeat import compare, load, speed_flags
from phase_diff import pairs, phases

SUFFIX = re.compile(r"^(.*)-(block|yield|spin)$")
PHASES = ("test compiles", "test runs", "bounds", "skip_launch", "speed")


def table(path, width):
    """{run: [floats]} of a file of lines `RUN X Y ...` (the last line of a run wins)."""
    out = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == width + 1:
                    out[parts[0]] = [float(x) for x in parts[1:]]
    return out


def base_of(name, have):
    m = SUFFIX.match(name)
    if not m:
        return None
    return m.group(1) if m.group(1) in have else "off"


def pct(a, b):
    return "%+.1f%%" % (100.0 * (b - a) / a) if a else "-"


def vs(label, a, b, unit=" s"):
    return "%s %.1f%s vs %.1f%s (%s)" % (label, b, unit, a, unit, pct(a, b))


def pool_cpu(r):
    rep = r.get("report") if isinstance(r.get("report"), dict) else {}
    return ((rep.get("pool") or {}).get("cpu_ms") or 0) / 1e3


def applied(runs):
    """'asked X: applied in N of M' over the samples' reports (sandbox.cuda_sync), with the
    reasons where it was not."""
    asked, why = collections.Counter(), collections.Counter()
    n = 0
    for r in runs.values():
        rep = r.get("report") if isinstance(r.get("report"), dict) else {}
        cs = (rep.get("sandbox") or {}).get("cuda_sync")
        if not isinstance(cs, dict):
            why["no sandbox.cuda_sync in the report"] += 1
            continue
        asked[cs.get("asked")] += 1
        if cs.get("applied"):
            n += 1
        else:
            why[str(cs.get("why"))[:80]] += 1
    text = "asked %s: applied in %d of %d samples" % (
        "/".join(str(a) for a in sorted(asked, key=str)) or "-", n, len(runs))
    if why:
        text += " (not: %s)" % "; ".join("%d %s" % (c, w) for w, c in why.most_common(3))
    return text


def compare_run(name, base, d, times, host):
    a, b = load(os.path.join(d, "verdicts-%s.jsonl" % base)), \
        load(os.path.join(d, "verdicts-%s.jsonl" % name))
    rows = pairs(a, b)
    print("%s against %s (%d samples in both):" % (name, base, len(rows)))
    line = []
    if name in times and base in times:
        line.append(vs("wall", times[base][1] - times[base][0], times[name][1] - times[name][0]))
    if name in host and base in host:
        line.append(vs("host busy CPU", host[base][0], host[name][0]))
    line.append(vs("samples' CPU", sum(pool_cpu(r) for _, r, _ in rows),
                   sum(pool_cpu(r) for _, _, r in rows)))
    print("  " + "; ".join(line))
    sums = {p: [0.0, 0.0] for p in PHASES}
    for _, ra, rb in rows:
        pa, pb = phases(ra), phases(rb)
        for p in PHASES:
            if p in pa or p in pb:
                sums[p][0] += pa.get(p, {"cpu": 0})["cpu"]
                sums[p][1] += pb.get(p, {"cpu": 0})["cpu"]
    print("  CPU by phase: " + "; ".join(vs(p, *sums[p]) for p in PHASES if any(sums[p])))
    print("  cuda_sync: " + applied(b))
    speed = speed_flags()
    _, differ = compare(a, b, speed)
    _, differ_speed = compare(a, b, set())
    print("  verdicts or flags (but the speed label's) differing: %d; speed flags alone: %d" % (
        len(differ), len(differ_speed) - len(differ)))
    for key, x, y in differ[:20]:
        print("    %s: %s -> %s" % (key, x, y))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--times")
    ap.add_argument("--host-cpu")
    args = ap.parse_args(argv)
    times, host = table(args.times, 2), table(args.host_cpu, 2)
    have = {f[len("verdicts-"):-len(".jsonl")] for f in os.listdir(args.dir)
            if f.startswith("verdicts-") and f.endswith(".jsonl")}
    for name in args.runs:
        base = base_of(name, have)
        if base is None or name not in have:
            continue
        if base not in have:
            print("%s: no %s run to compare with (RUNS needs it, in this call or an earlier one "
                  "on the machine)" % (name, base))
            continue
        compare_run(name, base, args.dir, times, host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
