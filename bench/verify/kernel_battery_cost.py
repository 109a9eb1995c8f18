#!/usr/bin/env python3
"""What the kernel battery costs a sample, counted, and what compiling each mutant without
Triton's value specialisation saves (issue 54, item 3; docs/VERIFIER.md, "Kernel mutants").

Runs each sample through the harness's phases (the real run, then the mutant run: skip-launch,
output mutants, kernel battery), twice in the same call: "before" with each mutant specialised as
the original (kernel_mutants.UNSPECIALISED = False), "after" as shipped. Counts per sample, over
its kernel mutants: compiles (the distinct specialisation keys of each mutant's launches, as
Triton 3.6 makes them: one compile each on a GPU; the CPU stand-in records the keys,
tests/verify/fake_triton), the mutants' replay launches, and the test runs under a mutant. Prints
a line per sample and the totals; exits 1 when a mutant's replay outcome or result differs
between the two (the battery must decide the same), or, with --check, when nothing was saved.

  python3 bench/verify/kernel_battery_cost.py [--fake] [--corpus DIR]... [--only PREFIX,...]
                                              [--count 8] [--jobs 2] [--check] [--json FILE]

A corpus is a folder of sample folders (code.py, wrapper.py and one or more tests); the default is
tests/verify/samples, the samples named kmutant_* and mutant_* (--only). --fake: the CPU stand-in
for Triton (tests/verify/fake_triton); without it, the machine's Triton (a GPU), where the
strong corpora (tests/verify/strong_g, tests/verify/mutants: --only '' takes every sample) can
be counted as well.
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")
FAKE = os.path.join(ROOT, "tests", "verify", "fake_triton")
SAMPLES = os.path.join(ROOT, "tests", "verify", "samples")

CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from kforge_harness import phases, kernel_mutants as km
from kforge_harness.mutants import wants_mutant_run
from kforge_harness.runner import kernel_options
req = json.load(open(sys.argv[2]))
os.chdir(sys.argv[3])
km.UNSPECIALISED = sys.argv[4] == "after"
jits, n = [], {"replay_launches": 0, "test_runs": 0}
build, launch, swapped = km.build_jit, km.run_launch, km._run_swapped
def build_jit(*a):
    m = build(*a)
    jits.append(m)
    return m
def run_launch(rec, variant, seed, jit, *a):
    n["replay_launches"] += jit is not rec.jit
    return launch(rec, variant, seed, jit, *a)
def run_swapped(*a):
    n["test_runs"] += 1
    return swapped(*a)
km.build_jit, km.run_launch, km._run_swapped = build_jit, run_launch, run_swapped
def compiles(j):
    if hasattr(j, "specialisations"):  # the CPU stand-in
        return len(j.specialisations)
    caches = getattr(j, "device_caches", None)  # Triton 3.x: (kernels by key, ...) per device
    if caches:
        return sum(len(c[0]) for c in caches.values())
    return sum(len(c) for c in getattr(j, "cache", {}).values())
rep = {}
sample = phases.real_run(req, rep, phases.Phases(rep))
out = {"verdict": rep.get("verdict"), "kernel_battery": None}
if sample is not None and wants_mutant_run(rep) and "mutant_phase_skipped" not in rep:
    second = {}
    phases.mutant_run(sample, second, phases.Phases(second, sets_up=False), req["mutants"],
                      kernel_options(req))
    kb = second.get("kernel_battery") or {}
    out["kernel_battery"] = [[m.get("mutant"), m.get("op"), m.get("replay"), m.get("result")]
                             for m in kb.get("mutants", [])]
    out["compiles"] = sum(compiles(j) for j in jits)
    out.update(n)
print("KFORGE_RESULT " + json.dumps(out, default=str))
sys.stdout.flush()
os._exit(0)
"""


def test_files(base):
    """The sample folder's tests: every Python file but code.py and wrapper.py (test.py in
    tests/verify/samples; weak_*.py and strong_*.py in tests/verify/mutants)."""
    return [f for f in sorted(os.listdir(base)) if f.endswith(".py") and
            f not in ("code.py", "wrapper.py")]


def run_one(sample, mode, fake, count, timeout=300):
    base, test = sample
    read = lambda f: open(os.path.join(base, f)).read()  # noqa: E731
    req = {"code": read("code.py"), "kernel_wrapper": read("wrapper.py"),
           "unitest_code": read(test),
           "mutants": ["tail", "interior", "permute", "permute_row", "scale", "zero"],
           "kernel_mutants": {"count": count, "time_s": 60.0}, "bounds_check": False}
    with tempfile.TemporaryDirectory() as d:
        rq = os.path.join(d, "request.json")
        with open(rq, "w") as f:
            json.dump(req, f)
        work = os.path.join(d, "work")
        os.mkdir(work)
        env = dict(os.environ)
        if fake:
            env["PYTHONPATH"] = FAKE + os.pathsep + env.get("PYTHONPATH", "")
        try:
            p = subprocess.run([sys.executable, "-c", CHILD, HARNESS, rq, work, mode], env=env,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"verdict": "timeout"}
    for line in p.stdout.splitlines():
        if line.startswith("KFORGE_RESULT "):
            return json.loads(line[len("KFORGE_RESULT "):])
    return {"verdict": "crashed", "detail": p.stderr[-2000:]}


def samples_of(corpora, only):
    """(folder, test file) of each test of each sample folder whose name starts with one of
    `only` (every folder when it is empty)."""
    out = []
    for c in corpora:
        for name in sorted(os.listdir(c)):
            base = os.path.join(c, name)
            if os.path.isfile(os.path.join(base, "code.py")) and \
                    (not only or any(name.startswith(p) for p in only)):
                out += [(base, t) for t in test_files(base)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake", action="store_true", help="the CPU stand-in for Triton")
    ap.add_argument("--corpus", action="append")
    ap.add_argument("--only", default="kmutant_,mutant_")
    ap.add_argument("--count", type=int, default=8, help="verifier.kernel_mutants")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="exit 1 when nothing was saved")
    ap.add_argument("--json")
    args = ap.parse_args()
    only = [p for p in args.only.split(",") if p]
    bases = samples_of(args.corpus or [SAMPLES], only)
    jobs = [(b, m) for b in bases for m in ("before", "after")]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        got = dict(zip(jobs, ex.map(lambda j: run_one(j[0], j[1], args.fake, args.count), jobs)))
    return report(bases, got, args)


def report(bases, got, args):
    keys = ("compiles", "replay_launches", "test_runs")
    total = {m: dict.fromkeys(keys, 0) for m in ("before", "after")}
    batteries, differ, rows = 0, [], []
    print("%-34s %9s %9s %9s  %s" % ("sample", "compiles", "replays", "runs", "mutants (after)"))
    for b in bases:
        x, y = got[(b, "before")], got[(b, "after")]
        name = os.path.basename(b[0]) + ("" if b[1] == "test.py" else "/" + b[1][:-3])
        if x.get("kernel_battery") != y.get("kernel_battery") or x.get("verdict") != y.get("verdict"):
            differ.append(name)
        if not y.get("kernel_battery"):
            print("%-34s %s" % (name, "no kernel battery (%s)" % y.get("verdict")))
            continue
        batteries += 1
        for m, r in (("before", x), ("after", y)):
            for k in keys:
                total[m][k] += r.get(k, 0)
        print("%-34s %4d->%-4d %4d->%-4d %4d->%-4d %s" % (
            name, x["compiles"], y["compiles"], x["replay_launches"], y["replay_launches"],
            x["test_runs"], y["test_runs"],
            " ".join("%s:%s" % (m[1], m[3]) for m in y["kernel_battery"])))
        rows.append({"sample": name, "before": x, "after": y})
    if batteries:
        b, a = total["before"], total["after"]
        print("%d samples with a kernel battery: per sample, compiles %.2f -> %.2f (%.2f saved, "
              "%.0f%%), replay launches %.2f -> %.2f, test runs under a mutant %.2f -> %.2f" % (
                  batteries, b["compiles"] / batteries, a["compiles"] / batteries,
                  (b["compiles"] - a["compiles"]) / batteries,
                  100.0 * (b["compiles"] - a["compiles"]) / max(1, b["compiles"]),
                  b["replay_launches"] / batteries, a["replay_launches"] / batteries,
                  b["test_runs"] / batteries, a["test_runs"] / batteries))
    print("kernel battery outcomes identical before and after: %s" % (
        "yes, %d of %d samples" % (len(bases), len(bases)) if not differ else
        "NO: " + ", ".join(differ)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"totals": total, "samples": rows, "differ": differ}, f, indent=1)
    if differ or not batteries:
        return 1
    if args.check and total["after"]["compiles"] >= total["before"]["compiles"]:
        print("no compile saved")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
