#!/usr/bin/env python3
"""Where a labelled run's extra CPU and worker time go, phase by phase and sample by sample,
against the label-off run of the same samples (issue 54; label_cost.py gives the lock's side).

Reads `kforge verify --json FILE --full` lines (or scripts/gpu/timing-cost's verdicts-*.jsonl)
of two runs and pairs them by sample key. Prints:
  - per phase (test split into its compiles and the rest): CPU and wall seconds in each run,
    the difference and the ratio, over the samples that have the phase in both runs;
  - the same for the samples grouped by how often the lock's watcher armed sys.monitoring on
    their runner thread (gpu_lock.runner_arms: 0, 1-3, 4 or more), with the watcher's figures
    (nudges, step-outs, events that ran the checkpoint there, how long the events were on):
    a cost of the watcher shows as a larger ratio in the armed groups than in the unarmed one,
    a cost of the run as a whole (cold compiles, the machine) as the same ratio in every group;
  - the bounds replay per launch it checked (report.bounds.checked; the phase replays each
    launch four to seven times): the median extra CPU per launch, for the samples the label
    timed (with and without a CUDA graph) and the others, and where the replays' time went
    when the report says (phase_times.bounds.fill_ms: filling the allocator's free memory before
    each replay, fill_mib: how much it filled, launch_ms: the replays' launches, held_mib: what
    the allocator held as the check began, the rest of its wall: the replays' guards and
    comparisons, and reads: the device's answers read back, where the reports have them);
  - an attribution of the extra CPU: the speed phase's own, the watcher's (the armed groups'
    test runs above the unarmed group's ratio), the phases after the speed phase (bounds,
    skip_launch, control, battery), and what is left (the test's compiles, prepare).

  python3 bench/verify/phase_diff.py off.jsonl on.jsonl [--names off,on]
"""

import argparse
import statistics
import sys

from flags_repeat import load  # key -> verdict line, a clear error on a bad line

GROUPS = (("not armed", 0, 0), ("armed 1-3", 1, 3), ("armed 4+", 4, 10 ** 9))
AFTER_SPEED = ("differential", "cross_compile", "bounds", "mutant_prepare", "skip_launch",
               "control", "output_mutants", "kernel_battery")
WATCH = ("watch_nudges", "watch_stepped_out", "runner_arms", "runner_stepped_out",
         "runner_events", "runner_armed_ms")


def phases(r):
    """{phase: {"cpu": s, "wall": s}} of a verdict line, the test's compiles apart."""
    rep = r.get("report") if isinstance(r.get("report"), dict) else {}
    mutant = rep.get("mutant") if isinstance(rep.get("mutant"), dict) else {}
    out = {}
    for pt in (rep.get("phase_times") or {}, mutant.get("phase_times") or {}):
        for name, p in pt.items():
            if not isinstance(p, dict):
                continue
            cpu, wall = (p.get("cpu_ms") or 0) / 1e3, (p.get("wall_ms") or 0) / 1e3
            if name == "test" and "compile_cpu_ms" in p:
                ccpu, cwall = p["compile_cpu_ms"] / 1e3, (p.get("compile_ms") or 0) / 1e3
                out["test compiles"] = {"cpu": ccpu, "wall": cwall}
                out["test runs"] = {"cpu": cpu - ccpu, "wall": wall - cwall}
            elif name == "test":
                out["test runs"] = {"cpu": cpu, "wall": wall}
            else:
                out[name] = {"cpu": cpu, "wall": wall}
    return out


def pairs(off, on):
    return [(k, off[k], on[k]) for k in on if k in off]


def totals(rows):
    """{phase: [off cpu, on cpu, off wall, on wall, samples]} over the samples with the phase
    in both runs (the speed phase: the labelled run's alone)."""
    out = {}
    for _, a, b in rows:
        pa, pb = phases(a), phases(b)
        for name in set(pa) | set(pb):
            if name != "speed" and (name not in pa or name not in pb):
                continue
            t = out.setdefault(name, [0.0, 0.0, 0.0, 0.0, 0])
            x, y = pa.get(name, {"cpu": 0, "wall": 0}), pb.get(name, {"cpu": 0, "wall": 0})
            t[0] += x["cpu"]
            t[1] += y["cpu"]
            t[2] += x["wall"]
            t[3] += y["wall"]
            t[4] += 1
    return out


def order(name):
    known = ["prepare", "test compiles", "test runs", "speed"] + list(AFTER_SPEED)
    return (known.index(name) if name in known else len(known), name)


def table(t, names):
    print("%-16s %7s %9s %9s %8s %6s %9s" % ("phase", "samples", "cpu " + names[0],
                                               "cpu " + names[1], "cpu +s", "ratio", "wall +s"))
    for name in sorted(t, key=order):
        a, b, wa, wb, n = t[name]
        print("%-16s %7d %9.1f %9.1f %+8.1f %6s %+9.1f" % (
            name, n, a, b, b - a, "%.2f" % (b / a) if a else "-", wb - wa))


def lock(r):
    rep = r.get("report") if isinstance(r.get("report"), dict) else {}
    return rep.get("gpu_lock") or {}


def by_watcher(rows, names):
    """Per group of runner_arms: the test's runs, its compiles and bounds, ratio on/off."""
    print("\nby the watcher's arms on the runner thread (a watcher's cost: a larger ratio in the "
          "armed groups than in the unarmed one):")
    print("%-10s %7s %11s %11s %11s  %s" % ("group", "samples", "test runs", "compiles", "bounds",
                                            "watcher (sums)"))
    ratios = {}
    for label, lo, hi in GROUPS:
        sub = [row for row in rows if lo <= (lock(row[2]).get("runner_arms") or 0) <= hi]
        if not sub:
            continue
        t = totals(sub)
        cells = []
        for name in ("test runs", "test compiles", "bounds"):
            a, b = t.get(name, [0, 0])[:2]
            ratios.setdefault(label, {})[name] = (b / a) if a else None
            cells.append("%.2f (%+.1f)" % (b / a, b - a) if a else "-")
        w = {k: sum(lock(row[2]).get(k) or 0 for row in sub) for k in WATCH}
        print("%-10s %7d %11s %11s %11s  %s" % (
            label, len(sub), cells[0], cells[1], cells[2],
            ", ".join("%s %d" % (k, v) for k, v in w.items())))
    return ratios


def timed_kind(r):
    rep = r.get("report") if isinstance(r.get("report"), dict) else {}
    speed = rep.get("speed") or {}
    if not speed.get("timed"):
        return "not timed"
    graph = any("cuda_graph" in k for k in speed.get("kernels") or [] if isinstance(k, dict))
    return "timed, CUDA graph" if graph else "timed, no graph"


def bounds_figures(r):
    """Where a sample's bounds replay spent its time: its phase times' figures (fill_ms,
    fills, fill_mib, launch_ms, held_mib, held_segments), {} where the report has none."""
    rep = r.get("report") if isinstance(r.get("report"), dict) else {}
    got = (rep.get("phase_times") or {}).get("bounds")
    return got if isinstance(got, dict) else {}


def rest(p, b):
    """The bounds phase's wall (ms) outside its fills and launches: its guards, comparisons
    and the rest of its judgements (judge_ms where the report has it, since issue 54's
    batched reads; the launches' waits are in it since then)."""
    return p["wall"] * 1e3 - (b.get("fill_ms") or 0) - (b.get("launch_ms") or 0)


def bounds_per_launch(rows):
    print("\nthe bounds replay per launch checked (median over the samples, ms):")
    groups = {}
    for _, a, b in rows:
        pa, pb = phases(a).get("bounds"), phases(b).get("bounds")
        ba = (a.get("report") or {}).get("bounds") or {}
        bb = (b.get("report") or {}).get("bounds") or {}
        n = bb.get("checked")
        if not pa or not pb or not n or ba.get("checked") != n:
            continue
        g = groups.setdefault(timed_kind(b), [])
        fill = None
        ba, bb = bounds_figures(a), bounds_figures(b)
        if "fill_ms" in ba and "fill_ms" in bb:
            fill = ((bb["fill_ms"] - ba["fill_ms"]) / n,
                    ((bb.get("launch_ms") or 0) - (ba.get("launch_ms") or 0)) / n,
                    (bb.get("held_mib") or 0) - (ba.get("held_mib") or 0),
                    (rest(pb, bb) - rest(pa, ba)) / n,
                    (ba.get("reads"), bb.get("reads"), n))
        g.append(((pb["cpu"] - pa["cpu"]) * 1e3 / n, pa["cpu"] * 1e3 / n, pb["cpu"] * 1e3 / n,
                  fill, (bb.get("fill_mib") or 0) - (ba.get("fill_mib") or 0)))
    if not groups:
        print("  (no report.bounds.checked in both runs: timing-cost's verdicts keep it since "
              "issue 54)")
    for kind in sorted(groups):
        g = groups[kind]
        med = statistics.median
        line = "  %-18s %4d samples: cpu %+.0f a launch (%.0f -> %.0f)" % (
            kind, len(g), med(x[0] for x in g), med(x[1] for x in g), med(x[2] for x in g))
        fills = [x[3] for x in g if x[3] is not None]
        if fills:
            line += ("; wall: filling free memory %+.0f a launch, the replays' launches %+.0f; "
                     "MiB filled %+.0f, held as it began %+.0f a sample") % (
                med(f[0] for f in fills), med(f[1] for f in fills), med(x[4] for x in g),
                med(f[2] for f in fills))
            line += "; the rest (guards, comparisons: judge_ms) %+.0f a launch" % med(
                f[3] for f in fills)
            reads = [f[4] for f in fills if f[4][0] is not None and f[4][1] is not None]
            if reads:
                line += "; device reads a launch %.1f -> %.1f" % (
                    med(r[0] / r[2] for r in reads), med(r[1] / r[2] for r in reads))
        print(line)


def attribution(t, ratios, rows):
    """The labelled run's extra CPU by cause (see the module's docstring)."""
    extra = sum(v[1] - v[0] for v in t.values())
    speed = t.get("speed", [0, 0])[1]
    after = sum(t[n][1] - t[n][0] for n in AFTER_SPEED if n in t)
    base = (ratios.get("not armed") or {}).get("test runs")
    watcher = 0.0
    if base:
        for label, lo, hi in GROUPS[1:]:
            sub = [row for row in rows if lo <= (lock(row[2]).get("runner_arms") or 0) <= hi]
            a, b = totals(sub).get("test runs", [0, 0])[:2]
            watcher += max(0.0, b - a * base)
    rest = extra - speed - after - watcher
    print("\nthe extra CPU, %+.1f s: the speed phase's own %.1f, the phases after it %+.1f, the "
          "watcher (armed samples' test runs above the unarmed ratio %s) %+.1f, the rest (the "
          "test's compiles and runs at the run's ratio, prepare) %+.1f" % (
              extra, speed, after, "%.2f" % base if base else "-", watcher, rest))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("off", help="the label-off run")
    ap.add_argument("on", help="the labelled run")
    ap.add_argument("--names", default="off,on")
    args = ap.parse_args()
    names = args.names.split(",")
    if len(names) != 2:
        sys.exit("--names: two names, comma-separated")
    rows = pairs(load(args.off), load(args.on))
    if not rows:
        sys.exit("no sample key in both %s and %s" % (args.off, args.on))
    print("%s against %s: %d samples in both" % (names[1], names[0], len(rows)))
    t = totals(rows)
    table(t, names)
    ratios = by_watcher(rows, names)
    bounds_per_launch(rows)
    attribution(t, ratios, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
