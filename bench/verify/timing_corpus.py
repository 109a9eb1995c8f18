#!/usr/bin/env python3
"""The timing corpus (tests/verify/timing/corpus) through the harness package alone: no pool, no
sandbox, one process per sample, one sample at a time (the GPU is the sample's alone). A quick
check of the speed label on a GPU machine before the full GPU test (VerifyGpu.TimingCorpus in
tests/verify/gpu_test.cpp, run by scripts/gpu/check), and the figures of docs/BENCHMARKS.md
("The speed label"): each sample's label, whether it came out as its expect.json says, and with
--runs 2 the speedups of the two runs side by side.

  python3 bench/verify/timing_corpus.py [--runs N] [--budget S] [--json FILE]

Exits 1 when a sample is not classified as expected, 0 with "skipped: no GPU" where there is none.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "verify", "timing", "corpus")
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import torch, triton  # noqa: F401  (what a warm worker preloads)
from kforge_harness.runner import run_sample
from kforge_harness.timing import run_timing
req = json.load(open(sys.argv[2]))
os.chdir(sys.argv[3])
rep = {}
sample = run_sample(req, rep)
if sample is not None and rep.get("verdict") == "passed":
    run_timing(sample, rep, req)
print("KFORGE_RESULT " + json.dumps({"verdict": rep.get("verdict"), "detail": rep.get("detail"),
                                      "speed": rep.get("speed")}, default=str))
"""


def check(name, expect, out):
    """The ways the sample's label differs from its expect.json (empty: as expected)."""
    bad = []
    if out.get("verdict") != "passed":
        return ["verdict %s: %s" % (out.get("verdict"), out.get("detail"))]
    sp = out.get("speed") or {}
    if not sp.get("timed"):
        return ["not timed: %s" % sp.get("reason")]
    ref = sp.get("reference") or {}
    flags = sp.get("flags") or []
    for f in expect.get("flags", []):
        if f not in flags:
            bad.append("no flag %s" % f)
    if "flags" in expect and not expect["flags"] and flags:
        bad.append("flagged %s" % flags)
    if "speedup" in expect:
        lo, hi = expect["speedup"]
        s = ref.get("speedup")
        if s is None or not lo <= s <= hi:
            bad.append("speedup %s not in [%s, %s]" % (s, lo, hi))
    if "pass_perf" in expect and sp.get("pass_perf") != expect["pass_perf"]:
        bad.append("pass_perf %s" % sp.get("pass_perf"))
    if expect.get("cuda_graph") and "cuda_graph" not in ref:
        bad.append("no CUDA graph")
    if "kernel_us_max" in expect:
        k = sum(x.get("time_us", 0) for x in sp.get("kernels") or [])
        if k > expect["kernel_us_max"]:
            bad.append("kernel %.1f us > %s" % (k, expect["kernel_us_max"]))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0.3)  # verifier.timing.budget_s
    ap.add_argument("--json")
    args = ap.parse_args()
    probe = subprocess.run([sys.executable, "-c", "import torch, triton; "
                            "print(torch.cuda.is_available())"], capture_output=True, text=True)
    if probe.stdout.strip() != "True":
        print("skipped: no GPU with torch and triton here (%s)" % probe.stderr.strip()[-200:])
        return 0
    names = sorted(n for n in os.listdir(CORPUS) if os.path.exists(os.path.join(CORPUS, n,
                                                                                "expect.json")))
    timing = {"enabled": True, "budget_s": args.budget, "min_reps": 10, "max_reps": 200,
              "target": 0.02, "min_speedup": 1.0, "wait_s": 30}
    runs = []
    failures = 0
    for run in range(args.runs):
        labels = {}
        for name in names:
            d = os.path.join(CORPUS, name)
            req = {"code": open(os.path.join(d, "code.py")).read(),
                   "kernel_wrapper": open(os.path.join(d, "wrapper.py")).read(),
                   "unitest_code": open(os.path.join(d, "test.py")).read(),
                   "autotune": "single", "timing": timing}
            expect = json.load(open(os.path.join(d, "expect.json")))
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "request.json")
                with open(path, "w") as f:
                    json.dump(req, f)
                p = subprocess.run([sys.executable, "-c", CHILD, HARNESS, path, tmp],
                                   capture_output=True, text=True, timeout=300,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
            line = [ln for ln in p.stdout.splitlines() if ln.startswith("KFORGE_RESULT ")]
            out = json.loads(line[-1][len("KFORGE_RESULT "):]) if line else {
                "verdict": "crashed", "detail": p.stderr[-600:]}
            bad = check(name, expect, out)
            failures += bool(bad)
            labels[name] = out
            sp = out.get("speed") or {}
            ref = sp.get("reference") or {}
            print("run %d %-24s %s speedup %s [%s] ref %s us cand %s us reps %s stop %s "
                  "pass_perf %s flags %s mode %s excl %s ms prep %s ms kernels %s%s" % (
                      run + 1, name, "ok  " if not bad else "FAIL",
                      _f(ref.get("speedup")), ",".join(_f(x) for x in ref.get("ci") or []),
                      _f(ref.get("reference_us")), _f(ref.get("time_us")), ref.get("reps"),
                      ref.get("stop"), sp.get("pass_perf"), sp.get("flags"), ref.get("mode"),
                      sp.get("exclusive_ms"), sp.get("prepare_ms"),
                      ",".join("%s/%s/%s" % (_f(k.get("time_us")), k.get("reps"), k.get("stop"))
                               for k in sp.get("kernels") or []),
                      (": " + "; ".join(bad)) if bad else ""),
                  flush=True)
        runs.append(labels)
    if len(runs) >= 2:
        diffs = []
        for name in names:
            a = ((runs[0][name].get("speed") or {}).get("reference") or {})
            b = ((runs[1][name].get("speed") or {}).get("reference") or {})
            if a.get("speedup") and b.get("speedup") and min(a.get("time_us", 0),
                                                              a.get("reference_us", 0)) >= 20:
                d = abs(b["speedup"] / a["speedup"] - 1)
                diffs.append(d)
                print("repeat %-24s %.3f -> %.3f (%.1f%%)" % (name, a["speedup"], b["speedup"],
                                                             100 * d))
        if diffs:
            print("repeatability: max %.1f%%, median %.1f%% over %d samples of >= 20 us" % (
                100 * max(diffs), 100 * sorted(diffs)[len(diffs) // 2], len(diffs)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1, default=str)
    print("%d of %d labels as expected" % (len(names) * len(runs) - failures,
                                          len(names) * len(runs)))
    return 1 if failures else 0


def _f(x):
    return "-" if x is None else "%.3f" % x


if __name__ == "__main__":
    sys.exit(main())
