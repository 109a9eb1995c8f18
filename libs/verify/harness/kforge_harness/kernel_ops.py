"""Kernel mutation operators: a Triton kernel's source made wrong the way real kernel bugs are.

Pure `ast` work, standard library only. `sites(fn_def, kernel)` lists every place an operator
applies in one kernel's `def` (line, column, what it changes, in plain words); `choose(...)`
picks a given number of them deterministically (the same kernel always gets the same mutants),
spread over the operators and the kernels; `mutate(fn_def, site)` returns the source of the
mutated `def` (decorators dropped: the harness compiles it as a kernel of its own).

The operators, in the order a budget takes them (docs/VERIFIER.md, "Kernel mutants"):

  where_swap   tl.where(c, a, b) -> tl.where(c, b, a)
  constant     a numeric constant in the computation changed (0 -> 1, c -> c + 1, x -> 2x)
  arith        an arithmetic operator changed (+ and -, / -> *; a * b -> b / a and a / b on
               values, a * b -> a + b on indices and integer arithmetic), values first;
               pointers (found by use: pointer_names) are left alone
  drop         an operand or a factor of a value's arithmetic dropped (x + y -> x and -> y,
               x * a -> x and -> a, x - y -> x, x / a -> x): what a test whose inputs make
               that operand the identity (a zero second operand, a unit scale) cannot see
  other        the other= fill of a masked tl.load changed (0 -> 1, anything else -> 0)
  index_swap   two index terms swapped (a * s + b -> b * s + a; x[:, None] <-> x[None, :])
  stride_swap  one stride argument used in place of another
  bound        a comparison's right side one less (offsets < n -> offsets < n - 1)
  reduce_axis  a reduction (tl.sum, tl.max, ...) over the other axis (2-D blocks only)
  compare      a comparison's operator changed (< and <=, > and >=, == and !=)
  mask_drop    the mask= (and other=) of a tl.load or tl.store removed
  offset       an offsets assignment built on tl.arange shifted by one
  mask_invert  the mask of a tl.load or tl.store inverted
"""

from __future__ import annotations

import ast
import copy
import hashlib
from typing import Any, Optional

# Those that change what a kernel computes in bounds first; those that mostly move its accesses
# out of bounds (unsafe: not run under the tests) last.
OPERATORS = ("where_swap", "constant", "arith", "drop", "other", "index_swap", "stride_swap", "bound",
             "reduce_axis", "compare", "mask_drop", "offset", "mask_invert")

# What a survivor of each operator usually says about the test's inputs (the repair evidence).
HINTS = {
    "where_swap": "the test's inputs never reach one of the branches (e.g. only positive values)",
    "constant": "the test's inputs never reach where that constant matters (e.g. an activation "
                "tested only where it is the identity)",
    "drop": "the dropped operand is the identity in every input the test gives (an added "
            "operand all zeros, a scale or a factor of 1), so the kernel's use of it is "
            "never checked",
    "other": "the test's sizes leave no masked lanes that reach the result (sizes that are "
             "multiples of the block)",
    "compare": "the test's inputs never sit on the boundary of that comparison",
    "arith": "an operand is zero or one in every input (a zero second operand, a unit scale) "
             "or the inputs are constant",
    "mask_drop": "inputs whose size is a multiple of the block cannot tell them apart",
    "bound": "the test never checks the last element at a size that is not a multiple of the "
             "block",
    "index_swap": "the test's inputs are symmetric (a square or a single element), so the "
                  "layout is never checked",
    "stride_swap": "the test's inputs are square or contiguous in a way that makes the strides "
                   "equal",
    "reduce_axis": "the test's inputs have equal rows and columns (constant or symmetric)",
    "offset": "the test never checks the elements a shifted index would move",
    "mask_invert": "the test never checks the elements the mask guards",
}

REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "cumsum", "cumprod", "xor_sum",
              "prod"}
# Calls whose arguments must stay compile-time constants or indices of the launch grid.
FROZEN_CALLS = {"arange", "program_id", "num_programs", "static_range", "full", "zeros",
                "zeros_like", "reshape", "view", "broadcast_to", "expand_dims", "static_assert",
                "device_assert", "static_print", "multiple_of", "max_contiguous", "constexpr",
                "range", "to", "cast", "dot", "make_block_ptr", "advance", "trans", "permute"}
FROZEN_KEYWORDS = {"axis", "dtype", "num_stages", "eviction_policy", "cache_modifier",
                   "boundary_check", "padding_option", "other", "mask", "keep_dims",
                   "return_indices", "loop_unroll_factor"}
ADDRESS_WORDS = ("ptr", "stride", "off", "idx", "index", "pid", "row", "col", "block", "start",
                 "base", "rm", "rn", "rk")
MAX_SNIPPET = 60


def _call_name(node):
    """"load" for tl.load(...), "where" for tl.where(...) or where(...); None otherwise."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return None


def _kw(call, name):
    for k in call.keywords:
        if k.arg == name:
            return k
    return None


def _snippet(node):
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of an odd node: a description without it
        return "?"
    text = " ".join(text.split())
    return text if len(text) <= MAX_SNIPPET else text[:MAX_SNIPPET - 3] + "..."


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_address(node):
    return any(any(w in name.lower() for w in ADDRESS_WORDS) for name in _names(node))


def _number(node):
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _parents(fn_def):
    parents = {}
    for p in ast.walk(fn_def):
        for c in ast.iter_child_nodes(p):
            parents[c] = p
    return parents


def _ancestors(node, parents):
    p = parents.get(node)
    while p is not None:
        yield p
        p = parents.get(p)


def _frozen(node, parents, stop):
    """Whether node sits where a change would only break the compile or the launch grid: inside
    a call of FROZEN_CALLS, a keyword of FROZEN_KEYWORDS, a reduction's axis given by position,
    an annotation, or a subscript's slice."""
    child, p = node, parents.get(node)
    while p is not None and p is not stop:
        if isinstance(p, ast.Call) and child is not p.func and _call_name(p) in FROZEN_CALLS:
            return True
        if isinstance(p, ast.keyword) and p.arg in FROZEN_KEYWORDS:
            return True
        if isinstance(p, ast.Call) and isinstance(p.func, ast.Attribute) and \
                p.func.attr in REDUCTIONS and len(p.args) > 1 and child is p.args[1]:
            return True  # tl.sum(x, 0): the axis given by position (reduce_axis changes it)
        if isinstance(p, (ast.arg, ast.AnnAssign)) and child is getattr(p, "annotation", None):
            return True
        if isinstance(p, ast.Subscript) and child is p.slice:
            return True
        child, p = p, parents.get(p)
    return False


_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
             ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
_CMP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
             ast.NotEq: "!="}
_ARITH_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Div: ast.Mult}
_ARITH_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def _new_constant(v):
    if type(v) is int:
        return v + 1
    if v == 0.0:
        return 1.0
    return v * 2.0


def _broadcast_swap(sub):
    """x[:, None] <-> x[None, :] (a 2-tuple of one full slice and one None)."""
    s = sub.slice
    if not isinstance(s, ast.Tuple) or len(s.elts) != 2:
        return None
    a, b = s.elts

    def full(e):
        return isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None

    def none(e):
        return isinstance(e, ast.Constant) and e.value is None
    if (full(a) and none(b)) or (none(a) and full(b)):
        return True
    return None


def sites(fn_def: ast.FunctionDef, kernel: str) -> list[dict[str, Any]]:
    """Every mutation site of one kernel's FunctionDef, in source order: dicts with kernel, op,
    index (the node's ordinal in ast.walk order), line, col, variant and desc."""
    out = []
    parents = _parents(fn_def)
    strides = sorted(a.arg for a in fn_def.args.args if a.arg.lower().startswith("stride"))
    body_nodes = list(ast.walk(fn_def))
    ptrs = pointer_names(fn_def)
    ints = int_names(fn_def)
    two_d = _blocks_2d(fn_def)

    def add(op, i, node, desc, variant=0):
        out.append({"kernel": kernel, "op": op, "index": i, "variant": variant,
                    "line": getattr(node, "lineno", fn_def.lineno),
                    "col": getattr(node, "col_offset", 0), "desc": desc})

    decorators = {id(n) for d in fn_def.decorator_list for n in ast.walk(d)}
    for i, node in enumerate(body_nodes):
        if node is fn_def or id(node) in decorators:
            continue
        name = _call_name(node)
        if name == "where" and len(node.args) == 3 and not node.keywords:
            add("where_swap", i, node, "the branches of `%s` are swapped" % _snippet(node))
        if name in ("load", "store") and isinstance(node, ast.Call):
            m = _kw(node, "mask")
            if m is not None:
                add("mask_drop", i, node, "the mask of the tl.%s `%s` is removed"
                    % (name, _snippet(node)))
                add("mask_invert", i, node, "the mask of the tl.%s `%s` is inverted"
                    % (name, _snippet(node)))
            o = _kw(node, "other") if name == "load" else None
            if o is not None and m is not None:
                new = _other_value(o.value)
                add("other", i, node, "the other= fill of `%s` is %s instead of %s"
                    % (_snippet(node), new, _snippet(o.value)))
        if name in REDUCTIONS and isinstance(node, ast.Call):
            ax = _kw(node, "axis")
            val = ax.value if ax is not None else (node.args[1] if len(node.args) > 1 else None)
            if isinstance(val, ast.Constant) and type(val.value) is int and two_d:
                add("reduce_axis", i, node, "`%s` reduces over axis %d instead of %d"
                    % (_snippet(node), 1 - val.value if val.value in (0, 1) else 0, val.value))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                not _frozen(node, parents, fn_def):
            op = type(node.ops[0])
            if op in _CMP_SWAP:
                add("compare", i, node, "`%s` is `%s` in `%s`"
                    % (_CMP_TEXT[op], _CMP_TEXT[_CMP_SWAP[op]], _snippet(node)))
            if op in (ast.Lt, ast.LtE, ast.Gt, ast.GtE) and not _number(node.comparators[0]):
                add("bound", i, node, "the bound of `%s` is one less (`%s - 1`)"
                    % (_snippet(node), _snippet(node.comparators[0])))
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_SWAP and \
                not (_number(node.left) and _number(node.right)) and \
                not _is_pointer(node, ptrs) and \
                not _frozen(node, parents, fn_def):
            value = not (_is_address(node) or _int_expr(node, ints))
            targets = [_ARITH_TEXT[_ARITH_SWAP[type(node.op)]]]
            if value and isinstance(node.op, ast.Mult):
                targets = ["/", "/r"]  # a * b -> a / b and b / a: a unit scale hides the second
            for t in targets:
                shown = "%s / %s" % (_snippet(node.right), _snippet(node.left)) if t == "/r" \
                    else None
                desc = ("`%s` is `%s`" % (_snippet(node), shown)) if shown else \
                    ("`%s` is `%s` in `%s`" % (_ARITH_TEXT[type(node.op)], t, _snippet(node)))
                add("arith", i, node, desc, variant=0 if value else 1)
                out[-1]["to"] = t
        for variant, keep in _drops(node, parents, fn_def, ptrs, ints):
            add("drop", i, node, "`%s` is `%s` (`%s` dropped)" % (
                _snippet(node), _snippet(keep), _snippet(node.right if variant == 0
                                                         else node.left)), variant)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and \
                not (isinstance(parents.get(node), ast.BinOp) and
                     isinstance(parents[node].op, ast.Add)) and \
                not _frozen(node, parents, fn_def) and _swap_terms(node, ptrs) is not None:
            add("index_swap", i, node, "the index terms of `%s` are swapped (`%s`)"
                % (_snippet(node), _snippet(_swap_terms(node, ptrs))))
        if isinstance(node, ast.Subscript) and _broadcast_swap(node) and \
                not _frozen(node, parents, fn_def):
            add("index_swap", i, node, "`%s` is broadcast the other way" % _snippet(node),
                variant=1)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                node.id in strides and len(strides) > 1:
            other = strides[(strides.index(node.id) + 1) % len(strides)]
            add("stride_swap", i, node, "`%s` is used in place of `%s` (line %d)"
                % (other, node.id, node.lineno))
        if _number(node) and type(node.value) is not bool and not _frozen(node, parents, fn_def):
            # values (a where branch, an operand) before thresholds (inside a comparison)
            in_compare = any(isinstance(a, ast.Compare) for a in _ancestors(node, parents))
            add("constant", i, node, "the constant %r is %r" % (node.value,
                                                                  _new_constant(node.value)),
                variant=1 if in_compare else 0)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and \
                any(_call_name(n) == "arange" for n in ast.walk(node.value)):
            add("offset", i, node, "`%s` is shifted by one" % _snippet(node))
    return out


_DROP_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def _shallow_names(node):
    """The names of an expression outside the calls in it (x in `x * tl.load(p + off)`)."""
    out, todo = set(), [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name):
            out.add(n.id)
        if isinstance(n, ast.Call) and n is not node:
            continue
        todo.extend(ast.iter_child_nodes(n))
    return out


_INDEX_CALLS = {"arange", "program_id", "num_programs", "cdiv"}


def _shallow_calls(node):
    """The calls of an expression, not looking inside their arguments."""
    out, todo = [], list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Call):
            out.append(n)
            continue
        todo.extend(ast.iter_child_nodes(n))
    return out


def _assigned_names(node, parents):
    """The names the statement holding node assigns (offs in `offs = a + b`)."""
    p = parents.get(node)
    while p is not None and not isinstance(p, ast.stmt):
        p = parents.get(p)
    if isinstance(p, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = p.targets if isinstance(p, ast.Assign) else [p.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _in_address(node, parents):
    """Whether node is part of the address (first argument) of a tl.load, tl.store, ..."""
    child, p = node, parents.get(node)
    while p is not None:
        if isinstance(p, ast.Call) and _call_name(p) in ADDRESS_CALLS and p.args and \
                child is p.args[0]:
            return True
        child, p = p, parents.get(p)
    return False


def _drops(node, parents, fn_def, ptrs, ints):
    """The drop sites of one node: (variant, the operand kept) for a value's +, -, * or /
    (variant 0 keeps the left operand, 1 the right, for + and * only). Not for addresses,
    integer (index) arithmetic, a numeric operand (the constant operator changes those) or a
    frozen place."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, _DROP_OPS)) or \
            _number(node.left) or _number(node.right) or _frozen(node, parents, fn_def) or \
            _in_address(node, parents) or _int_expr(node, ints):
        return []
    if any(_call_name(n) in _INDEX_CALLS for n in _shallow_calls(node)):
        return []  # pid * BLOCK + tl.arange(0, BLOCK): index arithmetic
    names = _shallow_names(node) | _assigned_names(node, parents)
    if any(n in ptrs or "ptr" in n.lower() for n in names) or \
            any(any(w in n.lower() for w in ADDRESS_WORDS) for n in names):
        return []
    out = [(0, node.left)]
    if isinstance(node.op, (ast.Add, ast.Mult)):
        out.append((1, node.right))
    return out


def _other_value(node):
    if isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 0:
        return "1.0" if isinstance(node.value, float) else "1"
    return "0.0"


def _terms(node):
    """The terms of a chain of additions a + b + c, left to right."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _terms(node.left) + _terms(node.right)
    return [node]


def _has_call(node):
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _is_pointer(node, ptrs=frozenset()):
    return any("ptr" in name.lower() or name in ptrs for name in _names(node))


# Calls whose first argument is an address (a pointer plus offsets, or a block pointer).
ADDRESS_CALLS = {"load", "store", "make_block_ptr", "atomic_add", "atomic_max", "atomic_min",
                 "atomic_cas", "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor"}


def _leftmost(expr):
    """The first term of a chain of additions and subtractions."""
    while isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        expr = expr.left
    return expr


def pointer_names(fn_def: ast.FunctionDef) -> set[str]:
    """The names a kernel uses as pointers, whatever they are called (`X`, `inp`, `Q` as well as
    `x_ptr`): the first term of the address of each tl.load, tl.store, tl.make_block_ptr and
    atomic, and, back through assignments, the first term of what a pointer name was assigned
    (`inp_ptrs = inp + offset`; `X += row * stride` keeps X a pointer)."""
    ptrs, assigns = set(), []
    for node in ast.walk(fn_def):
        if isinstance(node, ast.Call) and _call_name(node) in ADDRESS_CALLS and node.args:
            left = _leftmost(node.args[0])
            if isinstance(left, ast.Name):
                ptrs.add(left.id)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            assigns.append((node.targets[0].id, node.value))
    grew = True
    while grew:
        grew = False
        for name, value in assigns:
            left = _leftmost(value)
            if name in ptrs and isinstance(left, ast.Name) and left.id not in ptrs:
                ptrs.add(left.id)
                grew = True
    return ptrs


_INT_CALLS = {"program_id", "num_programs", "cdiv"}


def _int_expr(e, ints):
    """Whether e is integer arithmetic: integer constants, names in ints, program ids, cdiv,
    // and %, and sums and products of those."""
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Name):
        return e.id in ints
    if isinstance(e, ast.Call):
        return _call_name(e) in _INT_CALLS
    if isinstance(e, ast.BinOp):
        if isinstance(e.op, (ast.FloorDiv, ast.Mod)):
            return True
        return isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)) and _int_expr(e.left, ints) and \
            _int_expr(e.right, ints)
    return False


def int_names(fn_def: ast.FunctionDef) -> set[str]:
    """Names that hold integers (a grid position, a tile order): the constexpr parameters and
    what is assigned integer arithmetic of them. A product of two such is index arithmetic:
    `a * b` -> `b / a` would make a float the compiler refuses (`group_id * GROUP_M`)."""
    ints = set()
    for a in fn_def.args.args:
        ann = a.annotation
        if ann is not None and "constexpr" in ast.unparse(ann):
            ints.add(a.arg)
    assigns = [(n.targets[0].id, n.value) for n in ast.walk(fn_def)
               if isinstance(n, ast.Assign) and len(n.targets) == 1 and
               isinstance(n.targets[0], ast.Name)]
    grew = True
    while grew:
        grew = False
        for name, value in assigns:
            if name not in ints and _int_expr(value, ints):
                ints.add(name)
                grew = True
    return ints


def _blocks_2d(fn_def):
    """Whether the kernel works on blocks of two or more dimensions (a broadcast x[:, None], a
    tl.zeros/tl.full/reshape of a shape of two or more, a 2-D block pointer): a reduction over
    another axis of a 1-D block does not compile, so reduce_axis is not tried there."""
    for node in ast.walk(fn_def):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and \
                any(isinstance(e, ast.Constant) and e.value is None for e in node.slice.elts):
            return True
        name = _call_name(node)
        if name in ("zeros", "full", "reshape", "view", "broadcast_to", "make_block_ptr"):
            shapes = [a for a in list(node.args) + [k.value for k in node.keywords]
                      if isinstance(a, (ast.List, ast.Tuple))]
            if any(len(a.elts) >= 2 for a in shapes):
                return True
    return False


def _swap_terms(node, ptrs=frozenset()):
    """In a chain of additions with a term a * s and another plain term b (neither a pointer
    nor a call), a and b swapped: z_ptr + rn * stride_z + rm -> z_ptr + rm * stride_z + rn, the
    copy a transpose becomes. None where the chain has no such pair."""
    terms = _terms(node)
    if len(terms) < 2:
        return None
    for i, t in enumerate(terms):
        if not (isinstance(t, ast.BinOp) and isinstance(t.op, ast.Mult)):
            continue
        a, s = t.left, t.right
        if _is_pointer(a, ptrs) or _has_call(a) or _number(a):
            continue
        for j, b in enumerate(terms):
            if j == i or isinstance(b, ast.BinOp) or _is_pointer(b, ptrs) or _has_call(b) or \
                    _number(b) or ast.dump(a) == ast.dump(b):
                continue
            new = list(terms)
            new[i] = ast.BinOp(copy.deepcopy(b), ast.Mult(), copy.deepcopy(s))
            new[j] = copy.deepcopy(a)
            out = new[0]
            for x in new[1:]:
                out = ast.BinOp(out, ast.Add(), x)
            return out
    return None


# Within arith: b / a first (what a unit scale hides; a / b most tests catch anyway).
_ARITH_ORDER = {"/r": 0, "-": 1, "+": 1, "*": 1, "/": 2}


def _priority(site):
    """Sort key of a site within its operator: value sites before index ones (arith), swapped
    terms before a changed broadcast (index_swap), values before thresholds (constant), then the
    stable hash."""
    first = site["variant"] if site["op"] in ("arith", "index_swap", "constant", "drop") else 0
    second = _ARITH_ORDER.get(site.get("to"), 1) if site["op"] == "arith" else 0
    return first, second, site_key(site)


def site_key(site: dict[str, Any]) -> str:
    """A stable key (the same kernel always gives the same order)."""
    text = "%s|%s|%d|%d|%d|%s" % (site["kernel"], site["op"], site["line"], site["col"],
                                  site["variant"], site.get("to", ""))
    return hashlib.sha256(text.encode()).hexdigest()


def choose(sites_by_kernel: list[tuple[str, list[dict[str, Any]]]],
           count: int) -> list[dict[str, Any]]:
    """`count` sites, deterministic: round-robin over the kernels (in the order given) and within
    a kernel over OPERATORS in order, each operator's sites taken in the order of a stable hash
    (so a budget spreads over the kernel rather than taking its first lines). Value arithmetic
    comes before index arithmetic, swapped index terms before a changed broadcast, a value
    constant before a threshold in a comparison."""
    queues = []
    for kernel, ss in sites_by_kernel:
        per_op = []
        for op in OPERATORS:
            mine = sorted((s for s in ss if s["op"] == op), key=_priority)
            if mine:
                per_op.append(mine)
        queues.append(per_op)
    chosen = []
    while len(chosen) < count:
        progressed = False
        for per_op in queues:
            if not per_op or len(chosen) >= count:
                continue
            q = per_op.pop(0)
            chosen.append(q.pop(0))
            if q:
                per_op.append(q)  # the operator that gave one goes to the back of the line
            progressed = True
        if not progressed:
            break
    return chosen


def mutate(fn_def: ast.FunctionDef, site: dict[str, Any]) -> str:
    """The source of the kernel's def with the site's mutation applied (decorators dropped).
    Raises ValueError when the site no longer matches the tree."""
    # ast.walk of a copy visits its nodes in the same order as the original's (decorators
    # included): the site's ordinal names the same node.
    keep = copy.deepcopy(fn_def)
    nodes = list(ast.walk(keep))
    if site["index"] >= len(nodes):
        raise ValueError("mutation site out of range")
    node = nodes[site["index"]]
    _apply(keep, node, site)
    return _source(keep)


def identity(fn_def: ast.FunctionDef) -> str:
    """The source of the kernel's def as mutate() writes a mutant's, with nothing changed: the
    kernel battery's control run (kernel_mutants.identity_control) builds it as a mutant."""
    return _source(copy.deepcopy(fn_def))


def _source(keep: ast.FunctionDef) -> str:
    """A copy of a kernel's def as a mutant's file holds it: decorators dropped, unparsed."""
    keep.decorator_list = []
    ast.fix_missing_locations(keep)
    return ast.unparse(keep) + "\n"


def _replace(root, old, new):
    for p in ast.walk(root):
        for field, value in ast.iter_fields(p):
            if value is old:
                setattr(p, field, new)
                return True
            if isinstance(value, list):
                for j, v in enumerate(value):
                    if v is old:
                        value[j] = new
                        return True
    return False


def _apply(root, node, site):
    op = site["op"]
    if op == "where_swap":
        node.args[1], node.args[2] = node.args[2], node.args[1]
    elif op == "mask_drop":
        node.keywords = [k for k in node.keywords if k.arg not in ("mask", "other")]
    elif op == "mask_invert":
        k = _kw(node, "mask")
        k.value = ast.UnaryOp(ast.Invert(), k.value)
    elif op == "other":
        k = _kw(node, "other")
        k.value = ast.parse(_other_value(k.value), mode="eval").body
    elif op == "reduce_axis":
        k = _kw(node, "axis")
        val = k.value if k is not None else node.args[1]
        val.value = 1 - val.value if val.value in (0, 1) else 0
    elif op == "compare":
        node.ops[0] = _CMP_SWAP[type(node.ops[0])]()
    elif op == "bound":
        node.comparators[0] = ast.BinOp(node.comparators[0], ast.Sub(), ast.Constant(1))
    elif op == "arith":
        to = site.get("to", _ARITH_TEXT[_ARITH_SWAP[type(node.op)]])
        if to == "/r":
            node.left, node.right = node.right, node.left
            to = "/"
        node.op = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}[to]()
    elif op == "drop":
        if not _replace(root, node, node.right if site["variant"] == 1 else node.left):
            raise ValueError("operand not found")
    elif op == "index_swap" and site["variant"] == 0:
        if not _replace(root, node, _swap_terms(node, pointer_names(root))):
            raise ValueError("index terms not found")
    elif op == "index_swap":
        node.slice.elts.reverse()
    elif op == "stride_swap":
        strides = sorted(a.arg for a in root.args.args if a.arg.lower().startswith("stride"))
        node.id = strides[(strides.index(node.id) + 1) % len(strides)]
    elif op == "constant":
        node.value = _new_constant(node.value)
    elif op == "offset":
        node.value = ast.BinOp(node.value, ast.Add(), ast.Constant(1))
    else:
        raise ValueError("unknown operator %s" % op)


def find_def(tree: ast.AST, name: str, line: Optional[int] = None) -> Optional[ast.FunctionDef]:
    """The FunctionDef named `name` (the one starting nearest `line` when several are)."""
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    if not found:
        return None
    if line is None:
        return found[0]
    return min(found, key=lambda n: abs(n.lineno - line))
