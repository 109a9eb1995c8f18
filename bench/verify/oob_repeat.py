"""Whether the out-of-bounds check gives the same answer twice (issue 52, item 4).

Runs the harness's real run and then the guard-zone check (kforge_harness/bounds.py) on the four
TritonBench-G records whose `out_of_bounds` flag changed between two runs of the same corpus
(bench/verify/oob_repeat.jsonl: unchanged copies of their records from
TritonBench_G_gold_tests.jsonl, thunlp/TritonBench, Apache-2.0), each in a fresh process, in
four ways:

  now/plain          the check as shipped: zones sized from each launch's reach, the arena
                     between margins (kernel_replay.MARGIN), free memory one byte in every
                     replay (bounds.FREE_BYTE)
  now/neighbours     the same with other memory put around the replay first: 48 tensors of
                     random sizes and random bytes, every other one freed again
  before/plain       the check of the last stop: no margins, free memory filled with the
                     zones' byte of each replay
  before/neighbours  the same with the other memory

and prints per record whether the two runs of the check as shipped agree (what it must do) and
whether the two of the last stop's did. With --sanitize KEY[,KEY] (default kv_cache_filling.py)
it also runs that record's code and test plainly under `compute-sanitizer --tool memcheck` with
PyTorch's caching allocator off (each tensor its own allocation, so a read past one is an
error the sanitizer names, with its distance from the nearest allocation): what the kernel
really reads. Needs the GPU, torch and triton, no build; under two minutes on an H200.

  python3 bench/verify/oob_repeat.py --out "$OUT"   (results in $OUT/oob_repeat.json and
                                                     $OUT/sanitizer-KEY.txt)
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
CORPUS = os.path.join(HERE, "oob_repeat.jsonl")
MODES = ("now/plain", "now/neighbours", "before/plain", "before/neighbours")
SANITIZER = "/usr/local/cuda/bin/compute-sanitizer"


def neighbours(torch):
    """Other memory around whatever the check allocates next: live tensors of random bytes and
    freed holes between them, as another sample's or an earlier phase's tensors would be."""
    g = torch.Generator().manual_seed(int(time.time() * 1000) % 100003)
    keep = []
    for i in range(48):
        n = int(torch.randint(16 << 10, 8 << 20, (1,), generator=g))
        t = torch.randint(0, 256, (n,), dtype=torch.uint8, generator=g).cuda()
        if i % 2:
            keep.append(t)
    return keep


def child(mode, record_path):
    with open(record_path) as f:
        rec = json.load(f)
    sys.path.insert(0, HARNESS)
    import torch
    from kforge_harness import bounds, kernel_replay
    from kforge_harness.phases import bounds_replay
    from kforge_harness.runner import run_sample
    if mode.startswith("before/"):
        kernel_replay.MARGIN = 0

        def replay(rec, launch_raw, sync, fill, fill_for=None, keep=True):
            bounds._fill_free(fill)  # the last stop's: free memory held the zones' byte
            launch = kernel_replay.run_launch(rec, "same", bounds.SEED, rec.jit, launch_raw,
                                              sync, fill=fill, fill_for=fill_for,
                                              guard_lists=True, sized=True)
            return launch.guards_written(), launch.outputs()
        bounds._replay = replay
    report = {}
    req = {"code": rec["code"], "kernel_wrapper": rec["kernel_wrapper"],
           "unitest_code": rec["unitest_code"], "kernel_mutants": {"count": 8, "time_s": 30},
           "bounds_check": True}
    sample = run_sample(req, report)
    keep = neighbours(torch) if mode.endswith("/neighbours") else []
    if sample is not None and report.get("verdict") == "passed":
        report.update(bounds_replay.run(req, sample) or {})
    del keep
    records = []
    if sample is not None and sample["state"].replays is not None:
        for r in sample["state"].replays.records:
            records.append({"kernel": r.kernel, "reach": kernel_replay.reach(r),
                            "zones": list(kernel_replay.zone_sizes(r, True)),
                            "storages": [i.get("nbytes") for i in r.storages.values()]})
    print("RESULT " + json.dumps({"verdict": report.get("verdict"),
                                  "detail": (report.get("detail") or "")[:300],
                                  "bounds": report.get("bounds"), "records": records},
                                 default=str), flush=True)
    return 0


def one(mode, key, path, timeout):
    d = tempfile.mkdtemp(prefix="oob-repeat-")
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, path],
                           cwd=d, capture_output=True, text=True, timeout=timeout)
        out = p.stdout + p.stderr
        lines = [line[7:] for line in p.stdout.splitlines() if line.startswith("RESULT ")]
        if lines:
            return mode, key, json.loads(lines[-1])
        died = "illegal memory access" in out or "illegal address" in out
        return mode, key, {"verdict": "died", "fault": died,
                           "tail": "\n".join(out.strip().splitlines()[-3:])[:400]}
    except subprocess.TimeoutExpired:
        return mode, key, {"verdict": "timeout"}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def sanitize(key, path, out_dir, timeout):
    """The record's code and test run plainly under compute-sanitizer's memcheck, PyTorch's
    caching allocator off: (errors found, the report's first lines), written to
    out_dir/sanitizer-KEY.txt."""
    if not os.path.exists(SANITIZER):
        return key, {"skipped": "no %s" % SANITIZER}
    with open(path) as f:
        rec = json.load(f)
    d = tempfile.mkdtemp(prefix="oob-sanitize-")
    script = os.path.join(d, "sample.py")
    with open(script, "w") as f:
        f.write(rec["code"] + "\n" + rec["kernel_wrapper"] + "\n" + rec["unitest_code"] + "\n")
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    try:
        p = subprocess.run([SANITIZER, "--tool", "memcheck", "--print-limit", "40",
                            sys.executable, script], cwd=d, env=env, capture_output=True,
                           text=True, timeout=timeout)
        text = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        text = "timeout after %.0f s\n%s" % (timeout, (e.stdout or b"")[-4000:])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "sanitizer-%s.txt" % key), "w") as f:
        f.write(text)
    lines = [ln for ln in text.splitlines() if ln.startswith("=========")]
    summary = [ln for ln in lines if "ERROR SUMMARY" in ln]
    return key, {"summary": summary[-1] if summary else None,
                 "first": [ln for ln in lines if "Invalid" in ln or "Address" in ln or
                           "bytes after" in ln or "bytes before" in ln][:12]}


def flag(res):
    """What the check concluded, without its timings: the part that must repeat."""
    b = res.get("bounds")
    if b is None:
        return {"verdict": res.get("verdict"), "bounds": None}
    return {"verdict": res.get("verdict"), "out_of_bounds": b.get("out_of_bounds"),
            "writes": b.get("writes"), "reads": b.get("reads"),
            "fault": bool(b.get("fault")), "checked": b.get("checked")}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[3]))
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default=CORPUS)
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--jobs", type=int, default=16)
    p.add_argument("--timeout", type=float, default=70)
    p.add_argument("--sanitize", default="kv_cache_filling.py",
                   help="records run under compute-sanitizer (comma list; empty: none)")
    args = p.parse_args()
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="oob-repeat-records-")
    paths = {}
    with open(args.corpus) as f:
        for line in f:
            r = json.loads(line)
            paths[r["key"]] = os.path.join(tmp, r["key"] + ".json")
            with open(paths[r["key"]], "w") as g:
                json.dump(r, g)
    with cf.ThreadPoolExecutor(args.jobs + len(args.sanitize.split(","))) as ex:
        san = [ex.submit(sanitize, k, paths[k], args.out, args.timeout + 30)
               for k in args.sanitize.split(",") if k in paths]
        jobs = [ex.submit(one, m, k, path, args.timeout) for k, path in paths.items()
                for m in MODES]
        results = [j.result() for j in jobs]
        sanitized = dict(j.result() for j in san)
    table = {}
    for mode, key, res in results:
        table.setdefault(key, {})[mode] = res
    summary = {}
    for key, runs in sorted(table.items()):
        for check in ("now", "before"):
            a, b = flag(runs["%s/plain" % check]), flag(runs["%s/neighbours" % check])
            same = a == b
            summary.setdefault(key, {})[check] = {"same": same, "plain": a, "neighbours": b}
            print("%s key=%s check=%s plain=%s neighbours=%s" % (
                "MATCH" if same else "DIFFER", key, check, json.dumps(a), json.dumps(b)))
    for key, s in sorted(sanitized.items()):
        print("SANITIZER key=%s %s" % (key, json.dumps(s)))
    ok = all(s["now"]["same"] for s in summary.values())
    print("OOB_CHECK_REPEATS %s (%d records, %.0f s)" % ("yes" if ok else "NO", len(summary),
                                                         time.monotonic() - t0))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "oob_repeat.json"), "w") as f:
        json.dump({"summary": summary, "runs": table, "sanitizer": sanitized,
                   "wall_s": time.monotonic() - t0}, f, indent=1, default=str)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
