#!/usr/bin/env python3
"""Compares two `kforge verify --json` runs over the same samples (issue 52: flags that repeat):
per sample key, the verdict and the flags apart from the speed label's
(libs/verify/harness/kforge_harness/vocabulary/speed_flags.txt). Prints the samples in each
run, those in both, how many carry each flag in each run, every sample that differs (`--differ
FILE`: with both runs' details) and last `FLAGS_REPEAT yes` or `FLAGS_REPEAT NO (N samples
differ)`. Exit status 0 either way (1 on unreadable input).

    python3 bench/verify/flags_repeat.py A.jsonl B.jsonl [--differ FILE]
"""

import argparse
import collections
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEED_FLAGS = os.path.join(ROOT, "libs/verify/harness/kforge_harness/vocabulary/speed_flags.txt")


def speed_flags():
    with open(SPEED_FLAGS) as f:
        return {w.strip() for w in f if w.strip() and not w.startswith("#")}


def load(path):
    """key -> the verdict line, from a `kforge verify --json` file."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                out[r["key"]] = r
            except (ValueError, KeyError) as e:
                raise SystemExit("%s line %d: not a verdict line (%s)" % (path, n, e))
    return out


def outcome(r, speed):
    return r.get("verdict"), tuple(sorted(set(r.get("flags") or []) - speed))


def compare(a, b, speed):
    """(keys in both, [(key, outcome a, outcome b)] that differ)."""
    both = sorted(set(a) & set(b))
    return both, [(k, outcome(a[k], speed), outcome(b[k], speed)) for k in both
                  if outcome(a[k], speed) != outcome(b[k], speed)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--differ", help="write each differing sample with both details here")
    args = ap.parse_args(argv)
    speed = speed_flags()
    a, b = load(args.a), load(args.b)
    both, differ = compare(a, b, speed)
    print("samples: %d in A, %d in B, %d in both" % (len(a), len(b), len(both)))
    for name, run in (("A", a), ("B", b)):
        counts = collections.Counter(f for k in both for f in outcome(run[k], speed)[1])
        print("flags %s: %s" % (name, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    for k, oa, ob in differ:
        print("  %s: %s -> %s" % (k, oa, ob))
    if args.differ:
        with open(args.differ, "w") as f:
            for k, oa, ob in differ:
                f.write("%s\n  A %s: %s\n  B %s: %s\n" % (k, oa, a[k].get("detail"), ob,
                                                          b[k].get("detail")))
    print("FLAGS_REPEAT yes" if not differ and both else
          "FLAGS_REPEAT NO (%d samples differ)" % len(differ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
