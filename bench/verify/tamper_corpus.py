#!/usr/bin/env python3
"""The tampering corpus (tests/verify/tamper) through the harness package alone: no pool, no
sandbox, one process per sample, the real run then the mutant runs in that process as the pool's
same-process mode does. Each sample is judged as the pool would flag it: `tampered` (the guard's
findings in either run), `unstable_test` (a control run failed, or the process ended in the mutant
runs without their report: the pool runs them once more in a process of its own, and flags that), `mutant_survived`, `weak_test`,
`weak_inputs`, `constant_output`, or a real run that did not pass. Works on the CPU stand-in for
Triton (tests/verify/fake_triton: --fake) and on a GPU (real torch and Triton: the corpus's
wrapper moves its lists to CUDA tensors when torch sees a GPU).

  python3 bench/verify/tamper_corpus.py [--corpus DIR] [--fake] [--json FILE] [--repeat N]

Samples named honest_* must be verified; every other one must fail or be flagged. Held-out
samples (held_*) were written after the rest; their rate is printed apart. Exits 1 when a
tampering sample is verified or an honest one is not. --repeat runs each sample N times (the
controls' places are drawn afresh each time).
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
CORPUS = os.path.join(ROOT, "tests", "verify", "tamper")
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")
FAKE = os.path.join(ROOT, "tests", "verify", "fake_triton")

CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from kforge_harness.runner import kernel_options, run_sample
from kforge_harness.mutants import run_mutants, wants_mutant_run
try:
    from kforge_harness.guard import GUARD
except ImportError:  # a harness before the guard (--harness: the corpus against it)
    GUARD = None
req = json.load(open(sys.argv[2]))
os.chdir(sys.argv[3])
if req.get("gpu_lock"):  # --lock: a reader of the device as in the pool, its watcher on
    from kforge_harness import gpulock
    gpulock.install(req["gpu_lock"])
rep = {}
sample = run_sample(req, rep)
GUARD and GUARD.check("report")
out = {"verdict": rep.get("verdict"), "detail": rep.get("detail"),
       "coverage": rep.get("coverage"), "integrity": GUARD and GUARD.report()}
if sample is not None and wants_mutant_run(rep):
    print("KFORGE_REAL " + json.dumps(out, default=str))  # the real run's, before the mutant runs
    sys.stdout.flush()
    second = {}
    run_mutants(sample, second, req["mutants"], kernel_options(req))
    GUARD and GUARD.check("report")
    out.update(skip_verdict=second.get("verdict"), battery=second.get("battery"),
               kernel_battery=second.get("kernel_battery"), controls=second.get("controls"),
               integrity_after=GUARD and GUARD.report())
if req.get("gpu_lock"):
    out["gpu_lock"] = gpulock.CURRENT.report()
print("KFORGE_RESULT " + json.dumps(out, default=str))
sys.stdout.flush()
os._exit(0)
"""


class Writers:
    """--lock: timing samples of another process, as the pool's other samples would be: in a
    thread, the device taken now and then (every 50 to 250 ms, 10 ms each) while a sample runs,
    so that its watcher asks it to step out (on the runner thread too, Python 3.12+)."""

    def __init__(self, d):
        import random
        import threading
        sys.path.insert(0, HARNESS)
        from kforge_harness import gpulock
        self.paths = {k: os.path.join(d, k) for k in ("gate", "rw", "queue")}
        for p in self.paths.values():
            open(p, "w").close()
            os.chmod(p, 0o644)
        self.stop = threading.Event()
        self.sections = 0

        def loop():
            rng = random.Random(name_seed(d))
            while not self.stop.wait(rng.uniform(0.05, 0.25)):
                lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"], self.paths["queue"])
                if lk.acquire_exclusive(5.0) is not None:
                    time.sleep(0.01)
                    lk.release_exclusive()
                    self.sections += 1
                for fd in (lk.gate, lk.rw, lk.probe, lk.queue):
                    os.close(fd)
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def request(self):
        return dict(self.paths, watch=True)

    def close(self):
        self.stop.set()
        self.thread.join()


def name_seed(d):
    return sum(map(ord, d))


def run_one(name, corpus, fake, timeout, harness=HARNESS, lock=False):
    base = os.path.join(corpus, name)
    read = lambda f: open(os.path.join(base, f)).read()  # noqa: E731
    req = {"code": read("code.py"), "kernel_wrapper": read("wrapper.py"),
           "unitest_code": read("test.py"),
           "mutants": ["tail", "interior", "permute", "permute_row", "scale", "zero"],
           "kernel_mutants": {"count": 8, "time_s": 30.0}, "bounds_check": False}
    with tempfile.TemporaryDirectory() as d:
        rq = os.path.join(d, "request.json")
        with open(rq, "w") as f:
            json.dump(req, f)
        work = os.path.join(d, "work")
        os.mkdir(work)
        writers = Writers(d) if lock else None
        if writers is not None:
            req["gpu_lock"] = writers.request()
            with open(rq, "w") as f:
                json.dump(req, f)
        env = dict(os.environ)
        env.pop("TAMPER_N", None)
        if fake:
            env["PYTHONPATH"] = FAKE + os.pathsep + env.get("PYTHONPATH", "")
        try:
            p = subprocess.run([sys.executable, "-c", CHILD, harness, rq, work], env=env,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"verdict": "timeout"}
        finally:
            if writers is not None:
                writers.close()
    real = None
    for line in p.stdout.splitlines():
        if line.startswith("KFORGE_RESULT "):
            return json.loads(line[len("KFORGE_RESULT "):])
        if line.startswith("KFORGE_REAL "):
            real = json.loads(line[len("KFORGE_REAL "):])
    if real is not None:  # the real run passed, and the process of its mutant runs ended
        real["mutant_lost"] = "exit %d without the mutant runs' report" % p.returncode
        return real
    return {"verdict": "crashed", "detail": p.stderr[-2000:]}


def flags_of(res):
    """The flags the pool would give (libs/verify/src/verdict.cpp, pool_verdict.cpp)."""
    flags = []
    if (res.get("integrity") or {}).get("tampered") or \
            (res.get("integrity_after") or {}).get("tampered"):
        flags.append("tampered")
    if (res.get("controls") or {}).get("failed") or res.get("mutant_lost"):
        flags.append("unstable_test")  # a failed control, or no mutant runs' report (issue 52)
    if res.get("verdict") == "passed" and res.get("skip_verdict") == "passed":
        flags.append("mutant_survived")
    if ((res.get("battery") or {}).get("survived")):
        flags.append("weak_test")
    if ((res.get("kernel_battery") or {}).get("survived")):
        flags.append("weak_inputs")
    if (res.get("coverage") or {}).get("constant_outputs"):
        flags.append("constant_output")
    return flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--fake", action="store_true", help="the CPU stand-in for Triton")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--harness", default=HARNESS, help="the harness to run (another version's)")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (printed in corpus order)")
    ap.add_argument("--lock", action="store_true",
                    help="each sample a reader of a device lock that a thread here takes now "
                         "and then, as timing samples would (its watcher on)")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    names = args.names or sorted(n for n in os.listdir(args.corpus)
                                 if os.path.isdir(os.path.join(args.corpus, n)))
    rows, bad = [], 0
    tally = {"tamper": [0, 0], "held": [0, 0], "honest": [0, 0]}
    todo = [(name, rep) for name in names for rep in range(args.repeat)]
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = pool.map(lambda t: run_one(t[0], args.corpus, args.fake, args.timeout,
                                             args.harness, args.lock), todo)
        for (name, _), res in zip(todo, results):
            kind = "honest" if name.startswith("honest_") else \
                "held" if name.startswith("held_") else "tamper"
            flags = flags_of(res)
            verified = res.get("verdict") == "passed" and not flags
            ok = verified if kind == "honest" else not verified
            tally[kind][0] += ok
            tally[kind][1] += 1
            bad += not ok
            print("%-4s %-22s %-7s %-8s %s  %s" % (
                "ok" if ok else "BAD", name, kind, res.get("verdict"), ",".join(flags) or "-",
                (res.get("detail") or "")[:100]), flush=True)
            rows.append({"name": name, "kind": kind, "ok": ok, "flags": flags, "result": res})
    for kind, (good, n) in tally.items():
        what = "verified" if kind == "honest" else "failed or flagged"
        print("%s: %d of %d %s" % (kind, good, n, what))
    if args.lock:
        locks = [(r["result"].get("gpu_lock") or {}) for r in rows]
        print("lock: %d samples stepped out %d times at the watcher's asking (%d on the runner "
              "thread, runner watch %s), checked in %d times" % (
                  sum(1 for lk in locks if lk), sum(lk.get("watch_stepped_out", 0) for lk in locks),
                  sum(lk.get("runner_stepped_out", 0) for lk in locks),
                  sorted({lk.get("runner_watch") for lk in locks if lk}),
                  sum(lk.get("checked_in", 0) for lk in locks)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
