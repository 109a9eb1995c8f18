#!/usr/bin/env python3
"""The speed label's kernel share and its memory at real sizes, through the harness package alone
(no pool, no C++ build; one process per sample, one at a time): the samples of
tests/verify/timing/real, each with an expect.json saying what must come out:
  gemm_epilogue_library  cuBLAS does the GEMM, a Triton kernel the epilogue: library_work
  fused_honest           an honest fused kernel: its share near 1, pass_perf true
  add_256mib             an add over two 256 MiB tensors in a worker capped at 7.86 GiB
                         (gpu_memory_fraction): timed, with the timing's bytes per input byte
  ghost_branch           PyTorch answers at the timed size: kernel_not_timed
  add_256mib_small_worker  the same add in a worker of 2.8 GiB: inputs above
                         max_input_fraction, not_timed with the reason (skipped, not failed,
                         when the time runs short)
Prints each sample's share, flags, pass_perf and the timing's memory per input byte, writes
them to $OUT/timing_share.json (or --json FILE), and exits 1 when one is not as expected, 0 with
"skipped: no GPU" where there is none. Under 90 s on an H200.

  python3 bench/verify/timing_share.py [--json FILE] [--budget S]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = os.path.join(ROOT, "tests", "verify", "timing", "real")
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")
ORDER = ["gemm_epilogue_library", "fused_honest", "add_256mib", "ghost_branch",
         "add_256mib_small_worker"]
DEADLINE_S = 85

CHILD = r"""
import json, os, sys
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


def check(expect, out):
    """The ways the label differs from expect.json (empty: as expected)."""
    if out.get("verdict") != "passed":
        return ["verdict %s: %s" % (out.get("verdict"), str(out.get("detail"))[:300])]
    sp = out.get("speed") or {}
    ref = sp.get("reference") or {}
    flags = sp.get("flags") or []
    bad = []
    if expect.get("timed", True) and not sp.get("timed"):
        return ["not timed: %s" % sp.get("reason")]
    if not expect.get("timed", True) and (sp.get("timed") or
                                          expect.get("reason", "") not in (sp.get("reason") or "")):
        bad.append("timed %s, reason %s" % (sp.get("timed"), sp.get("reason")))
    for f in expect.get("flags", []):
        if f not in flags:
            bad.append("no flag %s" % f)
    for f in ("library_work", "kernel_not_timed", "not_timed"):
        if f in flags and f not in expect.get("flags", []):
            bad.append("flagged %s" % f)
    if "pass_perf" in expect and sp.get("pass_perf") != expect["pass_perf"]:
        bad.append("pass_perf %s" % sp.get("pass_perf"))
    share = ref.get("kernel_share")
    if "max_share" in expect and (share is None or share >= expect["max_share"]):
        bad.append("share %s" % share)
    if "min_share" in expect and (share is None or share < expect["min_share"]):
        bad.append("share %s" % share)
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(os.environ["OUT"], "timing_share.json")
                    if os.environ.get("OUT") else None)
    ap.add_argument("--budget", type=float, default=0.3)  # verifier.timing.budget_s
    args = ap.parse_args()
    t0 = time.monotonic()
    probe = subprocess.run([sys.executable, "-c", "import torch, triton; "
                            "print(torch.cuda.is_available())"], capture_output=True, text=True)
    if probe.stdout.strip() != "True":
        print("skipped: no GPU with torch and triton here (%s)" % probe.stderr.strip()[-200:])
        return 0
    timing = {"enabled": True, "budget_s": args.budget, "min_reps": 10, "max_reps": 200,
              "target": 0.02, "min_speedup": 1.0, "wait_s": 30, "min_kernel_share": 0.5,
              "max_input_fraction": 0.125}
    results, failures = {}, 0
    for name in ORDER:
        left = DEADLINE_S - (time.monotonic() - t0)
        d = os.path.join(REAL, name)
        expect = json.load(open(os.path.join(d, "expect.json")))
        if left < 10:
            print("%-22s SKIPPED: out of time" % name, flush=True)
            failures += not expect.get("optional")
            continue
        req = {"code": open(os.path.join(d, "code.py")).read(),
               "kernel_wrapper": open(os.path.join(d, "wrapper.py")).read(),
               "unitest_code": open(os.path.join(d, "test.py")).read(),
               "autotune": "single", "timing": timing}
        if expect.get("gpu_memory_fraction"):
            req["gpu_memory_fraction"] = expect["gpu_memory_fraction"]
        t1 = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "request.json")
            with open(path, "w") as f:
                json.dump(req, f)
            try:
                p = subprocess.run([sys.executable, "-c", CHILD, HARNESS, path, tmp],
                                   capture_output=True, text=True, timeout=left,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
                line = [ln for ln in p.stdout.splitlines() if ln.startswith("KFORGE_RESULT ")]
                out = json.loads(line[-1][len("KFORGE_RESULT "):]) if line else {
                    "verdict": "crashed", "detail": p.stderr[-600:]}
            except subprocess.TimeoutExpired:
                out = {"verdict": "timeout", "detail": "over %.0f s" % left}
        bad = check(expect, out)
        failures += bool(bad)
        sp = out.get("speed") or {}
        ref = sp.get("reference") or {}
        mem = sp.get("memory") or {}
        results[name] = {"ok": not bad, "problems": bad, "seconds": time.monotonic() - t1,
                         "verdict": out.get("verdict"), "speed": sp}
        print("%-22s %s share %s launches/call %s flags %s pass_perf %s speedup %s "
              "timing bytes per input byte %s (peak %s of %s input bytes)%s%s%s" % (
                  name, "ok  " if not bad else "FAIL", _f(ref.get("kernel_share")),
                  ref.get("launches_per_call"), sp.get("flags"), sp.get("pass_perf"),
                  _f(ref.get("speedup")), _f(mem.get("per_input_byte")), mem.get("peak_bytes"),
                  mem.get("input_bytes"),
                  (" ran instead %s" % ref["ran_instead"]) if ref.get("ran_instead") else "",
                  "" if sp.get("timed") else " not timed: %s" % sp.get("reason"),
                  (": " + "; ".join(bad)) if bad else ""), flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    print("%d of %d as expected in %.0f s" % (len(ORDER) - failures, len(ORDER),
                                            time.monotonic() - t0))
    return 1 if failures else 0


def _f(x):
    return "-" if x is None else "%.3f" % x


if __name__ == "__main__":
    sys.exit(main())
