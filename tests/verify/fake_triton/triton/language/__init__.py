"""triton.language on the CPU: blocks are small vectors, pointers index Python lists."""
import builtins as _builtins
import math
import threading

_ctx = threading.local()


class constexpr:
    pass


float32 = "fp32"


class Vec:
    def __init__(self, items):
        self.items = list(items)

    def _zip(self, other, op):
        if isinstance(other, Vec):
            return Vec(op(a, b) for a, b in zip(self.items, other.items))
        return Vec(op(a, other) for a in self.items)

    def __add__(self, o): return self._zip(o, lambda a, b: a + b)
    __radd__ = __add__
    def __sub__(self, o): return self._zip(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._zip(o, lambda a, b: b - a)
    def __mul__(self, o): return self._zip(o, lambda a, b: a * b)
    __rmul__ = __mul__
    def __truediv__(self, o): return self._zip(o, lambda a, b: a / b)
    def __lt__(self, o): return self._zip(o, lambda a, b: a < b)
    def __le__(self, o): return self._zip(o, lambda a, b: a <= b)
    def __gt__(self, o): return self._zip(o, lambda a, b: a > b)
    def __ge__(self, o): return self._zip(o, lambda a, b: a >= b)
    def __and__(self, o): return self._zip(o, lambda a, b: a and b)
    def __or__(self, o): return self._zip(o, lambda a, b: a or b)
    def __invert__(self): return Vec(not a for a in self.items)
    def __rtruediv__(self, o): return self._zip(o, lambda a, b: b / a)
    def __floordiv__(self, o): return self._zip(o, lambda a, b: a // b)
    def __mod__(self, o): return self._zip(o, lambda a, b: a % b)
    def __neg__(self): return Vec(-a for a in self.items)
    def __len__(self): return len(self.items)


class Ptr:
    def __init__(self, buf, offsets=0):
        self.buf = buf
        self.offsets = offsets

    def __add__(self, o):
        if isinstance(o, Vec):
            return Ptr(self.buf, Vec(self.offsets + x for x in o.items)
                       if isinstance(self.offsets, int) else self.offsets + o)
        return Ptr(self.buf, self.offsets + o)
    __radd__ = __add__


def program_id(axis):
    return _ctx.pid[axis]


def num_programs(axis):
    return _ctx.grid[axis]


def arange(start, end):
    return Vec(range(start, end))


def cdiv(a, b):
    return (a + b - 1) // b


def _mask(ptr, mask):
    n = len(ptr.offsets.items) if isinstance(ptr.offsets, Vec) else 1
    if mask is None:
        return [True] * n
    return mask.items if isinstance(mask, Vec) else [bool(mask)] * n


def load(ptr, mask=None, other=0.0):
    if not isinstance(ptr.offsets, Vec):
        return ptr.buf[ptr.offsets]
    m = _mask(ptr, mask)
    out = []
    for off, ok in zip(ptr.offsets.items, m):
        if ok:
            if off < 0 or off >= len(ptr.buf):
                raise IndexError("fake triton: out-of-bounds load at offset %d" % off)
            out.append(ptr.buf[off])
        else:
            out.append(other)
    return Vec(out)


def store(ptr, value, mask=None):
    if not isinstance(ptr.offsets, Vec):
        ptr.buf[ptr.offsets] = value
        return
    m = _mask(ptr, mask)
    vals = value.items if isinstance(value, Vec) else [value] * len(m)
    for off, ok, v in zip(ptr.offsets.items, m, vals):
        if ok:
            if off < 0 or off >= len(ptr.buf):
                raise IndexError("fake triton: out-of-bounds store at offset %d" % off)
            ptr.buf[off] = v


def where(cond, a, b):
    return Vec(x if c else y for c, x, y in zip(cond.items, _items(a, len(cond)), _items(b, len(cond))))


def _items(v, n):
    return v.items if isinstance(v, Vec) else [v] * n


def _each(f, v):
    """f on each element of a block, or on a scalar (a reduction's result)."""
    return Vec(f(a) for a in v.items) if isinstance(v, Vec) else f(v)


def exp(v):
    return _each(math.exp, v)


def _log(a):
    if a > 0:
        return math.log(a)
    return float("-inf") if a == 0 else float("nan")


def log(v):
    return _each(_log, v)


def sqrt(v):
    return _each(lambda a: math.sqrt(a) if a >= 0 else float("nan"), v)


def abs(v):  # noqa: A001 - the Triton name
    return _each(_builtins.abs, v)


def maximum(a, b):
    return Vec(_builtins.max(x, y) for x, y in zip(_items(a, len(a)), _items(b, len(a))))


def sum(v, axis=0):  # noqa: A001 - the Triton name
    return _builtins.sum(v.items)


def max(v, axis=0):  # noqa: A001
    return _builtins.max(v.items)


def zeros(shape, dtype=None):
    return Vec([0.0] * shape[0])


def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Runs the stand-in's one instruction, a copy (mov) of the first argument."""
    return args[0]
