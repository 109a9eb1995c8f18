#!/usr/bin/env python3
"""What the out-of-bounds check (kforge_harness/bounds.py) costs per sample on the GPU, with many
samples at once as the pool runs them, and whether its findings change (issue 51/52: the
throughput of `kforge verify` against 5eddfad).

Each sample of SAMPLES (the renamed TritonBench-G copies, `kforge verify` input lines) is run
by the harness's runner in a child process of its own (its real run, the launches recorded), then
bounds.check is timed on its records --reps times (process CPU, every thread, and wall). Children
run --jobs at a time (the pool's 16 workers on an H200 share the GPU's memory bandwidth). Modes:

  this          this tree's check (the arenas of a record's replays kept: HeldArenas; the
                margins compared in one pass of 64-bit words)
  main          this tree's check with each replay's arena freed after it (the poisoning of
                free memory before each replay fills it again) and the margins compared with a
                min and a max of bytes: the check of main at 945394f
  base          --base DIR's harness (a `git archive 5eddfad`, scripts/gpu/verify-ab's
                .bench-data/baseline): no margins, zones of 256 KiB
  nomargin      this tree's check with kernel_replay.MARGIN = 0 (what the margins cost)

Prints per mode the bounds check's CPU and wall per sample (mean, median) and the samples whose
finding (out_of_bounds, which kernels wrote or read) differs from mode `main`; JSON to
$OUT/bounds_cost.json. Needs torch and triton (GPU box), no build.

  python3 bench/verify/bounds_cost.py --samples SAMPLES.jsonl [--limit 32] [--jobs 16] \\
      [--reps 2] [--modes this,main,base] [--base .bench-data/baseline] [--out "$OUT"]

About a minute on an H200 with the defaults (36 samples, three modes; the first mode's compiles
fill the Triton cache the others read).
"""

import argparse
import concurrent.futures as cf
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "..", "libs", "verify", "harness")


def as_main(bounds, kernel_replay):
    """This tree's check as main had it (945394f): no arena kept between replays, margins
    compared byte by byte with two reductions."""
    import contextlib
    bounds.HeldArenas = contextlib.nullcontext

    def margin_written(base, lo, hi, held):
        if isinstance(base, list):
            seg = base[lo:hi]
            if seg.count(held) == len(seg):
                return False
            nan = held != held
            return any(not (v == held or (nan and v != v)) for v in seg)
        seg = base[lo:hi]
        return bool(seg.min() != held) or bool(seg.max() != held)
    kernel_replay._margin_written = margin_written


def child(mode, harness, lines_path, reps):
    sys.path.insert(0, harness)
    try:
        import torch  # noqa: F401 - the GPU box's (the CPU stand-in for Triton runs without)
    except ImportError:
        pass
    from kforge_harness import bounds, kernel_replay, runner
    from kforge_harness.gpusync import synchronize
    if mode == "main":
        as_main(bounds, kernel_replay)
    if mode == "nomargin":
        kernel_replay.MARGIN = 0
    out = []
    for line in open(lines_path):
        rec = json.loads(line)
        req = {"code": rec["code"], "kernel_wrapper": rec.get("kernel_wrapper") or "",
               "unitest_code": rec.get("unitest_code") or "", "bounds_check": True,
               "kernel_mutants": {"count": 8, "time_s": 30}}
        report = {}
        row = {"key": rec.get("key") or rec.get("file")}
        try:
            sample = runner.run_sample(req, report)
        except BaseException as e:  # noqa: B902 - the sample's own
            sample, row["error"] = None, "%s: %s" % (type(e).__name__, str(e)[:200])
        state = sample["state"] if sample is not None else None
        if state is None or report.get("verdict") != "passed" or state.replays is None or \
                not state.replays.records:
            row["skipped"] = report.get("verdict") or "no records"
            out.append(row)
            continue
        cpu, wall, found = [], [], None
        for _ in range(reps):
            t0, c0 = time.monotonic(), time.process_time()
            res = bounds.check(state.replays.records, state.launch_raw, synchronize)
            wall.append((time.monotonic() - t0) * 1000.0)
            cpu.append((time.process_time() - c0) * 1000.0)
            found = {"out_of_bounds": res.get("out_of_bounds"),
                     "writes": sorted({w["kernel"] for w in res.get("writes", [])}),
                     "reads": sorted({r["kernel"] for r in res.get("reads", [])}),
                     "fault": bool(res.get("fault"))}
            if res.get("fault"):
                break
        row.update(cpu_ms=cpu, wall_ms=wall, found=found,
                   records=len(state.replays.records))
        out.append(row)
    print("RESULT " + json.dumps(out), flush=True)
    return 0


def run_chunk(mode, harness, chunk, reps, timeout):
    d = tempfile.mkdtemp(prefix="bounds-cost-")
    path = os.path.join(d, "lines.jsonl")
    with open(path, "w") as f:
        f.write("".join(chunk))
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, harness,
                            path, str(reps)], cwd=d, capture_output=True, text=True,
                           timeout=timeout)
        for line in p.stdout.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[7:])
        return [{"key": "?", "error": (p.stdout + p.stderr)[-400:]}]
    except subprocess.TimeoutExpired:
        return [{"key": "?", "error": "timeout"}]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", required=True)
    ap.add_argument("--limit", type=int, default=32)
    ap.add_argument("--extra", default=os.path.join(HERE, "oob_repeat.jsonl"),
                    help="records run besides the first --limit (default: the four whose "
                    "out_of_bounds flag changed between runs, bench/verify/oob_repeat.jsonl)")
    ap.add_argument("--skip", default="attention_fwd_triton1,chunk_retention,chunk_delta_fwd",
                    help="samples left out (minutes of compiles): names, comma-separated")
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--modes", default="this,main,base")
    ap.add_argument("--base", default=".bench-data/baseline")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out")
    a = ap.parse_args()
    skip = [s for s in a.skip.split(",") if s]
    lines = [line for line in open(a.samples)
             if not any(s in json.loads(line).get("file", "") for s in skip)][:a.limit]
    if a.extra:
        lines += [line for line in open(a.extra) if line.strip()]
    chunks = [[line] for line in lines]  # one sample a process, as the harness runs them
    results = {}
    for mode in a.modes.split(","):
        harness = os.path.join(os.path.abspath(a.base), "libs", "verify", "harness") \
            if mode == "base" else HARNESS
        if not os.path.isdir(harness):
            print("%s: no harness at %s" % (mode, harness))
            continue
        t0 = time.monotonic()
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            rows = [r for part in ex.map(lambda c, m=mode, h=harness: run_chunk(
                m, h, c, a.reps, a.timeout), chunks) for r in part]
        results[mode] = {"rows": rows, "wall_s": time.monotonic() - t0}
        timed = [r for r in rows if r.get("cpu_ms")]
        first = [r["cpu_ms"][0] for r in timed]
        later = [c for r in timed for c in r["cpu_ms"][1:]]
        walls = [r["wall_ms"][0] for r in timed]
        if not timed:
            print("%-8s no sample timed: %s" % (mode, [r.get("error") for r in rows][:3]))
            continue
        print("%-8s %3d samples timed (%d records), %.0f s in all: bounds CPU ms/sample first "
              "check mean %.0f median %.0f, later checks mean %s; wall mean %.0f median %.0f"
              % (mode, len(timed), sum(r["records"] for r in timed),
                 results[mode]["wall_s"], statistics.mean(first), statistics.median(first),
                 "%.0f" % statistics.mean(later) if later else "-", statistics.mean(walls),
                 statistics.median(walls)), flush=True)
    ref = {r["key"]: r.get("found") for r in results.get("main", {}).get("rows", [])}
    for mode, res in results.items():
        if mode == "main" or not ref:
            continue
        diff = [r["key"] for r in res["rows"] if r.get("found") != ref.get(r["key"])]
        print("%s vs main: %d of %d samples found differently %s" % (
            mode, len(diff), len(res["rows"]), diff[:10]))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "bounds_cost.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
