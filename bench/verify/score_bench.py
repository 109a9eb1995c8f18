#!/usr/bin/env python3
"""The scoring endpoint's latency and throughput (scripts/gpu/bench-score drives it): posts
batches of N items (the records of a JSON Lines corpus with code, kernel_wrapper, unitest_code,
cycled, each test given a unique comment so that no item is answered from the cache) to a
running kforged's POST /v1/score and prints one JSON line per batch: per-item latency p50/p95
(queue_ms + run_ms, and the time from the request to the item's answer), items/s, verdicts,
items past their deadline plus 5 s. --emit FILE writes the same items as `kforge verify` input.

  score_bench.py URL CORPUS --items 128 [--deadline-s 600] [--emit FILE] [--tag T]
"""
import argparse
import collections
import json
import sys
import time
import urllib.error
import urllib.request


def items_for(corpus, n, tag):
    out = []
    for i in range(n):
        r = corpus[i % len(corpus)]
        out.append({"id": "%s-%d" % (tag, i), "code": r["code"],
                    "kernel_wrapper": r["kernel_wrapper"],
                    "unitest_code": r["unitest_code"] + "\n# kforge score bench %s %d\n" % (tag, i)})
    return out


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(p * len(v) + 0.5)) - 1))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("corpus")
    ap.add_argument("--items", type=int, default=128)
    ap.add_argument("--deadline-s", type=float, default=600)
    ap.add_argument("--tag", default="bench")
    ap.add_argument("--emit", default=None)
    ap.add_argument("--reward", default="triton_eval")
    a = ap.parse_args()
    corpus = [json.loads(l) for l in open(a.corpus) if l.strip()]
    items = items_for(corpus, a.items, a.tag)
    if a.emit:
        with open(a.emit, "w") as fh:
            for it in items:
                fh.write(json.dumps({"file": it["id"], "code": it["code"],
                                     "kernel_wrapper": it["kernel_wrapper"],
                                     "unitest_code": it["unitest_code"]}) + "\n")
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
    res = out["results"]
    lat = [r["queue_ms"] + r["run_ms"] for r in res
           if r.get("queue_ms") is not None and r.get("run_ms") is not None]
    verdicts = collections.Counter(r["verdict"] or r["status"] for r in res)
    print(json.dumps({
        "items": a.items, "wall_s": round(wall, 2), "items_per_s": round(a.items / wall, 2),
        "latency_ms_p50": pct(lat, 0.5), "latency_ms_p95": pct(lat, 0.95),
        "queue_ms_p50": pct([r["queue_ms"] for r in res if r.get("queue_ms") is not None], 0.5),
        "run_ms_p50": pct([r["run_ms"] for r in res if r.get("run_ms") is not None], 0.5),
        "past_deadline_plus_5s": wall > a.deadline_s + 5,
        "null_rewards": sum(r["reward"] is None for r in res),
        "cached": sum(bool(r["cached"]) for r in res),
        "ordered": [r["id"] for r in res] == [it["id"] for it in items],
        "verdicts": dict(verdicts)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
