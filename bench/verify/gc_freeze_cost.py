"""What a sample's process pays for the worker's heap in its garbage collections, with and
without the worker's gc.freeze() before it forks (kforge_harness/worker.py: freeze_heap).

A sample's process is forked from a worker that imported torch, triton, numpy and the harness
once. Every full collection in it (the poisoning's gc.collect() before the skip-launch run and
the fresh control, mutants.poison_gpu_cache; Python's own) walks every object the worker
imported and writes their headers: the pages they lie on are copied (copy-on-write) in each
process. gc.freeze() in the worker moves them to the permanent generation, which no collection
walks. This bench builds a worker the same way (the modules named by --modules where present,
else the harness and the standard library; --ballast N more objects as a module heap holds
them), forks --children processes per mode, has each make --collects full collections as a
sample's process does, and prints per mode the children's CPU ms and minor page faults (median)
and the objects the collections walked. JSON to $OUT/gc_freeze_cost.json when --out is given.

  python3 bench/verify/gc_freeze_cost.py [--modules torch,triton,numpy] [--out DIR]

On the GPU box (torch, triton): the real worker's heap; here (CPU stand-in): a model of it.
"""

import argparse
import gc
import importlib
import json
import os
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def build_heap(modules, ballast):
    """Imports what a worker imports and returns what was loaded; `ballast` objects more."""
    sys.path.insert(0, os.path.join(ROOT, "libs", "verify", "harness"))
    loaded = []
    for name in modules + ["kforge_harness.worker", "kforge_harness.phases"]:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001 - not on this machine
            pass
    # A module heap: dicts of small lists and tuples, as function objects, code and type
    # dictionaries hold them.
    keep = [{"k%d" % i: [i, (i, str(i))]} for i in range(ballast)]
    return loaded, keep


def child(collects, result_w):
    t0 = time.process_time()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    garbage = []
    for _ in range(collects):
        garbage.append([[] for _ in range(1000)])  # a run's own young objects
        gc.collect()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_ms = (time.process_time() - t0) * 1000.0
    out = {"cpu_ms": cpu_ms, "minflt": r1.ru_minflt - r0.ru_minflt,
           "objects": len(gc.get_objects())}  # what a full collection walks (after the timing)
    os.write(result_w, (json.dumps(out) + "\n").encode())
    os._exit(0)


def mode(frozen, children, collects):
    gc.collect()
    if frozen:
        gc.freeze()
    results = []
    for _ in range(children):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(collects, w)
        os.close(w)
        data = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        results.append(json.loads(data))
    if frozen:
        gc.unfreeze()
    return {"cpu_ms": statistics.median(x["cpu_ms"] for x in results),
            "minflt": statistics.median(x["minflt"] for x in results),
            "objects_walked": statistics.median(x["objects"] for x in results)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modules", default="torch,triton,numpy")
    ap.add_argument("--ballast", type=int, default=300000,
                    help="objects more (0 on the GPU box, where torch's heap is real)")
    ap.add_argument("--children", type=int, default=9)
    ap.add_argument("--collects", type=int, default=2,
                    help="full collections per sample process (2: skip-launch run, fresh control)")
    ap.add_argument("--out")
    a = ap.parse_args()
    loaded, keep = build_heap([m for m in a.modules.split(",") if m], a.ballast)
    heap = len(gc.get_objects())
    out = {"loaded": loaded, "ballast": a.ballast, "worker_objects": heap,
           "collects_per_child": a.collects, "children": a.children}
    for name, frozen in (("plain", False), ("frozen", True)):
        out[name] = mode(frozen, a.children, a.collects)
    saved = out["plain"]["cpu_ms"] - out["frozen"]["cpu_ms"]
    out["saved_cpu_ms_per_sample"] = round(saved, 1)
    print("worker: %d objects (%s; ballast %d)" % (heap, ", ".join(loaded) or "-", a.ballast))
    for name in ("plain", "frozen"):
        m = out[name]
        print("%-7s %d full collections per process: %.1f CPU ms, %d minor faults, %d objects "
              "a collection walks" % (name, a.collects, m["cpu_ms"], m["minflt"],
                                         m["objects_walked"]))
    print("saved per sample process: %.1f CPU ms" % saved)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "gc_freeze_cost.json"), "w") as f:
            json.dump(out, f, indent=1)
    del keep
    return 0


if __name__ == "__main__":
    sys.exit(main())
