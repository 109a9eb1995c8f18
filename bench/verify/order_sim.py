#!/usr/bin/env python3
"""The verifier's dispatch order (verifier.order; docs/VERIFIER.md, "Dispatch order"): how well
the predicted cost (libs/verify/src/cost.cpp) ranks a measured run's samples, and what each order
would have made of the run's wall time.

The measured durations come either from a committed durations file (--data, e.g.
bench/verify/data/order-h200.tsv: each record's index, key, predicted cost and its features,
and per run its measured duration, CPU and compile seconds; no kernel source), or from a run's
verdict lines (--verdicts: kforge verify --json or --full, index and duration_ms per record)
with the predicted costs of the same records (kforge verify --plan: --plan FILE, or --kforge BIN
--samples FILE). Prints:
  - Spearman's rank correlation of predicted cost and measured duration;
  - the wall time a greedy pool of --workers workers would take with the measured durations,
    taking the records in input order, in cost order (longest predicted first), in early_long
    order (the few predicted long ones early and spread, planned exactly as kforge verify plans
    it: plan_early_long below mirrors plan_dispatch in cost.cpp), in true order (longest measured
    first), and the bound sum/workers;
  - the same with a crude coupling between samples (--alpha): while H heavy samples (measured
    --heavy-s seconds or more: long compiles) run, every running sample progresses at
    (1 + alpha H_input) / (1 + alpha H), H_input the time-averaged H of the input order's own
    replay, so input order keeps its measured durations on average. --calibrate fits alpha to
    the H200's figure of stop 64: in cost order the 16 longest predicted took 375.7 s summed,
    in input order 340.9 s (docs/BENCHMARKS.md, "Dispatch order").
With --fit, also the least-squares fit of the log-linear model's coefficients on the plan's
features (what cost.cpp holds), in-sample and cross-validated by sample name (5 folds over the
name before '@', so the renamed copies of one kernel fall in one fold).

  python3 bench/verify/order_sim.py --data bench/verify/data/order-h200.tsv [--run off|on]
  python3 bench/verify/order_sim.py --verdicts V.jsonl (--plan P.jsonl | --kforge BIN --samples S)
  python3 bench/verify/order_sim.py --make-data OUT.tsv --verdicts OFF.jsonl --verdicts-on ON.jsonl
                                    (--plan P.jsonl | --kforge BIN --samples S.jsonl)
  python3 bench/verify/order_sim.py --compare NAME=V.jsonl NAME2=V2.jsonl [--times T]
                                    [--kforge BIN --samples S.jsonl]
      (runs of the same samples in different orders: wall, summed durations, tail, durations by
       predicted rank, verdicts and flags; scripts/gpu/timing-cost's RUN@ORDER runs)
  python3 bench/verify/order_sim.py --data FILE --check-plan --kforge BIN
      (kforge verify --plan's costs and orders for records with the file's features, against
       this script's: exits 1 on a difference)
  common: [--workers 16] [--fit] [--top 12] [--share 0.06] [--busy 0.5] [--alpha A | --calibrate]

No GPU: it only reads files (and runs `kforge verify --plan`, which runs nothing).
"""

import argparse
import heapq
import json
import math
import os
import random
import subprocess
import sys
import tempfile

FEATURES = ("dots", "tl_calls", "jit", "constexprs", "test_bytes")
# kforge's defaults (cost.hpp, EarlyLong).
LONG_SHARE = 0.06
BUSY_SHARE = 0.5
# Stop 64 on the H200: the 16 longest predicted samples' summed durations in cost order against
# input order (docs/BENCHMARKS.md, "Dispatch order").
COUPLED_TOP, COUPLED_RATIO = 16, 375.7 / 340.9


def read_jsonl(path):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}: line {n}: not JSON: {e}")
    return out


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def pearson(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    den = math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
    return num / den if den else 0.0


def spearman(a, b):
    return pearson(ranks(a), ranks(b))


# ---------------------------------------------------------------------------------------------
# Orders (cost.cpp's plan_dispatch)

def cost_order(idx, cost):
    """Longest predicted first, ties in input order."""
    return sorted(idx, key=lambda i: -cost[i])


def early_long_params(idx, cost, workers, share=LONG_SHARE, busy=BUSY_SHARE):
    """cost.cpp's early_long figures: (set of long records, threshold s, at once, spacing)."""
    workers = max(1, workers)
    long_s = share * sum(cost[i] for i in idx) / workers
    at_once = max(1, int(busy * workers))
    spacing = (workers + at_once - 1) // at_once
    return {i for i in idx if cost[i] > long_s}, long_s, at_once, spacing


def plan_early_long(idx, cost, workers, share=LONG_SHARE, busy=BUSY_SHARE):
    """cost.cpp's early_long submission order: the long records (longest first) at positions 0,
    spacing, 2 spacing, ... among the others in input order (those after the others once
    they run out). Returns (order, set of long records, threshold s, at once, spacing)."""
    is_long, long_s, at_once, spacing = early_long_params(idx, cost, workers, share, busy)
    longs = sorted(is_long, key=lambda i: (-cost[i], i))
    others = [i for i in idx if i not in is_long]
    order, nl, no = [], 0, 0
    while len(order) < len(idx):
        take_long = nl < len(longs) and (no == len(others) or len(order) % spacing == 0)
        if take_long:
            order.append(longs[nl])
            nl += 1
        else:
            order.append(others[no])
            no += 1
    return order, is_long, long_s, at_once, spacing


# ---------------------------------------------------------------------------------------------
# The pool's replay

def simulate(order, duration, workers):
    """The wall time of a greedy pool: each record goes to the first free worker."""
    free = [0.0] * workers
    for i in order:
        t = heapq.heappop(free)
        heapq.heappush(free, t + duration[i])
    return max(free)


def simulate_coupled(order, duration, workers, heavy, alpha, h_ref, pool=None):
    """A greedy pool where every running sample progresses at (1 + alpha h_ref) / (1 + alpha H),
    H the number of heavy samples running. With `pool` = (long records, at once, spacing,
    capacity), the pool's early_long dispatch (pool_samples.hpp): of the first `capacity`
    records not yet started, a free worker takes the first long one when fewer than `at once`
    long ones run and `spacing` dispatches passed since the last long one, else the first other
    one, else the first. Returns (wall, {record: its stretched duration}, time-averaged H,
    {record: its start})."""
    running = {}  # record -> [start, work left in measured seconds]
    queue = list(order)
    window, qi, t, h_area = [], 0, 0.0, 0.0
    took, starts = {}, {}
    dispatched, last_long = 0, -(10 ** 9)
    is_long, at_once, spacing, capacity = pool or (set(), 0, 1, len(queue) + 1)
    while qi < len(queue) or window or running:
        while (window or qi < len(queue)) and len(running) < workers:
            while len(window) < capacity and qi < len(queue):
                window.append(queue[qi])
                qi += 1
            pick = None
            if pool:
                n_long = sum(1 for i in running if i in is_long)
                if n_long < at_once and dispatched - last_long >= spacing:
                    pick = next((i for i in window if i in is_long), None)
                if pick is None:
                    pick = next((i for i in window if i not in is_long), None)
            if pick is None:
                pick = window[0]
            window.remove(pick)
            if pick in is_long:
                last_long = dispatched
            dispatched += 1
            running[pick] = [t, duration[pick]]
            starts[pick] = t
        h = sum(1 for i in running if i in heavy)
        rate = (1 + alpha * h_ref) / (1 + alpha * h)
        first = min(running, key=lambda i: (running[i][1], i))
        dt = running[first][1] / rate
        for i in running:
            running[i][1] -= dt * rate
        t += dt
        h_area += h * dt
        took[first] = t - running[first][0]
        del running[first]
        for i in [i for i in running if running[i][1] <= 1e-9]:
            took[i] = t - running[i][0]
            del running[i]
    return t, took, (h_area / t if t else 0.0), starts


def coupled(order, duration, workers, heavy, alpha, h_ref, pool=None):
    wall, took, _, _ = simulate_coupled(order, duration, workers, heavy, alpha, h_ref, pool)
    return wall, took


def input_heavy_mean(idx, duration, workers, heavy):
    return simulate_coupled(idx, duration, workers, heavy, 0.0, 0.0)[2]


def calibrate_alpha(idx, cost, duration, workers, heavy):
    """The alpha whose cost-order replay gives the 16 longest predicted samples 375.7 / 340.9 of
    their measured (input-order) summed durations, by bisection."""
    top = cost_order(idx, cost)[:COUPLED_TOP]
    base = sum(duration[i] for i in top)
    h_ref = input_heavy_mean(idx, duration, workers, heavy)

    def ratio(a):
        _, took = coupled(cost_order(idx, cost), duration, workers, heavy, a, h_ref)
        return sum(took[i] for i in top) / base

    lo, hi = 0.0, 1.0
    if ratio(hi) < COUPLED_RATIO:
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2
        if ratio(mid) < COUPLED_RATIO:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# ---------------------------------------------------------------------------------------------
# The model's fit

def features_row(f):
    return [1.0, math.log1p(f["dots"]), math.log1p(f["tl_calls"]), math.log1p(f["jit"]),
            math.log1p(f["test_bytes"] / 1000.0), math.log1p(f["constexprs"])]


NAMES = ["intercept", "dots", "tl_calls", "jit", "test_kb", "constexprs"]


def solve(a, b):
    n = len(a)
    m = [a[i][:] + [b[i]] for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(n):
            if r != i and m[i][i]:
                f = m[r][i] / m[i][i]
                for k in range(i, n + 1):
                    m[r][k] -= f * m[i][k]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def fit(rows, ys, ridge=1e-3):
    k = len(rows[0])
    a = [[sum(x[i] * x[j] for x in rows) + (ridge if i == j and i > 0 else 0.0)
          for j in range(k)] for i in range(k)]
    b = [sum(x[i] * y for x, y in zip(rows, ys)) for i in range(k)]
    return solve(a, b)


def predict(w, row):
    return math.exp(sum(a * b for a, b in zip(w, row)))


def report_fit(recs, duration, workers):
    idx = sorted(duration)
    rows = {i: features_row(recs[i]["features"]) for i in idx}
    ys = [math.log(max(duration[i], 1e-3)) for i in idx]
    w = fit([rows[i] for i in idx], ys)
    print("fit (log seconds): " + ", ".join(f"{n} {v:.3f}" for n, v in zip(NAMES, w)))
    pred = {i: predict(w, rows[i]) for i in idx}
    base = {i: recs[i]["key"].split("@")[0] for i in idx}
    names = sorted(set(base.values()))
    random.Random(1).shuffle(names)
    fold = {n: k % 5 for k, n in enumerate(names)}
    cv = {}
    for f in range(5):
        train = [i for i in idx if fold[base[i]] != f]
        wf = fit([rows[i] for i in train], [math.log(max(duration[i], 1e-3)) for i in train])
        for i in idx:
            if fold[base[i]] == f:
                cv[i] = predict(wf, rows[i])
    d = [duration[i] for i in idx]
    print(f"fit: Spearman in-sample {spearman([pred[i] for i in idx], d):.3f}, "
          f"5-fold by name {spearman([cv[i] for i in idx], d):.3f}; simulated wall "
          f"in-sample {simulate(cost_order(idx, pred), duration, workers):.1f} s, "
          f"5-fold {simulate(cost_order(idx, cv), duration, workers):.1f} s")


# ---------------------------------------------------------------------------------------------
# Reading

COLUMNS = ("index", "key", "cost_s") + FEATURES
RUN_COLUMNS = ("s", "cpu_s", "compile_s", "compile_cpu_s", "verdict")


def kforge_plan(kforge, samples, order="cost", workers=16):
    out = subprocess.run([kforge, "--config", "/dev/null", "verify", samples, "--plan", "--order",
                          order, "--workers", str(workers)],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def run_figures(v):
    """(duration s, CPU s, compile wall s, compile CPU s, verdict) of a verdict line (--json's
    phase_times, or --full's report.phase_times and report.mutant.phase_times)."""
    report = v.get("report") or {}
    phases = [v.get("phase_times") or report.get("phase_times") or {},
              (report.get("mutant") or {}).get("phase_times") or {}]
    cw = cc = cpu = 0.0
    for ph in phases:
        for t in ph.values():
            if isinstance(t, dict):
                cw += t.get("compile_ms", 0) / 1000.0
                cc += t.get("compile_cpu_ms", 0) / 1000.0
                cpu += t.get("cpu_ms", 0) / 1000.0
    if "cpu_ms" in v:
        cpu = v["cpu_ms"] / 1000.0
    return v["duration_ms"] / 1000.0, cpu, cw, cc, v.get("verdict", "")


def read_verdicts(path):
    out = {}
    for v in read_jsonl(path):
        if "index" not in v or "duration_ms" not in v:
            sys.exit(f"{path}: a line without index or duration_ms: {str(v)[:120]}")
        out[v["index"]] = run_figures(v)
    return out


def write_data(path, plan, runs, note):
    """The compact durations file: a comment header, a column line, one line per record."""
    names = sorted(runs)
    with open(path, "w") as f:
        for line in note:
            f.write(f"# {line}\n")
        cols = list(COLUMNS) + [f"{r}_{c}" for r in names for c in RUN_COLUMNS]
        f.write("\t".join(cols) + "\n")
        for p in sorted(plan, key=lambda p: p["index"]):
            i = p["index"]
            if any(i not in runs[r] for r in names):
                continue
            row = [str(i), p["key"], f"{p['cost_s']:.4g}"] + [str(p["features"][k])
                                                              for k in FEATURES]
            for r in names:
                d, cpu, cw, cc, verdict = runs[r][i]
                row += [f"{d:.2f}", f"{cpu:.2f}", f"{cw:.2f}", f"{cc:.2f}", verdict]
            f.write("\t".join(row) + "\n")


def read_data(path):
    """{index: {key, cost_s, features, runs: {run: (s, cpu_s, compile_s, compile_cpu_s,
    verdict)}}} and the header's comment lines."""
    recs, note, cols = {}, [], None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#"):
                note.append(line[1:].strip())
                continue
            if not line:
                continue
            fields = line.split("\t")
            if cols is None:
                cols = fields
                if tuple(cols[:len(COLUMNS)]) != COLUMNS:
                    sys.exit(f"{path}: line {n}: columns {cols[:len(COLUMNS)]}, want {COLUMNS}")
                continue
            if len(fields) != len(cols):
                sys.exit(f"{path}: line {n}: {len(fields)} fields, the header has {len(cols)}")
            row = dict(zip(cols, fields))
            rec = {"key": row["key"], "cost_s": float(row["cost_s"]),
                   "features": {k: int(row[k]) for k in FEATURES}, "runs": {}}
            for c in cols[len(COLUMNS):]:
                run, _, what = c.partition("_")
                if what == "s":
                    rec["runs"][run] = (float(row[f"{run}_s"]), float(row[f"{run}_cpu_s"]),
                                        float(row[f"{run}_compile_s"]),
                                        float(row[f"{run}_compile_cpu_s"]), row[f"{run}_verdict"])
            recs[int(row["index"])] = rec
    if cols is None:
        sys.exit(f"{path}: no column line")
    return recs, note


def synthetic_sample(f):
    """A record whose cost features (cost.cpp's counts) are `f`'s."""
    rest = f["tl_calls"] - f["dots"] - f["constexprs"]
    if rest < 0:
        sys.exit(f"features {f}: fewer tl. calls than tl.dot and tl.constexpr")
    code = ("@triton.jit\n" * f["jit"] + "tl.dot(\n" * f["dots"] + "tl.constexpr\n" *
            f["constexprs"] + "tl.x\n" * rest)
    return {"code": code, "kernel_wrapper": "", "unitest_code": "#" * f["test_bytes"]}


def check_plan(recs, kforge, workers, share, busy):
    """kforge verify --plan on records with the data's features: the same costs, and the same
    cost and early_long orders as this script's. Returns the number of differences."""
    idx = sorted(recs)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        samples = os.path.join(tmp, "samples.jsonl")
        with open(samples, "w") as f:
            for i in idx:
                f.write(json.dumps(dict(synthetic_sample(recs[i]["features"]),
                                        key=recs[i]["key"])) + "\n")
        pos = {k: i for k, i in enumerate(idx)}  # the samples file's record k is index i
        for order in ("cost", "early_long"):
            plan = kforge_plan(kforge, samples, order, workers)
            got = [pos[p["index"]] for p in plan]
            cost = {pos[p["index"]]: p["cost_s"] for p in plan}
            for i in idx:
                if abs(cost[i] - recs[i]["cost_s"]) > 1e-3 * recs[i]["cost_s"]:
                    print(f"record {i} {recs[i]['key']}: kforge predicts {cost[i]:.4g} s, "
                          f"the data file {recs[i]['cost_s']:.4g} s")
                    bad += 1
            want = (cost_order(idx, cost) if order == "cost" else
                    plan_early_long(idx, cost, workers, share, busy)[0])
            if got != want:
                at = next(k for k, (a, b) in enumerate(zip(got, want)) if a != b)
                print(f"{order}: kforge's order differs from this script's at position {at}: "
                      f"{got[at:at + 5]} against {want[at:at + 5]}")
                bad += 1
            if order == "early_long":
                marked = {pos[p["index"]] for p in plan if p.get("long")}
                if marked != plan_early_long(idx, cost, workers, share, busy)[1]:
                    print("early_long: kforge marks other records long than this script")
                    bad += 1
    print(f"check-plan: {len(idx)} records, {workers} workers: "
          f"{'the same' if not bad else str(bad) + ' differences'}")
    return bad


# ---------------------------------------------------------------------------------------------
# The report

def report_orders(recs, duration, args):
    idx = sorted(duration)
    cost = {i: recs[i]["cost_s"] for i in idx}
    w = args.workers
    el, is_long, long_s, at_once, spacing = plan_early_long(idx, cost, w, args.share, args.busy)
    # (order, the pool's early_long dispatch or None)
    orders = {"input": (idx, None), "cost": (cost_order(idx, cost), None),
              "early_long": (el, (is_long, at_once, spacing, args.queue)),
              "true": (sorted(idx, key=lambda i: -duration[i]), None)}
    total = sum(duration.values())
    print(f"{len(idx)} records, {w} workers, summed duration {total:.1f} s, "
          f"sum/{w} {total / w:.1f} s")
    print(f"Spearman (predicted cost, measured duration): "
          f"{spearman([cost[i] for i in idx], [duration[i] for i in idx]):.3f}")
    long_work = sum(duration[i] for i in is_long)
    print(f"early_long (share {args.share}, busy {args.busy}): {len(is_long)} long (predicted "
          f"over {long_s:.2f} s), at most {at_once} at once, {spacing} dispatches apart, "
          f"{args.queue} waiting at most; they hold {100 * long_work / total:.0f}% of the "
          f"measured work")
    heavy = {i for i in idx if duration[i] >= args.heavy_s}
    walls = {name: simulate_coupled(o, duration, w, set(), 0.0, 0.0, pool)[0]
             for name, (o, pool) in orders.items()}
    print("simulated wall, durations fixed: " +
          ", ".join(f"{name} {wall:.1f} s" for name, wall in walls.items()))
    alpha = args.alpha
    if args.calibrate:
        alpha = calibrate_alpha(idx, cost, duration, w, heavy)
    if alpha:
        h_ref = input_heavy_mean(idx, duration, w, heavy)
        print(f"coupled: alpha {alpha:.4f}{' (calibrated)' if args.calibrate else ''}, "
              f"{len(heavy)} heavy (measured {args.heavy_s:g} s or more), input order's mean "
              f"{h_ref:.2f} heavy running")
        top = orders["cost"][0][:COUPLED_TOP]
        for name, (o, pool) in orders.items():
            wall, took, h_mean, _ = simulate_coupled(o, duration, w, heavy, alpha, h_ref, pool)
            grown = sum(took.values()) / total - 1
            top_grown = sum(took[i] for i in top) / sum(duration[i] for i in top) - 1
            print(f"  {name}: wall {wall:.1f} s, summed durations {100 * grown:+.1f}%, "
                  f"the {COUPLED_TOP} longest predicted {100 * top_grown:+.1f}%, "
                  f"{h_mean:.2f} heavy running on average")
    rank_of = {i: k for k, i in enumerate(orders["cost"][0])}
    _, _, _, starts = simulate_coupled(el, duration, w, set(), 0.0, 0.0, orders["early_long"][1])
    _, _, _, starts_in = simulate_coupled(idx, duration, w, set(), 0.0, 0.0)
    if args.top:
        print(f"the {args.top} longest: index key measured_s predicted_s predicted_rank; "
              f"simulated start and end in input order, in early_long")
        for i in orders["true"][0][:args.top]:
            print(f"  {i} {recs[i]['key']} {duration[i]:.1f} {cost[i]:.1f} {rank_of[i]}; "
                  f"{starts_in[i]:.1f}-{starts_in[i] + duration[i]:.1f}, "
                  f"{starts[i]:.1f}-{starts[i] + duration[i]:.1f}"
                  f"{' long' if i in is_long else ''}")
    if args.fit:
        report_fit(recs, duration, w)


def speed_flags():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "libs", "verify",
                        "harness", "kforge_harness", "vocabulary", "speed_flags.txt")
    with open(path) as f:
        return {w.strip() for w in f if w.strip() and not w.startswith("#")}


def compare_runs(specs, times_path, plan, workers):
    """Runs of the same samples in different orders (NAME=FILE, the first the baseline): wall,
    summed durations, tail, durations by predicted rank, verdicts and flags against the first."""
    times = {}
    if times_path:
        with open(times_path) as f:
            for line in f:
                name, a, b = line.split()
                times[name] = float(b) - float(a)
    speed = speed_flags()
    runs = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            sys.exit(f"--compare {spec}: want NAME=FILE")
        lines = {v["index"]: v for v in read_jsonl(path)}
        runs.append((name, lines))
    rank_of = {}
    if plan:
        rank_of = {p["index"]: k for k, p in enumerate(plan)}
    groups = [(0, 16), (16, 200), (200, 10 ** 9)]
    print(f"orders compared ({workers} workers; wall from the script's clock, tail = wall - "
          f"summed durations / {workers})")
    base_name, base = runs[0]
    base_total = sum(v["duration_ms"] for v in base.values()) / 1000.0
    for name, lines in runs:
        total = sum(v["duration_ms"] for v in lines.values()) / 1000.0
        grown = (f", {100 * (total / base_total - 1):+.1f}% against {base_name}"
                 if name != base_name and base_total else "")
        wall = times.get(name)
        wall_s = f"{wall:.1f} s" if wall is not None else "?"
        tail = f"{wall - total / workers:.1f} s" if wall is not None else "?"
        by_rank = ""
        if rank_of:
            sums = []
            for lo, hi in groups:
                sums.append(sum(v["duration_ms"] for i, v in lines.items()
                                if lo <= rank_of.get(i, -1) < hi) / 1000.0)
            by_rank = ("; by predicted rank 1-16 / 17-200 / 201-: " +
                       " / ".join(f"{x:.1f}" for x in sums) + " s")
        print(f"{name}: wall {wall_s}, {len(lines)} samples, summed durations {total:.1f} s "
              f"({total / workers:.1f} s per worker{grown}), tail {tail}{by_rank}")
    for name, lines in runs[1:]:
        diff = []
        for i in sorted(set(base) | set(lines)):
            a, b = base.get(i), lines.get(i)
            ka = a and (a["verdict"], tuple(sorted(set(a.get("flags") or []) - speed)))
            kb = b and (b["verdict"], tuple(sorted(set(b.get("flags") or []) - speed)))
            if ka != kb:
                diff.append((i, ka, kb))
        print(f"{name} vs {base_name}: {len(diff)} samples differ in verdict or non-speed flags")
        for i, ka, kb in diff[:20]:
            print(f"  {i}: {ka} -> {kb}")
    return 0


def from_verdicts(args):
    if args.plan:
        plan = read_jsonl(args.plan)
    elif args.kforge and args.samples:
        plan = kforge_plan(args.kforge, args.samples, "cost", args.workers)
    else:
        sys.exit("give --plan FILE, or --kforge BIN and --samples FILE")
    runs = {"off": read_verdicts(args.verdicts)}
    if args.verdicts_on:
        runs["on"] = read_verdicts(args.verdicts_on)
    have = {p["index"] for p in plan}
    missing = [i for i in runs["off"] if i not in have]
    if missing:
        sys.exit(f"the plan has no cost for record(s) {missing[:10]}: not the same samples?")
    return plan, runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="a durations file (bench/verify/data/*.tsv)")
    ap.add_argument("--run", default="off", help="with --data: which run's durations (off, on)")
    ap.add_argument("--verdicts", help="verdict lines with index and duration_ms")
    ap.add_argument("--verdicts-on", help="with --make-data: the label-on run's verdict lines")
    ap.add_argument("--plan", help="kforge verify --plan's output")
    ap.add_argument("--kforge", help="the kforge binary (runs kforge verify --plan)")
    ap.add_argument("--samples", help="the records the run verified (with --kforge)")
    ap.add_argument("--make-data", metavar="OUT", help="write the durations file and stop")
    ap.add_argument("--note", action="append", default=[], help="with --make-data: a header line")
    ap.add_argument("--check-plan", action="store_true",
                    help="with --data and --kforge: kforge's plans against this script's")
    ap.add_argument("--compare", nargs="+", metavar="NAME=FILE",
                    help="runs of the same samples in different orders (verdict lines)")
    ap.add_argument("--times", help="with --compare: lines 'NAME start end' (timing-cost's)")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--share", type=float, default=LONG_SHARE, help="early_long's long share")
    ap.add_argument("--busy", type=float, default=BUSY_SHARE, help="early_long's busy share")
    ap.add_argument("--queue", type=int, default=64,
                    help="early_long: samples waiting in the pool at most (queue_capacity)")
    ap.add_argument("--heavy-s", type=float, default=10.0, help="the coupling's heavy samples")
    ap.add_argument("--alpha", type=float, default=0.0, help="the coupling's strength")
    ap.add_argument("--calibrate", action="store_true", help="fit alpha to stop 64's figure")
    ap.add_argument("--fit", action="store_true", help="also fit the model's coefficients")
    ap.add_argument("--top", type=int, default=12, help="list the N longest records")
    args = ap.parse_args()

    if args.compare:
        plan = None
        if args.plan:
            plan = read_jsonl(args.plan)
        elif args.kforge and args.samples:
            plan = kforge_plan(args.kforge, args.samples, "cost", args.workers)
        sys.exit(compare_runs(args.compare, args.times, plan, args.workers))
    if args.make_data:
        if not args.verdicts:
            sys.exit("--make-data needs --verdicts (and --plan or --kforge with --samples)")
        plan, runs = from_verdicts(args)
        write_data(args.make_data, plan, runs, args.note)
        return
    if args.data:
        recs, _ = read_data(args.data)
        if args.check_plan:
            if not args.kforge:
                sys.exit("--check-plan needs --kforge BIN")
            sys.exit(1 if check_plan(recs, args.kforge, args.workers, args.share, args.busy)
                     else 0)
        if any(args.run not in r["runs"] for r in recs.values()):
            sys.exit(f"{args.data}: no run '{args.run}' for every record")
        duration = {i: r["runs"][args.run][0] for i, r in recs.items()}
    elif args.verdicts:
        plan, runs = from_verdicts(args)
        recs = {p["index"]: p for p in plan}
        duration = {i: v[0] for i, v in runs["off"].items()}
    else:
        sys.exit("give --data FILE, or --verdicts FILE with --plan or --kforge and --samples")
    report_orders(recs, duration, args)


if __name__ == "__main__":
    main()
