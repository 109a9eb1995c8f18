"""Where the answer came from (docs/VERIFIER.md, "Where the answer came from"): the output the
verifier compares outside the test (the reference comparison on inputs(), the differential
transforms; the timed call is a call on inputs() the sample cannot tell apart) must come from the
sample's kernels.

A wrapper can launch its kernel on every call (so launch counting, the kernel's share and the
test's skip-launch run all see a kernel) and still return an answer the host computed (PyTorch,
or plain Python under the CPU stand-in): the kernel's output thrown away, written to a scratch
buffer, overwritten, blended in by `host + 0 * kernel`, replaced where it is not finite, or
used for part of the output only. So, where the differential check compared the wrapper with its
declared reference and they agreed, the same call is made again with the outputs of every launch
of the sample's kernels replaced right after the launch (the kernel runs; then what it wrote is
changed, as a wrong kernel would have written it):

  run 1  all-ones bytes (NaN for floats), the skip-launch run's poison: an answer that still
         agrees did not read the kernel's output, or replaced what was not finite;
  run 2  random values of the output's own magnitude (a seeded generator): an answer that still
         agrees multiplied the kernel's output by zero, or ignored it;
  run 3  other random values, only when runs 1 and 2 together say "host": an element counts as
         the host's when it agreed in run 1 (floats only: NaN never equals a finite answer), or
         in runs 2 and 3 both (a threshold or a sign of the kernel's output agrees by chance in
         one random run, seldom in two).

Elements are judged where the reference's output is finite and not zero (a zero is what a mask,
a relu or padding the wrapper fills gives whatever the kernel wrote). When more than BOUND of
them still agree with the reference, the answer did not come from the kernel: report["origin"]
["host"] names the call (inputs(), or the transform), and the pool flags the sample
kernel_not_used. A call that launched none of the sample's kernels is `no_launch` here (the speed
label's kernel_not_timed is that case). A replacement is indistinguishable from a wrong kernel's
output to the sample: a sample that compares its kernel's output with its own host answer and
returns the kernel's when they differ returns it here too (not flagged), and returns the host's
only where its kernel was right.

Cost: two calls of the wrapper per call judged (a third for a sample over the bound), with no
more compiles; the outputs' known arguments (coverage.outputs) are replaced in place; a kernel
the test never launched has its buffers copied before each launch to find what it wrote.
"""

from __future__ import annotations

import contextlib
import math
import random
import sys
import time
from typing import Any, Callable, Optional

from . import buffers
from .gpusync import synchronize
from .kernel_replay import RTOL, RTOL_DEFAULT
from .outputs import arguments
from .shapes import Json

BOUND = 0.5  # more than this share of the judged elements agreeing: the host's answer
SEED = 5220261129
INPUTS = "inputs()"
KERNEL, HOST, NO_LAUNCH, NOT_JUDGED = "kernel", "host", "no_launch", "not_judged"


def _torch() -> Any:
    return sys.modules.get("torch")


def _is_tensor(x: Any) -> bool:
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


def _no_grad() -> Any:
    t = _torch()
    return t.no_grad() if t is not None else contextlib.nullcontext()


def _random_tensor(x: Any, seed: int) -> None:
    torch = _torch()
    g = torch.Generator(device=x.device)
    g.manual_seed(seed)
    if x.dtype == torch.bool:
        x.copy_(torch.randint(0, 2, tuple(x.shape), generator=g, device=x.device).bool())
        return
    if x.is_floating_point() or x.is_complex():
        v = x.detach().abs().double() if not x.is_complex() else x.detach().abs().double()
        fin = v[torch.isfinite(v)]
        mag = float(fin.max()) if fin.numel() else 1.0
        mag = mag if mag > 0 else 1.0
        new = torch.randn(tuple(x.shape), generator=g, device=x.device, dtype=torch.float32)
        x.copy_((new * mag).to(x.dtype))
        return
    lo, hi = int(x.min()), int(x.max())
    info = torch.iinfo(x.dtype)
    lo, hi = max(info.min, lo - 1), min(info.max, hi + 1)
    x.copy_(torch.randint(lo, hi + 1, tuple(x.shape), generator=g, device=x.device,
                          dtype=torch.int64).to(x.dtype))


def _random_list(x: list, seed: int) -> None:
    rng = random.Random(seed)
    fin = [abs(v) for v in x if type(v) is float and math.isfinite(v)]
    ints = [v for v in x if type(v) is int]
    mag = max(fin) if fin and max(fin) > 0 else 1.0
    lo, hi = (min(ints) - 1, max(ints) + 1) if ints else (0, 1)
    for i, v in enumerate(x):
        if type(v) is bool:
            x[i] = rng.random() < 0.5
        elif type(v) is int:
            x[i] = rng.randint(lo, hi)
        else:
            x[i] = rng.gauss(0.0, mag)


def replace(x: Any, how: str, seed: int) -> None:
    """x's elements replaced in place: `poison` (all-ones bytes, buffers.poison) or `random`."""
    if buffers.numel(x) == 0:
        return
    with _no_grad():
        if how == "poison":
            buffers.poison(x)
        elif _is_tensor(x):
            try:
                _random_tensor(x, seed)
            except (RuntimeError, TypeError, ValueError):  # a dtype randn cannot make
                buffers.poison(x)
        else:
            _random_list(x, seed)


class Replacer:
    """The launch watch (TritonState.mutator's interface) of one judged call: each launch of the
    sample's kernels runs, then its outputs are replaced. Outputs: the arguments the real run
    found written (`written`: kernel -> names); for a kernel not seen there, the buffers a launch
    changed (copied before it)."""

    def __init__(self, how: str, seed: int, written: dict[str, list[str]]) -> None:
        self.how, self.seed = how, seed
        self.written = {k: list(v) for k, v in written.items()}
        self.launches = 0
        self.replaced = 0  # buffers replaced
        self.errors: list[str] = []

    def launch(self, kernel: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               run: Callable[[], Any]) -> Any:
        named = [(n, v) for n, v in arguments(fn, args, kwargs) if buffers.is_buffer(v)]
        known = self.written.get(kernel)
        before = None if known else [(n, v, buffers.snapshot(v)) for n, v in named]
        self.launches += 1  # a launch that raises was made too (the wrapper may catch it)
        ret = run()
        if before is not None:
            synchronize()
            known = [n for n, v, snap in before if buffers.changed(snap, v)]
            if known:
                self.written[kernel] = known
        seen = set()
        for name, v in named:
            k = buffers.key(v)
            if name not in (known or ()) or k in seen:
                continue
            seen.add(k)
            try:
                replace(v, self.how, self.seed + self.launches * 7919 + len(seen))
                self.replaced += 1
            except Exception as e:  # noqa: BLE001 - recorded; the call is then not judged
                if len(self.errors) < 3:
                    self.errors.append("%s: %s: %s" % (name, type(e).__name__, str(e)[:200]))
        return ret


def _flat(x: Any) -> list[Any]:
    if type(x) in (bool, int, float):
        return [x]
    return list(x)


def _judged(want: Any) -> Any:
    """The elements of one reference output that are judged: finite and not zero (a tensor mask
    or a list of bools)."""
    if _is_tensor(want):
        torch = _torch()
        w = want.detach()
        if w.is_complex():
            return (torch.isfinite(w) & (w != 0))
        if w.is_floating_point():
            return torch.isfinite(w) & (w != 0)
        return w != 0
    return [not (type(v) is float and not math.isfinite(v)) and v != 0 for v in _flat(want)]


def _agree(want: Any, got: Any, floats_only: bool) -> Any:
    """Per element of want: whether got has it within the dtype's tolerance (differential's,
    kernel_replay.differs'), None where they cannot be compared (every element disagrees).
    floats_only: non-float outputs count as disagreeing (the poison -1 or True can be right)."""
    if _is_tensor(want) != _is_tensor(got):
        return None
    if _is_tensor(want):
        torch = _torch()
        if tuple(want.shape) != tuple(got.shape):
            return None
        w, g = want.detach(), got.detach()
        is_float = w.is_floating_point() or w.is_complex()
        if not is_float:
            return None if floats_only else (g.to(w.dtype) == w)
        if w.is_complex():
            w, g = w.abs(), g.to(want.dtype).abs()
        wd, gd = w.double(), g.double()
        fin = torch.isfinite(wd)
        rtol = RTOL.get(str(want.dtype).replace("torch.", ""), RTOL_DEFAULT)
        atol = (rtol * float(wd[fin].abs().max()) if bool(fin.any()) else 0.0) + 1e-30
        return torch.isfinite(gd) & ((gd - wd).abs() <= atol + rtol * wd.abs())
    w, g = _flat(want), _flat(got) if type(got) in (list, bool, int, float) else None
    if g is None or len(w) != len(g):
        return None
    fin = [abs(v) for v in w if not (type(v) is float and not math.isfinite(v))]
    scale = max(fin) if fin else 0.0
    out = []
    for a, b in zip(w, g):
        if type(a) is not float and floats_only:
            out.append(False)
        elif type(b) is float and not math.isfinite(b):
            out.append(False)
        else:
            out.append(abs(b - a) <= 1e-6 * scale + 1e-6 * abs(a) + 1e-30)
    return out


def _count(mask: Any) -> int:
    if mask is None:
        return 0
    return int(mask.sum()) if _is_tensor(mask) else sum(1 for m in mask if m)


def _and(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    return a & b if _is_tensor(a) else [x and y for x, y in zip(a, b)]


def _or(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a | b if _is_tensor(a) else [x or y for x, y in zip(a, b)]


class Judge:
    """One call's judgement: fn(args) under each replacement, its outputs against want."""

    def __init__(self, state: Any, call: Callable[[Callable[..., Any], tuple[Any, ...]],
                                                  tuple[Optional[list[Any]], Optional[str]]]
                 ) -> None:
        self.state, self.call = state, call

    def run(self, wrapper: Callable[..., Any], args: tuple[Any, ...], how: str,
            seed: int) -> tuple[Optional[list[Any]], Replacer]:
        state = self.state
        outputs = getattr(state, "outputs", None)
        rep = Replacer(how, seed, dict(outputs.written) if outputs is not None else {})
        saved = (state.mutator, dict(state.launches))
        state.mutator = rep
        try:
            got, _ = self.call(wrapper, args)
        finally:
            state.mutator, state.launches = saved
        return got, rep

    def judge(self, on: str, wrapper: Callable[..., Any], args: tuple[Any, ...],
              want: list[Any]) -> Json:
        """{on, result: kernel | host | no_launch | not_judged, share, elements, runs[,
        detail]}."""
        entry: Json = {"on": on, "result": NOT_JUDGED, "share": None, "elements": 0, "runs": 0}
        masks = [_judged(w) for w in want]
        total = sum(_count(m) for m in masks)
        entry["elements"] = total
        if not total:
            entry["detail"] = "the reference's output has no finite element that is not zero"
            return entry
        agreed: list[list[Any]] = []
        for i, (how, seed) in enumerate((("poison", 0), ("random", SEED), ("random", SEED + 1))):
            if i == 2 and entry["share"] <= BOUND:
                break
            got, rep = self.run(wrapper, args, how, seed)
            entry["runs"] += 1
            if rep.launches == 0:
                entry.update(result=NO_LAUNCH, share=None,
                             detail="the call launched none of the sample's kernels")
                return entry
            if rep.errors:
                entry.update(result=NOT_JUDGED, share=None, detail="; ".join(rep.errors))
                return entry
            agreed.append(self._agreement(want, got, floats_only=(how == "poison")))
            host = self._host(masks, agreed)
            entry["share"] = round(host / total, 4)
        entry["result"] = HOST if entry["share"] > BOUND else KERNEL
        return entry

    @staticmethod
    def _agreement(want: list[Any], got: Optional[list[Any]], floats_only: bool) -> list[Any]:
        """Per output: the elements that agree (None where none can: the wrapper raised, or
        gave other outputs)."""
        if got is None or len(got) != len(want):
            return [None] * len(want)
        return [_agree(w, g, floats_only) for w, g in zip(want, got)]

    @staticmethod
    def _host(masks: list[Any], agreed: list[list[Any]]) -> int:
        """Judged elements that agreed in the poison run, or in every random run made (in the
        one random run alone while the third is not made)."""
        n = 0
        for k, mask in enumerate(masks):
            randoms = [a[k] for a in agreed[1:]]
            host = agreed[0][k]
            if randoms:
                both = randoms[0]
                for r in randoms[1:]:
                    both = _and(both, r)
                host = _or(host, both)
            n += _count(_and(host, mask)) if host is not None else 0
        return n


def summary(checked: list[Json], ms: int) -> Json:
    """report["origin"]: every call judged, the first whose answer was the host's (or None),
    the bound and the time."""
    host = next((c["on"] for c in checked if c["result"] == HOST), None)
    return {"checked": checked, "host": host, "bound": BOUND, "ms": ms}


def detail_of(entry: Json) -> str:
    """What the pool's detail and the repair evidence say of a call judged the host's."""
    return ("on %s, %.0f%% of the output's elements still agree with the declared reference when "
            "every output of the sample's kernels is replaced right after its launch (NaN, then "
            "random values): the wrapper launches its kernel but answers with what the host "
            "computed" % (entry["on"] if entry["on"] == INPUTS else "inputs() " + entry["on"],
                          100.0 * (entry["share"] or 0.0)))


class Clock:
    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def ms(self) -> int:
        return int((time.monotonic() - self.t0) * 1000)
