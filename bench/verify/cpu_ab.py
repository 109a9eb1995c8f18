#!/usr/bin/env python3
"""`kforge verify` of two trees on the CPU stand-in for Triton (tests/verify/fake_triton), the
runs interleaved (A B A B ...), each tree with its own harness: the samples' process CPU
(cpu_ms, every phase of the real run's process and its mutant runs), the mutant runs' wall
time, each phase's CPU summed, and the verdicts and flags of the two trees compared.

  python3 bench/verify/cpu_ab.py --tree base=/work/wt/base51:/work/wt/base51/build-dbg \\
      --tree new=.:build-dbg [--rounds 2] [--copies 3] [--workers 2] [--out DIR] [SAMPLE...]

TREE is NAME=SOURCE:BUILD (BUILD's apps/kforge/kforge and sandbox/kforge-sandbox-init run
SOURCE's harness). SAMPLE: directories of tests/verify/samples (default: those whose tests
pass, as the renamed TritonBench-G copies mostly do: weak tests whose skip-launch run survives,
strong ones whose kernel mutant batteries run). Figures are the samples' CPU, not wall time: the
shared development machine's load changes the walls, much less the CPU.
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
DEFAULT = ["pass", "parametrized", "seeded_draws", "triton_vector_add", "triton_autotune",
           "triton_vacuous", "triton_shim", "triton_key_inherited", "mutant_weak_loose",
           "mutant_weak_prefix", "mutant_weak_sorted", "mutant_reused_memory",
           "kmutant_strong_log", "kmutant_weak_add_zero", "kmutant_weak_scale_one",
           "kmutant_weak_row_sum_block", "timing_cpu_honest", "phase_baseline"]


def sample_lines(names, copies):
    lines = []
    for c in range(copies):
        for name in names:
            d = os.path.join(ROOT, "tests", "verify", "samples", name)

            def read(f):
                p = os.path.join(d, f)
                return open(p).read() if os.path.exists(p) else ""
            lines.append(json.dumps({"file": "%s@%d" % (name, c), "code": read("code.py"),
                                     "kernel_wrapper": read("wrapper.py"),
                                     "unitest_code": read("test.py")}))
    return lines


def find(build, *names):
    for n in names:
        p = os.path.join(build, n)
        if os.path.exists(p):
            return os.path.abspath(p)
    sys.exit("no %s under %s" % (names[0], build))


def run(tree, samples, workers, work, tag):
    name, src, build = tree
    d = os.path.join(work, "%s-%s" % (name, tag))
    os.makedirs(d)
    yaml = os.path.join(d, "kforge.yaml")
    with open(yaml, "w") as f:
        f.write("store:\n  path: %s/kforge.db\nverifier:\n" % d)
        f.write("  devices: [cpu]\n  cpu_workers: %d\n  mode: warm\n  timeout_s: 60\n" % workers)
        f.write("  python: /usr/bin/python3\n")
        f.write("  python_path: [%s]\n" % os.path.join(ROOT, "tests", "verify", "fake_triton"))
        f.write("  preload: [triton, triton.language]\n")
        f.write("  work_dir: %s/work\n" % d)
        f.write("  harness: %s\n" % os.path.join(os.path.abspath(src), "libs", "verify",
                                                 "harness", "kforge-harness.py"))
        f.write("  sandbox_init: %s\n" % find(build, "libs/verify/kforge-sandbox-init",
                                               "apps/kforge-sandbox-init/kforge-sandbox-init"))
    out = os.path.join(d, "verdicts.jsonl")
    exe = find(build, "apps/kforge/kforge")
    r0 = os.times()
    t0 = time.monotonic()
    p = subprocess.run([exe, "--config", yaml, "verify", samples, "--json", out],
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    r1 = os.times()
    if p.returncode not in (0, 1):
        sys.exit("%s: kforge verify exited %d\n%s" % (name, p.returncode, p.stderr[-3000:]))
    rows = [json.loads(line) for line in open(out)]
    return {"wall_s": wall, "children_cpu_s": (r1.children_user + r1.children_system) -
            (r0.children_user + r0.children_system), "rows": rows}


def summary(rows):
    s = {"cpu_ms": 0, "mutant_ms": 0, "phase_cpu": {}}
    for r in rows:
        s["cpu_ms"] += r.get("cpu_ms", 0) or 0
        s["mutant_ms"] += (r.get("phases") or {}).get("mutant", 0) or 0
        for ph, ms in (r.get("phases") or {}).items():
            s.setdefault("figures", {})[ph] = s.get("figures", {}).get(ph, 0) + (ms or 0)
        for ph, t in (r.get("phase_times") or {}).items():
            s["phase_cpu"][ph] = s["phase_cpu"].get(ph, 0) + (t.get("cpu_ms") or 0)
    return s


def outcomes(rows):
    return {r["key"]: (r["verdict"], tuple(sorted(r.get("flags") or []))) for r in rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", required=True, help="NAME=SOURCE:BUILD")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--copies", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", help="write the figures as JSON here")
    ap.add_argument("samples", nargs="*")
    args = ap.parse_args()
    trees = []
    for t in args.tree:
        name, rest = t.split("=", 1)
        src, build = rest.split(":", 1)
        trees.append((name, src, build))
    work = tempfile.mkdtemp(prefix="kforge-cpu-ab-")
    os.chmod(work, 0o755)
    samples = os.path.join(work, "samples.jsonl")
    with open(samples, "w") as f:
        f.write("\n".join(sample_lines(args.samples or DEFAULT, args.copies)) + "\n")
    got = {t[0]: [] for t in trees}
    for rnd in range(args.rounds):
        for t in (trees if rnd % 2 == 0 else list(reversed(trees))):
            res = run(t, samples, args.workers, work, str(rnd))
            s = summary(res["rows"])
            got[t[0]].append({"wall_s": res["wall_s"], "children_cpu_s": res["children_cpu_s"],
                              **s, "outcomes": outcomes(res["rows"])})
            print("round %d %-6s wall %6.1f s  all processes' CPU %6.1f s  samples' cpu_ms %7d"
                  "  mutant wall %6d ms" % (rnd, t[0], res["wall_s"], res["children_cpu_s"],
                                          s["cpu_ms"], s["mutant_ms"]), flush=True)
    n = sum(1 for _ in open(samples))
    print("\n%d samples; medians over %d rounds" % (n, args.rounds))
    for name, runs in got.items():
        med = {k: statistics.median(r[k] for r in runs)
               for k in ("wall_s", "children_cpu_s", "cpu_ms", "mutant_ms")}
        phases = sorted({p for r in runs for p in r["phase_cpu"]})
        print("%-6s wall %.1f s, all CPU %.1f s, sample cpu %.0f ms/sample, mutant wall %.0f "
              "ms/sample" % (name, med["wall_s"], med["children_cpu_s"], med["cpu_ms"] / n,
                             med["mutant_ms"] / n))
        figs = sorted({p for r in runs for p in r.get("figures", {})})
        print("       the pool's figures, ms/sample: " + ", ".join(
            "%s %.0f" % (p, statistics.median(r.get("figures", {}).get(p, 0) for r in runs) / n)
            for p in figs))
        print("       phase CPU ms/sample: " + ", ".join(
            "%s %.0f" % (p, statistics.median(r["phase_cpu"].get(p, 0) for r in runs) / n)
            for p in phases))
    names = list(got)
    for a in names:
        for b in names:
            if names.index(a) >= names.index(b):
                continue
            for i, (ra, rb) in enumerate(zip(got[a], got[b])):
                diff = [k for k in ra["outcomes"] if ra["outcomes"][k] != rb["outcomes"].get(k)]
                print("%s vs %s round %d: %d of %d differ %s" % (
                    a, b, i, len(diff), n, "; ".join("%s %s -> %s" % (
                        k, ra["outcomes"][k], rb["outcomes"].get(k)) for k in diff[:8])))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "cpu_ab.json"), "w") as f:
            json.dump({k: [{kk: vv for kk, vv in r.items() if kk != "outcomes"} for r in v]
                       for k, v in got.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
