"""Why a kernel that reads or writes out of bounds faults in one process and not in another.

Runs each named TritonBench-G record in fresh processes, several times per mode, and prints per
mode how often it passed or died (docs/VERIFIER.md, "Out-of-bounds kernels", has the findings):

  plain        python sample.py, as bench-real's plain processes run it
  nocache      the same with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every tensor its own cudaMalloc)
  snap         plain, with every tensor argument copied (clone) before each launch, as the
               harness's output watch does in a real run
  snap_pool    the same with the copies made in a private torch.cuda.MemPool
  harness      the harness's real run (runner.run_sample: output watch, launch recorder), in
               process, without the sandbox
  bounds       the same, then the out-of-bounds check (bounds.py) on its captured launches;
               prints each record's result (--bounds-keys all: every record of the corpus)
  sanitizer    plain under compute-sanitizer memcheck, where the machine has it (first errors)

  python3 bench/verify/oob_probe.py --corpus C.jsonl --keys a.py,b.py --repeat 3 [--modes ...]
"""

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "..", "libs", "verify", "harness")


def child(mode, record_path):
    with open(record_path) as f:
        rec = json.load(f)
    script = rec["code"] + "\n\n" + rec["kernel_wrapper"] + "\n\n" + rec["unitest_code"] + "\n"
    if mode in ("harness", "bounds"):
        sys.path.insert(0, HARNESS)
        from kforge_harness.runner import run_sample
        from kforge_harness.phases import bounds_replay
        report = {}
        req = {"code": rec["code"], "kernel_wrapper": rec["kernel_wrapper"],
               "unitest_code": rec["unitest_code"], "kernel_mutants": {"count": 8, "time_s": 30},
               "bounds_check": mode == "bounds"}
        sample = run_sample(req, report)
        t0 = time.monotonic()
        if mode == "bounds" and sample is not None and report.get("verdict") == "passed":
            report.update(bounds_replay.run(req, sample) or {})
        b = report.get("bounds")
        if b is not None:
            b["wall_ms"] = int((time.monotonic() - t0) * 1000)
        print("VERDICT", report.get("verdict"), (report.get("detail") or "")[:200])
        print("BOUNDS", json.dumps(b))
        return 0 if report.get("verdict") == "passed" else 1
    if mode in ("snap", "snap_pool"):
        import torch
        from triton.runtime import jit as jit_mod
        orig = jit_mod.JITFunction.run
        keep = []
        pool = torch.cuda.MemPool() if mode == "snap_pool" else None

        def run(self, *args, **kwargs):
            if not kwargs.get("warmup", False):
                ctx = torch.cuda.use_mem_pool(pool) if pool is not None else None
                if ctx is not None:
                    ctx.__enter__()
                try:
                    keep.append([a.clone() for a in list(args) + list(kwargs.values())
                                 if isinstance(a, torch.Tensor)])
                finally:
                    if ctx is not None:
                        ctx.__exit__(None, None, None)
            return orig(self, *args, **kwargs)
        jit_mod.JITFunction.run = run
    with open("sample.py", "w") as f:
        f.write(script)
    code = compile(script, os.path.abspath("sample.py"), "exec")
    exec(code, {"__name__": "__main__", "__file__": os.path.abspath("sample.py")})  # noqa: S102
    import torch
    torch.cuda.synchronize()
    return 0


def one(args, mode, rec_path, key, i):
    d = tempfile.mkdtemp(prefix="oob-%s-%s-%d-" % (mode, key.replace(".", "_"), i))
    env = dict(os.environ)
    env.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    if mode == "nocache":
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "plain" if mode in
           ("nocache", "sanitizer") else mode, rec_path]
    if mode == "sanitizer":
        san = shutil.which("compute-sanitizer") or next(
            (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None)
        if san is None:
            return mode, key, "no-sanitizer", ""
        cmd = [san, "--tool", "memcheck", "--print-limit", "4"] + cmd
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True,
                           timeout=args.timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, out = "timeout", ""
    shutil.rmtree(d, ignore_errors=True)
    verdict = "passed" if rc == 0 else ("illegal_address" if "illegal memory access" in out
                                        else "rc=%s" % rc)
    if mode == "sanitizer":
        errs = [l for l in out.splitlines() if "Invalid __global__" in l or "ERROR SUMMARY" in l
                or "is out of bounds" in l or "at 0x" in l and "in " in l][:8]
        return mode, key, "%s in %.0fs" % (verdict, time.monotonic() - t0), "\n".join(errs)
    tail = "" if rc == 0 else "\n".join(out.strip().splitlines()[-2:])[:300]
    if mode == "bounds":
        b = [l[7:] for l in out.splitlines() if l.startswith("BOUNDS ")]
        b = json.loads(b[-1]) if b else None
        tag = "no-check" if not b else ("OOB" if b.get("out_of_bounds") else "clean")
        print("BOUNDS key=%s verdict=%s %s %s" % (key, verdict, tag, json.dumps(b)), flush=True)
        return mode, key, "%s/%s" % (verdict, tag), ""
    return mode, key, verdict, tail


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[3]))
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--keys", required=True)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--modes", default="plain,nocache,snap,snap_pool,harness,sanitizer")
    p.add_argument("--jobs", type=int, default=12)
    p.add_argument("--plain-all", action="store_true", help="also every --bounds-keys record "
                   "once in mode plain (the verdicts a plain process gives)")
    p.add_argument("--bounds-keys", default="", help="the keys of mode bounds ('all': every "
                   "record), else --keys")
    p.add_argument("--timeout", type=float, default=120)
    args = p.parse_args()
    keys = args.keys.split(",")
    if args.bounds_keys == "all":
        with open(args.corpus) as f:
            args.bounds_keys = ",".join(json.loads(line)["key"] for line in f)
    tmp = tempfile.mkdtemp(prefix="oob-records-")
    paths = {}
    with open(args.corpus) as f:
        for line in f:
            r = json.loads(line)
            if r["key"] in keys or args.bounds_keys == "all" or \
                    r["key"] in args.bounds_keys.split(","):
                paths[r["key"]] = os.path.join(tmp, r["key"] + ".json")
                with open(paths[r["key"]], "w") as g:
                    json.dump(r, g)
    jobs = []
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        for mode in args.modes.split(","):
            n = 1 if mode in ("sanitizer", "bounds") else args.repeat
            for key in (args.bounds_keys.split(",") if mode == "bounds" and args.bounds_keys
                        else keys):
                for i in range(n):
                    jobs.append(ex.submit(one, args, mode, paths[key], key, i))
        for key in (args.bounds_keys.split(",") if args.plain_all else []):
            jobs.append(ex.submit(one, args, "plain", paths[key], key, 100))
        results = [j.result() for j in jobs]
    table = {}
    for mode, key, verdict, tail in results:
        table.setdefault((mode, key), []).append(verdict)
        if mode == "plain":
            print("PLAIN key=%s verdict=%s" % (key, verdict))
        if tail:
            print("%s %s: %s\n    %s" % (mode, key, verdict, tail.replace("\n", "\n    ")))
    for (mode, key), vs in sorted(table.items()):
        counts = {v: vs.count(v) for v in sorted(set(vs))}
        print("RESULT mode=%s key=%s %s" % (mode, key, json.dumps(counts)))


if __name__ == "__main__":
    main()
