#!/usr/bin/env python3
"""The reference for kforge's kernel facts: Python's own parser.

usage: jit_facts.py CORPUS.json FIELD [--jit-decorator NAME]...
Reads a JSON list of records (the code in field FIELD) and prints one JSON line per record:
{"index": i, "kernels": [{"name", "line", "params": [[name, is_constexpr], ...],
"autotune": [...], "heuristics": [...]}]} or {"index": i, "error": "..."}.

A kernel is what libs/pipeline/include/kforge/pipeline/facts.hpp says: a def decorated with, or
wrapped call-style (`name = triton.jit(fn)`) by, a decorator resolving through the file's imports
to Triton's jit (`triton.jit`, `gluon.jit`, `jit` from any Triton module, or relatively from a
Triton-derived package's jit/runtime/_runtime module), to Triton-distributed's `triton_dist.jit`,
or to a configured extra jit decorator.
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
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def dict_keys(node):
    return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def bindings(tree):
    """Name -> the dotted name it stands for, from every import in source order."""
    bound = {}
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    for n in sorted(imports, key=lambda n: (n.lineno, n.col_offset)):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.asname:
                    bound[a.asname] = a.name
                else:
                    head = a.name.split(".")[0]
                    bound[head] = head
            continue
        module = n.module or ""
        last = module.rsplit(".", 1)[-1]
        for a in n.names:
            alias = a.asname or a.name
            if a.name == "triton":  # a package re-exporting Triton (vllm.triton_utils)
                bound[alias] = "triton"
            elif a.name == "gluon":
                bound[alias] = "triton.experimental.gluon"
            elif n.level == 0:
                bound[alias] = f"{module}.{a.name}" if module else a.name
            elif a.name == "jit" and last in ("jit", "runtime", "_runtime"):
                bound[alias] = "triton.jit"
            else:
                bound[alias] = "." * n.level + f"{module}.{a.name}"
    return bound


class Resolver:
    def __init__(self, tree, extra):
        self.bound = bindings(tree)
        self.roots = ["triton.jit", "triton_dist.jit"] + list(extra)

    def resolve(self, name):
        head, dot, rest = name.partition(".")
        if head in self.bound:
            base = self.bound[head]
        elif head == "gluon":
            base = "triton.experimental.gluon"
        else:
            base = head
        return base + dot + rest

    def jit(self, name):
        r = self.resolve(name)
        for root in self.roots:
            if r == root:
                return True
            package, _, leaf = root.rpartition(".")
            if package and len(r) > len(root) and r.startswith(package + ".") and \
                    r.endswith("." + leaf):
                return True
        return False

    def in_package(self, name, leaf):
        r = self.resolve(name)
        if not r.endswith("." + leaf):
            return False
        return any(r.startswith(root.rpartition(".")[0] + ".") for root in self.roots)


def tuned_keys(call):
    out = set()
    for sub in ast.walk(call):
        if isinstance(sub, ast.Call) and dotted(sub).endswith("Config") and sub.args \
                and isinstance(sub.args[0], ast.Dict):
            out.update(dict_keys(sub.args[0]))
    return out


def heuristic_keys(call):
    for sub in list(call.args) + [k.value for k in call.keywords]:
        if isinstance(sub, ast.Dict):
            return set(dict_keys(sub))
    return set()


def params_of(fn):
    a = fn.args
    params = []
    for p in a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + \
            ([a.kwarg] if a.kwarg else []):
        ann = p.annotation
        if ann is None:
            text = ""
        elif isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            text = ann.value
        else:
            text = ast.unparse(ann)
        params.append([p.arg, text.endswith("constexpr")])
    return params


def facts(code, extra=()):
    tree = ast.parse(code)
    r = Resolver(tree, extra)
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    out = []
    kernel_defs = set()
    for fn in defs:
        if not any(r.jit(dotted(d)) for d in fn.decorator_list):
            continue
        tuned, heur = set(), set()
        for d in fn.decorator_list:
            if not isinstance(d, ast.Call):
                continue
            if r.in_package(dotted(d), "autotune"):
                tuned |= tuned_keys(d)
            if r.in_package(dotted(d), "heuristics"):
                heur |= heuristic_keys(d)
        kernel_defs.add(id(fn))
        out.append({"name": fn.name, "line": fn.lineno, "params": params_of(fn),
                    "autotune": tuned, "heuristics": heur})
    # Call-style: name = jit(fn, ...) or name = heuristics({...})(fn), in source order.
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call)]
    for a in sorted(assigns, key=lambda n: n.lineno):
        call = a.value
        if isinstance(call.func, ast.Call):  # callee(args...)(fn)
            outer, callee = call, call.func
        else:
            outer, callee = call, call
        if not outer.args or not isinstance(outer.args[0], ast.Name):
            continue
        wrapped = outer.args[0].id
        name = dotted(callee)
        if not name:
            continue
        if r.jit(name):
            before = [f for f in defs if f.name == wrapped and f.lineno < a.lineno]
            if not before:
                continue
            fn = max(before, key=lambda f: f.lineno)
            if id(fn) in kernel_defs:
                continue
            kernel_defs.add(id(fn))
            out.append({"name": a.targets[0].id, "line": fn.lineno, "params": params_of(fn),
                        "autotune": set(), "heuristics": set()})
            continue
        if callee is outer:
            continue
        for leaf, field, keys in (("autotune", "autotune", tuned_keys),
                                  ("heuristics", "heuristics", heuristic_keys)):
            if r.in_package(name, leaf):
                for k in out:
                    if k["name"] == wrapped:
                        k[field] |= keys(callee)
    out.sort(key=lambda k: k["line"])
    for k in out:
        k["autotune"] = sorted(k["autotune"])
        k["heuristics"] = sorted(k["heuristics"])
    return out


def main():
    args = sys.argv[1:]
    extra = []
    while "--jit-decorator" in args:
        i = args.index("--jit-decorator")
        extra.append(args[i + 1])
        del args[i:i + 2]
    records = json.load(open(args[0], encoding="utf-8"))
    field = args[1]
    for i, rec in enumerate(records):
        try:
            print(json.dumps({"index": i, "kernels": facts(rec[field], extra)}))
        except SyntaxError as e:
            print(json.dumps({"index": i, "error": str(e)}))


if __name__ == "__main__":
    main()
