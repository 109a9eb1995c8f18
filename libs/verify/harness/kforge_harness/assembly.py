"""Script assembly: the single file a sample runs as, and what is read from its source."""

from __future__ import annotations

import ast
import importlib.util
from typing import Any

PREAMBLE_MODULES = [
    ("torch", "import torch"),
    ("triton", "import triton"),
    ("triton.language", "import triton.language as tl"),
    ("numpy", "import numpy as np"),
]


def module_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _dotted(node):
    """'triton.compile' for an ast.Attribute/Name chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


COMPILE_CALLS = {"triton.compile", "triton.compiler.compile", "triton.compiler.compiler.compile"}


def _is_compile_call(node, aliases):
    if not isinstance(node, ast.Call):
        return False
    name = _dotted(node.func)
    return name in COMPILE_CALLS or name in aliases


def _names_in(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _compile_aliases(tree):
    """Names bound to triton.compile by 'from triton import compile [as c]'."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("triton", "triton.compiler",
                                                                "triton.compiler.compiler"):
            for a in node.names:
                if a.name == "compile":
                    aliases.add(a.asname or a.name)
    return aliases


def strip_compile_statements(source: str) -> tuple[str, list[Any]]:
    """Removes `x = triton.compile(...)`, bare `triton.compile(...)` and prints of their results.

    Statements are found with ast; their lines are replaced by `pass` at the same indentation,
    so line numbers and block structure stay as they were. Returns (source, removed) where
    removed lists {"line": N, "statement": "..."}. Raises SyntaxError if source does not parse.
    """
    tree = ast.parse(source)
    aliases = _compile_aliases(tree)
    results = set()  # names that hold a compile result
    doomed = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and \
                _is_compile_call(node.value, aliases):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                results |= _names_in(t)
            doomed.append(node)
        elif isinstance(node, ast.Expr) and _is_compile_call(node.value, aliases):
            doomed.append(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
                _dotted(node.value.func) == "print" and results:
            used = set()
            for a in list(node.value.args) + [k.value for k in node.value.keywords]:
                used |= _names_in(a)
            if used & results:
                doomed.append(node)
    if not doomed:
        return source, []
    lines = source.splitlines(keepends=True)
    # Each doomed statement must own its lines; otherwise fall back to regenerating the source.
    owned = True
    spans = sorted({(n.lineno, n.end_lineno, n.col_offset) for n in doomed})
    all_stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    for (a, b, col) in spans:
        for s in all_stmts:
            if s.lineno <= b and s.end_lineno >= a and (s.lineno, s.end_lineno, s.col_offset) \
                    not in spans and not (s.lineno <= a and s.end_lineno >= b):
                owned = False
        if lines[a - 1][:col].strip():
            owned = False
    removed = [{"line": n.lineno, "statement": ast.get_source_segment(source, n) or ""}
               for n in sorted(doomed, key=lambda n: n.lineno)]
    if owned:
        for (a, b, col) in spans:
            indent = lines[a - 1][:col]
            lines[a - 1] = indent + "pass  # kforge: removed triton.compile statement\n"
            for i in range(a, b):
                lines[i] = "\n"
        return "".join(lines), removed

    class Strip(ast.NodeTransformer):
        def generic_visit(self, node):
            super().generic_visit(node)
            for field in ("body", "orelse", "finalbody"):
                body = getattr(node, field, None)
                if isinstance(body, list) and body and all(isinstance(s, ast.stmt) for s in body):
                    kept = [s for s in body if s not in doomed]
                    if not kept:
                        kept = [ast.Pass()]
                    setattr(node, field, kept)
            return node

    new_tree = ast.fix_missing_locations(Strip().visit(tree))
    return ast.unparse(new_tree) + "\n", removed


def assemble(code: str, wrapper: str, test: str,
             modules_present: dict[str, bool]) -> tuple[str, dict[str, Any]]:
    """The single script that runs: preamble, cleaned code, wrapper, test.

    Returns (script, info) with info = {"sections": {name: [first_line, last_line]},
    "removed": [...]}. Raises SyntaxError (with .kforge_section set) for code that does not parse.
    """
    try:
        cleaned, removed = strip_compile_statements(code)
    except SyntaxError as e:
        e.kforge_section = "code"
        raise
    parts = [("preamble", "\n".join(stmt for mod, stmt in PREAMBLE_MODULES
                                    if modules_present.get(mod)) + "\n"),
             ("code", cleaned), ("kernel_wrapper", wrapper), ("unitest_code", test)]
    script = ""
    sections = {}
    for name, text in parts:
        header = "# ---- kforge: %s ----\n" % name
        script += header
        first = script.count("\n") + 1
        if not text.endswith("\n"):
            text += "\n"
        script += text
        sections[name] = [first, script.count("\n")]
    return script, {"sections": sections, "removed": removed}


def code_kernels(code: str) -> list[str]:
    """Names of the functions the code decorates as Triton kernels (@triton.jit, @jit,
    @triton.autotune(...), @triton.heuristics(...), in any combination), found with ast."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for d in node.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            dotted = _dotted(target) or ""
            if dotted.split(".")[-1] in ("jit", "autotune", "heuristics"):
                names.append(node.name)
                break
    return names


def section_of(info: dict[str, Any], line: int) -> tuple[Any, int]:
    for name, (a, b) in info["sections"].items():
        if line is not None and a <= line <= b:
            return name, line - a + 1
    return None, line


def find_tests(tree: Any) -> tuple[list[str], set[str]]:
    """Module-level test functions, in order, and those the script itself calls at top level."""
    tests = [n.name for n in tree.body
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]
    called = set()
    for n in tree.body:
        value = None
        if isinstance(n, ast.Expr):
            value = n.value
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            value = n.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
                value.func.id in tests:
            called.add(value.func.id)
    return tests, called

