#!/usr/bin/env python3
"""How long a `kforge verify` run took to get its first samples going (issue 54): from the
lines `kforge verify --json FILE` writes (each sample's phases.dispatched, phases.context,
phases.context_waited) or `--json FILE --full` writes (report.pool.dispatched_ms,
report.prestart), prints when the first and the Nth sample were handed to a worker, counted from
the pool's creation (the workers' start), and, for those N, the prestarted child's warm-up (its
CUDA context and Triton driver) and how long it then waited for its sample: a wait of 0 means the
sample came before the warm-up was done and waited for it instead.

  python3 bench/verify/pool_start.py VERIFY.jsonl [--first 16]

  first sample dispatched at 6.37 s, 16th at 7.82 s (366 samples with a dispatch time)
  the first 16: warm-up 1.02-1.48 s (median 1.21), waited for their sample 0-0 ms; 16 came
  before their warm-up was done
"""

import argparse
import json
import statistics
import sys


def start_facts(line):
    """(dispatched ms, warm-up ms or None, waited ms or None) of one line, or None without a
    dispatch time (a line of an older kforge, a sample that never reached a worker)."""
    if "phases" in line:
        ph = line.get("phases") or {}
        return (ph["dispatched"], ph.get("context"), ph.get("context_waited")) \
            if "dispatched" in ph else None
    report = line.get("report") or {}
    pool, pre = report.get("pool") or {}, report.get("prestart") or {}
    if "dispatched_ms" not in pool:
        return None
    return pool["dispatched_ms"], pre.get("ms"), pre.get("waited_ms")


def ordinal(n):
    return "%d%s" % (n, "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))


def summary(lines, first):
    facts = sorted(f for f in (start_facts(x) for x in lines) if f is not None)
    if not facts:
        return "no line has a dispatch time (phases.dispatched or report.pool.dispatched_ms)"
    head = facts[:first]
    out = ["first sample dispatched at %.2f s, %s at %.2f s (%d samples with a dispatch time)"
           % (head[0][0] / 1000.0, ordinal(len(head)), head[-1][0] / 1000.0, len(facts))]
    warm = [w for _, w, _ in head if w is not None]
    waited = [w for _, _, w in head if w is not None]
    if warm:
        out.append("the first %d: warm-up %.2f-%.2f s (median %.2f), waited for their sample "
                   "%d-%d ms; %d came before their warm-up was done"
                   % (len(head), min(warm) / 1000.0, max(warm) / 1000.0,
                      statistics.median(warm) / 1000.0, min(waited or [0]), max(waited or [0]),
                      sum(1 for w in waited if w == 0)))
    elif waited:
        out.append("the first %d: prestarted with no GPU warm-up (a CPU device), waited for their "
                   "sample %d-%d ms" % (len(head), min(waited), max(waited)))
    else:
        out.append("the first %d: no prestart reported (verifier.prestart off, or fresh mode)"
                   % len(head))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", help="kforge verify --json output (with or without --full)")
    ap.add_argument("--first", type=int, default=16, help="how many first samples (the workers)")
    args = ap.parse_args()
    with open(args.file) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    print(summary(lines, args.first))


if __name__ == "__main__":
    sys.exit(main())
