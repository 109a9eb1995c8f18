#!/usr/bin/env python3
"""The mutant corpus (tests/verify/mutants) through the harness package alone: no pool, no
sandbox, one process per test. A quick check of the output mutants and the kernel battery on a
GPU machine before the full GPU test (VerifyGpu.MutantCorpus in tests/verify/gpu_test.cpp, run by
scripts/gpu/check), the corpus's catch rate for docs/BENCHMARKS.md, and (--cost) the cost of the
kernel battery: the strong tests run without it and with it, each with a Triton cache of its own
that starts empty (every compile cold, as for a new sample).

  python3 bench/verify/mutant_corpus.py [--mutants tail,interior,...] [--kernel-mutants N]
                                        [--kernel-time S] [--jobs N] [--cost] [--json FILE]

Prints one line per test (expected, flagged or verified, the scores, the survivors) and a
summary; exits 1 when a weak test is not flagged or a strong one not verified. A weak test counts
as flagged by what the pool flags: mutant_survived, weak_test, weak_inputs or constant_output.
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "verify", "mutants")
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")

CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import time
t0 = time.monotonic()
from kforge_harness.runner import kernel_options, run_sample
from kforge_harness.mutants import run_mutants, wants_mutant_run
req = json.load(open(sys.argv[2]))
os.chdir(sys.argv[3])
rep = {}
sample = run_sample(req, rep)
out = {"verdict": rep.get("verdict"), "detail": rep.get("detail"), "coverage": rep.get("coverage"),
       "real_s": time.monotonic() - t0}
if sample is not None and wants_mutant_run(rep):
    second = {}
    t1 = time.monotonic()
    run_mutants(sample, second, req["mutants"], kernel_options(req))
    out["mutant_s"] = time.monotonic() - t1
    out["skip_verdict"] = second.get("verdict")
    out["battery"] = second.get("battery")
    out["kernel_battery"] = second.get("kernel_battery")
sys.stdout.flush()
os.write(int(sys.argv[4]), (json.dumps(out, default=str) + "\n").encode())
"""


def run_one(kernel, test, mutants, kernel_mutants=(0, 1.0), env=None):
    d = os.path.join(CORPUS, kernel)
    req = {"code": open(os.path.join(d, "code.py")).read(),
           "kernel_wrapper": open(os.path.join(d, "wrapper.py")).read(),
           "unitest_code": open(os.path.join(d, test)).read(), "mutants": mutants,
           "kernel_mutants": {"count": kernel_mutants[0], "time_s": kernel_mutants[1]}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "request.json")
        with open(path, "w") as f:
            json.dump(req, f)
        r, w = os.pipe()
        t0 = time.monotonic()
        # The report comes back on a pipe of its own (the write end passed by number).
        p = subprocess.Popen([sys.executable, "-c", CHILD, HARNESS, path, tmp, str(w)],
                             pass_fds=(w,), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        os.close(w)
        data = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
        os.close(r)
        log = p.communicate()[0].decode("utf-8", "replace")
        took = time.monotonic() - t0
    try:
        res = json.loads(data.decode())
    except ValueError:
        res = {"verdict": "crashed", "detail": log[-2000:]}
    res["seconds"] = took
    return res


def score(res):
    """(flagged, killed, applicable, survivors) as the pool would decide them; the kernel
    battery's survivors are named k:<op>, a constant output "constant_output"."""
    if res.get("verdict") != "passed":
        return None
    survivors, killed, applicable = [], 0, 0
    if (res.get("coverage") or {}).get("constant_outputs"):
        survivors.append("constant_output")
    if res.get("skip_verdict") == "passed":
        return True, 0, 1, survivors + ["skip_launch"]
    if "skip_verdict" in res:
        killed, applicable = 1, 1
    for e in (res.get("battery") or {}).get("mutants", []):
        if e["result"] == "killed":
            killed += 1
            applicable += 1
        elif e["result"] == "survived":
            applicable += 1
            survivors.append(e["mutant"] + ("@%d" % e["launch"] if "launch" in e else ""))
    for s in (res.get("kernel_battery") or {}).get("survived", []):
        survivors.append("k:" + s["op"])
    return bool(survivors), killed, applicable, survivors


def kernel_line(res):
    kb = res.get("kernel_battery")
    if not kb:
        return ""
    counts = {}
    for e in kb.get("mutants", []):
        counts[e.get("result")] = counts.get(e.get("result"), 0) + 1
    return " kernel %d/%d %s" % (kb.get("killed", 0), kb.get("applicable", 0),
                                 json.dumps(counts, sort_keys=True))


def cost(cases, mutants, args):
    """The strong tests without and with the kernel battery, each configuration with an empty
    Triton cache of its own. Returns the summary lines."""
    strong = [c for c in cases if c[1].startswith("strong_")]
    lines = []
    for label, km in (("without", (0, 1.0)), ("with", (args.kernel_mutants, args.kernel_time))):
        cache = tempfile.mkdtemp(prefix="triton-cache-")
        env = dict(os.environ, TRITON_CACHE_DIR=cache)
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
            res = list(ex.map(lambda c: run_one(c[0], c[1], mutants, km, env), strong))
        wall = time.monotonic() - t0
        passing = [r for r in res if r.get("verdict") == "passed"]
        per = sum(r["seconds"] for r in passing) / max(len(passing), 1)
        mut = sum(r.get("mutant_s", 0) for r in passing) / max(len(passing), 1)
        line = ("cost %-7s kernel battery: %d passing of %d strong, %.2f s per passing sample "
                "(mutant runs %.2f s), %.2f samples/s with %d jobs, wall %.1f s"
                % (label, len(passing), len(strong), per, mut, len(strong) / wall, args.jobs,
                   wall))
        print(line)
        lines.append(line)
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutants", default="tail,interior,permute,permute_row,scale,zero")
    ap.add_argument("--kernel-mutants", type=int, default=8)
    ap.add_argument("--kernel-time", type=float, default=30.0)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--cost", action="store_true", help="measure the kernel battery's cost")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--corpus", default=CORPUS, help="a folder laid out as tests/verify/mutants")
    args = ap.parse_args()
    globals()["CORPUS"] = args.corpus
    mutants = [m for m in args.mutants.split(",") if m]
    cases = [(k, t) for k in sorted(os.listdir(CORPUS)) if os.path.isdir(os.path.join(CORPUS, k))
             for t in sorted(os.listdir(os.path.join(CORPUS, k)))
             if t.startswith(("weak_", "strong_")) and t.endswith(".py")]
    bad = 0
    weak = strong = caught = verified = 0
    by = {}
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda c: run_one(c[0], c[1], mutants,
                                                 (args.kernel_mutants, args.kernel_time)), cases))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"case": k + "/" + t, **r} for (k, t), r in zip(cases, results)], f,
                      default=str, indent=1)
    for (k, t), res in zip(cases, results):
        s = score(res)
        is_weak = t.startswith("weak_")
        if s is None:
            ok = False
            line = "real run %s: %s" % (res.get("verdict"), (res.get("detail") or "")[:300])
        else:
            flagged, killed, applicable, survivors = s
            ok = flagged if is_weak else not flagged and killed == applicable
            line = "%s %d/%d survived=%s na=%s%s" % (
                "flagged" if flagged else "verified", killed, applicable, survivors,
                (res.get("battery") or {}).get("not_applicable"), kernel_line(res))
            for m in survivors:
                by[m] = by.get(m, 0) + 1
        if is_weak:
            weak += 1
            caught += ok
        else:
            strong += 1
            verified += ok
        bad += not ok
        print("%-4s %-32s %5.1fs %s" % ("ok" if ok else "BAD", k + "/" + t, res["seconds"], line))
    print("weak flagged %d/%d, strong verified %d/%d, survivors %s, %.0f s"
          % (caught, weak, verified, strong, json.dumps(by, sort_keys=True),
             time.monotonic() - t0))
    if args.cost:
        cost(cases, mutants, args)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
