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

import sys
import time
from typing import Any, Callable, Optional

from . import blind, gpulock
from . import timing_stats as st
from . import timing_timer as tt
from .gpusync import synchronize
from .kernel_replay import Launch, copy_integers, describe_launch, differs
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
            c.mul_(factor(c))
        return c
    if type(v) is list and all(type(x) in (int, float, bool) for x in v):
        if factor is not None and v and all(type(x) is float for x in v):
            return [x * f for x, f in zip(v, factor(v))]
        return list(v)
    if isinstance(v, (tuple, list)):
        return type(v)(_clone(x, factor) for x in v)
    return v


def _factor(seed):
    import random
    rng = random.Random(seed)
    torch = _torch()

    def make(like):
        if _is_tensor(like):
            g = torch.Generator(device=like.device)
            g.manual_seed(seed)
            return torch.empty(like.shape, dtype=like.dtype, device=like.device).uniform_(
                0.5, 1.5, generator=g)
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


def make_inputs(inputs_fn: Callable[[], Any], seed: int) -> tuple[Any, ...]:
    torch = _torch()
    if torch is not None:
        torch.manual_seed(seed)
    args = inputs_fn()
    if not isinstance(args, (tuple, list)) or (type(args) is list and args and
                                                all(type(x) in (int, float) for x in args)):
        args = (args,)
    return tuple(args)


def check_reference(spec: SpeedSpec) -> Optional[str]:
    """The wrapper against the reference on make_inputs(): None when they agree, else why."""
    wrapper, reference, inputs_fn = spec
    args = make_inputs(inputs_fn, SEED)
    got = _outputs(wrapper(*[_clone(a) for a in args]), args)
    want = _outputs(reference(*[_clone(a) for a in args]), args)
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
        launches = [Launch(rec, "same", SEED + i * 2 + k) for k in range(2)]

        def call_of(rep, rec=rec, launches=launches):
            la = launches[rep % 2]
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
    rep_inputs, last = {}, {}

    def inputs_of(rep):
        if rep not in rep_inputs:
            rep_inputs.clear()
            rep_inputs[rep] = tuple(_clone(a, _factor(SEED + rep)) for a in base)
        return rep_inputs[rep]

    def ref_of(rep):
        args = [_clone(a) for a in inputs_of(rep)]
        return lambda: last.__setitem__("ref", _outputs(reference(*args), args))

    def cand_of(rep):
        args = [_clone(a) for a in inputs_of(rep)]

        def call():
            calls0 = counted.calls
            out = wrapper(*args)
            last["cand"] = _outputs(out, args)
            last["cand_calls_ref"] = last.get("cand_calls_ref") or counted.calls > calls0
            return out
        return call
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
        left = _current_stream() != cur
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
               "unjoined": unjoined, "launches_per_call": launches}
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


def measure(items: list[Item], timer: Any, budget_s: float, opts: Json, enqueue_s: float) -> None:
    """The exclusive section: one budget for every item, each item's loop taking its weight's
    share of what is left (an item that comes tight early leaves the rest to the next)."""
    t0 = time.monotonic()
    timer.calibrate(enqueue_s)
    for n, it in enumerate(items):
        if it.kind == "compare" and timer.torch is not None and not it.device:
            # Work on another stream that no hooked launch showed (a torch op on a side stream):
            # reps from an idle device, the device-wide end against the stream's.
            probe = [timer.rep(it.calls[1](0), device=True) for _ in range(3)]
            if st.unseen_work(st.median([p[0] for p in probe]), st.median([p[1] for p in probe])):
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
    disagrees with its wrapper). Never raises. Runs on the thread that ran the sample's import
    and tests (blind.call): what the import left in thread-local state (torch's default device,
    grad mode, the current stream) holds for its wrapper, inputs and reference here too."""
    blind.call("timing", _run_timing, sample, report, request)


def _run_timing(sample, report, request):
    cfg = request.get("timing") or {}
    module = sample.get("module")
    state = sample["state"]
    try:
        spec = declared(module)
    except ValueError as e:
        _fail(report, "KFORGE_SPEED: %s" % e)
        return
    if spec is not None:
        try:
            why = check_reference(spec)
        except Exception as e:  # noqa: BLE001 - the sample's own code raised
            why = "calling it raised %s: %s" % (type(e).__name__, str(e)[:300])
        if why is not None:
            _fail(report, "reference: %s" % why)
            return
    if not cfg.get("enabled"):
        return
    largest = getattr(state, "timing", None)
    if spec is None and (largest is None or not largest.order):
        report["speed"] = {"timed": False, "reason": "no launch of the sample's kernels"}
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
    try:
        timer = tt.Timer(_cuda())
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
            waited = lock.acquire_exclusive(wait_s)
            if waited is None:
                speed = {"timed": False, "reason": "GPU busy: no exclusive use within %.0f s" %
                         wait_s}
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
        speed.update(st.label(speed["kernels"], cmp, float(cfg.get("min_speedup", 1.0)),
                              reproduced, unseen, calls_ref))
    except Exception as e:  # noqa: BLE001 - the label is lost, never the verdict
        speed = {"timed": False, "reason": "timing failed: %s: %s" % (type(e).__name__,
                                                                     str(e)[:300])}
    finally:
        restore_reference(cmp_item, module)
        tt.restore_rng(rng)
        state.outputs, state.replays, state.specs, state.timing = saved
        if held:
            lock.release_exclusive()
            lock.enter()
        if speed.get("timed"):
            if "exclusive_ms" not in speed and t_excl is not None:
                speed["exclusive_ms"] = int((time.monotonic() - t_excl) * 1000)
            speed["waited_ms"] = int((waited or 0.0) * 1000)
            speed["min_speedup"] = float(cfg.get("min_speedup", 1.0))
        report["speed"] = speed


def _fail(report, detail):
    report["verdict"] = "failed"
    report["detail"] = detail
    report["speed"] = {"timed": False, "reason": detail}
