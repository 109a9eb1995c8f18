#!/usr/bin/env python3
"""The mutant corpus (tests/verify/mutants) through the harness package alone: no pool, no
sandbox, one process per test. A quick check of the output mutants on a GPU machine before the
full GPU test (VerifyGpu.MutantCorpus in tests/verify/gpu_test.cpp, run by scripts/gpu/check),
and the corpus's catch rate for docs/BENCHMARKS.md.

  python3 bench/verify/mutant_corpus.py [--mutants tail,interior,...] [--jobs N]

Prints one line per test (expected, flagged or verified, the score, the survivors) and a
summary; exits 1 when a weak test is not flagged or a strong one not verified.
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
from kforge_harness.runner import run_sample
from kforge_harness.mutants import run_mutants, wants_mutant_run
req = json.load(open(sys.argv[2]))
os.chdir(sys.argv[3])
rep = {}
sample = run_sample(req, rep)
out = {"verdict": rep.get("verdict"), "detail": rep.get("detail"), "coverage": rep.get("coverage")}
if sample is not None and wants_mutant_run(rep):
    second = {}
    run_mutants(sample, second, req["mutants"])
    out["skip_verdict"] = second.get("verdict")
    out["battery"] = second.get("battery")
sys.stdout.flush()
os.write(3, (json.dumps(out, default=str) + "\n").encode())
"""


def run_one(kernel, test, mutants):
    d = os.path.join(CORPUS, kernel)
    req = {"code": open(os.path.join(d, "code.py")).read(),
           "kernel_wrapper": open(os.path.join(d, "wrapper.py")).read(),
           "unitest_code": open(os.path.join(d, test)).read(), "mutants": mutants}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "request.json")
        with open(path, "w") as f:
            json.dump(req, f)
        r, w = os.pipe()
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, "-c", CHILD, HARNESS, path, tmp], pass_fds=(w,),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             preexec_fn=lambda: os.dup2(w, 3))
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
    """(flagged, killed, applicable, survivors) as the pool would decide them."""
    if res.get("verdict") != "passed":
        return None
    survivors, killed, applicable = [], 0, 0
    if res.get("skip_verdict") == "passed":
        return True, 0, 1, ["skip_launch"]
    if "skip_verdict" in res:
        killed, applicable = 1, 1
    for e in (res.get("battery") or {}).get("mutants", []):
        if e["result"] == "killed":
            killed += 1
            applicable += 1
        elif e["result"] == "survived":
            applicable += 1
            survivors.append(e["mutant"])
    return bool(survivors), killed, applicable, survivors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutants", default="tail,interior,permute,scale,zero")
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args()
    mutants = [m for m in args.mutants.split(",") if m]
    cases = [(k, t) for k in sorted(os.listdir(CORPUS)) if os.path.isdir(os.path.join(CORPUS, k))
             for t in sorted(os.listdir(os.path.join(CORPUS, k)))
             if t.startswith(("weak_", "strong_")) and t.endswith(".py")]
    bad = 0
    weak = strong = caught = verified = 0
    by = {}
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda c: run_one(c[0], c[1], mutants), cases))
    for (k, t), res in zip(cases, results):
        s = score(res)
        is_weak = t.startswith("weak_")
        if s is None:
            ok = False
            line = "real run %s: %s" % (res.get("verdict"), (res.get("detail") or "")[:300])
        else:
            flagged, killed, applicable, survivors = s
            ok = flagged if is_weak else not flagged and killed == applicable
            line = "%s %d/%d survived=%s na=%s" % ("flagged" if flagged else "verified", killed,
                                                 applicable, survivors,
                                                 (res.get("battery") or {}).get("not_applicable"))
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
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
