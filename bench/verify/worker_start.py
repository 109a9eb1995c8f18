#!/usr/bin/env python3
"""What a verifier pool does before its first sample runs (issue 54): N workers started at once,
each doing what the harness's worker does before it says it is ready (kforge_harness/worker.py:
the interpreter's start, the preload imports one by one, the GPU probe in a forked child, the
Triton cache key), then what its first prestarted child does before the sample (warm_up_gpu: the
CUDA context and Triton's driver). Each step's end is read on CLOCK_MONOTONIC, one clock for all
processes, against the moment the workers were started.

Prints per step the median and the longest over the workers, and when the first and the last
worker was ready and warm; writes every worker's times as JSON (--json).

  python3 bench/verify/worker_start.py [--workers 16] [--preload torch,triton,triton.language,numpy]
                                       [--no-probe] [--fake] [--json FILE]

On the GPU box (about 15 s for 16 workers):
  python3 bench/verify/worker_start.py --workers 16 --json $OUT/worker_start.json
--fake: the CPU stand-in for Triton (tests/verify/fake_triton), no torch: the steps' Python
part only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")
FAKE = os.path.join(ROOT, "tests", "verify", "fake_triton")

CHILD = r"""
import importlib, json, os, sys, time
marks = [("interpreter", time.monotonic())]
sys.path.insert(0, sys.argv[1])
from kforge_harness import worker
from kforge_harness.pipes import read_all
marks.append(("harness import", time.monotonic()))
for name in [m for m in sys.argv[2].split(",") if m]:
    try:
        importlib.import_module(name)
    except Exception:
        pass
    marks.append(("import " + name, time.monotonic()))
if sys.argv[3] == "1":
    probe = worker.gpu_probe()
    marks.append(("gpu probe", time.monotonic()))
worker.precompute_triton_key()
marks.append(("triton key (ready)", time.monotonic()))
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
    marks.append(("prestart warm-up (first sample)", float(data.decode())))
print(json.dumps(marks))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--preload", default="torch,triton,triton.language,numpy")
    ap.add_argument("--no-probe", action="store_true", help="no GPU probe (verifier.probe_gpu)")
    ap.add_argument("--fake", action="store_true", help="the CPU stand-in for Triton, no torch")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", help="write every worker's marks here")
    args = ap.parse_args()
    env = dict(os.environ)
    preload = args.preload
    if args.fake:
        env["PYTHONPATH"] = FAKE + os.pathsep + env.get("PYTHONPATH", "")
        preload = ",".join(m for m in preload.split(",") if m != "torch")
    t0 = time.monotonic()
    procs = [subprocess.Popen([args.python, "-c", CHILD, HARNESS, preload,
                               "0" if args.no_probe else "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
             for _ in range(args.workers)]
    runs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        if p.returncode != 0 or not out.strip():
            sys.exit("a worker failed (exit %s): %s" % (p.returncode, err[-2000:]))
        runs.append([(name, at - t0) for name, at in json.loads(out.strip().splitlines()[-1])])
    steps = [name for name, _ in runs[0]]
    print("%d workers started at once (preload %s, probe %s); seconds since the start:"
          % (args.workers, preload or "none", "off" if args.no_probe else "on"))
    print("  %-34s %8s %8s %8s %8s" % ("step ends", "median", "max", "step med", "step max"))
    for k, name in enumerate(steps):
        ends = [r[k][1] for r in runs]
        lens = [r[k][1] - (r[k - 1][1] if k else 0.0) for r in runs]
        print("  %-34s %8.2f %8.2f %8.2f %8.2f" % (name, statistics.median(ends), max(ends),
                                                   statistics.median(lens), max(lens)))
    ready = sorted(r[steps.index("triton key (ready)")][1] for r in runs)
    print("first worker ready %.2f s, last %.2f s; first sample could start (warm) at %.2f s"
          % (ready[0], ready[-1], min(r[-1][1] for r in runs)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workers": args.workers, "preload": preload, "probe": not args.no_probe,
                       "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
