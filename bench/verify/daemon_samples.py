"""Turns kforge-bench-verify --emit output (JSON Lines: key, code, kernel_wrapper, unitest_code)
into what kforged needs to verify the same samples through its pipeline, with the fake provider
standing in for the model:

  --corpus FILE   JSON Lines with key, code and tag ("[sample KEY]"), for
                  `kforge import FILE --key key --map code=code,description_1=tag,description_2=tag`:
                  the tag stands for the descriptions, so each generation prompt names its sample;
  --script FILE   a kforge-fake-llm script (JSON, which its YAML reader takes): for each sample a
                  generation rule, matched by its tag, that answers the sample's own wrapper and
                  test (pipeline v1: generation is its only stage).

The gold tests keep their launching functions in the code, and kforge's pipeline takes only a
wrapper that launches a kernel of the code (`kernel[grid](...)`), as a model is asked to write
it. So each top-level function of the code that launches one of its kernels moves to the front
of the wrapper (the script runs code, wrapper, test in that order, so the functions are defined
before the test runs). --samples-out writes the samples so rearranged, for `kforge verify`: both
sides then run the very same scripts. A sample whose code does not parse, or whose wrapper or
test holds "{{" (the fake provider's template marks), is left out of every file and counted.

    python3 bench/verify/daemon_samples.py samples.jsonl --corpus corpus.jsonl --script fake.json
"""
import argparse
import ast
import collections
import json
import sys

def _is_kernel(node):
    for d in node.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        text = ast.unparse(f)
        if text.startswith(("triton.", "tl.")) or text in ("jit", "autotune", "heuristics"):
            return True
    return False


def _launches(node, kernels):
    for n in ast.walk(node):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
                and isinstance(n.func.value, ast.Name) and n.func.value.id in kernels):
            return True
    return False


def move_launchers(code, wrapper):
    """(code, wrapper) with the code's top-level kernel-launching functions moved to the front of
    the wrapper; None when the code does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    kernels = {n.name for n in funcs if _is_kernel(n)}
    lines = code.splitlines(keepends=True)
    moved, spans = [], []
    for n in funcs:
        if n.name in kernels or not _launches(n, kernels):
            continue
        start = min([d.lineno for d in n.decorator_list] + [n.lineno]) - 1
        spans.append((start, n.end_lineno))
        moved.append("".join(lines[start:n.end_lineno]))
    if not moved:
        return code, wrapper
    keep = [ln for i, ln in enumerate(lines) if not any(a <= i < b for a, b in spans)]
    head = "import torch\nimport triton\nimport triton.language as tl\n\n"
    return "".join(keep), head + "\n\n".join(moved) + "\n\n" + wrapper


def tag(key):
    return "[sample %s]" % key


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--samples-out", help="the rearranged samples, for kforge verify")
    ap.add_argument("--latency-ms", type=int, default=5)
    a = ap.parse_args()
    samples = []
    with open(a.samples) as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            try:
                s = json.loads(line)
                for k in ("key", "code", "kernel_wrapper", "unitest_code"):
                    if not isinstance(s.get(k), str):
                        raise ValueError("field %s: missing or not a string" % k)
            except ValueError as e:
                sys.exit("%s: line %d: %s" % (a.samples, i + 1, e))
            samples.append(s)
    left_out = collections.Counter()
    rules, corpus, rearranged = [], [], []
    for s in samples:
        got = move_launchers(s["code"], s["kernel_wrapper"])
        if got is None:
            left_out["code does not parse"] += 1
            continue
        s = dict(s, code=got[0], kernel_wrapper=got[1])
        if "{{" in s["kernel_wrapper"] or "{{" in s["unitest_code"]:
            left_out["template marks in wrapper or test"] += 1
            continue
        rules.append({"name": "generate " + s["key"],
                      "match": {"contains": tag(s["key"]), "regex": "kernel_wrapper"},
                      "wrap": "fenced",
                      "reply_json": {"kernel_wrapper": s["kernel_wrapper"],
                                     "unitest_code": s["unitest_code"]}})
        corpus.append({"key": s["key"], "code": s["code"], "tag": tag(s["key"])})
        rearranged.append(s)
    with open(a.script, "w") as f:
        json.dump({"defaults": {"latency_ms": a.latency_ms}, "rules": rules}, f)
    with open(a.corpus, "w") as f:
        for r in corpus:
            f.write(json.dumps(r) + "\n")
    if a.samples_out:
        with open(a.samples_out, "w") as f:
            for r in rearranged:
                f.write(json.dumps(r) + "\n")
    stats = {"samples": len(samples), "kept": len(corpus), "left_out": dict(left_out)}
    print("daemon_samples: %s" % json.dumps(stats))


if __name__ == "__main__":
    main()
