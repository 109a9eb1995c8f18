#!/usr/bin/env python3
"""The bounds replay's checks read back in one transfer each (issue 54) against the reads they
made before (the old functions are kept here, not in the product): the same answers, fewer
waits for the GPU.

  1. comparisons: kernel_replay.differs (and differs_later + settle, several at once) against
     the old differs on a battery of output pairs: every dtype this torch has (float16,
     bfloat16, float32, float64, float8, complex, integers, bool), NaN and Inf in either, no
     finite value at all, empty and 0-dim tensors, non-contiguous views (transposed, strided,
     expanded), values at the tolerance's edge, lists of several outputs (one that differs
     before one that cannot be compared), shapes that differ, the CPU stand-in's lists.
  2. guards: Launch.guards_written against the old one on the same replays, whose "kernels"
     (torch operations on the replay's views, no Triton) write into a zone, a margin, nothing.
  3. the check: bounds.check over records of such kernels (clean, a write past, a write far
     past, a read past, a read before, integer and mixed outputs, a nondeterministic one), as
     shipped and with the old reads and waits put back: the same report, and the waits per
     replay.
Prints mismatches per part (must be 0: exit 1 otherwise), the device's waits per call (CUDA:
torch.cuda.set_sync_debug_mode's warnings plus explicit synchronize calls; CPU: the calls that
would wait on a GPU, the fills' waits left out) and ms per call, old against new; --procs N times part 1 in N processes at once as well (a GPU shared by the pool's
workers, where each wait also waits for the others' time slices).

  python3 bench/verify/bounds_equiv.py [--device cuda] [--procs 16] [--seconds 10] [--json FILE]

About 40 s on an H200 with the defaults. --device cpu runs anywhere torch is (the margins
shrunk to 8 MiB).
"""

import argparse
import json
import math
import multiprocessing
import os
import random
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("KFORGE_HARNESS_DIR") or
                os.path.join(HERE, "..", "..", "libs", "verify", "harness"))

import torch  # noqa: E402

from kforge_harness import bounds, kernel_replay, mutants  # noqa: E402
from kforge_harness.kernel_replay import (RTOL, RTOL_DEFAULT, GuardedList, HeldArenas,  # noqa: E402,E501
                                          Launch, Record)


# ---- the old functions (kernel_replay at 34c04ce), verbatim but for their names ----------------

def old_rtol(dtype):
    return RTOL.get(str(dtype).replace("torch.", ""), RTOL_DEFAULT)


def old_differs(a, b):
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor):
            if old_tensor_differs(x, y):
                return True
        elif old_list_differs(x, y):
            return True
    return False


def old_tensor_differs(x, y):
    if not (x.is_floating_point() or x.is_complex()):
        return not bool(torch.equal(x, y))
    if x.is_complex():
        x, y = torch.view_as_real(x), torch.view_as_real(y)
    xd, yd = x.double(), y.double()
    fin = torch.isfinite(xd)
    if not bool(fin.any()):
        return False
    rtol = old_rtol(x.dtype)
    atol = rtol * float(xd[fin].abs().max()) + 1e-30
    close = torch.isfinite(yd) & ((yd - xd).abs() <= atol + rtol * xd.abs())
    return bool((fin & ~close).any())


def old_list_differs(x, y):
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


def old_margin_written(base, lo, hi, held):
    if isinstance(base, list):
        seg = base[lo:hi]
        if seg.count(held) == len(seg):
            return False
        nan = held != held
        return any(not (v == held or (nan and v != v)) for v in seg)
    seg = base[lo:hi]
    if (hi - lo) % 8 == 0 and seg.storage_offset() % 8 == 0:
        word = int.from_bytes(bytes([held]) * 8, "little", signed=True)
        least, greatest = torch.aminmax(seg.view(torch.int64))
        return torch.stack((least, greatest)).tolist() != [word, word]
    return bool(seg.min() != held) or bool(seg.max() != held)


def old_guards_written(self):
    out, keep = [], HeldArenas.current
    for base, lo, hi, sid, held in self.margins:
        if old_margin_written(base, lo, hi, held):
            out.append(sid)
        elif keep is not None and not isinstance(base, list):
            keep.found_holding(base, lo, hi, held)
    for sid, (base, nbytes, start) in self.bases.items():
        if isinstance(base, GuardedList):
            if base.guard_written():
                out.append(sid)
            continue
        if isinstance(base, list):
            continue
        byte, z = self.fills[sid], self.zone
        up = (nbytes + kernel_replay.ALIGN - 1) // kernel_replay.ALIGN * kernel_replay.ALIGN
        if bool((base[start - z:start] != byte).any()) or \
                bool((base[start + nbytes:start + up + z] != byte).any()):
            out.append(sid)
    return list(dict.fromkeys(out))


# ---- waits counted ---------------------------------------------------------------------------

class Waits:
    """The device's waits inside the block: on CUDA its implicit ones (a read back, a mask's
    nonzero: set_sync_debug_mode's warnings) and torch.cuda.synchronize calls; on the CPU the
    calls that would be one on a GPU (bool, float, item, tolist, torch.equal, a boolean mask's
    indexing) and the check's own sync calls (WAITS), the fills' not (nothing to fill there)."""

    CPU_READS = ("__bool__", "__float__", "item", "tolist")

    def __init__(self, device):
        self.cuda = device.startswith("cuda")
        self.n = 0

    def __enter__(self):
        if not self.cuda:
            self.saved = {k: getattr(torch.Tensor, k) for k in self.CPU_READS}
            self.saved["__getitem__"], self.saved["equal"] = torch.Tensor.__getitem__, torch.equal
            for k in self.CPU_READS:
                setattr(torch.Tensor, k, self.counted(self.saved[k]))
            getitem = self.saved["__getitem__"]

            def masked(t, i):
                if isinstance(i, torch.Tensor) and i.dtype == torch.bool:
                    self.n += 1
                return getitem(t, i)
            torch.Tensor.__getitem__ = masked
            torch.equal = self.counted(self.saved["equal"])
            WAITS[0] = 0
            return self
        self.saved = torch.cuda.synchronize
        torch.cuda.synchronize = self.counted(self.saved)
        self.caught = warnings.catch_warnings(record=True)
        self.log = self.caught.__enter__()
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode(1)
        return self

    def counted(self, fn):
        def call(*a, **k):
            self.n += 1
            return fn(*a, **k)
        return call

    def __exit__(self, *exc):
        if not self.cuda:
            for k, v in self.saved.items():
                setattr(torch, k, v) if k == "equal" else setattr(torch.Tensor, k, v)
            self.n += WAITS[0]
            return
        torch.cuda.set_sync_debug_mode(0)
        self.caught.__exit__(*exc)
        torch.cuda.synchronize = self.saved
        self.n += sum(1 for w in self.log if "synchroniz" in str(w.message))


WAITS = [0]  # the check's sync calls on the CPU


def cpu_sync():
    WAITS[0] += 1


def outcome(fn, *args):
    try:
        return ("ok", bool(fn(*args)))
    except Exception as e:  # noqa: BLE001 - both must raise the same kind
        return ("raises", type(e).__name__)


# ---- part 1: comparisons ---------------------------------------------------------------------

def dtypes():
    names = ["float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
             "float8_e4m3fnuz", "float8_e5m2fnuz", "complex64", "complex128", "int8", "uint8",
             "int16", "int32", "int64", "bool", "uint16", "uint32", "uint64"]
    return [getattr(torch, n) for n in names if hasattr(torch, n)]


def made(vals, dt):
    """float64 values as dt (ints rounded, bool nonzero), where torch can make them."""
    if dt == torch.bool:
        return vals != 0
    if dt.is_complex:
        return torch.complex(vals, vals.flip(-1) if vals.dim() else vals).to(dt)
    if dt.is_floating_point:
        return vals.to(torch.float32).to(dt) if torch.empty(0, dtype=dt).element_size() == 1 \
            else vals.to(dt)
    lo, hi = (0, 200) if dt == torch.uint8 else (-100, 100)
    if str(dt).startswith("torch.uint"):
        lo = 0
    return vals.mul(30).round().clamp(lo, hi).to(torch.int64).to(dt)


def shapes():
    return [(), (0,), (5, 0), (1,), (7,), (33, 17), (4, 8, 16)]


def views(t):
    """t and non-contiguous views of the same values' kind: transposed, every other element,
    an expanded row (stride 0), a narrowed slice of a larger storage."""
    out = [t]
    if t.dim() == 2 and t.numel():
        out.append(t.t())
        out.append(t[:, ::2])
        out.append(t[:1].expand(t.shape[0], t.shape[1]))
    if t.dim() == 1 and t.numel() > 2:
        out.append(t[1:-1])
        out.append(t[::2])
    return out


def variants(x, rng, g):
    """(x, y) pairs of one dtype: equal, within and past the tolerance, NaN/Inf on either side,
    no finite value in x, one element far off."""
    dt = x.dtype
    floats = dt.is_floating_point or dt.is_complex
    yield x, x.clone()
    if not floats:
        if x.numel():
            y = x.clone().reshape(-1)
            i = rng.randrange(y.numel())
            y[i] = ~y[i] if dt == torch.bool else y[i] + 1
            yield x, y.reshape(x.shape)
        return
    rt = RTOL.get(str(dt).replace("torch.", ""), RTOL_DEFAULT)
    xd = x.to(torch.complex128 if dt.is_complex else torch.float64)
    for k in (0.3, 0.9, 1.0, 1.1, 3.0):
        noise = torch.randn(x.shape, generator=g, dtype=torch.float64).to(x.device)
        yield x, (xd + noise * k * rt * xd.abs()).to(dt)
        yield x, (xd + k * rt * xd.abs().max() if x.numel() else xd).to(dt)
    if not x.numel():
        return
    if dt in (torch.float32, torch.float64):
        yield from edge(x, rng)
    flat = x.clone().reshape(-1)
    i = rng.randrange(flat.numel())
    for bad in (float("nan"), float("inf"), -float("inf")):
        y = flat.clone()
        y[i] = bad
        yield x, y.reshape(x.shape)  # y not finite where x is
        yield y.reshape(x.shape), x  # x not finite there: said nothing
        yield y.reshape(x.shape), y.reshape(x.shape)
    yield torch.full_like(x, float("nan")), x.clone()
    yield torch.full_like(x, float("inf")), torch.zeros_like(x)
    yield torch.zeros_like(x), torch.full_like(x, 1e-31)
    y = flat.clone()
    y[i] = y[i] * 3 + 7
    yield x, y.reshape(x.shape)


def edge(x, rng):
    """y on the tolerance's edge everywhere (the largest values the old rule calls close), and
    the same with one element a unit in the last place further: differs."""
    xd = x.double()
    rt = RTOL.get(str(x.dtype).replace("torch.", ""), RTOL_DEFAULT)
    atol = rt * float(xd.abs().max()) + 1e-30
    bound = atol + rt * xd.abs()
    y = (xd + bound).to(x.dtype)
    for _ in range(8):
        over = (y.double() - xd).abs() > bound
        y = torch.where(over, torch.nextafter(y, x), y)
    yield x, y
    flat = y.clone().reshape(-1)
    i = rng.randrange(flat.numel())
    flat[i] = torch.nextafter(flat[i], flat[i] + 1)
    yield x, flat.reshape(x.shape)


def battery(device, seed):
    """[(a, b)] output lists to compare."""
    rng, g = random.Random(seed), torch.Generator()
    g.manual_seed(seed)
    pairs = []
    for dt in dtypes():
        for shape in shapes():
            for scale in (1.0, 1e-3, 3e4):
                vals = torch.randn(shape, generator=g, dtype=torch.float64) * scale
                try:
                    base = made(vals, dt).to(device)
                    for x, y in variants(base, rng, g):
                        for vx, vy in zip(views(x), views(y)):
                            pairs.append(([vx], [vy]))
                except (RuntimeError, TypeError) as e:  # a dtype this torch cannot make so
                    print("  (skipped %s %s: %s)" % (dt, shape, str(e).splitlines()[0][:80]))
                    break
    # Several outputs: an early one that differs before one that cannot be compared (shapes
    # that do not broadcast), and the other way round; integers of different shapes; lists.
    f = torch.randn(6, generator=g).to(device)
    i = torch.arange(6).to(device)
    bad = torch.randn(4, generator=g).to(device)
    pairs += [([f, f], [f + 5, bad]), ([f, f], [f.clone(), bad]), ([f, i], [f + 5, i[:3]]),
              ([i, f], [i, bad]), ([i], [i[:4]]), ([f], [f[:1]]), ([f[:1]], [f]),
              ([torch.full((6,), float("nan"), device=device)], [bad]),
              ([f, [1.0, 2.0]], [f, [1.0, 2.5]]), ([[1.0, float("nan")], f], [[1.0, 3.0], f + 1]),
              ([f, [1.0]], [f + 1, None]), ([f, f], [f + 0, bad]),
              ([f.double(), i.int()], [f.double(), i.int() + 1]),
              ([f.to(torch.bfloat16)], [f.to(torch.bfloat16)]), ([], [])]
    return pairs


def part_comparisons(device, seed):
    pairs = battery(device, seed)
    bad, waits, ms = [], {"old": 0, "new": 0}, {"old": 0.0, "new": 0.0}
    for n, (a, b) in enumerate(pairs):
        got = {}
        for name, fn in (("old", old_differs), ("new", kernel_replay.differs)):
            with Waits(device) as w:
                t0 = time.perf_counter()
                got[name] = outcome(fn, a, b)
                ms[name] += (time.perf_counter() - t0) * 1000
            waits[name] += w.n
        if got["old"] != got["new"]:
            bad.append((n, describe(a), describe(b), got))
    # Several comparisons read together (what the bounds replay does): settle's answers are
    # differs' one by one.
    groups, together = [pairs[k:k + 3] for k in range(0, len(pairs), 3)], 0
    for grp in groups:
        try:
            one = [kernel_replay.differs(a, b) for a, b in grp]
        except Exception:  # noqa: BLE001 - a pair that cannot be compared: not grouped
            continue
        if kernel_replay.settle([kernel_replay.differs_later(a, b) for a, b in grp]) != one:
            bad.append(("settle", len(grp), one))
        together += 1
    n = len(pairs)
    print("1. comparisons: %d pairs, %d mismatches; %d groups of 3 settled together; waits per "
          "call old %.2f new %.2f; ms per call old %.3f new %.3f" % (
              n, len(bad), together, waits["old"] / n, waits["new"] / n, ms["old"] / n,
              ms["new"] / n))
    for m in bad[:10]:
        print("   MISMATCH", m)
    return {"pairs": n, "mismatches": len(bad), "waits_per_call": {k: v / n for k, v in
                                                                   waits.items()},
            "ms_per_call": {k: v / n for k, v in ms.items()}, "examples": repr(bad[:10])}


def describe(outs):
    return [("%s%s%s" % (o.dtype, tuple(o.shape), "" if o.is_contiguous() else " view"))
            if isinstance(o, torch.Tensor) else type(o).__name__ for o in outs]


def timing_child(args):
    device, seed, seconds = args
    pairs = battery(device, seed)
    pairs = [p for p in pairs[::max(1, len(pairs) // 300)] if outcome(old_differs, *p)[0] == "ok"]
    spent = {"old": [0.0, 0], "new": [0.0, 0]}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name, fn in (("old", old_differs), ("new", kernel_replay.differs)):
            t0 = time.perf_counter()
            for a, b in pairs:
                fn(a, b)
            spent[name][0] += time.perf_counter() - t0
            spent[name][1] += len(pairs)
    return {k: v[0] * 1000 / max(1, v[1]) for k, v in spent.items()}


def part_timing(device, procs, seconds, seed):
    if procs <= 1:
        return {}
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(procs) as pool:
        got = pool.map(timing_child, [(device, seed + i, seconds) for i in range(procs)])
    old = sum(g["old"] for g in got) / len(got)
    new = sum(g["new"] for g in got) / len(got)
    print("1b. comparisons in %d processes at once (%.0f s each, old and new alternated): ms "
          "per call old %.3f new %.3f (%.1fx)" % (procs, seconds, old, new, old / max(new, 1e-9)))
    return {"procs": procs, "ms_per_call": {"old": old, "new": new}}


# ---- parts 2 and 3: replays of torch "kernels" -----------------------------------------------

class TorchKernel:
    """A launch's "kernel": torch operations on the replay's views (launch_raw calls fn)."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.arg_names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        self.params = []


def launch_raw(jit, args, kwargs):
    jit.fn(*args, **{k: v for k, v in kwargs.items() if k not in ("grid", "BLOCK")})


FAR = [0]  # elements past the output a "far" write lands: past its zone, in the margin


def clean(x_ptr, out_ptr, n):
    out_ptr[:n] = x_ptr[:n] * 2


def write_past(x_ptr, out_ptr, n):
    out_ptr.as_strided((n + 3,), (1,))[n:] = 1.5


def write_far(x_ptr, out_ptr, n):
    out_ptr.as_strided((1,), (1,), out_ptr.storage_offset() + n + FAR[0]).fill_(2.5)


def read_past(x_ptr, out_ptr, n):
    out_ptr[:n] = x_ptr.as_strided((n,), (1,), x_ptr.storage_offset() + 1)


def read_before(x_ptr, out_ptr, n):
    out_ptr[:n] = x_ptr.as_strided((n,), (1,), x_ptr.storage_offset() - 1)


def gather(x_ptr, idx_ptr, out_ptr, cnt_ptr, n):
    out_ptr[:n] = x_ptr[idx_ptr[:n]]
    cnt_ptr[:n] = idx_ptr[:n].to(cnt_ptr.dtype) * 2


def mixed(x_ptr, half_ptr, cplx_ptr, flag_ptr, n):
    half_ptr[:n] = x_ptr[:n].to(half_ptr.dtype)
    cplx_ptr[:n] = torch.complex(x_ptr[:n], -x_ptr[:n]).to(cplx_ptr.dtype)
    flag_ptr[:n] = x_ptr[:n] > 0


def noisy(x_ptr, out_ptr, n):
    out_ptr[:n] = x_ptr[:n] + torch.rand(n, device=x_ptr.device)


def record(fn, args):
    """The Record the recorder would make of fn's launch on args (built here: no Triton)."""
    jit = TorchKernel(fn)
    rec = Record(fn.__name__, jit)
    rec.names = jit.arg_names
    for a in args:
        if isinstance(a, torch.Tensor):
            sid = ("t", id(a), str(a.device))
            floats = a.is_floating_point() or a.is_complex()
            rec.storages[sid] = {"nbytes": a.numel() * a.element_size(), "device": a.device,
                                 "ints": None if floats else a.reshape(-1).view(torch.uint8)
                                 .clone(), "float_dtype": a.dtype if floats else None,
                                 "needs_copy": not floats}
            rec.args.append(("tensor", sid, a.dtype, tuple(a.shape), tuple(a.stride()), 0))
        else:
            rec.args.append(("value", a))
    rec.kwargs = {"BLOCK": ("value", 16)}
    rec.constexpr_at.add(("k", "BLOCK"))
    rec.blocks = {16}
    rec.key = repr((fn.__name__, [e[:1] + e[2:] for e in rec.args]))
    return rec


def records(device):
    n = 1000
    f = lambda k=n: torch.randn(k, device=device)  # noqa: E731
    z = lambda k=n, dt=torch.float32: torch.zeros(k, dtype=dt, device=device)  # noqa: E731
    idx = torch.randperm(n, device=device)
    return [record(clean, [f(), z(), n]), record(write_past, [f(), z(), n]),
            record(write_far, [f(), z(), n]), record(read_past, [f(), z(), n]),
            record(read_before, [f(), z(), n]), record(gather, [f(), idx, z(), z(dt=torch.int32), n]),
            record(mixed, [f(), z(dt=torch.bfloat16), z(dt=torch.complex64),
                           z(dt=torch.bool), n]), record(noisy, [f(), z(), n])]


def part_guards(device):
    """Each record replayed with each fill, old and new guards_written on the same launch."""
    bad, checked, waits = [], 0, {"old": 0, "new": 0}
    for rec in records(device):
        with HeldArenas():
            for fill in (0x00, 0xFF, 0x00):
                launch = Launch(rec, "same", bounds.SEED, fill=fill, guard_lists=True, sized=True)
                launch_raw(rec.jit, launch.args, launch.kwargs)
                kernel_replay.READS[0] = 0
                with Waits(device) as w:
                    new = launch.guards_written()
                waits["new"] += w.n
                keep = dict(HeldArenas.current.holding)
                HeldArenas.current.holding.clear()
                with Waits(device) as w:
                    old = old_guards_written(launch)
                waits["old"] += w.n
                if new != old or keep != HeldArenas.current.holding:
                    bad.append((rec.kernel, fill, old, new))
                checked += 1
    print("2. guards: %d replays, %d mismatches; waits per replay old %.1f new %.1f" % (
        checked, len(bad), waits["old"] / checked, waits["new"] / checked))
    for m in bad[:10]:
        print("   MISMATCH", m)
    return {"replays": checked, "mismatches": len(bad),
            "waits_per_replay": {k: v / checked for k, v in waits.items()}}


class OldReads:
    """bounds.check with the old reads and waits put back: the old guards and comparisons, the
    launch's own wait, the wait for each fill."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        self.saved = (Launch.guards_written, bounds.differs_later, bounds._no_wait,
                      mutants.poison_gpu_cache)
        Launch.guards_written = old_guards_written
        bounds.differs_later = lambda a, b: kernel_replay.Pending(old_differs(a, b), [])
        bounds._no_wait = (lambda: torch.cuda.synchronize()) if self.device.startswith("cuda") \
            else cpu_sync
        poison = self.saved[3]
        mutants.poison_gpu_cache = lambda *a, **k: poison(*a, **dict(k, wait=True))
        return self

    def __exit__(self, *exc):
        (Launch.guards_written, bounds.differs_later, bounds._no_wait,
         mutants.poison_gpu_cache) = self.saved


def part_check(device, reps):
    recs = records(device)
    # torch.cuda.synchronize looked up at each call: Waits counts it.
    sync = (lambda: torch.cuda.synchronize()) if device.startswith("cuda") else cpu_sync
    got, waits, ms, bad = {}, {"old": 0, "new": 0}, {"old": 0.0, "new": 0.0}, []
    replays = 0
    for rep in range(reps):
        for name in ("new", "old") if rep % 2 else ("old", "new"):
            ctx = OldReads(device) if name == "old" else None
            if ctx:
                ctx.__enter__()
            try:
                with Waits(device) as w:
                    t0 = time.perf_counter()
                    res = bounds.check(recs, launch_raw, sync, budget_s=600.0)  # all, always
                    ms[name] += (time.perf_counter() - t0) * 1000
            finally:
                if ctx:
                    ctx.__exit__()
            waits[name] += w.n
            replays += bounds.COSTS["fills"] if name == "new" else 0
            res = {k: v for k, v in res.items() if k != "ms"}
            if name in got and got[name] != res:
                bad.append(("%s differs from its own first check" % name, res))
            got.setdefault(name, res)
            if name == "new":
                costs = dict(bounds.COSTS)
    if got.get("old") != got.get("new"):
        bad.append(("old vs new", got.get("old"), got.get("new")))
    per = max(1, replays)
    print("3. bounds.check: %d records x %d, %d replays a check; findings: writes %s, reads %s, "
          "nondeterministic %s; %d mismatches; waits per replay old %.1f new %.1f; ms per check "
          "old %.0f new %.0f; new COSTS %s" % (
              len(recs), reps, per // reps, [w["kernel"] for w in got["new"]["writes"]],
              [r["kernel"] for r in got["new"]["reads"]], got["new"]["nondeterministic"],
              len(bad), waits["old"] / per, waits["new"] / per, ms["old"] / reps,
              ms["new"] / reps, costs))
    for m in bad[:5]:
        print("   MISMATCH", m)
    return {"mismatches": len(bad), "report": got.get("new"), "costs": costs,
            "waits_per_replay": {k: v / per for k, v in waits.items()},
            "ms_per_check": {k: v / reps for k, v in ms.items()}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.device.startswith("cuda"):
        if not torch.cuda.is_available():
            print("bounds_equiv: no CUDA device (--device cpu runs without one)")
            return 2
        torch.cuda.init()
        FAR[0] = (kernel_replay.ZONE_MAX + (1 << 20)) // 4  # past any zone, in the margin
    else:
        kernel_replay.MARGIN = bounds.MARGIN = 8 << 20
        FAR[0] = (4 << 20) // 4
    print("bounds_equiv: torch %s, %s, %s" % (torch.__version__, a.device,
                                              torch.cuda.get_device_name(0)
                                              if a.device.startswith("cuda") else "no GPU"))
    t0 = time.monotonic()
    out = {"device": a.device, "torch": torch.__version__}
    out["comparisons"] = part_comparisons(a.device, a.seed)
    out["guards"] = part_guards(a.device)
    out["check"] = part_check(a.device, a.reps)
    out["timing"] = part_timing(a.device, a.procs, a.seconds, a.seed)
    total = sum(out[k]["mismatches"] for k in ("comparisons", "guards", "check"))
    print("mismatches: %d (must be 0); %.0f s" % (total, time.monotonic() - t0))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
