#!/usr/bin/env python3
"""Where the time went between two `kforge verify --json` runs of the same samples (e.g.
scripts/gpu/verify-ab's verdicts-base.jsonl and verdicts-new.jsonl): per sample that passed in
both, the process CPU (cpu_ms: the real run's process, its mutant runs included when they ran
there), split into the mutant runs (the pool's "mutant" figure: wall from the real run's report
to the mutant report, CPU-bound on a GPU box), Triton's compiles (compile_cpu +
compile_child_cpu) and the rest of the real run; then the newer run's phases (phase_times, where
its harness records them). Prints the sums, medians and means of the differences.

  python3 bench/verify/ab_decompose.py OLD.jsonl NEW.jsonl
"""

import json
import statistics
import sys


def load(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        out[r["key"]] = r
    return out


def parts(r):
    ph = r.get("phases") or {}
    compile_cpu = (ph.get("compile_cpu") or 0) + (ph.get("compile_child_cpu") or 0)
    mutant = ph.get("mutant") or 0
    cpu = r.get("cpu_ms") or 0
    return {"process CPU": cpu, "mutant runs (wall)": mutant, "compiles (CPU)": compile_cpu,
            "real run without compiles": cpu - mutant - compile_cpu}


def line(label, xs):
    return "%-28s sum %+8.1f s  median %+7.0f ms  mean %+7.0f ms" % (
        label, sum(xs) / 1000.0, statistics.median(xs), statistics.mean(xs))


def main():
    old, new = load(sys.argv[1]), load(sys.argv[2])
    keys = [k for k in old if k in new and old[k].get("verdict") == "passed" and
            new[k].get("verdict") == "passed"]
    print("%d samples passed in both (of %d and %d)" % (len(keys), len(old), len(new)))
    po = {k: parts(old[k]) for k in keys}
    pn = {k: parts(new[k]) for k in keys}
    for what in ("process CPU", "mutant runs (wall)", "compiles (CPU)",
                 "real run without compiles"):
        print(line("new - old: " + what, [pn[k][what] - po[k][what] for k in keys]))
    phases = sorted({p for k in keys for p in (new[k].get("phase_times") or {})})
    for p in phases:
        xs = [((new[k].get("phase_times") or {}).get(p) or {}).get("cpu_ms", 0) for k in keys]
        print("%-28s sum %8.1f s  median %7.0f ms  mean %7.0f ms" % (
            "new phase %s (CPU)" % p, sum(xs) / 1000.0, statistics.median(xs),
            statistics.mean(xs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
