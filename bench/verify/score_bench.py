#!/usr/bin/env python3
"""The scoring endpoint's latency and throughput (scripts/gpu/bench-score drives it).

  score_bench.py post URL --items 128 --corpus A.jsonl [--corpus B.jsonl --every 8]
                 [--deadline-s 300] [--emit ITEMS.jsonl] [--results OUT.json] [--tag T]
  score_bench.py items --items 128 --corpus A.jsonl [--corpus B.jsonl --every 8] [--tag T] --emit ITEMS.jsonl
  score_bench.py compare RESULTS.json VERIFY.jsonl

post: one batch of N items to a running kforged's POST /v1/score, drawn from the records (code,
kernel_wrapper, unitest_code) of the first corpus, with every EVERY-th item from the second
(cycled; each test given a unique comment so that no item is answered from the cache). Prints
one JSON line: per-item latency p50/p95/max (queue_ms + run_ms), the batch's wall time and
items/s, verdicts, null rewards, whether the answer came after the deadline plus 5 s (every
item ends by then, so a batch answered in time has no item past it), and whether the results
came in item order. --emit writes the same items as `kforge verify` input (the item id as
`file`); --results the endpoint's answer.

items: only --emit's file, the same items post would send (they depend on the corpora, --every,
--items and --tag alone), so `kforge verify` can run on them in a later call of its own.

compare: the endpoint's verdicts against `kforge verify --json` on the same items: how many
agree, and the items that differ.
"""
import argparse
import collections
import json
import sys
import time
import urllib.error
import urllib.request


def load(path):
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def items_for(corpora, every, n, tag):
    out, used = [], [0] * len(corpora)
    for i in range(n):
        c = 1 if len(corpora) > 1 and every > 0 and i % every == every - 1 else 0
        r = corpora[c][used[c] % len(corpora[c])]
        used[c] += 1
        out.append({"id": "%s-%d" % (tag, i), "code": r["code"],
                    "kernel_wrapper": r["kernel_wrapper"],
                    "unitest_code": r["unitest_code"] + "\n# kforge score bench %s %d\n" % (tag, i)})
    return out, used


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(p * len(v) + 0.5)) - 1))]


def emit(path, items):
    with open(path, "w") as fh:
        for it in items:
            fh.write(json.dumps({"file": it["id"], "code": it["code"],
                                 "kernel_wrapper": it["kernel_wrapper"],
                                 "unitest_code": it["unitest_code"]}) + "\n")


def items_only(a):
    items, used = items_for([load(c) for c in a.corpus], a.every, a.items, a.tag)
    emit(a.emit, items)
    print(json.dumps({"items": len(items), "per_corpus": used}), flush=True)
    return 0


def post(a):
    corpora = [load(c) for c in a.corpus]
    items, used = items_for(corpora, a.every, a.items, a.tag)
    if a.emit:
        emit(a.emit, items)
    body = {"items": items, "deadline_s": a.deadline_s, "tag": a.tag, "reward": a.reward}
    req = urllib.request.Request(a.url.rstrip("/") + "/v1/score", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    t0 = time.time()
    try:
        with urllib.request.urlopen(req, timeout=a.deadline_s + 120) as resp:
            out = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        print(json.dumps({"items": a.items, "error": "%d %s" % (e.code, e.read().decode())}))
        return 1
    wall = time.time() - t0
    if a.results:
        with open(a.results, "w") as fh:
            json.dump(out, fh)
    res = out["results"]
    lat = [r["queue_ms"] + r["run_ms"] for r in res
           if r.get("queue_ms") is not None and r.get("run_ms") is not None]
    verdicts = collections.Counter(r["verdict"] or r["status"] for r in res)
    print(json.dumps({
        "items": a.items, "per_corpus": used, "deadline_s": a.deadline_s,
        "wall_s": round(wall, 2), "items_per_s": round(a.items / wall, 2),
        "latency_ms_p50": pct(lat, 0.5), "latency_ms_p95": pct(lat, 0.95),
        "latency_ms_max": max(lat) if lat else None,
        "queue_ms_p50": pct([r["queue_ms"] for r in res if r.get("queue_ms") is not None], 0.5),
        "run_ms_p50": pct([r["run_ms"] for r in res if r.get("run_ms") is not None], 0.5),
        "run_ms_p95": pct([r["run_ms"] for r in res if r.get("run_ms") is not None], 0.95),
        "done": out.get("done"), "past_deadline_plus_5s": wall > a.deadline_s + 5,
        "null_rewards": sum(r["reward"] is None for r in res),
        "timed": sum(r.get("speed") is not None for r in res),
        "cached": sum(bool(r["cached"]) for r in res),
        "ordered": [r["id"] for r in res] == [it["id"] for it in items],
        "verdicts": dict(verdicts)}), flush=True)
    return 0


def compare(a):
    with open(a.results) as fh:
        scored = {r["id"]: r for r in json.load(fh)["results"]}
    cli = {r.get("key") or r.get("file"): r for r in load(a.verify)}
    same, differ, missing = 0, [], 0
    for k, r in scored.items():
        c = cli.get(k)
        if c is None:
            missing += 1
            continue
        mine = (r["verdict"] or r["status"], sorted(r["flags"]))
        theirs = (c.get("verdict"), sorted(c.get("flags") or []))
        if mine == theirs:
            same += 1
        else:
            differ.append({"id": k, "endpoint": mine, "verify": theirs})
    print(json.dumps({"agree": same, "differ": len(differ), "missing_in_verify": missing,
                      "differences": differ[:20]}), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("post")
    p.add_argument("url")
    i = sub.add_parser("items")
    i.add_argument("--emit", required=True)
    for q in (p, i):
        q.add_argument("--corpus", action="append", required=True)
        q.add_argument("--every", type=int, default=8)
        q.add_argument("--items", type=int, default=128)
        q.add_argument("--tag", default="bench")
    p.add_argument("--deadline-s", type=float, default=300)
    p.add_argument("--emit", default=None)
    p.add_argument("--results", default=None)
    p.add_argument("--reward", default="triton_eval")
    c = sub.add_parser("compare")
    c.add_argument("results")
    c.add_argument("verify")
    a = ap.parse_args()
    return {"post": post, "items": items_only, "compare": compare}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
