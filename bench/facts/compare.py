#!/usr/bin/env python3
"""Kernel facts benchmark: kforge's facts against Python's own parser over a crawl.

usage: compare.py KFORGE_BENCH_FACTS CRAWL_DIR [--jit-decorator NAME]... [--show N]

Runs KFORGE_BENCH_FACTS (the kforge-bench-facts binary) over every .py file under CRAWL_DIR and
computes the same facts with `ast` (tests/pipeline/jit_facts.py, which resolves imports the same
way). Prints the files where they disagree (up to --show of each kind), then the figures, the last
line as key=value pairs:
  files, ast_files (files this Python's ast parses), ast_refused (files it cannot: with Python
  3.11 these include files using 3.12-only syntax; they are not compared, and kforge's kernels
  and refusals on them are counted apart), kernels (found by ast), found, missed, spurious,
  params / constexpr_ok (parameters of found kernels with the same name and constexpr flag),
  tuned_ok (found kernels whose autotune and heuristics keys agree), refused (files ast parses
  that kforge refuses), refused_other (kforge refusals among files ast cannot parse).
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "pipeline"))
import jit_facts  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("crawl")
    ap.add_argument("--jit-decorator", action="append", default=[])
    ap.add_argument("--show", type=int, default=10)
    a = ap.parse_args()

    cmd = [a.binary, a.crawl]
    for d in a.jit_decorator:
        cmd += ["--jit-decorator", d]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()
    kforge_summary = out[-1]
    got = {}
    for line in out[:-1]:
        r = json.loads(line)
        got[r["path"]] = r

    ref = {}
    ast_errors = {}
    t0 = time.monotonic()
    for path in sorted(got):
        with open(os.path.join(a.crawl, path), "rb") as f:
            data = f.read()
        try:
            ref[path] = jit_facts.facts(data, a.jit_decorator)
        except (SyntaxError, ValueError) as e:
            ast_errors[path] = f"{type(e).__name__}: {e}"
    ast_s = time.monotonic() - t0

    shown = {"missed": 0, "spurious": 0, "refused": 0, "params": 0, "tuned": 0}

    def show(kind, msg):
        if shown[kind] < a.show:
            print(f"{kind}: {msg}")
        shown[kind] += 1

    n = dict(kernels=0, found=0, missed=0, spurious=0, params=0, constexpr_ok=0, tuned_ok=0,
             refused=0, refused_other=0, other_kernels=0)
    for path, r in got.items():
        if path not in ref:
            if "error" in r:
                n["refused_other"] += 1
            else:
                n["other_kernels"] += len(r["kernels"])
            continue
        want = ref[path]
        n["kernels"] += len(want)
        if "error" in r:
            n["refused"] += 1
            n["missed"] += len(want)
            show("refused", f"{path}: {r['error']['message']}")
            continue
        have = {(k["name"], k["line"]): k for k in r["kernels"]}
        wanted = {(k["name"], k["line"]): k for k in want}
        for key, w in wanted.items():
            k = have.get(key)
            if k is None:
                n["missed"] += 1
                show("missed", f"{path}:{key[1]} {key[0]}")
                continue
            n["found"] += 1
            n["params"] += len(w["params"])
            same = [p for p, q in zip(k["params"], w["params"]) if p == q]
            n["constexpr_ok"] += len(same) if len(k["params"]) == len(w["params"]) else 0
            if len(same) != len(w["params"]) or len(k["params"]) != len(w["params"]):
                show("params", f"{path}:{key[1]} {key[0]}: {k['params']} != {w['params']}")
            names = {p[0] for p in w["params"]}
            if (set(k["autotune"]) == set(w["autotune"]) & names and
                    set(k["heuristics"]) == set(w["heuristics"]) & names):
                n["tuned_ok"] += 1
            else:
                show("tuned", f"{path}:{key[1]} {key[0]}: {k['autotune']}/{k['heuristics']} != "
                     f"{w['autotune']}/{w['heuristics']}")
        for key in have:
            if key not in wanted:
                n["spurious"] += 1
                show("spurious", f"{path}:{key[1]} {key[0]}")

    for path, e in sorted(ast_errors.items())[:a.show]:
        r = got[path]
        verdict = "refused: " + r["error"]["message"] if "error" in r else \
            f"{len(r['kernels'])} kernels"
        print(f"ast_refused: {path}: {e} (kforge: {verdict})")

    pct = 100.0 * n["found"] / n["kernels"] if n["kernels"] else 100.0
    print(f"kforge: {kforge_summary}")
    print(f"ast ({sys.version.split()[0]}): {ast_s:.3f} s")
    print(f"found {n['found']} of {n['kernels']} kernels ({pct:.2f}%), missed {n['missed']}, "
          f"spurious {n['spurious']}; constexpr {n['constexpr_ok']} of {n['params']} params; "
          f"autotune/heuristics keys agree on {n['tuned_ok']} kernels; kforge refused "
          f"{n['refused']} files ast parses; ast could not parse {len(ast_errors)} files "
          f"(kforge refused {n['refused_other']} of them, found {n['other_kernels']} kernels "
          f"in the others)")
    print(f"files={len(got)} ast_files={len(ref)} ast_refused={len(ast_errors)} "
          f"kernels={n['kernels']} found={n['found']} found_pct={pct:.3f} missed={n['missed']} "
          f"spurious={n['spurious']} params={n['params']} constexpr_ok={n['constexpr_ok']} "
          f"tuned_ok={n['tuned_ok']} refused={n['refused']} refused_other={n['refused_other']}")


if __name__ == "__main__":
    main()
