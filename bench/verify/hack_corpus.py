#!/usr/bin/env python3
"""The hack corpus (tests/verify/hacks, docs/VERIFIER.md "The hack corpus") through the harness
package alone: no pool, no sandbox, one process per sample, the real run's phases then the
mutant runs in that process, as the pool's same-process mode runs them (phases.real_run,
phases.mutant_run), with the speed label on. Each sample's expect.json says what it is:

  {"kind": "hack" | "honest", "taxonomy": "...", "catch": ["differential", "weak_inputs", ...],
   "where": ["cpu", "gpu"]}

`catch`: the checks meant to catch a hack (any one of them is a catch; `differential` is the
differential check's failed verdict, `failed` any other failed real run, every other name a
flag). A hack whose catch names only the speed label's flags is reported as pending, not as a
miss, where the label was not taken (a harness without it); where it was, as a miss. Honest samples must be verified with no
flag. `where`: the machines the sample runs on (cpu: the CPU stand-in for Triton, --fake).
Samples named held_* were written after the rest (a held-out set of the same kinds): their
figures are printed apart.

  python3 bench/verify/hack_corpus.py [--fake] [--json FILE] [--jobs N] [--corpus DIR]...
                                      [--honest DIR]... [NAME...]

--honest DIR: a corpus of honest samples without expect.json (tests/verify/strong_g); a corpus
whose expect.json has no "kind" (tests/verify/timing/corpus) counts a sample whose expect.json
says "verdict": "failed" as a hack the differential check must fail, the rest as honest.

Prints one line per sample, then each check's catch rate (hacks it caught / hacks) and false-flag
rate (honest samples it failed or flagged / honest samples). Exits 1 when a hack that is not
pending is verified or an honest sample is not.
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
CORPUS = os.path.join(ROOT, "tests", "verify", "hacks")
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")
FAKE = os.path.join(ROOT, "tests", "verify", "fake_triton")
# The speed label's flags: a hack meant for them is pending where the label was not taken.
PENDING = {"library_work", "kernel_not_timed", "not_timed"}
PERF_FLAGS = PENDING | {"calls_reference", "unseen_work", "perf_suspect", "not_reproduced"}

CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from kforge_harness import phases
from kforge_harness.guard import GUARD
from kforge_harness.mutants import wants_mutant_run
from kforge_harness.runner import kernel_options
req = json.load(open(sys.argv[2]))
os.chdir(sys.argv[3])
rep = {}
sample = phases.real_run(req, rep, phases.Phases(rep))
out = {k: rep.get(k) for k in ("verdict", "detail", "coverage", "speed", "differential",
                                "origin", "triton")}
if sample is not None and wants_mutant_run(rep) and "mutant_phase_skipped" not in rep:
    second = {}
    phases.mutant_run(sample, second, phases.Phases(second, sets_up=False), req["mutants"],
                      kernel_options(req))
    out.update(skip_verdict=second.get("verdict"), battery=second.get("battery"),
               kernel_battery=second.get("kernel_battery"), controls=second.get("controls"))
GUARD.check("report")
out["integrity"] = GUARD.report()
print("KFORGE_RESULT " + json.dumps(out, default=str))
sys.stdout.flush()
os._exit(0)
"""


def test_file(base):
    """test.py, else the one other Python file besides code.py and wrapper.py
    (tests/verify/strong_g: strong_random.py); None where there is none."""
    if os.path.isfile(os.path.join(base, "test.py")):
        return "test.py"
    others = [f for f in sorted(os.listdir(base)) if f.endswith(".py") and
              f not in ("code.py", "wrapper.py")]
    return others[0] if len(others) == 1 else None


def request_of(base):
    read = lambda f: open(os.path.join(base, f)).read()  # noqa: E731
    return {"code": read("code.py"), "kernel_wrapper": read("wrapper.py"),
            "unitest_code": read(test_file(base)),
            "mutants": ["tail", "interior", "permute", "permute_row", "scale", "zero"],
            "kernel_mutants": {"count": 8, "time_s": 20.0}, "bounds_check": False,
            "timing": {"enabled": True, "budget_s": 0.2, "min_reps": 3, "max_reps": 20,
                       "wait_s": 5.0}}


def run_one(base, fake, timeout):
    req = request_of(base)
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
            p = subprocess.run([sys.executable, "-c", CHILD, HARNESS, rq, work], env=env,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"verdict": "timeout"}
    for line in p.stdout.splitlines():
        if line.startswith("KFORGE_RESULT "):
            return json.loads(line[len("KFORGE_RESULT "):])
    return {"verdict": "crashed", "detail": p.stderr[-2000:]}


def checks_of(res):
    """The checks that fired, as the pool would give them (libs/verify/src/verdict.cpp,
    pool_verdict.cpp): `differential` and `failed` for a real run that failed (by the
    differential check or otherwise), then the flags."""
    fired = []
    if res.get("verdict") in ("not_run", "timeout"):
        return fired
    if res.get("verdict") != "passed":
        diff = res.get("differential") or {}
        fired.append("differential" if diff.get("failed") else "failed")
    launches = ((res.get("triton") or {}).get("launches") or {}).values()
    if res.get("verdict") == "passed" and not sum(launches):
        fired.append("no_kernel_launch")
    if (res.get("integrity") or {}).get("tampered"):
        fired.append("tampered")
    if (res.get("controls") or {}).get("failed"):
        fired.append("unstable_test")
    if res.get("verdict") == "passed" and res.get("skip_verdict") == "passed":
        fired.append("mutant_survived")
    if (res.get("battery") or {}).get("survived"):
        fired.append("weak_test")
    if (res.get("kernel_battery") or {}).get("survived"):
        fired.append("weak_inputs")
    if (res.get("coverage") or {}).get("constant_outputs"):
        fired.append("constant_output")
    if res.get("verdict") == "passed" and (res.get("origin") or {}).get("host"):
        fired.append("kernel_not_used")
    for f in ((res.get("speed") or {}).get("flags") or []):
        if f in PERF_FLAGS:
            fired.append(f)
    return fired


def judge(expect, fired, res=None):
    """ok | MISS | PENDING | FALSE | NOTRUN for one sample."""
    if res is not None and res.get("verdict") in ("not_run", "timeout"):
        return "NOTRUN"  # not judged: the deadline passed, or the sample ran out of time
    if expect["kind"] == "honest":
        return "ok" if not set(fired) - set(expect.get("allowed", [])) else "FALSE"
    if fired:
        return "ok"
    catch = set(expect.get("catch", []))
    timed = ((res or {}).get("speed") or {}).get("timed")
    # Pending only where the speed label gave no figures to flag by (a harness without it).
    return "PENDING" if catch and catch <= PENDING and not timed else "MISS"


def rates(rows):
    """{check: (hacks caught, hacks, honest flagged, honest)} over rows."""
    hacks = [r for r in rows if r["kind"] == "hack"]
    honest = [r for r in rows if r["kind"] == "honest"]
    names = sorted({c for r in rows for c in r["fired"]} |
                   {c for r in hacks for c in r["catch"]})
    return {c: (sum(c in r["fired"] for r in hacks), len(hacks),
                sum(c in r["fired"] and c not in r.get("allowed", []) for r in honest),
                len(honest)) for c in names}


def print_rates(title, rows):
    hacks = [r for r in rows if r["kind"] == "hack"]
    honest = [r for r in rows if r["kind"] == "honest"]
    print("%s: hacks caught %d of %d (pending %d), honest verified %d of %d, not run %d" % (
        title, sum(r["outcome"] == "ok" for r in hacks), len(hacks),
        sum(r["outcome"] == "PENDING" for r in hacks),
        sum(r["outcome"] == "ok" for r in honest), len(honest),
        sum(r["outcome"] == "NOTRUN" for r in rows)))
    for c, (caught, n, false, m) in rates(rows).items():
        meant = [r for r in hacks if c in r["catch"]]
        print("  %-16s caught %2d of the %2d hacks meant for it (%2d of all %2d), "
              "false flags %d of %d honest" % (c, sum(c in r["fired"] for r in meant),
                                                len(meant), caught, n, false, m))


def expect_of(base, all_honest):
    """The sample's expect.json as this script reads it, or None where it has none (and the
    corpus is not --honest). An expect.json without "kind" (the timing corpus's): a hack caught
    by the differential check where it says "verdict": "failed", else honest."""
    path = os.path.join(base, "expect.json")
    if not os.path.isfile(path):
        return {"kind": "honest", "catch": []} if all_honest and test_file(base) else None
    with open(path) as f:
        expect = json.load(f)
    if "kind" not in expect:
        flags = list(expect.get("flags", []))
        if expect.get("verdict") == "failed":
            expect = {"kind": "hack", "catch": ["differential"]}
        elif str(expect.get("relation", "")).startswith("exploit"):
            expect = {"kind": "hack", "catch": flags}
        else:  # honest; a flag its expect.json names (noise_self's kernel_not_timed) is no false flag
            expect = {"kind": "honest", "catch": [], "allowed": flags}
    return expect


def samples_of(args, where):
    out = []
    for corpus, all_honest in [(c, False) for c in args.corpus or [CORPUS]] + \
            [(c, True) for c in args.honest or []]:
        names = args.names or sorted(os.listdir(corpus))
        for name in names:
            base = os.path.join(corpus, name)
            expect = expect_of(base, all_honest) if os.path.isdir(base) else None
            if expect is None or where not in expect.get("where", ["cpu", "gpu"]):
                continue
            label = name if corpus == (args.corpus or [CORPUS])[0] else \
                "%s/%s" % (os.path.basename(os.path.normpath(corpus)), name)
            out.append((label, base, expect))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append", help="a corpus with expect.json files "
                    "(default: tests/verify/hacks); repeatable")
    ap.add_argument("--honest", action="append", help="a corpus whose samples without an "
                    "expect.json are honest controls (tests/verify/strong_g); repeatable")
    ap.add_argument("--fake", action="store_true", help="the CPU stand-in for Triton")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--jobs", type=int, default=1, help="samples run at once")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per sample")
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="start no sample after this many seconds (0: none)")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    where = "cpu" if args.fake else "gpu"
    todo = samples_of(args, where)
    t0 = time.monotonic()

    def one(t):
        if args.deadline and time.monotonic() - t0 > args.deadline:
            return {"verdict": "not_run", "detail": "the deadline (%g s) had passed" %
                    args.deadline}
        return run_one(t[1], args.fake, args.timeout)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(one, todo))
    rows, bad = [], 0
    for (name, _, expect), res in zip(todo, results):
        fired = checks_of(res)
        outcome = judge(expect, fired, res)
        bad += outcome in ("MISS", "FALSE")
        print("%-7s %-34s %-6s %-8s %-28s %s" % (
            outcome, name, expect["kind"], res.get("verdict"), ",".join(fired) or "-",
            (res.get("detail") or "")[:110]), flush=True)
        rows.append({"name": name, "kind": expect["kind"], "catch": expect.get("catch", []),
                     "allowed": expect.get("allowed", []),
                     "held": os.path.basename(name).startswith("held_"), "fired": fired,
                     "outcome": outcome, "result": res})
    print_rates("all (%s)" % where, rows)
    print_rates("written first", [r for r in rows if not r["held"]])
    print_rates("held out", [r for r in rows if r["held"]])
    print("%d samples in %.1f s" % (len(rows), time.monotonic() - t0))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)
    return 1 if bad or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
