"""The speed label (docs/VERIFIER.md, "The speed label"): after a sample passed, each distinct
kernel its test launched is timed on the largest launch the test made of it, and, where the
sample declares a PyTorch reference (prompts/v3: `KFORGE_SPEED = {"wrapper": fn, "reference":
fn, "inputs": fn}` in its wrapper), the wrapper against the reference on the same inputs.

How a time is taken (GPU): the device held exclusively (gpulock), a warm-up call, before every
rep an L2 flush (a write of several times the L2's size), then a start event, the call, an event
on the stream, a device-wide synchronise and an end event; the time is the end event's less the
synchronise's own cost (measured on an empty call), never less than the stream event's. Every
rep gets fresh inputs (clones; the wrapper's and the reference's float inputs scaled by a fresh
factor in [0.5, 1.5] per rep, so a cached result cannot pass), the wrapper's output is checked
against the reference's on the first rep and every eighth, and the two are interleaved (the
order swaps each rep). A call under 10 us is timed 32 at a time in a CUDA graph. Reps stop when
the bootstrap interval's half width is within `target` of the estimate, at `max_reps`, or when
the budget is spent. Statistics: timing_stats.py.

Without CUDA (the CPU stand-in for Triton the CI tests use) the same loop runs with
time.perf_counter and no flush: the figures mean nothing, the plumbing is tested.
"""

import math
import sys
import time

from . import gpulock
from . import timing_stats as st
from .kernel_replay import Launch, _copy_integers, _describe, differs

SHORT_S = 10e-6  # a call shorter than this is timed in a CUDA graph
# A kernel launch whose event time is below this may be mostly Python's launch overhead: it is
# timed in a CUDA graph as well, and the graph's time kept when shorter.
GRAPH_TRY_S = 50e-6
WARM_S = 0.025
PREROLL_CYCLES = 500_000  # about 250 us at 2 GHz
LOOP_SHARE = 0.7
GRAPH_CALLS = 32
MAX_KERNELS = 4
CHECK_EVERY = 8
SEED = 20261127


def _torch():
    return sys.modules.get("torch")


def _cuda():
    t = _torch()
    try:
        return t if t is not None and t.cuda.is_available() and t.cuda.is_initialized() else None
    except Exception:  # noqa: BLE001
        return None


class Largest:
    """The largest launch (by tensor footprint) of each of the sample's kernels in the real run,
    recorded as the equivalence replay records one (kernel_replay.Record)."""

    def __init__(self):
        self.best = {}  # kernel name -> (footprint bytes, Record)
        self.order = []

    def before(self, kernel, jit, args, kwargs):
        try:
            size = _footprint_of_args(list(args) + list(kwargs.values()))
            if kernel in self.best and self.best[kernel][0] >= size:
                return None
            rec = _describe(kernel, jit, args, kwargs)
            if not _copy_integers(rec):
                return None
            return size, rec
        except Exception:  # noqa: BLE001 - capture must never fail a launch
            return None

    def after(self, got):
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


class Timer:
    """One rep of a call: (stream seconds, the rep's time, the call's result)."""

    def __init__(self):
        self.torch = _cuda()
        self.flush_buf = None
        self.overhead = 0.0
        self.preroll = False
        if self.torch is not None:
            torch = self.torch
            props = torch.cuda.get_device_properties(0)
            l2 = int(getattr(props, "L2_cache_size", 0) or (50 << 20))
            self.flush_buf = torch.empty(max(4 * l2, 64 << 20), dtype=torch.int8, device="cuda")
            self.ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            self.preroll = callable(getattr(torch.cuda, "_sleep", None))
            # The synchronise's own cost: the device-wide end of an empty call.
            empty = [self._raw(lambda: None)[1] for _ in range(8)]
            self.overhead = st.median(empty)

    def rep(self, fn, flush=True):
        if self.torch is None:
            t0 = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t0
            return dt, dt, out
        stream, device, out = self._raw(fn, flush)
        device = max(stream, device - self.overhead)
        # The stream's own end event, unless the device had work it did not (another stream):
        # then the device-wide end, less the synchronise's cost. The synchronise's latency on a
        # busy CPU varies by tens of microseconds and is kept out of ordinary reps.
        return stream, st.rep_time(stream, device), out

    def _raw(self, fn, flush=True):
        """(seconds to the stream's end event, seconds to the end event after a device-wide
        synchronise, the call's result)."""
        torch = self.torch
        if flush:
            self.flush_buf.zero_()
        if self.preroll:
            # The GPU sleeps while this thread enqueues the start event and the call: a launch
            # delayed on a busy CPU (the pool's other samples compile meanwhile) does not leave
            # the GPU idle inside the timed span.
            torch.cuda._sleep(PREROLL_CYCLES)
        s, e1, e2 = self.ev
        s.record()
        out = fn()
        e1.record()
        torch.cuda.synchronize()
        e2.record()
        e2.synchronize()
        return s.elapsed_time(e1) / 1e3, s.elapsed_time(e2) / 1e3, out

    def graph(self, fn, calls=GRAPH_CALLS):
        """A CUDA graph of `calls` calls of fn, or None where it cannot be captured."""
        torch = self.torch
        if torch is None:
            return None
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(calls):
                    fn()
            torch.cuda.synchronize()
            return g
        except Exception:  # noqa: BLE001 - side streams, host syncs: timed with events instead
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
            return None


def warm_up(timer, calls, seconds=WARM_S):
    """Calls each of calls (zero-argument) in turn for `seconds` (at least twice each): compiles,
    caches and allocator settle, and an idle GPU's clocks come up (an H200 idles at 345 MHz)."""
    t0 = time.monotonic()
    n = 0
    while n < 2 or time.monotonic() - t0 < seconds:
        for c in calls:
            timer.rep(c, flush=n % 2 == 0)
        n += 1
        if n >= 1000:
            break


def _loop(timer, fns, budget_s, opts, seed):
    """Times the calls fns[k]() interleaved (the order turned each rep) until the stop rule.
    Each fns[k] is a function of the rep number returning a zero-argument call. Returns
    (lists of device seconds per fn, lists of stream seconds, the stop reason, reps)."""
    dev = [[] for _ in fns]
    stream = [[] for _ in fns]
    t0 = time.monotonic()
    reason, rep = None, 0
    while reason is None:
        order = list(range(len(fns)))
        if rep % 2:
            order.reverse()
        for k in order:
            call = fns[k](rep)
            s, d, _ = timer.rep(call)
            stream[k].append(s)
            dev[k].append(d)
        rep += 1
        if rep >= opts["min_reps"] and (rep % 4 == 0 or rep >= opts["max_reps"]):
            if len(fns) == 2:
                est = st.speedup(dev[0], dev[1])
                ci = st.bootstrap_ratio_ci(dev[0], dev[1], seed=seed, n_boot=200)
            else:
                est = st.median(dev[0])
                ci = st.bootstrap_median_ci(dev[0], seed=seed, n_boot=200)
            hw = st.relative_half_width(est, ci)
        else:
            hw = math.inf
        reason = st.stop_reason(rep, time.monotonic() - t0, hw, opts["min_reps"],
                                opts["max_reps"], budget_s, opts["target"])
    return dev, stream, reason, rep


def _graph_time(timer, call, reps=5):
    g = timer.graph(call)
    if g is None:
        return None
    times = []
    for _ in range(reps):
        _, d, _ = timer.rep(g.replay)
        times.append(d / GRAPH_CALLS)
    return times


def time_launches(state, largest, timer, budget_s, opts, peak):
    """Each recorded kernel's largest launch, replayed on fresh buffers. Returns [entries]."""
    out = []
    names = largest.order[:MAX_KERNELS]
    for i, name in enumerate(names):
        nbytes, rec = largest.best[name]
        share = budget_s / max(1, len(names))
        launches = [Launch(rec, "same", SEED + i * 2 + k) for k in range(2)]

        def call_of(rep, rec=rec, launches=launches):
            la = launches[rep % 2]
            return lambda: state.launch_raw(rec.jit, la.args, la.kwargs)
        warm_up(timer, [call_of(0), call_of(1)])
        entry = {"kernel": name, "bytes": nbytes}
        dev, _, reason, reps = _loop(timer, [call_of], share, opts, SEED + i)
        times = dev[0]
        if st.median(times) < GRAPH_TRY_S and timer.torch is not None:
            g = _graph_time(timer, call_of(0))
            if g is not None and st.median(g) < st.median(times):
                times = g
                entry["cuda_graph"] = GRAPH_CALLS
        med = st.median(times)
        lo, hi = st.bootstrap_median_ci(times, seed=SEED + i)
        gbps, frac = st.bandwidth(nbytes, med, peak)
        entry.update(time_us=med * 1e6, ci_us=[lo * 1e6, hi * 1e6], reps=reps, stop=reason,
                     gbps=gbps, fraction_of_peak=frac)
        out.append(entry)
    return out


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


def declared(module):
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


def make_inputs(inputs_fn, seed):
    torch = _torch()
    if torch is not None:
        torch.manual_seed(seed)
    args = inputs_fn()
    if not isinstance(args, (tuple, list)) or (type(args) is list and args and
                                                all(type(x) in (int, float) for x in args)):
        args = (args,)
    return tuple(args)


def check_reference(spec):
    """The wrapper against the reference on make_inputs(): None when they agree, else why."""
    wrapper, reference, inputs_fn = spec
    args = make_inputs(inputs_fn, SEED)
    got = _outputs(wrapper(*[_clone(a) for a in args]), args)
    want = _outputs(reference(*[_clone(a) for a in args]), args)
    _sync()
    if not _same(want, got):
        return "the wrapper's output differs from the reference's on the inputs of inputs()"
    return None


def _sync():
    if _cuda() is not None:
        _torch().cuda.synchronize()


class _Counted:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *a, **k):
        self.calls += 1
        return self.fn(*a, **k)


def compare(spec, module, state, timer, budget_s, opts, peak):
    """The wrapper against the reference, interleaved, on fresh inputs each rep."""
    wrapper, reference, inputs_fn = spec
    base = make_inputs(inputs_fn, SEED)
    counted = _Counted(reference)
    ref_name = getattr(reference, "__name__", None)
    patched = ref_name and getattr(module, ref_name, None) is reference
    if patched:
        setattr(module, ref_name, counted)
    launches0 = sum(state.launches.values())
    rep_inputs = {}

    def inputs_of(rep):
        if rep not in rep_inputs:
            rep_inputs.clear()
            rep_inputs[rep] = tuple(_clone(a, _factor(SEED + rep)) for a in base)
        return rep_inputs[rep]

    last = {}

    def ref_of(rep):
        args = [_clone(a) for a in inputs_of(rep)]
        return lambda: last.__setitem__("ref", _outputs(reference(*args), args))

    def cand_of(rep):
        args = [_clone(a) for a in inputs_of(rep)]

        def call():
            calls0 = counted.calls
            out = wrapper(*args)
            last["cand"] = _outputs(out, args)
            last["cand_calls_ref"] = counted.calls > calls0
            return out
        return call
    try:
        cand_of(0)()
        _sync()
        launches_per_call = sum(state.launches.values()) - launches0
        warm_up(timer, [ref_of(0), cand_of(0)])
        # A wrapper that works on another stream would run that work during the pre-roll, before
        # the start event: such a call is timed without one (its device-wide end counts).
        if timer.preroll:
            timer.preroll = False
            probe = [timer._raw(cand_of(0)) for _ in range(3)]
            timer.preroll = not st.unseen_work(st.median([p[0] for p in probe]),
                                               st.median([p[1] for p in probe]) - timer.overhead)
        calls_ref = counted.calls > 1
        dev, stream, reason, reps, checks = _compare_loop(
            timer, ref_of, cand_of, last, budget_s, opts)
    finally:
        if patched:
            setattr(module, ref_name, reference)
    entry_preroll = timer.preroll
    calls_ref = calls_ref or last.get("cand_calls_ref", False)
    sp = st.speedup(dev[0], dev[1])
    ci = list(st.bootstrap_ratio_ci(dev[0], dev[1], seed=SEED))
    cand, ref = st.median(dev[1]), st.median(dev[0])
    entry = {"speedup": sp, "ci": ci, "reps": reps, "stop": reason,
             "time_us": cand * 1e6, "reference_us": ref * 1e6,
             "stream_us": st.median(stream[1]) * 1e6, "sync_overhead_us": timer.overhead * 1e6,
             "launches_per_call": launches_per_call, "checks": checks,
             "preroll": entry_preroll}
    if min(cand, ref) < SHORT_S and timer.torch is not None:
        g_c = _graph_time(timer, cand_of(0))
        g_r = _graph_time(timer, ref_of(0))
        if g_c and g_r:
            entry.update(speedup=st.speedup(g_r, g_c), cuda_graph=GRAPH_CALLS,
                         ci=list(st.bootstrap_ratio_ci(g_r, g_c, seed=SEED)),
                         time_us=st.median(g_c) * 1e6, reference_us=st.median(g_r) * 1e6)
    nbytes = _footprint_of_args(list(base) + list(last.get("cand") or []))
    gbps, frac = st.bandwidth(nbytes, entry["time_us"] / 1e6, peak)
    entry.update(bytes=nbytes, gbps=gbps, fraction_of_peak=frac)
    unseen = timer.torch is not None and st.unseen_work(st.median(stream[1]), st.median(dev[1]))
    return entry, checks["failed"] == 0, unseen, calls_ref


def _compare_loop(timer, ref_of, cand_of, last, budget_s, opts):
    checks = {"checked": 0, "failed": 0}
    fns = [ref_of, cand_of]
    dev = [[], []]
    stream = [[], []]
    t0 = time.monotonic()
    reason, rep = None, 0
    while reason is None:
        order = [0, 1] if rep % 2 == 0 else [1, 0]
        for k in order:
            s, d, _ = timer.rep(fns[k](rep))
            stream[k].append(s)
            dev[k].append(d)
        if rep % CHECK_EVERY == 0:
            _sync()
            checks["checked"] += 1
            if not _same(last.get("ref") or [], last.get("cand") or []):
                checks["failed"] += 1
        rep += 1
        hw = math.inf
        if rep >= opts["min_reps"] and (rep % 4 == 0 or rep >= opts["max_reps"]):
            est = st.speedup(dev[0], dev[1])
            hw = st.relative_half_width(est, st.bootstrap_ratio_ci(dev[0], dev[1], seed=SEED,
                                                                   n_boot=200))
        reason = st.stop_reason(rep, time.monotonic() - t0, hw, opts["min_reps"],
                                opts["max_reps"], budget_s, opts["target"])
    return dev, stream, reason, rep, checks


def environment():
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


def run_timing(sample, report, request):
    """Fills report["speed"] for a passing sample (and fails it when its declared reference
    disagrees with its wrapper). Never raises."""
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
    lock = gpulock.CURRENT
    waited = 0.0
    if lock is not None:
        waited = lock.acquire_exclusive(float(cfg.get("wait_s", 30.0)))
        if waited is None:
            report["speed"] = {"timed": False, "reason": "GPU busy: no exclusive use within "
                               "%.0f s" % float(cfg.get("wait_s", 30.0))}
            return
    t0 = time.monotonic()
    saved = (state.outputs, state.replays, state.specs, state.timing)
    state.outputs = state.replays = state.specs = state.timing = None
    speed = {"timed": True, "environment": environment()}
    # The loops' share of the budget: the rest goes to set-up, warm-ups and CUDA graphs.
    loops = budget * LOOP_SHARE
    try:
        timer = Timer()
        peak = st.peak_gbps(speed["environment"]["device"]) if timer.torch else None
        speed["peak_gbps"] = peak
        share = loops / 2 if spec is not None else loops
        speed["kernels"] = time_launches(state, largest, timer, share, opts, peak) \
            if largest is not None and largest.order else []
        cmp, reproduced, unseen, calls_ref = None, True, False, False
        if spec is not None:
            cmp, reproduced, unseen, calls_ref = compare(spec, module, state, timer, max(
                loops / 4, loops - (time.monotonic() - t0)), opts, peak)
        speed["reference"] = cmp
        speed.update(st.label(speed["kernels"], cmp, float(cfg.get("min_speedup", 1.0)),
                              reproduced, unseen, calls_ref))
    except Exception as e:  # noqa: BLE001 - the label is lost, never the verdict
        speed = {"timed": False, "reason": "timing failed: %s: %s" % (type(e).__name__,
                                                                     str(e)[:300])}
    finally:
        state.outputs, state.replays, state.specs, state.timing = saved
        if lock is not None:
            lock.release_exclusive()
            lock.enter()
    speed["exclusive_ms"] = int((time.monotonic() - t0) * 1000)
    speed["waited_ms"] = int(waited * 1000)
    speed["min_speedup"] = float(cfg.get("min_speedup", 1.0))
    report["speed"] = speed


def _fail(report, detail):
    report["verdict"] = "failed"
    report["detail"] = detail
    report["speed"] = {"timed": False, "reason": detail}
