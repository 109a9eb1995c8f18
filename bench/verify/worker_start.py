#!/usr/bin/env python3
"""What a verifier pool does before its first sample runs (issue 54): N workers started at once,
each doing what the harness's worker does before it says it is ready (kforge_harness/worker.py
worker_main: the interpreter's start, the preload imports one by one, the GPU probe in a forked
child, the Triton cache key, the heap's freeze), then what its first prestarted child does
before the sample (warm_up_gpu: the CUDA context and Triton's driver), forked as soon as the
worker is ready (the pool sends a ready worker its first `prepare` at once). Each step's end is
read on CLOCK_MONOTONIC, one clock for all processes, against the moment the workers were started.

Two ways to probe:
  one (the pool now): one worker of the device probes, its probe's child making its context
      while the worker hashes Triton's sources for the cache key; the others make no probe.
      A worker takes a sample once its warm-up is done and the device's probe said ok.
  all (--probe-all: the pool before): every worker probes, then computes the key.

Prints per step the median and the longest over the workers of its end and of its own length
(the probe of "one" runs beside the key: from the imports' end until the worker has its answer;
a step only some workers take, the probe, over those), when the first and the last worker was
ready, and when the first and the last (Nth) sample could start; writes every worker's times as
JSON (--json).

  python3 bench/verify/worker_start.py [--workers 16] [--preload torch,triton,triton.language,numpy]
                                       [--probe-all | --no-probe | --compare [--rounds 2]]
                                       [--fake] [--json FILE]

--compare: both ways, interleaved (one, all, all, one with --rounds 2: each way once first, so
neither alone has the cold page cache), each run's table, then the medians side by side.
On the GPU box (about 45 s for 16 workers, --compare):
  python3 bench/verify/worker_start.py --workers 16 --compare --json $OUT/ws.json
--fake: the CPU stand-in for Triton (tests/verify/fake_triton) and a stand-in torch whose
driver makes contexts one at a time (bench/verify/fake_gpu_contexts: each takes
KFORGE_FAKE_CONTEXT_MS, 150); no real torch.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")
FAKE = os.path.join(ROOT, "tests", "verify", "fake_triton")
FAKE_GPU = os.path.join(ROOT, "bench", "verify", "fake_gpu_contexts")

# argv: harness dir, preload list, probe ("all": probe, then the key, as the worker did before;
# "one": the probe's child runs while the key is computed, as the prober does now; "none").
CHILD = r"""
import importlib, json, os, sys, time
t = time.monotonic()
marks = [("interpreter", None, t)]
def mark(name, start=None):
    marks.append((name, marks[-1][2] if start is None else start, time.monotonic()))
sys.path.insert(0, sys.argv[1])
from kforge_harness import worker
from kforge_harness.pipes import read_all
mark("harness import")
for name in [m for m in sys.argv[2].split(",") if m]:
    try:
        importlib.import_module(name)
    except Exception:
        pass
    mark("import " + name)
probe = {"ok": True, "note": "not asked"}
if sys.argv[3] == "all":
    probe = worker.gpu_probe()
    mark("gpu probe")
    worker.precompute_triton_key()
    mark("triton key")
elif sys.argv[3] == "one":
    t = marks[-1][2]
    started = worker.start_gpu_probe()
    worker.precompute_triton_key()
    mark("triton key")
    probe = worker.finish_gpu_probe(started)
    mark("gpu probe", t)
    marks.sort(key=lambda m: m[2])
else:
    worker.precompute_triton_key()
    mark("triton key")
worker.freeze_heap()
mark("freeze heap (ready)")
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    worker.warm_up_gpu()
    os.write(w, repr(time.monotonic()).encode())
    os._exit(0)
os.close(w)
data = read_all(r)
os.waitpid(pid, 0)
if data:
    marks.append(("prestart warm-up (first sample)", marks[-1][2], float(data.decode())))
print(json.dumps({"marks": marks, "probe": probe}))
"""

READY = "freeze heap (ready)"
WARM = "prestart warm-up (first sample)"


def start_run(args, env, preload, way):
    """Starts the workers at once; returns one list of (step, seconds since the start at its end,
    the step's own seconds) per worker."""
    probes = ["all" if way == "all" else ("one" if way == "one" and i == 0 else "none")
              for i in range(args.workers)]
    t0 = time.monotonic()
    procs = [subprocess.Popen([args.python, "-c", CHILD, HARNESS, preload, p],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
             for p in probes]
    runs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        if p.returncode != 0 or not out.strip():
            sys.exit("a worker failed (exit %s): %s" % (p.returncode, err[-2000:]))
        got = json.loads(out.strip().splitlines()[-1])
        if not got["probe"].get("ok"):
            sys.exit("a worker's GPU probe failed: %s" % got["probe"])
        # (step, seconds since the start at its end, the step's own seconds)
        runs.append([(name, end - t0, end - (start if start is not None else t0))
                     for name, start, end in got["marks"]])
    return runs


def could_start(runs):
    """When each worker's first sample could start: its warm-up done and the device's probe ok
    (the latest probe of the run: with one prober, the pool holds every worker until it is ok;
    with every worker probing, each worker's own came before its ready)."""
    probes = [ends(r)["gpu probe"] for r in runs if "gpu probe" in ends(r)]
    ok = max(probes) if len(probes) == 1 else 0.0
    return sorted(max(ends(r).get(WARM, ends(r)[READY]), ok) for r in runs)


def ends(run):
    return {name: end for name, end, _ in run}


def summary(runs):
    ready = sorted(ends(r)[READY] for r in runs)
    start = could_start(runs)
    return {"first_ready": ready[0], "last_ready": ready[-1], "first_start": start[0],
            "last_start": start[-1]}


def print_table(runs, title):
    print(title)
    print("  %-34s %8s %8s %8s %8s" % ("step ends", "median", "max", "step med", "step max"))
    names = []
    for r in runs:
        for name, _, _ in r:
            if name not in names:
                names.append(name)
    for name in names:
        got = [(end, own) for r in runs for n, end, own in r if n == name]
        label = name if len(got) == len(runs) else "%s (%d of %d)" % (name, len(got), len(runs))
        print("  %-34s %8.2f %8.2f %8.2f %8.2f" % (
            label, statistics.median(e for e, _ in got), max(e for e, _ in got),
            statistics.median(o for _, o in got), max(o for _, o in got)))
    s = summary(runs)
    print("first worker ready %.2f s, last %.2f s; first sample could start (warm, probe ok) at "
          "%.2f s, last (%d%s) at %.2f s" % (s["first_ready"], s["last_ready"], s["first_start"],
                                             len(runs), ordinal(len(runs)), s["last_start"]))


def ordinal(n):
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


WAYS = {"one": "one probe per device, overlapped with the key (the pool now)",
        "all": "every worker probes, then the key (--probe-all: the pool before)",
        "none": "no probe (verifier.probe_gpu off)"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--preload", default="torch,triton,triton.language,numpy")
    way = ap.add_mutually_exclusive_group()
    way.add_argument("--probe-all", action="store_true", help="every worker probes (before)")
    way.add_argument("--no-probe", action="store_true", help="no GPU probe (verifier.probe_gpu)")
    way.add_argument("--compare", action="store_true", help="one and all, interleaved")
    ap.add_argument("--rounds", type=int, default=2, help="--compare: rounds (2: one all all one)")
    ap.add_argument("--fake", action="store_true",
                    help="the CPU stand-ins for Triton and the GPU (contexts one at a time)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", help="write every worker's marks here")
    args = ap.parse_args()
    env = dict(os.environ)
    preload = args.preload
    if args.fake:
        env["PYTHONPATH"] = os.pathsep.join([FAKE_GPU, FAKE, env.get("PYTHONPATH", "")])
        env.setdefault("KFORGE_FAKE_CONTEXT_LOCK",
                       os.path.join(tempfile.gettempdir(), "kforge-fake-contexts-%d" % os.getpid()))
    if args.compare:
        order = []
        for k in range(args.rounds):
            order += ["one", "all"] if k % 2 == 0 else ["all", "one"]
    else:
        order = ["all" if args.probe_all else "none" if args.no_probe else "one"]
    results = []
    for n, w in enumerate(order):
        runs = start_run(args, env, preload, w)
        results.append({"way": w, "runs": runs, "summary": summary(runs)})
        print_table(runs, "%s%d workers started at once (preload %s; %s); seconds since the start:"
                    % ("run %d: " % (n + 1) if len(order) > 1 else "", args.workers,
                       preload or "none", WAYS[w]))
        if len(order) > 1:
            print()
    if args.compare:
        print("medians over the runs (%s), seconds since the start:" % " ".join(order))
        print("  %-24s %10s %10s %10s" % ("", "one", "all", "saved"))
        for key, label in (("first_ready", "first worker ready"), ("last_ready", "last worker ready"),
                           ("first_start", "first sample starts"),
                           ("last_start", "last sample starts")):
            one = statistics.median(r["summary"][key] for r in results if r["way"] == "one")
            every = statistics.median(r["summary"][key] for r in results if r["way"] == "all")
            print("  %-24s %10.2f %10.2f %10.2f" % (label, one, every, every - one))
    if args.fake:
        try:
            os.unlink(env["KFORGE_FAKE_CONTEXT_LOCK"])
        except OSError:
            pass
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workers": args.workers, "preload": preload, "fake": args.fake,
                       "order": order, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
