"""The differential check (docs/VERIFIER.md, "The differential check"): where a sample declares a
PyTorch reference (`KFORGE_SPEED = {"wrapper": fn, "reference": fn, "inputs": fn}`), the wrapper
against the reference not only on inputs() (the speed label's check) but on transformed copies
of them, the inputs a test may never reach:

  scaled by 1e3, by 1e-3   every floating-point input (tensor, list of floats, float argument)
                           times the factor: a softmax without its max subtraction overflows
                           (exp of logits above ~88 in float32), an eps or an absolute
                           threshold shows
  negated                  every floating-point input negated: a kernel right only for one sign
  zeros                    every third element of each floating-point buffer 0.0
  outliers                 every seventh element of each floating-point buffer times 1e4
  dim 0 one shorter,       each float buffer one element shorter along its first (last) axis,
  last dim one shorter     where every float buffer has that axis at the same size (>= 2) and no
                           argument is a plain int (a size the buffers would no longer match):
                           the masked tail a size that is a multiple of the block never reaches

A transform is skipped where the reference does not accept it (raises) or gives non-finite
values where it gave finite ones on inputs(): the reference itself leaves its domain there. A
size transform the wrapper refuses (raises) is skipped as well (its parameters do not allow the
size); a value transform it raises on is a disagreement. The outputs are compared as the speed
label compares them (kernel_replay.differs: the dtype's relative tolerance, scaled by the
output's largest finite magnitude, where the reference's output is finite; a non-finite value of
the wrapper's where the reference's is finite differs). The first disagreement fails the sample,
naming the transform; every transform's outcome is report["differential"].

Every call of the sample's code (inputs(), the wrapper, the reference) goes through blind.call,
the path every other run takes. Cost: inputs() once, and two calls per transform (at most 14), on
inputs()'s sizes; stopped after BUDGET_S seconds.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, Optional

from . import blind, origin
from .gpusync import synchronize
from .kernel_replay import differs
from .report_schema import VERDICT
from .shapes import Json, Sample
from .timing import declared

# A transform's results: agrees, differs, refused, and this one, spelled like the verdict but a
# word of the transforms' own list.
SKIPPED = "skipped"  # not vocabulary: a transform's result

SEED = 20261129
BUDGET_S = 20.0  # the transforms after this many seconds are not tried
Args = tuple[Any, ...]


def _torch() -> Any:
    return sys.modules.get("torch")


def _is_tensor(x: Any) -> bool:
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


def _float_list(v: Any) -> bool:
    return type(v) is list and bool(v) and all(type(x) is float for x in v)


def _map_floats(args: Args, tensor: Callable[[Any], Any],
                items: Callable[[list[float]], list[float]],
                scalar: Optional[Callable[[float], float]] = None) -> Args:
    """A copy of args with every float buffer changed (tensor(t) on a clone, items(list) on a
    copy) and, where `scalar` is given, every float argument."""
    def one(v: Any) -> Any:
        if _is_tensor(v):
            c = v.detach().clone()
            if c.is_floating_point() and c.numel():
                tensor(c)
            return c
        if _float_list(v):
            return items(list(v))
        if type(v) is float and scalar is not None and math.isfinite(v):
            return scalar(v)
        if isinstance(v, (tuple, list)):
            return type(v)(one(x) for x in v)
        return v
    return tuple(one(a) for a in args)


def _copy(args: Args) -> Args:
    return _map_floats(args, lambda t: None, lambda xs: xs)


def _scaled(factor: float) -> Callable[[Args], Optional[Args]]:
    def make(args: Args) -> Optional[Args]:
        return _map_floats(args, lambda t: t.mul_(factor), lambda xs: [x * factor for x in xs],
                           lambda x: x * factor)
    return make


def _negated(args: Args) -> Optional[Args]:
    return _map_floats(args, lambda t: t.neg_(), lambda xs: [-x for x in xs], lambda x: -x)


def _every(step: int, change: Callable[[Any], Any]) -> Callable[[Args], Optional[Args]]:
    def tensor(t: Any) -> None:
        torch = _torch()
        every = torch.arange(t.numel(), device=t.device).reshape(t.shape) % step == 0
        t[every] = change(t[every])  # any layout: a mask of every step-th element

    def items(xs: list[float]) -> list[float]:
        return [change(x) if i % step == 0 else x for i, x in enumerate(xs)]

    def make(args: Args) -> Optional[Args]:
        return _map_floats(args, tensor, items)
    return make


def _plain_int(v: Any) -> bool:
    return type(v) is int


def _buffers(args: Args) -> list[Any]:
    out = []
    for v in args:
        if _is_tensor(v) and v.is_floating_point() and v.dim() >= 1:
            out.append(v)
        elif _float_list(v):
            out.append(v)
        elif isinstance(v, (tuple, list)) and not _float_list(v):
            out += _buffers(tuple(v))
    return out


def _shorter(axis: int) -> Callable[[Args], Optional[Args]]:
    """Every float buffer one shorter along `axis` (0 or -1), where they all have it at one size
    of at least 2 and no argument is a plain int. None where that does not hold."""
    def size(v: Any) -> int:
        return len(v) if type(v) is list else int(v.shape[axis])

    def cut(v: Any) -> Any:
        if type(v) is list:
            return v[:-1]
        index = [slice(None)] * v.dim()
        index[axis] = slice(0, v.shape[axis] - 1)
        return v[tuple(index)].contiguous()

    def make(args: Args) -> Optional[Args]:
        if any(_plain_int(a) for a in args):
            return None
        bufs = _buffers(args)
        sizes = {size(b) for b in bufs}
        if not bufs or len(sizes) != 1 or sizes.pop() < 2:
            return None
        if axis != 0 and all(type(b) is list or b.dim() == 1 for b in bufs):
            return None  # one axis only: the same as dim 0

        def one(v: Any) -> Any:
            if (_is_tensor(v) and v.is_floating_point() and v.dim() >= 1) or _float_list(v):
                return cut(v.detach().clone() if _is_tensor(v) else list(v))
            if isinstance(v, (tuple, list)):
                return type(v)(one(x) for x in v)
            return v
        return tuple(one(a) for a in args)
    return make


# (name, make, whether the wrapper may refuse it): make(args) -> transformed copies, or None
# where the transform does not apply to these inputs.
TRANSFORMS: list[tuple[str, Callable[[Args], Optional[Args]], bool]] = [
    ("scaled by 1e3", _scaled(1e3), False),
    ("scaled by 1e-3", _scaled(1e-3), False),
    ("negated", _negated, False),
    ("zeros (every third element 0)", _every(3, lambda x: x * 0), False),
    ("outliers (every seventh element times 1e4)", _every(7, lambda x: x * 1e4), False),
    ("dim 0 one shorter", _shorter(0), True),
    ("last dim one shorter", _shorter(-1), True),
]


def _outputs(ret: Any, args: Args) -> list[Any]:
    """What a call produced: the buffers it returned, else the buffers among its arguments."""
    if ret is None:
        return [a for a in args if _is_tensor(a) or type(a) is list]
    if isinstance(ret, (tuple, list)) and not (type(ret) is list and ret and
                                               all(type(x) in (int, float) for x in ret)):
        return [r for r in ret if _is_tensor(r) or type(r) is list]
    return [ret]


def _nonfinite(outs: list[Any]) -> int:
    n = 0
    torch = _torch()
    for o in outs:
        if _is_tensor(o):
            if o.is_floating_point() or o.is_complex():
                n += int((~torch.isfinite(o.detach())).sum())
        elif type(o) is list:
            n += sum(1 for v in o if isinstance(v, float) and not math.isfinite(v))
    return n


def _mismatch(want: list[Any], got: list[Any]) -> Optional[str]:
    """Why the wrapper's outputs disagree with the reference's, or None."""
    if len(want) != len(got):
        return "%d outputs where the reference gives %d" % (len(got), len(want))
    for i, (x, y) in enumerate(zip(want, got)):
        if _is_tensor(x) != _is_tensor(y):
            return "output %d is a %s where the reference's is a %s" % (
                i, type(y).__name__, type(x).__name__)
        if _is_tensor(x):
            if tuple(x.shape) != tuple(y.shape):
                return "output %d has shape %s where the reference's has %s" % (
                    i, list(y.shape), list(x.shape))
            x, y = x.detach(), y.detach()
            if y.dtype != x.dtype:
                y = y.to(x.dtype)
        elif type(x) in (int, float) and type(y) in (bool, int, float):
            x, y = [float(x)], [float(y)]
        elif type(x) is not type(y):
            return "output %d is a %s where the reference's is a %s" % (
                i, type(y).__name__, type(x).__name__)
        elif type(x) is list and len(x) != len(y):
            return "output %d has %d elements where the reference's has %d" % (i, len(y), len(x))
        if differs([x], [y]):
            bad = _nonfinite([y]) - _nonfinite([x])
            if bad > 0:
                return "output %d has %d non-finite values where the reference's are finite" % (
                    i, bad)
            return "output %d differs beyond the dtype's tolerance" % i
    return None


def _call(fn: Callable[..., Any], args: Args) -> tuple[Optional[list[Any]], Optional[str]]:
    """fn on copies of args, through blind.call: (outputs, None) or (None, the error)."""
    mine = _copy(args)
    synchronize()
    try:
        out = _outputs(blind.call("differential", fn, *mine), mine)
        synchronize()
    except Exception as e:  # noqa: BLE001 - the sample's own code raised
        return None, "%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[-1][:200])
    return out, None


def _out_of_memory(err: Optional[str]) -> bool:
    """An error that says the device (or host) ran out of memory (torch's OutOfMemoryError,
    CUDA's "out of memory", MemoryError)."""
    text = (err or "").lower()
    return "outofmemoryerror" in text or "out of memory" in text or \
        text.startswith("memoryerror")


def make_inputs(inputs_fn: Callable[[], Any]) -> Args:
    torch = _torch()
    if torch is not None:
        torch.manual_seed(SEED)
    args = blind.call("differential", inputs_fn)
    if not isinstance(args, (tuple, list)) or _float_list(args) or \
            (type(args) is list and args and all(type(x) in (int, float) for x in args)):
        args = (args,)
    return tuple(args)


def try_transform(name: str, make: Callable[[Args], Optional[Args]], refusable: bool,
                  spec: tuple[Callable[..., Any], Callable[..., Any]], base: Args,
                  base_nonfinite: int,
                  agreed: Optional[Callable[[str, Args, list[Any]], None]] = None) -> Json:
    """One transform's outcome: {transform, result: agrees | differs | skipped | refused,
    detail?}. agreed(name, args, reference's outputs) is called where the wrapper agrees."""
    wrapper, reference = spec
    entry: Json = {"transform": name}
    args = make(base)
    if args is None:
        entry.update(result=SKIPPED, detail="does not apply to these inputs")
        return entry
    want, err = _call(reference, args)
    if want is None:
        entry.update(result=SKIPPED, detail="the reference raised %s" % err)
        return entry
    if _nonfinite(want) > base_nonfinite:
        entry.update(result=SKIPPED, detail="the reference's output is not finite")
        return entry
    got, err = _call(wrapper, args)
    if got is None:
        if _out_of_memory(err):
            # Device memory, not the answer: the transformed copies of real-size inputs can
            # need more than the worker has (the speed label's not_timed has the same cause).
            entry.update(result=SKIPPED, detail="the wrapper ran out of memory: %s" % err)
        elif refusable:
            entry.update(result="refused", detail="the wrapper raised %s" % err)
        else:
            entry.update(result="differs", detail="the wrapper raised %s" % err)
        return entry
    why = _mismatch(want, got)
    entry.update(result="differs" if why else "agrees")
    if why:
        entry["detail"] = why
    elif agreed is not None:
        agreed(name, args, want)
    return entry


def run_differential(sample: Sample, report: Json) -> Optional[Json]:
    """report["differential"] for a sample that declares a reference (None where it declares
    none or a malformed one: the speed phase reports that); the verdict "failed", naming the
    transform, at the first disagreement."""
    try:
        spec = declared(sample.get("module"))
    except ValueError:
        return None
    if spec is None:
        return None
    wrapper, reference, inputs_fn = spec
    t0 = time.monotonic()
    out: Json = {"transforms": [], "failed": None}
    report["differential"] = out
    try:
        base = make_inputs(inputs_fn)
        want, err = _call(reference, base)
    except Exception as e:  # noqa: BLE001 - inputs() raised
        want, err = None, "%s: %s" % (type(e).__name__, str(e)[:200])
    if want is None:
        out["stopped"] = "inputs() or the reference raised %s" % err
        out["ms"] = int((time.monotonic() - t0) * 1000)
        return out
    base_nonfinite = _nonfinite(want)
    agreed = _origin(sample, report, wrapper, t0)
    agreed(origin.INPUTS, base, want)
    for name, make, refusable in TRANSFORMS:
        if time.monotonic() - t0 > BUDGET_S:
            out["stopped"] = "the time budget (%g s) was spent" % BUDGET_S
            break
        entry = try_transform(name, make, refusable, (wrapper, reference), base, base_nonfinite,
                              agreed)
        out["transforms"].append(entry)
        if entry["result"] == "differs":
            out["failed"] = name
            report["verdict"] = VERDICT.failed
            report["detail"] = ("differential: on inputs() %s, the wrapper disagrees with the "
                                "declared reference (%s); it agrees on inputs() as given"
                                % (name, entry.get("detail", "")))
            break
    out["ms"] = int((time.monotonic() - t0) * 1000)
    return out


def _origin(sample: Sample, report: Json, wrapper: Callable[..., Any],
            t0: float) -> Callable[[str, Args, list[Any]], None]:
    """The origin check (origin.py) of each call the wrapper agreed on, into report["origin"]:
    inputs() and each transform, until one is judged the host's (or the time budget is spent)."""
    state = sample.get("state")
    checked: list[Json] = []
    clock = origin.Clock()
    report["origin"] = origin.summary(checked, 0)
    judge = origin.Judge(state, _call) if state is not None else None

    def agreed(on: str, args: Args, want: list[Any]) -> None:
        if judge is None or report["origin"]["host"] is not None or \
                time.monotonic() - t0 > BUDGET_S:
            return
        try:
            checked.append(judge.judge(on, wrapper, args, want))
        except Exception as e:  # noqa: BLE001 - the check's own error: the call is not judged
            checked.append({"on": on, "result": origin.NOT_JUDGED, "share": None, "elements": 0,
                            "runs": 0, "detail": "harness error: %s: %s" % (type(e).__name__,
                                                                            str(e)[:200])})
        report["origin"] = origin.summary(checked, clock.ms())
    return agreed
