"""Whether the out-of-bounds check gives the same answer twice (issue 52, item 4).

Runs the harness's real run and then the guard-zone check (kforge_harness/bounds.py) on the four
TritonBench-G records whose `out_of_bounds` flag changed between two runs of the same corpus
(bench/verify/oob_repeat.jsonl: unchanged copies of their records from
TritonBench_G_gold_tests.jsonl, thunlp/TritonBench, Apache-2.0), each in a fresh process, in
four ways:

  sized/plain        the check as shipped: zones sized from each launch's reach
  sized/neighbours   the same with other memory put around the replay first: 48 tensors of
                     random sizes and random bytes, every other one freed again
  fixed/plain        zones of a fixed 256 KiB (as before), for comparison
  fixed/neighbours   the same with the other memory

and prints per record whether the two sized runs agree (what the check must do) and whether the
two fixed ones did. Needs the GPU, torch and triton, no build; about a minute on an H200.

  python3 bench/verify/oob_repeat.py --out "$OUT"   (results in $OUT/oob_repeat.json)
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
MODES = ("sized/plain", "sized/neighbours", "fixed/plain", "fixed/neighbours")


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
    from kforge_harness import kernel_replay
    from kforge_harness.phases import bounds_replay
    from kforge_harness.runner import run_sample
    if mode.startswith("fixed/"):
        kernel_replay.zone_sizes = lambda r, sized: (kernel_replay.GUARD, kernel_replay.LIST_GUARD)
    report = {}
    req = {"code": rec["code"], "kernel_wrapper": rec["kernel_wrapper"],
           "unitest_code": rec["unitest_code"], "kernel_mutants": {"count": 8, "time_s": 30},
           "bounds_check": True}
    sample = run_sample(req, report)
    keep = neighbours(torch) if mode.endswith("/neighbours") else []
    if sample is not None and report.get("verdict") == "passed":
        report.update(bounds_replay.run(req, sample) or {})
    del keep
    print("RESULT " + json.dumps({"verdict": report.get("verdict"),
                                  "detail": (report.get("detail") or "")[:300],
                                  "bounds": report.get("bounds")}), flush=True)
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
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        jobs = [ex.submit(one, m, k, path, args.timeout) for k, path in paths.items()
                for m in MODES]
        results = [j.result() for j in jobs]
    table = {}
    for mode, key, res in results:
        table.setdefault(key, {})[mode] = res
    summary = {}
    for key, runs in sorted(table.items()):
        for zones in ("sized", "fixed"):
            a, b = flag(runs["%s/plain" % zones]), flag(runs["%s/neighbours" % zones])
            same = a == b
            summary.setdefault(key, {})[zones] = {"same": same, "plain": a, "neighbours": b}
            print("%s key=%s zones=%s plain=%s neighbours=%s" % (
                "MATCH" if same else "DIFFER", key, zones, json.dumps(a), json.dumps(b)))
    ok = all(s["sized"]["same"] for s in summary.values())
    print("SIZED_ZONES_REPEAT %s (%d records, %.0f s)" % ("yes" if ok else "NO", len(summary),
                                                          time.monotonic() - t0))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "oob_repeat.json"), "w") as f:
        json.dump({"summary": summary, "runs": table, "wall_s": time.monotonic() - t0}, f,
                  indent=1)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
