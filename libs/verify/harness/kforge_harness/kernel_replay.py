"""The equivalence replay: a kernel mutant launched beside the original on fresh inputs.

In the real run the first launches of each of the sample's kernels are recorded (Recorder):
every argument as it was passed (integers, floats, constexprs, the grid, the autotune config's
meta-parameters), and each buffer as its storage (size in bytes, device), its dtype, shape,
strides and offset; buffers of integers or booleans (indices, offsets, lengths) with their
contents before the launch. A replay makes every storage afresh with a guard zone of all-ones
bytes on either side, fills floating-point storages with fresh normal values (seeded: the
original and the mutant see the same), copies integer ones as captured, and launches the kernel.

Float arguments (a scale, an eps) are drawn afresh too: the same sign, 1.25 to 2 times the size
(0: a standard normal value). Two variants: `same`, the shapes and integers as captured; `tail`,
every integer argument that
is a multiple of a block size of the launch (a power-of-two constexpr of at least 16) one less,
the masked tail the test's sizes may never reach. Outputs are compared element by element
where the original's output is finite (an input outside a kernel's domain, log of a negative,
gives NaN in the original and says nothing); see docs/VERIFIER.md, "Kernel mutants".

Works on torch tensors and on the lists of numbers of the CPU stand-in for Triton.
"""

from __future__ import annotations

import math
import random
import sys
from typing import Any, Callable, Optional

GUARD = 256 * 1024  # bytes of guard zone before and after each replayed storage
LIST_GUARD = 64  # elements of guard zone around a list buffer (the CPU stand-in for Triton)
# The out-of-bounds check sizes its zones from the launch's reach (zone_sizes), within these:
ZONE_MAX = 64 << 20  # bytes of one zone
ARENA_MAX = 256 << 20  # bytes of one replay's arena: its storages and their zones
LIST_ZONE_MAX = 1 << 16  # elements of one zone around a list buffer
ALIGN = 256  # every storage starts at a multiple of this in its arena (Triton specialises on 16)
# The out-of-bounds check's arena has a margin before its first storage's zone and after its
# last one's, held like those zones: an access past the arena's ends lands in memory the replay
# controls, not in whatever the allocator put there (issue 52: flags that repeat). Its size is
# fixed, far larger than the zones (a read far past a buffer, from an index the kernel computed,
# lands in it rather than in other allocations or unmapped memory), within the worker's memory
# (its 7.86 GiB on an H200 by default): halved until the arena can be had; none when even the
# arena alone cannot.
MARGIN = 512 << 20  # bytes on each side
LIST_MARGIN = 1 << 15  # elements on each side of the CPU stand-in's list arena
MAX_RECORDS = 12  # launches recorded per run
MAX_PER_KERNEL = 4  # distinct launches recorded per kernel
MAX_COPY_BYTES = 64 << 20  # integer contents copied per launch
MIN_BLOCK = 16
RTOL = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-4, "float64": 1e-7}
RTOL_DEFAULT = 0.1  # fp8 and other narrow types


def _torch():
    return sys.modules.get("torch")


def _is_tensor(x):
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


def _is_list_buffer(x):
    return type(x) is list and all(type(v) in (bool, int, float) for v in x)


def constexpr_names(jit: Any) -> set[str]:
    """The kernel's constexpr parameters (Triton's params, else the annotations)."""
    names = set()
    for p in getattr(jit, "params", None) or []:
        if getattr(p, "is_constexpr", False):
            names.add(getattr(p, "name", None))
    try:
        import inspect
        for name, p in inspect.signature(jit.fn).parameters.items():
            ann = p.annotation
            text = getattr(ann, "__name__", None) or str(ann)
            if "constexpr" in text:
                names.add(name)
    except (TypeError, ValueError, AttributeError):
        pass
    names.discard(None)
    return names


class Record:
    """One recorded launch."""

    def __init__(self, kernel: str, jit: Any) -> None:
        self.kernel = kernel
        self.jit = jit
        self.args = []  # encoded: ("tensor", sid, dtype, shape, stride, offset) | ("list", sid)
        self.kwargs = {}  # | ("value", v)
        self.storages = {}  # sid -> dict(nbytes, device, ints, float_dtype) | dict(list, ...)
        self.names = []  # the parameter name of each positional argument
        self.blocks = set()
        self.shrink = set()  # positions ("a", i) / ("k", name) of integers that are multiples
        self.constexpr_at = set()  # positions of constexpr arguments and launch options
        self.key = None
        self.zones = None  # (bytes, elements) of the out-of-bounds check's zones (zone_sizes)


class Recorder:
    """The first launches of each of the sample's kernels, for the replay."""

    def __init__(self) -> None:
        self.records = []
        self.keys = set()
        self.per_kernel = {}
        self.uncaptured = []

    def before(self, kernel: str, jit: Any, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Optional[Record]:
        if len(self.records) >= MAX_RECORDS or self.per_kernel.get(kernel, 0) >= MAX_PER_KERNEL:
            return None
        try:
            rec = describe_launch(kernel, jit, args, kwargs)
        except Exception as e:  # noqa: BLE001 - capture must never fail a launch
            if len(self.uncaptured) < 4:
                self.uncaptured.append("%s: %s: %s" % (kernel, type(e).__name__, str(e)[:200]))
            return None
        if rec.key in self.keys:
            return None
        try:
            if not copy_integers(rec):
                return None  # more integer contents than a replay copies
        except Exception as e:  # noqa: BLE001 - capture must never fail a launch
            if len(self.uncaptured) < 4:
                self.uncaptured.append("%s: %s: %s" % (kernel, type(e).__name__, str(e)[:200]))
            return None
        return rec

    def after(self, rec: Optional[Record]) -> None:
        if rec is None or rec.key in self.keys:
            return
        self.keys.add(rec.key)
        self.records.append(rec)
        self.per_kernel[rec.kernel] = self.per_kernel.get(rec.kernel, 0) + 1

    def of(self, kernel: str) -> list[Record]:
        return [r for r in self.records if r.kernel == kernel]

    def kernels(self) -> list[tuple[str, Any]]:
        """[(name, the JIT function)] in the order first launched."""
        out = []
        for r in self.records:
            if r.kernel not in [k for k, _ in out]:
                out.append((r.kernel, r.jit))
        return out


def describe_launch(kernel: str, jit: Any, args: Any, kwargs: dict[str, Any]) -> Record:
    rec = Record(kernel, jit)
    names = list(getattr(jit, "arg_names", None) or [])
    rec.names = names
    consts = constexpr_names(jit)
    key = [kernel]

    def enc(v):
        if _is_tensor(v):
            st = v.untyped_storage()
            sid = ("t", st.data_ptr(), str(v.device))
            info = rec.storages.setdefault(sid, {"nbytes": st.nbytes(), "device": v.device,
                                                 "ints": None, "float_dtype": None,
                                                 "needs_copy": False, "storage": st})
            if v.is_floating_point() or v.is_complex():
                info["float_dtype"] = info["float_dtype"] or v.dtype
            else:
                info["needs_copy"] = True
            key.append(("T", str(v.dtype), tuple(v.shape), tuple(v.stride()),
                        v.storage_offset(), st.nbytes()))
            return ("tensor", sid, v.dtype, tuple(v.shape), tuple(v.stride()), v.storage_offset())
        if _is_list_buffer(v):
            sid = ("l", id(v))
            floats = all(type(x) is float for x in v)
            rec.storages.setdefault(sid, {"list": True, "len": len(v),
                                          "copy": None if floats and v else list(v)})
            key.append(("L", len(v), floats))
            return ("list", sid)
        if hasattr(v, "data_ptr") or hasattr(v, "__array__"):
            raise TypeError("an argument of type %s cannot be replayed" % type(v).__name__)
        key.append(("V", repr(v) if not callable(v) else "callable"))
        return ("value", v)

    for i, a in enumerate(args):
        rec.args.append(enc(a))
    for k, v in kwargs.items():
        key.append(k)
        rec.kwargs[k] = enc(v)
    # Block sizes: constexpr integers that are powers of two of at least MIN_BLOCK.
    named = [(names[i] if i < len(names) else None, e) for i, e in enumerate(rec.args)]
    named += list(rec.kwargs.items())
    for name, e in named:
        if e[0] == "value" and type(e[1]) is int and (name in consts or name not in names) and \
                e[1] >= MIN_BLOCK and e[1] & (e[1] - 1) == 0:
            rec.blocks.add(e[1])
    for i, e in enumerate(rec.args):
        name = names[i] if i < len(names) else None
        if name is not None and name not in consts and _shrinks(e, rec.blocks):
            rec.shrink.add(("a", i))
        if name is None or name in consts:
            rec.constexpr_at.add(("a", i))
    for k, e in rec.kwargs.items():
        if k in names and k not in consts and _shrinks(e, rec.blocks):
            rec.shrink.add(("k", k))
        if k not in names or k in consts:
            rec.constexpr_at.add(("k", k))
    rec.key = repr(key)
    return rec


def copy_integers(rec: Record) -> bool:
    """Copies the contents of the record's integer and boolean storages (as they are before the
    launch). False when they are larger than MAX_COPY_BYTES together."""
    total = sum(info["nbytes"] for info in rec.storages.values() if info.get("needs_copy"))
    if total > MAX_COPY_BYTES:
        return False
    for info in rec.storages.values():
        if info.get("needs_copy"):
            info["ints"] = _storage_bytes(info)
        info.pop("storage", None)
    return True


def _shrinks(e, blocks):
    return e[0] == "value" and type(e[1]) is int and e[1] > 1 and any(e[1] % b == 0
                                                                        for b in blocks)


def _storage_bytes(info):
    torch = _torch()
    raw = torch.empty(0, dtype=torch.uint8, device=info["device"])
    raw.set_(info["storage"], 0, (info["nbytes"],), (1,))
    return raw.clone()


def _int_contents_max(rec: Record) -> int:
    """The largest magnitude among the integers the launch's integer buffers held (indices, row
    numbers, lengths): what a kernel may multiply a stride by."""
    best = 0
    torch = _torch()
    for e in list(rec.args) + list(rec.kwargs.values()):
        if e[0] == "list":
            copy = rec.storages[e[1]].get("copy") or []
            best = max([best] + [abs(v) for v in copy if type(v) is int])
        elif e[0] == "tensor" and torch is not None:
            raw = rec.storages[e[1]].get("ints")
            dt = e[2]
            if raw is None or dt == torch.bool or dt.is_floating_point or dt.is_complex or \
                    raw.numel() == 0:
                continue
            size = torch.empty(0, dtype=dt).element_size()
            n = raw.numel() // size
            if n:
                best = max(best, int(raw[:n * size].view(dt).abs().max().item()))
    return best


def reach(rec: Record) -> int:
    """The elements past (or before) a buffer the launch can address from what it was handed: its
    largest integer argument (a stride, a length) times the largest index it can compute with it
    (a grid dimension, a block size, an integer its buffers held). With the largest buffer
    (zone_sizes), a kernel indexing one tensor with another's stride or length stays inside."""
    ints = [abs(e[1]) for at, e in _values(rec) if type(e[1]) is int and
            at not in rec.constexpr_at]
    idx = [_int_contents_max(rec)] + list(rec.blocks)
    for at, e in _values(rec):
        if at == ("k", "grid") and isinstance(e[1], tuple):
            idx += [abs(g) for g in e[1] if type(g) is int]
    return max(ints + [1]) * max(idx + [1])


def _values(rec):
    for i, e in enumerate(rec.args):
        if e[0] == "value":
            yield ("a", i), e
    for k, e in rec.kwargs.items():
        if e[0] == "value":
            yield ("k", k), e


def _up(n: int, align: int = ALIGN) -> int:
    return (n + align - 1) // align * align


def zone_sizes(rec: Record, sized: bool) -> tuple[int, int]:
    """(bytes of zone around each tensor storage, elements around each list) for a replay of rec:
    GUARD and LIST_GUARD, or with `sized` the launch's reach (reach()) in bytes of its widest
    element, at least GUARD, within ZONE_MAX and the arena's ARENA_MAX (LIST_ZONE_MAX for
    lists). The same record always gets the same zones."""
    if not sized:
        return GUARD, LIST_GUARD
    if getattr(rec, "zones", None) is None:
        rec.zones = _sized_zones(rec)
    return rec.zones


def _sized_zones(rec):
    torch = _torch()
    widest = 1
    for e in list(rec.args) + list(rec.kwargs.values()):
        if e[0] == "tensor" and torch is not None:
            widest = max(widest, torch.empty(0, dtype=e[2]).element_size())
    r = reach(rec)
    tensors = [info["nbytes"] for info in rec.storages.values() if not info.get("list")]
    lists = [info["len"] for info in rec.storages.values() if info.get("list")]
    room = (ARENA_MAX - sum(_up(n) for n in tensors)) // max(1, 2 * len(tensors))
    want = max([r * widest] + tensors)
    zone = max(GUARD, min(_up(want), ZONE_MAX, room // ALIGN * ALIGN))
    return zone, max(LIST_GUARD, min(max([r] + lists), LIST_ZONE_MAX))


def place_lists(arena: list[Any]) -> tuple[list[Any], int]:
    """Where the list arena of a replay lands in the CPU stand-in's memory: (the memory, the
    arena's start). Alone by default (a pointer past it raises, as a fault); a test puts other
    memory around it, as an allocator puts other tensors next to a GPU arena."""
    return arena, 0


class Launch:
    """The buffers of one replayed launch, made afresh, all in one private arena per device (and
    one for the lists of the CPU stand-in): each storage between two guard zones, in the order
    the launch names them, so what lies next to a buffer is the same in every replay."""

    def __init__(self, rec: Record, variant: str, seed: int, fill: int = 0xFF,
                 fill_for: Optional[dict[Any, int]] = None, guard_lists: bool = False,
                 sized: bool = False) -> None:
        """`fill`: the byte every guard zone holds (`fill_for`: sid -> another byte for that
        storage's zones). `guard_lists`: lists (the CPU stand-in) get guard zones too, as a
        GuardedList the stand-in reads as a pointer into the arena. `sized`: zones sized from
        the launch's reach (zone_sizes) rather than GUARD, and the arena between margins
        (MARGIN) held like the zones of the storage next to each."""
        self.rec = rec
        self.zone, self.list_zone = zone_sizes(rec, sized)
        self.margin = MARGIN if sized else 0
        self.list_margin = LIST_MARGIN if sized else 0
        self.margins = []  # (arena, start, end, sid, what it holds): each margin, its storage
        self.bases = {}  # sid -> (arena uint8 tensor | GuardedList | list, nbytes, start)
        self.fills = {}  # sid -> the byte its guard zones hold
        self.views = []  # (key, view) of every tensor or list argument
        rng = random.Random(seed)
        self.rng = random.Random(seed + 1)
        lists = []
        for sid, info in rec.storages.items():
            self.fills[sid] = (fill_for or {}).get(sid, fill)
            if info.get("list"):
                data = list(info["copy"]) if info["copy"] is not None else \
                    [rng.gauss(0.0, 1.0) for _ in range(info["len"])]
                lists.append((sid, data))
        self._make_lists(lists, guard_lists)
        self._make_tensors(seed)
        self.args = [self._arg(("a", i), e, variant) for i, e in enumerate(rec.args)]
        self.kwargs = {k: self._arg(("k", k), e, variant) for k, e in rec.kwargs.items()}

    def _make_lists(self, lists, guard_lists):
        if not guard_lists:
            for sid, data in lists:
                self.bases[sid] = (data, len(data), 0)
            return
        z, m, starts = self.list_zone, self.list_margin, []
        if not lists:
            return
        first, last = lists[0], lists[-1]
        pads = (_list_pad(first[1], self.fills[first[0]]), _list_pad(last[1], self.fills[last[0]]))
        arena = [pads[0]] * m
        for sid, data in lists:
            pad = _list_pad(data, self.fills[sid])
            arena += [pad] * z
            starts.append(len(arena))
            arena += data + [pad] * z
        arena += [pads[1]] * m
        memory, at = place_lists(arena)
        for (sid, data), start in zip(lists, starts):
            g = GuardedList(data, _list_pad(data, self.fills[sid]), memory, at + start, z)
            self.bases[sid] = (g, len(data), at + start)
        if m:
            self.margins += [(memory, at, at + m, first[0], pads[0]),
                             (memory, at + len(arena) - m, at + len(arena), last[0], pads[1])]

    def _make_tensors(self, seed):
        torch = _torch()
        by_dev = {}
        for sid, info in self.rec.storages.items():
            if not info.get("list"):
                by_dev.setdefault(str(info["device"]), []).append((sid, info))
        z, held = self.zone, HeldArenas.current
        for dev, items in by_dev.items():
            total = sum(2 * z + _up(info["nbytes"]) for _, info in items)
            arena, m = _arena(torch, total, self.margin, items[0][1]["device"])
            if m:
                first, last = items[0][0], items[-1][0]
                for lo, hi, sid in ((0, m, first), (m + total, 2 * m + total, last)):
                    byte = self.fills[sid]
                    if held is None or not held.still_holds(arena, lo, hi, byte):
                        arena[lo:hi].fill_(byte)
                    self.margins.append((arena, lo, hi, sid, byte))
            gen, pos = None, m
            for sid, info in items:
                nbytes, start = info["nbytes"], pos + z
                pos = start + _up(nbytes) + z
                arena[start - z:start].fill_(self.fills[sid])
                arena[start + nbytes:pos].fill_(self.fills[sid])
                region = arena[start:start + nbytes]
                if info["ints"] is not None:
                    region.copy_(info["ints"])
                elif info["float_dtype"] is not None and nbytes:
                    if gen is None:
                        gen = torch.Generator(device=info["device"])
                        gen.manual_seed(seed)
                    _fill_normal(torch, region, info["float_dtype"], gen, info["device"])
                else:
                    region.fill_(self.fills[sid])
                self.bases[sid] = (arena, nbytes, start)

    def _arg(self, where, e, variant):
        if e[0] == "value":
            v = e[1]
            if type(v) is float and math.isfinite(v) and where not in self.rec.constexpr_at:
                # A float argument (a scale, an eps) drawn afresh as well: its sign kept (an eps
                # stays positive), its size times 1.25 to 2; 0 becomes a standard normal value.
                return v * self.rng.uniform(1.25, 2.0) if v != 0 else self.rng.gauss(0.0, 1.0)
            return v - 1 if variant == "tail" and where in self.rec.shrink else v
        if e[0] == "list":
            base = self.bases[e[1]][0]
            self.views.append((e, base))
            return base
        _, sid, dtype, shape, stride, offset = e
        base, _, start = self.bases[sid]
        size = base.new_empty(0, dtype=dtype).element_size()
        view = base.view(dtype).as_strided(shape, stride, start // size + offset)
        self.views.append((e, view))
        return view

    def guard_written(self) -> bool:
        """Whether the launch wrote outside its buffers (into a guard zone)."""
        return bool(self.guards_written())

    def guards_written(self) -> list[Any]:
        """The storages (sids) whose guard zones (or margin, next to the arena's first or last
        storage) the launch wrote. Every zone and margin is checked on its device and the
        answers read in one transfer (read_bools): each read waits for the GPU, which other
        processes may be holding (issue 54)."""
        found = [(sid, _margin_written(base, lo, hi, held))
                 for base, lo, hi, sid, held in self.margins]
        for sid, (base, nbytes, start) in self.bases.items():
            if isinstance(base, GuardedList):
                found.append((sid, base.guard_written()))
            elif not isinstance(base, list):
                byte, z = self.fills[sid], self.zone
                found.append((sid, (base[start - z:start] != byte).any() |
                              (base[start + nbytes:start + _up(nbytes) + z] != byte).any()))
        written = read_bools([w for _, w in found])
        keep = HeldArenas.current
        for (base, lo, hi, _, held), w in zip(self.margins, written):
            if not w and keep is not None and not isinstance(base, list):
                keep.found_holding(base, lo, hi, held)
        return list(dict.fromkeys(sid for (sid, _), w in zip(found, written) if w))

    def outputs(self) -> list[Any]:
        """The replayed buffers' contents, one entry per distinct argument view."""
        seen, out = set(), []
        for e, view in self.views:
            k = repr(e[1:]) if e[0] == "tensor" else repr(e)
            if k in seen:
                continue
            seen.add(k)
            if isinstance(view, GuardedList):
                out.append(view.inside())
            else:
                out.append(view.clone() if _is_tensor(view) else list(view))
        return out


class HeldArenas:
    """The GPU arenas of one record's replays, kept from one replay to the next (`with
    HeldArenas():` around them; bounds.py holds them for each judgement of a record). A replay
    writes every byte of its arena (margins, zones, buffers: Launch._make_tensors), so one kept
    holds nothing of the replay before; while it is kept it is not free memory, so the
    poisoning of the allocator's free memory before each replay (bounds._fill_free) no longer
    fills it again (a gibibyte and more a replay with the margins), and it lies at the same
    address in every replay, as the allocator placed a freed one of its size. Outside a `with`
    each replay has an arena of its own, freed after it (the kernel battery's replays)."""

    current: Optional["HeldArenas"] = None

    def __init__(self) -> None:
        self.arenas: dict[tuple[str, int, int], tuple[Any, int]] = {}
        self.outer: Optional[HeldArenas] = None
        # (arena's address, start, end) -> the byte a margin was found to hold, whole, after
        # the last launch on it (Launch.guards_written); the next replay that wants that byte
        # there need not fill it again. Forgotten as soon as a replay takes the arena.
        self.holding: dict[tuple[int, int, int], int] = {}

    def still_holds(self, arena: Any, lo: int, hi: int, byte: int) -> bool:
        """Whether arena[lo:hi] holds `byte` everywhere as last found; forgets it either way
        (the launch to come may write there)."""
        return self.holding.pop((arena.data_ptr(), lo, hi), None) == byte

    def found_holding(self, arena: Any, lo: int, hi: int, byte: int) -> None:
        self.holding[(arena.data_ptr(), lo, hi)] = byte

    def __enter__(self) -> "HeldArenas":
        self.outer, HeldArenas.current = HeldArenas.current, self
        return self

    def __exit__(self, *exc: Any) -> None:
        HeldArenas.current = self.outer
        self.arenas.clear()
        self.holding.clear()


def _arena(torch: Any, total: int, margin: int, device: Any) -> tuple[Any, int]:
    """A replay's arena of `total` bytes between two margins of `margin` bytes (halved while the
    memory cannot be had, none at last): (the uint8 tensor, the margin it got). Within
    HeldArenas, the one kept for the same size is given again."""
    held = HeldArenas.current
    key = (str(device), total, margin)
    if held is not None and key in held.arenas:
        return held.arenas[key]
    got = _new_arena(torch, total, margin, device)
    if held is not None:
        held.arenas[key] = got
    return got


def _new_arena(torch: Any, total: int, margin: int, device: Any) -> tuple[Any, int]:
    while True:
        try:
            return torch.empty(total + 2 * margin, dtype=torch.uint8, device=device), margin
        except RuntimeError:
            if not margin:
                raise
            margin = 0 if margin <= GUARD else margin // 2 // ALIGN * ALIGN


def _margin_written(base: Any, lo: int, hi: int, held: Any) -> Any:
    """Whether base[lo:hi] no longer all holds `held` (a byte; a list's pad, NaN equal NaN): a
    bool for a list, a 0-dim bool tensor on the arena's device for a tensor (read_bools reads
    it with the replay's other checks)."""
    if isinstance(base, list):
        seg = base[lo:hi]
        if seg.count(held) == len(seg):  # the pad object itself everywhere: untouched
            return False
        nan = held != held
        return any(not (v == held or (nan and v != v)) for v in seg)
    seg = base[lo:hi]
    torch = _torch()
    if torch is not None and (hi - lo) % 8 == 0 and seg.storage_offset() % 8 == 0:
        # One pass over the margin, as 64-bit words (a margin is a multiple of ALIGN bytes and
        # starts at one): every byte holds `held` exactly when the least and the greatest word
        # are the word of eight such bytes. No temporary as large as the margin.
        word = int.from_bytes(bytes([held]) * 8, "little", signed=True)
        least, greatest = torch.aminmax(seg.view(torch.int64))
        return (least != word) | (greatest != word)
    return (seg.min() != held) | (seg.max() != held)


def _fill_normal(torch, region, dt, gen, device):
    size = torch.empty(0, dtype=dt).element_size()
    n = region.numel() // size
    vals = torch.randn(n, generator=gen, device=device, dtype=torch.float32)
    region[:n * size].view(dt).copy_(vals.to(dt))


def _list_pad(data, byte):
    floats = all(type(v) is float for v in data)
    return (float("nan") if floats else -1) if byte == 0xFF else (0.0 if floats else 0)


class GuardedList(list):
    """A list buffer of the CPU stand-in for Triton between two guard zones of `zone` elements:
    `base` is the memory it lies in (the replay's arena, placed by place_lists) and `offset`
    where its elements start, as a tensor view names its storage and offset; the stand-in's
    pointers index `base` from `offset`. The list itself holds the elements as they were made
    (what a launch writes goes to `base`)."""

    def __init__(self, data: list[Any], pad: Any, base: list[Any], offset: int,
                 zone: int) -> None:
        super().__init__(data)
        self.pad = pad
        self.base = base
        self.offset = offset
        self.size = len(data)
        self.zone = zone

    def inside(self) -> list[Any]:
        return self.base[self.offset:self.offset + self.size]

    def guard_written(self) -> bool:
        end = self.offset + self.size
        zones = self.base[self.offset - self.zone:self.offset] + self.base[end:end + self.zone]
        nan = self.pad != self.pad
        return any(not (v == self.pad or (nan and v != v)) for v in zones)


def context_lost(sync: Callable[[], None]) -> bool:
    """Whether the GPU context is gone (a kernel faulted): `sync` (a wait for the device) raises,
    and every launch after that would fail for that reason alone."""
    try:
        sync()
        return False
    except Exception:  # noqa: BLE001 - torch raises RuntimeError (CUDA error: ...)
        return True


def run_launch(rec: Record, variant: str, seed: int, jit: Any, launch_raw: Callable[..., Any],
               sync: Callable[[], None], **guards: Any) -> Launch:
    """Launches `jit` (the original or a mutant) on fresh buffers (`guards`: Launch's fill,
    fill_for and guard_lists). Returns the Launch."""
    launch = Launch(rec, variant, seed, **guards)
    launch_raw(jit, launch.args, launch.kwargs)
    sync()
    return launch


def _rtol(dtype):
    return RTOL.get(str(dtype).replace("torch.", ""), RTOL_DEFAULT)


# Device-to-host reads made by the replays' checks (the bounds phase reports them: COSTS
# "reads"). Each waits for this process's GPU work, and on a GPU that other processes share it
# waits for their time slices as well (issue 54: the bounds phase's time outside its fills and
# launches): a replay's guards are read in one transfer, a comparison's outputs in one, and
# settle() reads several comparisons together.
READS = [0]


def read_bools(values: list[Any]) -> list[bool]:
    """`values` (bools, or 0-dim bool tensors computed on a device and not yet read) as bools:
    one transfer per device for all of them."""
    out = list(values)
    by_device: dict[Any, list[int]] = {}
    for i, v in enumerate(out):
        if _is_tensor(v):
            by_device.setdefault(v.device, []).append(i)
        else:
            out[i] = bool(v)
    torch = _torch()
    for at in by_device.values():
        READS[0] += 1
        for i, got in zip(at, torch.stack([out[i] for i in at]).tolist()):
            out[i] = bool(got)
    return out


class Pending:
    """A comparison of two replays' outputs (differs_later) not read yet: `known` when an output
    was found to differ without the device, else the outputs' answers on it (0-dim bools)."""

    def __init__(self, known: bool, on_device: list[Any]) -> None:
        self.known = known
        self.on_device = on_device


def differs(a: list[Any], b: list[Any]) -> bool:
    """Whether two replays' outputs differ where the first's are finite (floats within a
    tolerance of the dtype, scaled by the output's largest finite magnitude). One read of the
    device for all the outputs (READS)."""
    return settle([differs_later(a, b)])[0]


def differs_later(a: list[Any], b: list[Any]) -> Pending:
    """differs(a, b), computed on the device without waiting for it: settle() reads it."""
    on_device: list[Any] = []
    try:
        for x, y in zip(a, b):
            v = _tensor_differs(x, y) if _is_tensor(x) else _list_differs(x, y)
            if v is True:
                return Pending(True, [])
            if v is not False:
                on_device.append(v)
    except Exception:
        # The answer is the first output's that differs, whatever the outputs after it: an
        # error comparing a later one is raised only when none before it differs.
        if on_device and any(read_bools(on_device)):
            return Pending(True, [])
        raise
    return Pending(False, on_device)


def settle(pending: list[Pending]) -> list[bool]:
    """The answers of differs_later's comparisons, read in one transfer (per device)."""
    got = iter(read_bools([v for p in pending for v in p.on_device]))
    return [any([p.known] + [next(got) for _ in p.on_device]) for p in pending]


def _tensor_differs(x, y):
    """Whether output y differs from x: a bool where that is known without the device, else a
    0-dim bool tensor on it, computed without a wait (no early return on a value read back).
    The rule: integers and booleans equal; floats (complex as pairs of them) finite where x is
    finite and within atol + rtol * |x|, rtol by dtype, atol rtol times x's largest finite
    magnitude (nothing to compare where x has no finite value)."""
    torch = _torch()
    if not (x.is_floating_point() or x.is_complex()):
        if _is_tensor(y) and (x.shape, x.dtype, x.device) == (y.shape, y.dtype, y.device):
            return torch.eq(x, y).all().logical_not()  # torch.equal's on a GPU, not read
        READS[0] += 1
        return not bool(torch.equal(x, y))
    if x.is_complex():
        x, y = torch.view_as_real(x), torch.view_as_real(y)
    xd, yd = x.double(), y.double()
    if xd.numel() == 0:
        return False
    fin = torch.isfinite(xd)
    if (xd.shape, xd.device) != (yd.shape, yd.device) and not read_bools([fin.any()])[0]:
        return False  # broadcast or across devices: y is not looked at when x has no finite
    rtol = _rtol(x.dtype)
    atol = xd.abs().masked_fill_(~fin, 0).amax() * rtol + 1e-30  # 1e-30 alone: none finite
    close = torch.isfinite(yd) & ((yd - xd).abs() <= atol + rtol * xd.abs())
    return (fin & ~close).any()


def _list_differs(x, y):
    if len(x) != len(y):
        return True
    fin = [v for v in x if not (isinstance(v, float) and not math.isfinite(v))]
    if not fin:
        return False
    scale = max(abs(v) for v in fin)
    for a, b in zip(x, y):
        if isinstance(a, float) and not math.isfinite(a):
            continue
        if isinstance(b, float) and not math.isfinite(b):
            return True
        if abs(b - a) > 1e-6 * scale + 1e-6 * abs(a) + 1e-30:
            return True
    return False
