#!/usr/bin/env python3
"""The reference for kforge's kernel facts: Python's own parser.

Reads a JSON list of records from argv[1] (the code in field argv[2]) and prints one JSON line per
record: {"index": i, "kernels": [{"name", "line", "params": [[name, is_constexpr], ...],
"autotune": [...], "heuristics": [...]}]} or {"index": i, "error": "..."}.
"""
import ast
import json
import sys


def dotted(node):
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def dict_keys(node):
    return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def facts(code):
    tree = ast.parse(code)
    bare = any(isinstance(n, ast.ImportFrom) and n.module == "triton" and
               any(a.name == "jit" for a in n.names) for n in ast.walk(tree))
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [dotted(d) for d in fn.decorator_list]
        if "triton.jit" not in names and not (bare and "jit" in names):
            continue
        tuned, heur = set(), set()
        for d in fn.decorator_list:
            if not isinstance(d, ast.Call):
                continue
            if dotted(d) == "triton.autotune":
                for sub in ast.walk(d):
                    if isinstance(sub, ast.Call) and dotted(sub).endswith("Config") and sub.args \
                            and isinstance(sub.args[0], ast.Dict):
                        tuned.update(dict_keys(sub.args[0]))
            if dotted(d) == "triton.heuristics":
                for sub in list(d.args) + [k.value for k in d.keywords]:
                    if isinstance(sub, ast.Dict):
                        heur.update(dict_keys(sub))
                        break
        a = fn.args
        params = []
        for p in a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + \
                ([a.kwarg] if a.kwarg else []):
            ann = ast.unparse(p.annotation) if p.annotation is not None else ""
            params.append([p.arg, ann.endswith("constexpr")])
        out.append({"name": fn.name, "line": fn.lineno, "params": params,
                    "autotune": sorted(tuned), "heuristics": sorted(heur)})
    out.sort(key=lambda k: k["line"])
    return out


def main():
    records = json.load(open(sys.argv[1], encoding="utf-8"))
    field = sys.argv[2]
    for i, r in enumerate(records):
        try:
            print(json.dumps({"index": i, "kernels": facts(r[field])}))
        except SyntaxError as e:
            print(json.dumps({"index": i, "error": str(e)}))


if __name__ == "__main__":
    main()
