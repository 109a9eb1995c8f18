#!/usr/bin/env python3
"""What kept the speed label's timing samples waiting, from kforge-bench-verify's samples file
(`--samples-out`, the `lock` figures of the run with the label on; docs/BENCHMARKS.md, "The
speed label"): the timing samples' waits for the device, every sample's waits behind timing
sections, and the samples that stayed longest inside the shared section, with what ended that
stay (a launch that let a waiting writer in, a compile, their own timing, or still open at the
report; "watch": the watcher thread stepped it out between launches). A long stay ended by a
launch or the watcher is a test that ran that long without reaching a bytecode boundary or a
launch: a long C call (a blocking wait, a torch op on the CPU) or GPU work of its own.

  python3 bench/verify/lock_report.py one-samples.jsonl [--top 15]
"""

import argparse
import collections
import json
import sys


def quantiles(xs):
    if not xs:
        return "-"
    s = sorted(xs)
    pick = [s[min(len(s) - 1, int(q * len(s)))] for q in (0.5, 0.9, 0.99)]
    return "median %d, p90 %d, p99 %d, max %d ms" % (pick[0], pick[1], pick[2], s[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("samples")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    rows = []
    with open(args.samples) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError as e:
                print("%s:%d: not JSON: %s" % (args.samples, n, e), file=sys.stderr)
                return 1
            if isinstance(r.get("lock"), dict):
                rows.append(r)
    if not rows:
        print("no sample with lock figures in %s (a run with --timing-ab true)" % args.samples)
        return 0
    waited = [r["lock"]["waited_ms"] for r in rows if r["lock"].get("waited_ms") is not None]
    excl = [r["lock"]["exclusive_ms"] for r in rows if r["lock"].get("exclusive_ms") is not None]
    queued = [r["lock"].get("reader_waited_ms", 0) for r in rows]
    print("%d samples with lock figures, %d timed" % (len(rows), len(waited)))
    print("timing samples' wait for the device: %s" % quantiles(waited))
    print("exclusive section: %s" % quantiles(excl))
    print("every sample's wait behind timing sections: %s" % quantiles(queued))
    stepped = [r["lock"].get("watch_stepped_out", 0) for r in rows]
    watch = collections.Counter(str(r["lock"].get("watch")) for r in rows)
    print("watcher: %s; stepped a sample out between launches %d times (%d samples)" % (
        ", ".join("%s %d" % kv for kv in watch.most_common()), sum(stepped),
        sum(1 for x in stepped if x)))
    by = collections.defaultdict(list)
    for r in rows:
        by[r["lock"].get("longest_ended_by")].append(r["lock"].get("longest_shared_ms", 0))
    for why, xs in sorted(by.items(), key=lambda kv: -max(kv[1])):
        print("longest stay inside, ended by %s: %d samples, %s" % (why, len(xs), quantiles(xs)))
    print("the longest stays:")
    rows.sort(key=lambda r: -r["lock"].get("longest_shared_ms", 0))
    for r in rows[:args.top]:
        lk = r["lock"]
        print("  %-40s %6d ms, ended by %-7s (waited %s ms, queued %d ms, phases %s)" % (
            r.get("key"), lk.get("longest_shared_ms", 0), lk.get("longest_ended_by"),
            lk.get("waited_ms"), lk.get("reader_waited_ms", 0),
            {k: v for k, v in (r.get("phases") or {}).items()
             if k in ("import", "compile", "run", "mutant")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
