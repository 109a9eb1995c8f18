"""What the mutants need of a kernel's buffers, for the two kinds a launch can be handed: torch
tensors (on the GPU) and Python lists of numbers (the CPU stand-in for Triton the tests use).

Every function takes one buffer; the mutating ones change it in place, in the logical order of
its elements (a transposed or strided tensor included), and say whether anything changed: a
mutant that changes nothing (all elements equal, integer or boolean rounding, NaN) does not apply.
"""

from __future__ import annotations

import math
import sys
from typing import Any

NUMBER = (bool, int, float)


def _torch():
    return sys.modules.get("torch")


def _is_tensor(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def is_buffer(x: Any) -> bool:
    """A tensor, or a list whose elements are all numbers (empty ones included)."""
    if _is_tensor(x):
        return True
    return type(x) is list and all(type(v) in NUMBER for v in x)


def numel(x: Any) -> int:
    return int(x.numel()) if _is_tensor(x) else len(x)


def shape(x: Any) -> list[int]:
    return list(x.shape) if _is_tensor(x) else [len(x)]


def dtype(x: Any) -> str:
    if _is_tensor(x):
        return str(x.dtype).replace("torch.", "")
    kinds = {type(v) for v in x}
    return "+".join(sorted(k.__name__ for k in kinds)) or "empty"


def key(x: Any) -> tuple[Any, ...]:
    """Identity of the memory a buffer names: two views of one storage are mutated once."""
    if _is_tensor(x):
        return ("tensor", x.data_ptr(), tuple(x.shape), tuple(x.stride()), str(x.dtype))
    return ("list", id(x))


def snapshot(x: Any) -> Any:
    """A copy to compare with after a launch (None where one cannot be made, e.g. no memory)."""
    try:
        return x.detach().clone() if _is_tensor(x) else list(x)
    except Exception:  # noqa: BLE001 - out of GPU memory: this buffer's writes go unseen
        return None


def _same_float(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and
                      math.isnan(b))


def changed(before: Any, x: Any) -> bool:
    """Whether x differs from its snapshot (NaN equal to NaN: a NaN left alone is no write)."""
    if before is None:
        return False
    if _is_tensor(x):
        torch = _torch()
        if x.is_floating_point():
            same = (before == x) | (torch.isnan(before) & torch.isnan(x))
            return not bool(same.all())
        if x.is_complex():
            return not bool(torch.equal(before, x))
        return not bool(torch.equal(before, x))
    return len(before) != len(x) or any(not _same_float(a, b) for a, b in zip(before, x))


# ---- the changes -----------------------------------------------------------------------------
# k is the launch's ordinal in the run (1, 2, ...): the change grows with it, so two calls of the
# same wrapper (a test that takes one as the golden result of the other) differ.


def _off(v, k, is_float, is_bool):
    """v changed by far more than any tolerance: by a quarter of itself plus one, times k."""
    if is_bool:
        return not v
    step = (abs(v) * 0.25 + 1.0) * k
    if not is_float:
        step = int(step)
    return v - step if v >= 0 else v + step


def _index(x, flat):
    """The logical index of element number `flat` (row-major) of a tensor."""
    idx = []
    for size in reversed(list(x.shape)):
        idx.append(flat % size)
        flat //= size
    return tuple(reversed(idx))


def off_element(x: Any, which: str, k: int) -> bool:
    """Changes one element: the last (which == "tail") or the middle one ("interior")."""
    n = numel(x)
    if n == 0:
        return False
    flat = n - 1 if which == "tail" else n // 2
    if not _is_tensor(x):
        old = x[flat]
        x[flat] = _off(old, k, isinstance(old, float), isinstance(old, bool))
        return not _same_float(old, x[flat])
    torch = _torch()
    idx = _index(x, flat)
    old = x[idx].clone()
    is_bool = x.dtype == torch.bool
    v = old.item()
    new = _off(v, k, x.is_floating_point(), is_bool)
    try:
        x[idx] = new
    except (RuntimeError, OverflowError):
        x[idx] = _off(v, 1, x.is_floating_point(), is_bool)
    return bool((x[idx] != old).any()) and not (x.is_floating_point() and bool(
        torch.isnan(x[idx]).any() and torch.isnan(old).any()))


def roll(x: Any, k: int) -> bool:
    """The elements reordered: rolled by k places in row-major order."""
    n = numel(x)
    if n < 2:
        return False
    shift = k % n or 1
    if not _is_tensor(x):
        old = list(x)
        x[:] = old[-shift:] + old[:-shift]
        return any(not _same_float(a, b) for a, b in zip(old, x))
    before = x.detach().clone()
    x.copy_(before.reshape(-1).roll(shift).reshape(x.shape))
    return changed(before, x)


def roll_last(x: Any, k: int) -> bool:
    """The elements reordered inside the last dimension only: each row rolled by k places (a
    test that checks only row sums, or rows as multisets, lets it through). Changes nothing in
    a buffer of one dimension (the permute mutant covers those)."""
    if not _is_tensor(x) or x.dim() < 2 or x.shape[-1] < 2:
        return False
    shift = k % int(x.shape[-1]) or 1
    before = x.detach().clone()
    x.copy_(before.roll(shift, dims=-1))
    return changed(before, x)


def is_constant(x: Any) -> bool:
    """Whether every element of a buffer of more than one element is the same (NaN counts as
    different)."""
    n = numel(x)
    if n <= 1:
        return False
    if not _is_tensor(x):
        first = x[0]
        return all(v == first for v in x)
    flat = x.reshape(-1)
    return bool((flat == flat[0]).all())


def scale(x: Any, k: int, percent: float) -> bool:
    """Every element scaled by (1 + percent/100 * k), rounded back to the buffer's type."""
    factor = 1.0 + percent / 100.0 * k
    if not _is_tensor(x):
        old = list(x)
        for i, v in enumerate(old):
            if isinstance(v, bool):
                continue
            x[i] = v * factor if isinstance(v, float) else int(round(v * factor))
        return any(not _same_float(a, b) for a, b in zip(old, x))
    torch = _torch()
    if x.dtype == torch.bool:
        return False
    before = x.detach().clone()
    wide = before.double() if not x.is_complex() else before.to(torch.complex128)
    new = wide * factor
    if not x.is_floating_point() and not x.is_complex():
        new = new.round()
    x.copy_(new)
    return changed(before, x)


def zero(x: Any) -> bool:
    """Every element set to zero (False)."""
    if not _is_tensor(x):
        nonzero = any(v != 0 for v in x)
        for i, v in enumerate(x):
            x[i] = type(v)(0)
        return nonzero
    before_nonzero = bool((x != 0).any())
    x.zero_()
    return before_nonzero


def poison(x: Any) -> bool:
    """Every element set to the pattern of all-ones bytes: NaN for floats, -1 for signed integers,
    the largest value for unsigned ones, True for booleans. What a skipped launch leaves in its
    outputs, so that memory the caching allocator hands out again (with a right answer computed
    by the test itself still in it) cannot make a skipped kernel look right."""
    if not _is_tensor(x):
        for i, v in enumerate(x):
            x[i] = True if type(v) is bool else (-1 if type(v) is int else float("nan"))
        return len(x) > 0
    if x.numel() == 0:
        return False
    torch = _torch()
    if x.is_contiguous():
        try:
            x.view(torch.uint8).fill_(0xFF)
            return True
        except (RuntimeError, TypeError):
            pass
    if x.dtype == torch.bool:
        x.fill_(True)
    elif x.is_floating_point() or x.is_complex():
        x.fill_(float("nan"))
    elif x.dtype == torch.uint8:
        x.fill_(0xFF)
    else:
        x.fill_(-1)
    return True


def probe_fill(x: Any) -> bool:
    """Fills a buffer that a launch left unchanged with values safe for a kernel to read (NaN for
    floats, 0 for integers: never an index out of bounds), so that launching again shows whether
    the kernel writes it. Says whether the buffer was filled (not booleans, not a buffer already
    all equal to the fill)."""
    if not _is_tensor(x):
        if not x or any(type(v) is bool for v in x):
            return False
        if all(type(v) is float for v in x):
            if all(math.isnan(v) for v in x):
                return False
            x[:] = [float("nan")] * len(x)
            return True
        if all(v == 0 for v in x):
            return False
        x[:] = [type(v)(0) for v in x]
        return True
    torch = _torch()
    if x.numel() == 0 or x.dtype == torch.bool or x.is_complex():
        return False
    if x.is_floating_point():
        if bool(torch.isnan(x).all()):
            return False
        x.fill_(float("nan"))
        return True
    if not bool((x != 0).any()):
        return False
    x.zero_()
    return True


def restore(x: Any, snap: Any) -> None:
    """Puts a buffer back to its snapshot."""
    if _is_tensor(x):
        x.copy_(snap)
    else:
        x[:] = snap
