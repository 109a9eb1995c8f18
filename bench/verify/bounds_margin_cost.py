"""What the out-of-bounds check's margins cost on the CPU stand-in for Triton (issue 52, item 4:
reads far past the zones land in the margins, not in other memory).

Times bounds.check on one recorded launch of a clean kernel (masked_add: the common case) and of
one that reads twenty thousand elements past its buffer (very_far_read), with the stand-in's
margins of the last stop (4096 elements a side) and of today (kernel_replay.LIST_MARGIN), and
says what each found. The GPU's margins (kernel_replay.MARGIN, bytes) are filled and compared on
the device; their cost there is in the bounds phase's time of scripts/gpu/verify-ab's reports.

  python3 bench/verify/bounds_margin_cost.py [--reps 5] [--out DIR]
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "libs", "verify", "harness"))
sys.path.insert(0, os.path.join(ROOT, "tests", "verify", "fake_triton"))
sys.path.insert(0, os.path.join(ROOT, "tests", "verify", "bounds"))

from kforge_harness import bounds, kernel_replay  # noqa: E402
from kforge_harness.kernel_replay import Recorder  # noqa: E402
import kernels  # noqa: E402


def capture(kernel, args, block=16):
    n = args[-1]
    rec = Recorder()
    kwargs = {"BLOCK": block, "grid": ((n + block - 1) // block,), "warmup": False}
    r = rec.before(kernel.__name__, kernel, args, kwargs)
    try:
        type(kernel).run(kernel, *args, **kwargs)
    except IndexError:
        pass  # the stand-in's plain lists have no memory past their end
    rec.after(r)
    return rec.records


def launch_raw(jit, args, kwargs):
    return type(jit).run(jit, *args, **kwargs)


def timed(kernel, n, reps):
    args = [[float(i + 1) for i in range(n)], [0.0] * n, n]
    if kernel is kernels.masked_add:
        args = [[float(i + 1) for i in range(n)]] + args
    out, res = [], None
    for _ in range(reps):
        recs = capture(kernel, args)
        t = time.perf_counter()
        res = bounds.check(recs, launch_raw, lambda: None)
        out.append((time.perf_counter() - t) * 1000.0)
    found = "fault" if res["fault"] else ("read" if res["reads"] else (
        "write" if res["writes"] else "clean"))
    return statistics.median(out), found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    today = kernel_replay.LIST_MARGIN
    rows = {}
    for label, margin in (("before", 4096), ("today", today)):
        kernel_replay.LIST_MARGIN = margin
        for kernel in (kernels.masked_add, kernels.very_far_read):
            ms, found = timed(kernel, 40, a.reps)
            rows["%s/%s" % (label, kernel.__name__)] = {"margin": margin, "ms": round(ms, 2),
                                                        "found": found}
            print("%-7s margin %6d elements  %-14s %7.2f ms a check  %s"
                  % (label, margin, kernel.__name__, ms, found))
    kernel_replay.LIST_MARGIN = today
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "bounds_margin_cost.json"), "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
