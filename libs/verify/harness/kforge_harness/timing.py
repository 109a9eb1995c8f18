"""The speed label (docs/VERIFIER.md, "The speed label"): after a sample passed, each distinct
kernel its test launched is timed on the largest launch the test made of it, and, where the
sample declares a PyTorch reference (prompts/v3: `KFORGE_SPEED = {"wrapper": fn, "reference":
fn, "inputs": fn}` in its wrapper), the wrapper against the reference on the same inputs.

Three steps, so that the device is held exclusively only while it is measured:
1. prepare (the sample shares the device as before): fresh buffers and inputs, whether the
   wrapper launches on another stream than its caller's (its kernels' launches watched: a
   deterministic `unseen_work`), 25 ms of warm-up calls (compiles, caches, clocks; how long the
   CPU takes to enqueue a call), and the CUDA graphs of short calls captured;
2. measure (gpulock's exclusive section, one budget for the whole sample): the timer calibrated
   (timing_timer.py), each item's loop until its interval is tight enough for the label, the
   graphs replayed;
3. summarise (the device released): medians, bootstrap intervals, bandwidth, flags.

Every rep gets fresh inputs (clones; the wrapper's and the reference's float inputs scaled by a
fresh factor in [0.5, 1.5] per rep, so a cached result cannot pass), the wrapper's output is
checked against the reference's on the first rep and every eighth, and the two are interleaved
(the order swaps each rep). Without CUDA (the CPU stand-in for Triton the CI tests use) the same
steps run with time.perf_counter and no flush: the figures mean nothing, the plumbing is tested.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Optional

from . import blind, gpulock
from . import timing_stats as st
from . import timing_timer as tt
from .gpusync import synchronize
from .guard import GUARD
from .kernel_replay import Launch, copy_integers, describe_launch, differs
from .report_schema import SPEED_FLAG, VERDICT
from .shapes import Json, Sample

SHORT_S = 10e-6  # a call shorter than this is timed in a CUDA graph
# A kernel launch whose event time is below this may be mostly Python's launch overhead: it is
# timed in a CUDA graph as well, and the graph's time kept when shorter.
GRAPH_TRY_S = 50e-6
MAX_KERNELS = 4
CHECK_EVERY = 8  # reps between two output checks of the wrapper against the reference
# The stop rule's target for a kernel's time alone (it gives the bandwidth and perf_suspect; no
# verdict hangs on a few percent): the configured target or this, whichever is looser.
KERNEL_TARGET = 0.05
SEED = 20261127
# The kernel share (docs/VERIFIER.md, "The kernels' share of the timed call"): the wrapper is
# called SHARE_REPS times more on the timed inputs with each launch of the sample's kernels
# timed on its stream; a median share below the bound flags `library_work`.
SHARE_REPS = 3
MIN_KERNEL_SHARE = 0.5  # verifier.timing.min_kernel_share
# The label is taken for inputs up to this fraction of the worker's GPU memory (its
# gpu_memory_fraction of the device, else the device): the timing holds about six times the
# inputs' bytes (the inputs, a fresh copy for each of the reference and the wrapper, their
# outputs, the largest kernel launch's buffers; speed.memory reports the figure).
MAX_INPUT_FRACTION = 0.125  # verifier.timing.max_input_fraction
FACTOR_CHUNK = 1 << 23  # elements of a rep's scale factors drawn at a time
# A kernel launch this large is timed on one copy of its buffers, not two.
ONE_COPY_BYTES = 64 << 20
# A sample's KFORGE_SPEED: (wrapper, reference, inputs).
SpeedSpec = tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]


def _torch():
    return sys.modules.get("torch")


def _cuda():
    return tt.cuda_of(_torch())


class Largest:
    """The largest launch (by tensor footprint) of each of the sample's kernels in the real run,
    recorded as the equivalence replay records one (kernel_replay.Record)."""

    def __init__(self) -> None:
        self.best = {}  # kernel name -> (footprint bytes, Record)
        self.order = []

    def before(self, kernel: str, jit: Any, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Optional[tuple[int, Any]]:
        try:
            size = _footprint_of_args(list(args) + list(kwargs.values()))
            if kernel in self.best and self.best[kernel][0] >= size:
                return None
            rec = describe_launch(kernel, jit, args, kwargs)
            if not copy_integers(rec):
                return None
            return size, rec
        except Exception:  # noqa: BLE001 - capture must never fail a launch
            return None

    def after(self, got: Optional[tuple[int, Any]]) -> None:
        if got is None:
            return
        if got[1].kernel not in self.best:
            self.order.append(got[1].kernel)
        self.best[got[1].kernel] = got


def _is_tensor(x):
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


def _footprint_of_args(values):
    """Bytes of the distinct storages the buffers among values span (views counted by extent)."""
    extent = {}
    for v in values:
        if _is_tensor(v):
            n = 0
            if v.numel() > 0:
                n = (1 + sum((s - 1) * abs(d) for s, d in zip(v.shape, v.stride()))) * \
                    v.element_size()
            key = v.untyped_storage().data_ptr()
            extent[key] = max(extent.get(key, 0), min(n, v.untyped_storage().nbytes()))
        elif type(v) is list and v and all(type(x) in (int, float, bool) for x in v):
            extent[id(v)] = 8 * len(v)
        elif isinstance(v, (tuple, list)):
            for x in v:
                if _is_tensor(x):
                    extent[x.untyped_storage().data_ptr()] = x.numel() * x.element_size()
    return sum(extent.values())


def _clone(v, factor=None):
    """A fresh copy of an argument: tensors cloned (floats times factor, a tensor of the same
    shape), lists copied, tuples and lists of tensors element by element."""
    if _is_tensor(v):
        c = v.clone()
        if factor is not None and c.is_floating_point() and c.numel():
            _scale(c, factor)
        return c
    if type(v) is list and all(type(x) in (int, float, bool) for x in v):
        if factor is not None and v and all(type(x) is float for x in v):
            return [x * f for x, f in zip(v, factor(v))]
        return list(v)
    if isinstance(v, (tuple, list)):
        return type(v)(_clone(x, factor) for x in v)
    return v


def _scale(t, factor):
    """t times factor(chunk) in place, FACTOR_CHUNK elements at a time where t is contiguous (a
    factor tensor as large as t is not held at once)."""
    if not t.is_contiguous() or t.numel() <= FACTOR_CHUNK:
        t.mul_(factor(t))
        return
    for part in t.view(-1).split(FACTOR_CHUNK):
        part.mul_(factor(part))


def _refresh(bufs, base, factors):
    """Each list in bufs (a call's arguments) made base times the rep's factors again, in place
    for tensors (the same factors for every list, drawn FACTOR_CHUNK elements at a time): a rep's
    fresh inputs without new allocations. Other arguments are replaced by fresh copies. Without
    autograd: an input that requires grad must not keep each rep's factors alive."""
    torch = _torch()
    if torch is not None:
        with torch.no_grad():
            _refresh_all(bufs, base, factors)
    else:
        _refresh_all(bufs, base, factors)


def _refresh_all(bufs, base, factors):
    for i, b in enumerate(base):
        if not _is_tensor(b):
            fresh = _clone(b, factors)
            for buf in bufs:
                buf[i] = _clone(fresh)
            continue
        for buf in bufs:
            buf[i].copy_(b)
        if not (b.is_floating_point() and b.numel()):
            continue
        n = b.numel()
        if n > FACTOR_CHUNK and b.is_contiguous() and all(x[i].is_contiguous() for x in bufs):
            flats = [buf[i].view(-1) for buf in bufs]
            for lo in range(0, n, FACTOR_CHUNK):
                f = factors(b.view(-1)[lo:lo + FACTOR_CHUNK])
                for x in flats:
                    x[lo:lo + FACTOR_CHUNK].mul_(f)
        else:
            f = factors(b)
            for buf in bufs:
                buf[i].mul_(f)


def _factor(seed):
    import random
    rng = random.Random(seed)
    torch = _torch()

    gens = {}

    def make(like):
        if _is_tensor(like):
            key = str(like.device)
            if key not in gens:  # one sequence per device: a tensor's chunks draw in turn
                gens[key] = torch.Generator(device=like.device)
                gens[key].manual_seed(seed)
            return torch.empty(like.shape, dtype=like.dtype, device=like.device).uniform_(
                0.5, 1.5, generator=gens[key])
        return [rng.uniform(0.5, 1.5) for _ in like]
    return make


def _outputs(ret, args):
    """What a call produced: the buffers it returned, else the buffers among its arguments."""
    if ret is None:
        return [a for a in args if _is_tensor(a) or type(a) is list]
    if isinstance(ret, (tuple, list)) and not (type(ret) is list and ret and
                                               all(type(x) in (int, float) for x in ret)):
        return [r for r in ret if _is_tensor(r) or type(r) is list]
    return [ret]


def _same(a, b):
    """Whether two calls' outputs agree (kernel_replay.differs: within the dtype's tolerance,
    where the first is finite)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if _is_tensor(x) != _is_tensor(y):
            return False
        if _is_tensor(x):
            if x.shape != y.shape:
                return False
            x, y = x.detach(), y.detach()
            if x.dtype != y.dtype:
                y = y.to(x.dtype)
        if differs([x], [y]):
            return False
    return True


def declared(module: Any) -> Optional[SpeedSpec]:
    """The sample's KFORGE_SPEED (wrapper, reference, inputs), None when it declares none, or
    raises ValueError saying what is wrong with it."""
    spec = getattr(module, "KFORGE_SPEED", None) if module is not None else None
    if spec is None:
        return None
    if not isinstance(spec, dict) or not all(callable(spec.get(k)) for k in
                                             ("wrapper", "reference", "inputs")):
        raise ValueError("KFORGE_SPEED must be a dict of three functions: wrapper, reference, "
                         "inputs")
    return spec["wrapper"], spec["reference"], spec["inputs"]


class _Runner:
    """Each call of the sample's code in the timing (inputs(), the reference, the wrapper) made
    through blind.call: from the runner frame, as in every other run, so a sample that walks its
    stack cannot tell a timed call apart (docs/VERIFIER.md, "Trust model"). The timing itself
    runs on the verifier's thread; the runner thread's current CUDA stream follows this
    thread's (a graph capture's stream, a held side stream) whenever this thread's changes, so
    the sample's launches land where the events and captures are."""

    def __init__(self) -> None:
        self.torch = _cuda()
        self.followed = None  # the stream handle the runner was last set to
        self.adopted = None  # this thread's stream before the timing adopted the runner's
        self.grad = None  # this thread's grad mode before the timing took the runner's

    def adopt(self) -> None:
        """This thread takes the runner's thread-local state the timing's own tensors and
        events depend on (what the import or the tests left there): its current CUDA stream and
        its grad mode, as when the timing ran on the runner thread; undone by give_back().
        Never raises (the state left as it is)."""
        torch = self.torch
        if torch is None:
            return
        try:
            grad = blind.on_runner(torch.is_grad_enabled)
            if grad is not None and grad != torch.is_grad_enabled():
                self.grad = torch.is_grad_enabled()
                torch.set_grad_enabled(grad)
            theirs = blind.on_runner(torch.cuda.current_stream)
            if theirs is None:
                return
            self.adopted = torch.cuda.current_stream()
            torch.cuda.set_stream(theirs)
            self.followed = theirs.cuda_stream
        except Exception:  # noqa: BLE001 - the default stream and grad mode then
            pass

    def give_back(self) -> None:
        torch = self.torch
        if torch is None:
            return
        try:
            if self.grad is not None:
                torch.set_grad_enabled(self.grad)
                self.grad = None
            if self.adopted is None:
                return
            mine = torch.cuda.current_stream()
            if self.followed != mine.cuda_stream:
                blind.on_runner(torch.cuda.set_stream, mine)
            torch.cuda.set_stream(self.adopted)
            self.adopted = None
        except Exception:  # noqa: BLE001
            pass

    def stream(self) -> Any:
        """The runner's current stream handle (a wrapper may have moved it), None without CUDA."""
        torch = self.torch
        if torch is None:
            return None
        s = blind.on_runner(torch.cuda.current_stream)
        return s.cuda_stream if s is not None else None

    def _follow(self) -> None:
        torch = self.torch
        if torch is not None:
            mine = torch.cuda.current_stream()
            if self.followed != mine.cuda_stream:
                blind.on_runner(torch.cuda.set_stream, mine)
                self.followed = mine.cuda_stream

    def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._follow()
        return blind.call("timing", fn, *args)

    def between(self, begin: Callable[[], Any], fn: Callable[..., Any], args: tuple[Any, ...],
                end: Callable[[], Any]) -> tuple[Any, Any, Any]:
        """The timer's rep around a call (tt.Timer.via): begin, fn(*args) and end back to back
        on the runner thread."""
        self._follow()
        return blind.call_between("timing", begin, fn, args, end)


class _SampleCall:
    """A timed call of the sample's code: `sample` (its function, the arguments) made through
    RUN, with before() and after(result) (the timing's bookkeeping) on this thread. The timer
    brackets `sample` alone with its events on the runner thread (tt.Timer._around)."""

    def __init__(self, fn: Callable[..., Any], args: list[Any],
                 before: Callable[[], None], after: Callable[[Any], Any]) -> None:
        self.sample = (fn, tuple(args))
        self.before, self.after = before, after

    def __call__(self) -> Any:
        """A plain call (the stream watch's, the reference check's): made as a timed rep's is,
        a batch of three steps with the call's arguments held as the rep holds them, so that
        nothing the call can read (the runner frame, the queues, its arguments' reference
        counts) tells it apart from a rep (blind_test.py)."""
        self.before()
        sample = self.sample
        return self.after(RUN.between(int, sample[0], sample[1], int)[1])


RUN = _Runner()  # replaced by _run_timing for each timing


def make_inputs(inputs_fn: Callable[[], Any], seed: int) -> tuple[Any, ...]:
    torch = _torch()
    if torch is not None:
        torch.manual_seed(seed)
    args = RUN(inputs_fn)
    if not isinstance(args, (tuple, list)) or (type(args) is list and args and
                                                all(type(x) in (int, float) for x in args)):
        args = (args,)
    return tuple(args)


def check_reference(spec: SpeedSpec, seen: Optional[Json] = None) -> Optional[str]:
    """The wrapper against the reference on make_inputs(): None when they agree, else why.
    seen["input_bytes"] gets the inputs' footprint."""
    wrapper, reference, inputs_fn = spec
    args = make_inputs(inputs_fn, SEED)
    if seen is not None:
        try:
            seen["input_bytes"] = _footprint_of_args(list(args))
        except Exception:  # noqa: BLE001 - a figure, never the sample's failure
            seen["input_bytes"] = 0
    mine = [_clone(a) for a in args]  # the reference gets the originals: one copy, not two
    got = _outputs(RUN.between(int, wrapper, tuple(mine), int)[1], mine)  # as a rep's call
    want = _outputs(RUN(reference, *args), args)
    synchronize()
    if not _same(want, got):
        return "the wrapper's output differs from the reference's on the inputs of inputs()"
    return None


class _Counted:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *a, **k):
        self.calls += 1
        return self.fn(*a, **k)


class Item:
    """One thing timed in the exclusive section: a kernel's largest launch (one call), or the
    reference and the wrapper (two calls, timed as pairs). calls[k](rep) returns the rep's
    zero-argument call."""

    def __init__(self, kind: str, calls: list[Callable[[int], Callable[[], Any]]], weight: float,
                 target: float) -> None:
        self.kind, self.calls, self.weight, self.target = kind, calls, weight, target
        self.device = False  # timed with the device-wide end (work on other streams)
        self.sides = None  # the other streams the wrapper launches on, when known
        self.graphs = None  # the calls' CUDA graphs, captured while preparing
        self.warm = None  # each call's median time in the warm-up (device shared)
        self.after_rep = None
        self.raw = None  # measure()'s figures
        self.info = {}


def prepare_kernels(state: Any, largest: Largest, timer: Any, target: float) -> list[Item]:
    items = []
    for i, name in enumerate(largest.order[:MAX_KERNELS]):
        nbytes, rec = largest.best[name]
        # Two copies of the buffers, used in turn; one for a launch of ONE_COPY_BYTES or more
        # (the L2 flush before each rep leaves nothing of the last one in the cache anyway).
        copies = 1 if nbytes >= ONE_COPY_BYTES else 2
        launches = [Launch(rec, "same", SEED + i * 2 + k) for k in range(copies)]

        def call_of(rep, rec=rec, launches=launches):
            la = launches[rep % len(launches)]
            return lambda: state.launch_raw(rec.jit, la.args, la.kwargs)
        it = Item("kernel", [call_of], 1.0, max(target, KERNEL_TARGET))
        it.info = {"kernel": name, "bytes": nbytes, "seed": SEED + i}
        items.append(it)
    return items


def _current_stream():
    torch = _cuda()
    return torch.cuda.current_stream().cuda_stream if torch is not None else None


def prepare_compare(spec: SpeedSpec, module: Any, state: Any, target: float) -> Item:
    """The reference and the wrapper as an Item, with the wrapper's streams watched once."""
    wrapper, reference, inputs_fn = spec
    base = make_inputs(inputs_fn, SEED)
    counted = _Counted(reference)
    ref_name = getattr(reference, "__name__", None)
    if ref_name and getattr(module, ref_name, None) is reference:
        setattr(module, ref_name, counted)
    else:
        ref_name = None
    last = {}
    # The reference's and the wrapper's arguments: one copy each of the inputs, made base times
    # a rep's fresh factors again in place when a rep's first call is made (the order of the two
    # turns each rep), so that the timing holds three copies of the inputs, not one a call.
    ref_args, cand_args = [_clone(a) for a in base], [_clone(a) for a in base]
    current = {"rep": None}

    def inputs_of(rep):
        if current["rep"] != rep:
            current["rep"] = rep
            _refresh([ref_args, cand_args], base, _factor(SEED + rep))

    def ref_of(rep):
        inputs_of(rep)
        args = ref_args

        def before():
            last.pop("ref", None)  # the last outputs freed before the call makes its own

        def after(out):
            last["ref"] = _outputs(out, args)
        return _SampleCall(reference, args, before, after)

    def cand_of(rep):
        inputs_of(rep)
        args = cand_args
        calls0 = [0]

        def before():
            calls0[0] = counted.calls
            last.pop("cand", None)

        def after(out):
            last["cand"] = _outputs(out, args)
            last["cand_calls_ref"] = last.get("cand_calls_ref") or counted.calls > calls0[0]
            return out
        return _SampleCall(wrapper, args, before, after)
    checks = {"checked": 0, "failed": 0}

    def after_rep(rep):
        if rep % CHECK_EVERY == 0:
            synchronize()
            checks["checked"] += 1
            if not _same(last.get("ref") or [], last.get("cand") or []):
                checks["failed"] += 1
    it = Item("compare", [ref_of, cand_of], 2.0, target)
    it.after_rep = after_rep
    # Which streams the wrapper's kernels launch on (the hooks note the current stream at each
    # launch): any other than its caller's is work a stream-end event cannot see.
    launches0 = sum(state.launches.values())
    cur = _current_stream()
    try:
        handles = _watched(state, cand_of(0))
        launches = sum(state.launches.values()) - launches0
        left = cur is not None and RUN.stream() != cur
        others = {h for h in handles if h != cur}
        unjoined = left or (bool(others) and _unjoined(state, others, cand_of(0)))
    except BaseException:
        if ref_name:
            setattr(module, ref_name, reference)
        raise
    it.device = left or bool(others)
    if others and not left:
        torch = _cuda()
        it.sides = [torch.cuda.ExternalStream(h) for h in others]
    it.info = {"base": base, "last": last, "checks": checks, "counted": counted,
               "ref_name": ref_name, "reference": reference, "side_streams": it.device,
               "unjoined": unjoined, "launches_per_call": launches, "state": state}
    return it


def _watched(state, call):
    """The streams current at each launch of the sample's kernels during call()."""
    state.stream_watch = []
    try:
        call()
        synchronize()
        return list(state.stream_watch)
    finally:
        state.stream_watch = None


HOLD_CYCLES = 4_000_000  # about 2 ms at 2 GHz


def _unjoined(state, others, call):
    """Whether the wrapper returns with work still queued on the other streams it launched on,
    its caller's stream not waiting for it. Each of those streams is held busy (a sleep of about
    2 ms) before the call: a wrapper that joins them (wait_stream, an event, a synchronise) ends
    on its caller's stream after that; one that does not, long before. Decided by the streams'
    state, not by a time. A wrapper that launches on streams the first call did not show (a
    new stream a call) cannot be held, and counts as not joining them."""
    torch = _cuda()
    if torch is None or not callable(getattr(torch.cuda, "_sleep", None)):
        return True
    streams = [torch.cuda.ExternalStream(h) for h in others]
    end = torch.cuda.Event()
    state.stream_watch = []
    # No step-out for a waiting timing sample in between: its synchronise would empty the held
    # streams and pass a wrapper that does not join them.
    with gpulock.held(launches=True):
        for s in streams:
            with torch.cuda.stream(s):
                torch.cuda._sleep(HOLD_CYCLES)
        try:
            call()
            end.record()
            end.synchronize()
            pending = any(not s.query() for s in streams)
            seen = set(state.stream_watch)
        finally:
            state.stream_watch = None
            torch.cuda.synchronize()
    return pending or not seen <= (others | {_current_stream()})


class LaunchClock:
    """Times each launch of the sample's kernels during a wrapper call (the hooks call begin()
    and end(token) around it, state.launch_clock): CUDA events on the launch's stream, or
    time.perf_counter without CUDA (the CPU stand-in)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.spans = []

    def begin(self) -> Any:
        if self.torch is None:
            return time.perf_counter()
        ev = self.torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def end(self, token: Any) -> None:
        if self.torch is None:
            self.spans.append((token, time.perf_counter()))
            return
        ev = self.torch.cuda.Event(enable_timing=True)
        ev.record()
        self.spans.append((token, ev))

    def seconds(self) -> float:
        """The launches' time together (after the call's end was waited for)."""
        if self.torch is None:
            return sum(b - a for a, b in self.spans)
        for _, b in self.spans:
            b.synchronize()
        return sum(a.elapsed_time(b) for a, b in self.spans) / 1e3


def measure_share(it: Item, state: Any, timer: Any) -> None:
    """In the exclusive section, after the compare item's loop: SHARE_REPS more calls of the
    wrapper on timed inputs (reps of its own, the output check not made), each of the sample's
    launches timed on its stream (LaunchClock) and the call as a rep is timed. The share is the
    launches' time over the call's, at most 1; it->raw["share"] keeps each rep's figures. The
    timer's state (its pre-roll, its dropped reps) is left as the loop left it; the pre-roll is
    at its longest meanwhile, so that the events the launches add cannot leave the GPU waiting
    for the CPU inside the call."""
    saved = (timer.preroll_s, timer.dropped)
    timer.preroll_s = tt.PREROLL_MAX_S
    shares, counts = [], []
    try:
        for r in range(SHARE_REPS):
            call = it.calls[1](10_000 + r)
            clock = LaunchClock(timer.torch)
            state.launch_clock = clock
            try:
                _, t, _, _, _ = timer.rep(call, device=it.device, sides=it.sides)
            finally:
                state.launch_clock = None
            k = clock.seconds()
            counts.append(len(clock.spans))
            shares.append(min(1.0, k / t) if t > 0 else (1.0 if clock.spans else 0.0))
    finally:
        timer.preroll_s, timer.dropped = saved
    it.raw["share"] = {"shares": shares, "launches": counts}


def ran_instead(it: Item, state: Any, top: int = 3) -> tuple[list[Json], Optional[float]]:
    """What a call of the wrapper on the timed inputs ran on the GPU besides the sample's own
    kernels (torch.profiler, CUDA activity only), the longest first: [{"name", "us"}], at most
    `top`; and the sample's kernels' share of the call's kernel time on the GPU (None where it
    cannot be told). Empty and None without CUDA or where the profiler cannot run (no CUPTI in
    the sandbox). For the repair evidence of library_work and kernel_not_timed, and to settle a
    library_work that the events' share gave (st.settle_share); the device shared meanwhile."""
    torch = _cuda()
    if torch is None:
        return [], None
    try:
        from torch.profiler import ProfilerActivity, profile
        call = it.calls[1](20_000)
        prof = profile(activities=[ProfilerActivity.CUDA])
        # Started and stopped on the runner thread around the call, as the timer's events are
        # (the call from the runner frame; the profiler on the thread that launches).
        call.before()
        _, out, _ = RUN.between(prof.__enter__, call.sample[0], call.sample[1],
                                lambda: (torch.cuda.synchronize(), prof.__exit__(None, None, None)))
        call.after(out)
        own = {str(k).rsplit(".", 1)[-1] for k in state.kernels}
        totals: dict[str, float] = {}
        own_us = work_us = 0.0
        for e in prof.key_averages():
            name = str(getattr(e, "key", ""))
            us = getattr(e, "device_time_total", None)
            if us is None:
                us = getattr(e, "cuda_time_total", 0)
            if not name or not us:
                continue
            if any(name == k or name.startswith(k + "_") for k in own):
                own_us += float(us)
            else:
                totals[name] = totals.get(name, 0.0) + float(us)
                work_us += float(us) if st.counts_as_work(name) else 0.0
        longest = sorted(totals.items(), key=lambda kv: -kv[1])[:top]
        others = [{"name": n[:200], "us": round(us, 3)} for n, us in longest]
        return others, st.gpu_share(own_us, work_us)
    except Exception:  # noqa: BLE001 - evidence only, never the label
        return [], None


def restore_reference(item: Optional[Item], module: Any) -> None:
    if item is not None and item.info.get("ref_name"):
        setattr(module, item.info["ref_name"], item.info["reference"])


def warm_items(items: list[Item], timer: Any) -> float:
    """Outside the exclusive section: warm-up and graph capture. Returns the CPU's enqueueing
    time the pre-roll must cover."""
    enq = 0.0
    for it in items:
        it.warm, e = tt.warm_up(timer, [c(0) for c in it.calls],
                                seconds=tt.WARM_S / len(items), device=it.device, sides=it.sides)
        enq = max(enq, e)
        # Captured generously (the warm-up's times include the other samples' work); replayed
        # in the exclusive section only where the loop's times are short. The captured calls
        # are kept: their inputs must outlive the graphs.
        if timer.torch is not None and not it.device and min(it.warm) < 4 * _short(it):
            fns = [c(0) for c in it.calls]
            graphs = [timer.graph(f) for f in fns]
            if all(g is not None for g in graphs):
                it.graphs, it.info["graph_calls"] = graphs, fns
    return enq


def _short(it):
    return GRAPH_TRY_S if it.kind == "kernel" else SHORT_S


def _unseen_by_probe(it: Item, timer: Any) -> bool:
    """Three reps of the call from an idle device: whether the device-wide end shows work past
    the stream's own end (st.unseen_work on their medians)."""
    probe = [timer.rep(it.calls[1](0), device=True) for _ in range(3)]
    return st.unseen_work(st.median([p[0] for p in probe]), st.median([p[1] for p in probe]))


def measure(items: list[Item], timer: Any, budget_s: float, opts: Json, enqueue_s: float) -> None:
    """The exclusive section: one budget for every item, each item's loop taking its weight's
    share of what is left (an item that comes tight early leaves the rest to the next)."""
    t0 = time.monotonic()
    timer.calibrate(enqueue_s)
    for n, it in enumerate(items):
        if it.kind == "compare" and timer.torch is not None and not it.device:
            # Work on another stream that no hooked launch showed (a torch op on a side stream):
            # reps from an idle device, the device-wide end against the stream's.
            if _unseen_by_probe(it, timer):
                # Seen twice, the second time against the synchronise's cost measured again: a
                # busy host that wakes late from one synchronise is not work on another stream.
                timer.calibrate(enqueue_s)
                if _unseen_by_probe(it, timer):
                    it.device = True
                    it.info["unseen_by_time"] = True
        for c in it.calls:  # one rep to re-prime after the lock's hand-over
            timer.rep(c(0), device=it.device, sides=it.sides)
        left = budget_s - (time.monotonic() - t0)
        share = left * it.weight / sum(x.weight for x in items[n:])
        dev, stream, reason, reps, dropped = tt.loop(
            timer, it.calls, max(share, 0.0), opts, it.target, device=it.device,
            after_rep=it.after_rep, sides=it.sides)
        graph = None
        if it.graphs and min(st.median(d) for d in dev) < _short(it):
            graph = tt.graph_times(timer, it.graphs)
        it.raw = {"dev": dev, "stream": stream, "stop": reason, "reps": reps,
                  "dropped": dropped, "graph": graph, "preroll_us": timer.preroll_s * 1e6}
        if it.kind == "compare" and it.info.get("state") is not None:
            measure_share(it, it.info["state"], timer)


def summarise_kernel(it: Item, peak: Optional[float]) -> Json:
    raw = it.raw
    times = raw["dev"][0]
    entry = {"kernel": it.info["kernel"], "bytes": it.info["bytes"]}
    if raw["graph"] and st.median(times) < GRAPH_TRY_S and \
            st.median(raw["graph"][0]) < st.median(times):
        times = raw["graph"][0]
        entry["cuda_graph"] = tt.GRAPH_CALLS
    med = st.median(times)
    lo, hi = st.bootstrap_median_ci(times, seed=it.info["seed"])
    gbps, frac = st.bandwidth(it.info["bytes"], med, peak)
    entry.update(time_us=med * 1e6, ci_us=[lo * 1e6, hi * 1e6], reps=raw["reps"],
                 stop=raw["stop"], gbps=gbps, fraction_of_peak=frac)
    if raw["dropped"]:
        entry["dropped"] = raw["dropped"]
    return entry


def summarise_compare(it: Item, timer: Any, peak: Optional[float]) -> tuple[Json, bool, bool, bool]:
    """(entry, reproduced, unseen, calls_reference) of the reference comparison."""
    raw, info = it.raw, it.info
    dev, stream = raw["dev"], raw["stream"]
    cand, ref = st.median(dev[1]), st.median(dev[0])
    entry = {"speedup": st.speedup(dev[0], dev[1]),
             "ci": list(st.bootstrap_ratio_ci(dev[0], dev[1], seed=SEED)), "reps": raw["reps"],
             "stop": raw["stop"], "time_us": cand * 1e6, "reference_us": ref * 1e6,
             "stream_us": st.median(stream[1]) * 1e6, "sync_overhead_us": timer.overhead * 1e6,
             "launches_per_call": info["launches_per_call"], "checks": info["checks"],
             "mode": "device" if it.device else "stream", "preroll_us": raw["preroll_us"],
             "side_streams": info["side_streams"]}
    if raw["dropped"]:
        entry["dropped"] = raw["dropped"]
    g = raw["graph"]
    if g and min(cand, ref) < SHORT_S:
        entry.update(speedup=st.speedup(g[0], g[1]), cuda_graph=tt.GRAPH_CALLS,
                     ci=list(st.bootstrap_ratio_ci(g[0], g[1], seed=SEED)),
                     time_us=st.median(g[1]) * 1e6, reference_us=st.median(g[0]) * 1e6)
    last = info["last"]
    nbytes = _footprint_of_args(list(info["base"]) + list(last.get("cand") or []))
    gbps, frac = st.bandwidth(nbytes, entry["time_us"] / 1e6, peak)
    entry.update(bytes=nbytes, gbps=gbps, fraction_of_peak=frac)
    share = raw.get("share")
    if share and share["shares"]:
        entry["kernel_share"] = st.median(share["shares"])
        entry["share_launches"] = share["launches"]
    else:
        entry["kernel_share"] = None
    unseen = timer.torch is not None and (
        info["unjoined"] or info.get("unseen_by_time", False) or
        st.unseen_work(st.median(stream[1]), cand))
    calls_ref = info["counted"].calls > 1 or last.get("cand_calls_ref", False)
    return entry, info["checks"]["failed"] == 0, unseen, calls_ref
def environment() -> Json:
    env = {"torch": None, "triton": None, "device": "cpu"}
    t = _torch()
    if t is not None:
        env["torch"] = getattr(t, "__version__", None)
        env["cuda"] = getattr(getattr(t, "version", None), "cuda", None)
    tr = sys.modules.get("triton")
    if tr is not None:
        env["triton"] = getattr(tr, "__version__", None)
    if _cuda() is not None:
        env["device"] = t.cuda.get_device_name(0)
        try:
            import ctypes
            v = ctypes.c_int()
            ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v))
            env["driver_cuda"] = v.value
        except Exception:  # noqa: BLE001
            pass
        try:
            env["sm_clock_mhz"] = t.cuda.clock_rate(0)
        except Exception:  # noqa: BLE001 - needs pynvml
            env["sm_clock_mhz"] = None
    return env


def run_timing(sample: Sample, report: Json, request: Json) -> None:
    """Fills report["speed"] for a passing sample (and fails it when its declared reference
    disagrees with its wrapper). Never raises. The timing runs on this thread; each call of the
    sample's code goes to the thread that ran its import and tests (blind.call, one hop a call:
    RUN), so what the import left in thread-local state (torch's default device, grad mode, the
    current stream) holds for its wrapper, inputs and reference, and its stack is the same as
    in every other run. The verifier stays out of sight for the whole phase (blind.stretch)."""
    global RUN
    RUN = _Runner()
    with blind.stretch("timing"):
        RUN.adopt()
        try:
            _run_timing(sample, report, request)
        finally:
            RUN.give_back()


def _run_timing(sample, report, request):
    cfg = request.get("timing") or {}
    module = sample.get("module")
    state = sample["state"]
    try:
        spec = declared(module)
    except ValueError as e:
        _fail(report, "KFORGE_SPEED: %s" % e)
        return
    memory = _Memory()
    if spec is not None:
        try:
            why = check_reference(spec, memory.seen)
        except Exception as e:  # noqa: BLE001 - the sample's own code raised
            why = "calling it raised %s: %s" % (type(e).__name__, str(e)[:300])
        if why is not None:
            _fail(report, "reference: %s" % why)
            return
    if not cfg.get("enabled"):
        return
    largest = getattr(state, "timing", None)
    if spec is None and (largest is None or not largest.order):
        report["speed"] = not_timed("no launch of the sample's kernels")
        return
    if largest is not None and largest.order:
        memory.seen["input_bytes"] = max([memory.seen.get("input_bytes", 0)] +
                                         [largest.best[k][0] for k in largest.order])
    too_large = memory.too_large(request, float(cfg.get("max_input_fraction",
                                                         MAX_INPUT_FRACTION)))
    if too_large is not None:
        report["speed"] = not_timed(too_large)
        report["speed"]["memory"] = memory.figures()
        return
    opts = {"min_reps": int(cfg.get("min_reps", 10)), "max_reps": int(cfg.get("max_reps", 200)),
            "target": float(cfg.get("target", 0.02))}
    budget = float(cfg.get("budget_s", 0.3))
    wait_s = float(cfg.get("wait_s", 30.0))
    lock = gpulock.CURRENT
    rng = tt.rng_states(_cuda())  # given back after timing: its captures must not touch the rest
    saved = (state.outputs, state.replays, state.specs, state.timing)
    state.outputs = state.replays = state.specs = state.timing = None
    speed = {"timed": True, "environment": environment()}
    cmp_item, held, waited, t_excl, t_prep = None, False, 0.0, None, time.monotonic()
    if lock is not None:
        lock.announce()  # a writer about to stall the others gathers while this one prepares
    try:
        timer = tt.Timer(_cuda())
        timer.via = RUN.between
        peak = st.peak_gbps(speed["environment"]["device"]) if timer.torch else None
        speed["peak_gbps"] = peak
        items = []
        if spec is not None:
            cmp_item = prepare_compare(spec, module, state, opts["target"])
            items.append(cmp_item)
        if largest is not None and largest.order:
            items += prepare_kernels(state, largest, timer, opts["target"])
        enqueue = warm_items(items, timer)
        speed["prepare_ms"] = int((time.monotonic() - t_prep) * 1000)
        if lock is not None:
            lend(cfg, "wait")
            try:
                waited = lock.acquire_exclusive(wait_s, float(cfg.get("gather_s", 0.0)))
            finally:
                lend(cfg, "back")
            if waited is None:
                speed = not_timed("GPU busy: no exclusive use within %.0f s" % wait_s)
                return
            held = True
        t_excl = time.monotonic()
        measure(items, timer, budget, opts, enqueue)
        synchronize()
        speed["exclusive_ms"] = int((time.monotonic() - t_excl) * 1000)
        if held:
            lock.release_exclusive()
            lock.enter()
            held = False
        restore_reference(cmp_item, module)
        speed["kernels"] = [summarise_kernel(it, peak) for it in items if it.kind == "kernel"]
        cmp, reproduced, unseen, calls_ref = None, True, False, False
        if cmp_item is not None:
            cmp, reproduced, unseen, calls_ref = summarise_compare(cmp_item, timer, peak)
        speed["reference"] = cmp
        speed["dropped_reps"] = timer.dropped
        share_bound = float(cfg.get("min_kernel_share", MIN_KERNEL_SHARE))
        if timer.torch is None:
            # Without CUDA (the CPU stand-in) the share is host time: the stand-in's kernels
            # run as Python, the hooks' own work around each launch counts outside them, and no
            # profiler settles it. Honest controls read 0.47 to 0.93 there, library work 0.16
            # to 0.19, so the flag takes half the bound. The bound used is reported.
            share_bound /= 2
        speed.update(st.label(speed["kernels"], cmp, float(cfg.get("min_speedup", 1.0)),
                              reproduced, unseen, calls_ref, share_bound))
        speed["min_kernel_share"] = share_bound
        if cmp is not None and {SPEED_FLAG.library_work, SPEED_FLAG.kernel_not_timed} & set(speed["flags"]):
            cmp["ran_instead"], gpu = ran_instead(cmp_item, state)
            if st.settle_share(cmp, gpu, share_bound):
                speed.update(st.label(speed["kernels"], cmp, float(cfg.get("min_speedup", 1.0)),
                                      reproduced, unseen, calls_ref, share_bound))
    except Exception as e:  # noqa: BLE001 - the label is lost, never the verdict
        restore_reference(cmp_item, module)
        items = cmp_item = None  # their buffers freed
        speed = not_timed("timing failed: %s: %s" % (type(e).__name__, str(e)[:300]))
    finally:
        restore_reference(cmp_item, module)
        tt.restore_rng(rng)
        state.outputs, state.replays, state.specs, state.timing = saved
        if lock is not None:
            lock.withdraw()
            if held:
                lock.release_exclusive()
            # Back in as a reader, also after giving up (GPU busy): acquire_exclusive stepped
            # out, and the launches that follow must wait for a writer again.
            lock.enter()
        if speed.get("timed"):
            if "exclusive_ms" not in speed and t_excl is not None:
                speed["exclusive_ms"] = int((time.monotonic() - t_excl) * 1000)
            speed["waited_ms"] = int((waited or 0.0) * 1000)
            speed["min_speedup"] = float(cfg.get("min_speedup", 1.0))
        speed["memory"] = memory.figures()
        report["speed"] = speed


def lend(cfg: Json, what: str) -> None:
    """Tells the pool, on the result pipe, that this process waits for its exclusive section
    ("wait": its core is idle, the pool may run another sample on a lent slot meanwhile) or no
    longer does ("back": the section began, or it gave up). Only where the device has lent slots
    (the request's timing.lend; docs/VERIFIER.md, "Lent slots"). The pool reads the line as it
    comes and leaves it out of the reports."""
    if not cfg.get("lend") or GUARD.out_fd is None:
        return
    try:
        os.write(GUARD.out_fd, b'{"lend": "%s"}\n' % what.encode("ascii"))
    except OSError:
        pass


def not_timed(reason: str) -> Json:
    """A label without figures: `timed` false, the reason, and the flag `not_timed` that
    status, compare, export and the viewer show (and that a run requiring a speedup never
    verifies)."""
    return {"timed": False, "reason": reason, "flags": [SPEED_FLAG.not_timed]}


def _fail(report, detail):
    report["verdict"] = VERDICT.failed
    report["detail"] = detail
    report["speed"] = not_timed(detail)


class _Memory:
    """The timing's own GPU memory (speed.memory): the peak allocated while it ran over what was
    allocated as it began, per byte of the inputs it timed (the declared inputs' footprint, or
    the largest timed kernel launch's). Without CUDA only the inputs' bytes."""

    def __init__(self) -> None:
        self.torch = _cuda()
        self.seen = {}
        self.base = 0
        if self.torch is not None:
            try:
                self.torch.cuda.synchronize()
                self.base = self.torch.cuda.memory_allocated()
                self.torch.cuda.reset_peak_memory_stats()
            except Exception:  # noqa: BLE001 - no figure, never a lost label
                self.torch = None

    def worker_bytes(self, request: Json) -> Optional[int]:
        """The worker's GPU memory: its gpu_memory_fraction of the device, else the device's."""
        if self.torch is None:
            return None
        total = int(self.torch.cuda.get_device_properties(0).total_memory)
        try:
            frac = float(request.get("gpu_memory_fraction") or 0)
        except (TypeError, ValueError):
            frac = 0.0
        return int(total * frac) if 0 < frac < 1 else total

    def too_large(self, request: Json, fraction: float) -> Optional[str]:
        """Why the inputs are too large to time here (more than `fraction` of the worker's
        memory), or None."""
        worker = self.worker_bytes(request)
        n = self.seen.get("input_bytes", 0)
        if worker is None or n <= fraction * worker:
            return None
        return ("inputs of %.2f GiB: the label is taken for inputs up to %g of the worker's "
                "%.2f GiB of GPU memory (verifier.timing.max_input_fraction)" % (
                    n / 2**30, fraction, worker / 2**30))

    def figures(self) -> Json:
        n = self.seen.get("input_bytes", 0)
        out = {"input_bytes": n, "peak_bytes": None, "per_input_byte": None}
        if self.torch is not None:
            try:
                peak = max(0, self.torch.cuda.max_memory_allocated() - self.base)
                out.update(peak_bytes=peak, per_input_byte=peak / n if n else None)
            except Exception:  # noqa: BLE001
                pass
        return out
