#!/usr/bin/env python3
"""The verifier's dispatch order (verifier.order; docs/VERIFIER.md, "Dispatch order"): how well
the predicted cost (libs/verify/src/cost.cpp) ranks a measured run's samples, and what each order
would have made of the run's wall time.

Reads a run's verdict lines (kforge verify --json or --full: index and duration_ms per record,
e.g. scripts/gpu/timing-cost's verdicts-off.jsonl) and the predicted costs of the same records
(kforge verify --plan: index, cost_s, features, in dispatch order), either from a file (--plan)
or by running the kforge binary on the samples (--kforge BIN --samples FILE). Prints:
  - Spearman's rank correlation of predicted cost and measured duration;
  - the wall time a greedy pool of --workers workers would take with the measured durations,
    taking the records in input order, in predicted order (longest first), in true order
    (longest measured first), and the bound sum/workers.
With --fit, also the least-squares fit of the log-linear model's coefficients on the plan's
features (what cost.cpp holds), in-sample and cross-validated by sample name (5 folds over the
name before '@', so the renamed copies of one kernel fall in one fold).

  python3 bench/verify/order_sim.py --verdicts V.jsonl (--plan P.jsonl | --kforge BIN --samples S.jsonl)
                                    [--workers 16] [--fit] [--top 12]

No GPU: it only reads files (and runs `kforge verify --plan`, which runs nothing).
"""

import argparse
import heapq
import json
import math
import random
import subprocess
import sys


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


def simulate(order, duration, workers):
    """The wall time of a greedy pool: each record goes to the first free worker."""
    free = [0.0] * workers
    for i in order:
        t = heapq.heappop(free)
        heapq.heappush(free, t + duration[i])
    return max(free)


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


def report_fit(plan, duration, workers):
    idx = sorted(duration)
    rows = {p["index"]: features_row(p["features"]) for p in plan}
    ys = [math.log(max(duration[i], 1e-3)) for i in idx]
    w = fit([rows[i] for i in idx], ys)
    print("fit (log seconds): " + ", ".join(f"{n} {v:.3f}" for n, v in zip(NAMES, w)))
    pred = {i: predict(w, rows[i]) for i in idx}
    base = {p["index"]: p["key"].split("@")[0] for p in plan}
    names = sorted(set(base[i] for i in idx))
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
          f"in-sample {simulate(sorted(idx, key=lambda i: -pred[i]), duration, workers):.1f} s, "
          f"5-fold {simulate(sorted(idx, key=lambda i: -cv[i]), duration, workers):.1f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verdicts", required=True, help="verdict lines with index and duration_ms")
    ap.add_argument("--plan", help="kforge verify --plan's output")
    ap.add_argument("--kforge", help="the kforge binary (runs kforge verify --plan on --samples)")
    ap.add_argument("--samples", help="the records the run verified (with --kforge)")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--fit", action="store_true", help="also fit the model's coefficients")
    ap.add_argument("--top", type=int, default=12, help="list the N longest records")
    args = ap.parse_args()

    if args.plan:
        plan = read_jsonl(args.plan)
    elif args.kforge and args.samples:
        out = subprocess.run([args.kforge, "verify", args.samples, "--plan", "--order", "cost"],
                             check=True, capture_output=True, text=True).stdout
        plan = [json.loads(line) for line in out.splitlines() if line.strip()]
    else:
        sys.exit("give --plan FILE, or --kforge BIN and --samples FILE")

    verdicts = read_jsonl(args.verdicts)
    duration = {}
    for v in verdicts:
        if "index" not in v or "duration_ms" not in v:
            sys.exit(f"{args.verdicts}: a line without index or duration_ms: {str(v)[:120]}")
        duration[v["index"]] = v["duration_ms"] / 1000.0
    cost = {p["index"]: p["cost_s"] for p in plan}
    missing = [i for i in duration if i not in cost]
    if missing:
        sys.exit(f"the plan has no cost for record(s) {missing[:10]}: not the same samples?")

    idx = sorted(duration)
    predicted_order = [p["index"] for p in plan if p["index"] in duration]
    true_order = sorted(idx, key=lambda i: -duration[i])
    rho = spearman([cost[i] for i in idx], [duration[i] for i in idx])
    w = args.workers
    print(f"{len(idx)} records, {w} workers, summed duration {sum(duration.values()):.1f} s")
    print(f"Spearman (predicted cost, measured duration): {rho:.3f}")
    print(f"simulated wall: input order {simulate(idx, duration, w):.1f} s, "
          f"predicted order {simulate(predicted_order, duration, w):.1f} s, "
          f"true order {simulate(true_order, duration, w):.1f} s, "
          f"sum/{w} {sum(duration.values()) / w:.1f} s")
    rank_of = {i: k for k, i in enumerate(predicted_order)}
    if args.top:
        print(f"the {args.top} longest: index key measured_s predicted_s predicted_rank")
        keys = {p["index"]: p["key"] for p in plan}
        for i in true_order[:args.top]:
            print(f"  {i} {keys[i]} {duration[i]:.1f} {cost[i]:.1f} {rank_of[i]}")
    if args.fit:
        report_fit(plan, duration, w)


if __name__ == "__main__":
    main()
