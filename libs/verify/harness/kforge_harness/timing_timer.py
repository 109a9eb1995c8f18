"""How one rep of a call is timed, and the interleaved loop with its stop rule, for the speed
label (timing.py; docs/VERIFIER.md, "The speed label").

Two ways to take a rep:
- stream (the default): an L2 flush, a pre-roll (`torch.cuda._sleep`), a start event, the call,
  an end event on the stream, and a wait for that event. The pre-roll keeps the GPU busy while
  the CPU enqueues the start event and the call, so the time is the GPU's, not the CPU's launch
  delay. Its length is fitted to what enqueueing takes here (calibrate()), and a rep whose
  enqueueing outlasted the flush and the pre-roll (the GPU may have waited for the CPU) is
  dropped and the pre-roll doubled (`clean` is False).
- device: for a call that works on another stream than the caller's. The flush, then a
  device-wide synchronise (the GPU idle), the start event (it runs before anything the call
  enqueues, on any stream), the call, the stream's end event, a device-wide synchronise and a
  second end event; the time is the second's less the synchronise's own cost. No pre-roll:
  another stream would not wait for it.

Without CUDA (the CPU stand-in the CI tests use) a rep is time.perf_counter around the call.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Optional

from . import gpulock
from . import timing_stats as st
from .shapes import Json

GRAPH_CALLS = 32
GRAPH_REPS = 5
WARM_S = 0.025
WARM_PREROLL_CYCLES = 200_000  # the warm-up's pre-roll, before calibrate() (about 100 us)
PREROLL_MAX_S = 2e-3
CHECK_EVERY = 2  # reps between two looks at the stop rule


def cuda_of(torch: Any) -> Any:
    try:
        return torch if torch is not None and torch.cuda.is_available() and \
            torch.cuda.is_initialized() else None
    except Exception:  # noqa: BLE001
        return None


def rng_states(torch: Any) -> Optional[list[tuple[Any, Any]]]:
    """Copies of the CUDA generators' states (None without CUDA, or a torch without
    Generator.clone_state). A CUDA graph capture that fails part-way (a wrapper that draws random
    numbers or waits on the host while captured) can leave a generator marked as capturing, and
    every later draw of the process then raises "Offset increment outside graph capture
    encountered unexpectedly": the mutant runs that follow in the same process would all fail
    and be counted as kills. restore_rng puts the copies back after timing."""
    if torch is None:
        return None
    try:
        return [(g, g.clone_state()) for g in torch.cuda.default_generators]
    except Exception:  # noqa: BLE001 - an older torch: nothing to restore
        return None


def restore_rng(states: Optional[list[tuple[Any, Any]]]) -> None:
    """Gives each CUDA generator back the state rng_states copied (fresh objects: no capture
    underway, the seed and offset as before timing). Never raises."""
    for g, state in states or ():
        try:
            g.graphsafe_set_state(state)
        except Exception:  # noqa: BLE001
            pass


class Timer:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.overhead = 0.0  # the device-wide synchronise's own cost
        self.flush_s = 0.0
        self.preroll_s = 0.0
        self.cycles_per_s = None
        self.calibrated = False
        self.dropped = 0
        # How a call of the sample's code is made with the rep's start and end around it
        # (_around): timing.py sets blind.call_between; None: here, on this thread.
        self.via: Optional[Callable[..., tuple[Any, Any, Any]]] = None
        if torch is not None:
            props = torch.cuda.get_device_properties(0)
            l2 = int(getattr(props, "L2_cache_size", 0) or (50 << 20))
            self.flush_buf = torch.empty(max(4 * l2, 64 << 20), dtype=torch.int8, device="cuda")
            self.ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            self.pre = torch.cuda.Event()  # the pre-roll's end, for other streams to wait on
            self.can_sleep = callable(getattr(torch.cuda, "_sleep", None))

    def _cycles(self):
        if not self.can_sleep:
            return 0
        if not self.calibrated:
            return WARM_PREROLL_CYCLES
        return int(self.preroll_s * self.cycles_per_s) if self.cycles_per_s else 0

    def _around(self, fn: Callable[[], Any], begin: Callable[[], Any],
                end: Callable[[], Any]) -> tuple[Any, Any, Any]:
        """begin(), fn(), end(): (begin's result, fn's, end's). A call of the sample's code (fn
        with `sample`: its function and arguments, and before()/after(result) bookkeeping) runs
        with begin and end on the runner thread, back to back, from the runner frame
        (self.via: blind.call_between), so the rep's events and clock readings bracket the call
        as closely as here, and the sample's stack is the same as in every other run."""
        sample = getattr(fn, "sample", None)
        if sample is None or self.via is None:
            b = begin()
            out = fn()
            return b, out, end()
        getattr(fn, "before")()
        b, ret, e = self.via(begin, sample[0], sample[1], end)
        return b, getattr(fn, "after")(ret), e

    def rep(self, fn: Callable[[], Any], flush: bool = True, device: bool = False,
            sides: Optional[list[Any]] = None) -> tuple[float, float, Any, bool, float]:
        """(stream seconds, the rep's time, the call's result, clean, enqueue seconds).
        device: the time is the device-wide end's, less the synchronise's cost; with sides (the
        other streams the call is known to launch on) the pre-roll is kept and those streams
        wait for it, else the rep starts from an idle device."""
        if self.torch is None:
            t0, out, t1 = self._around(fn, time.perf_counter, time.perf_counter)
            return t1 - t0, t1 - t0, out, True, 0.0
        torch = self.torch
        s, e1, e2 = self.ev
        if device and sides is None:
            def begin_idle():
                if flush:
                    self.flush_buf.zero_()
                torch.cuda.synchronize()
                s.record()

            def end_idle():
                e1.record()
                torch.cuda.synchronize()
                e2.record()
            _, out, _ = self._around(fn, begin_idle, end_idle)
            e2.synchronize()
            stream = s.elapsed_time(e1) / 1e3
            dev = s.elapsed_time(e2) / 1e3
            return stream, max(stream, dev - self.overhead), out, True, 0.0
        c0, out, c1 = self._around(fn, lambda: self._begin(flush, device, sides),
                                   lambda: self._end(device))
        enq = c1 - c0
        if device:
            e2.synchronize()
            stream = s.elapsed_time(e1) / 1e3
            t = max(stream, s.elapsed_time(e2) / 1e3 - self.overhead)
        else:
            e1.synchronize()
            t = stream = s.elapsed_time(e1) / 1e3
        clean = not self.calibrated or enq <= (self.flush_s if flush else 0.0) + self.preroll_s
        if not clean:
            self.dropped += 1
            self.preroll_s = min(PREROLL_MAX_S, 2 * self.preroll_s + 20e-6)
        return stream, t, out, clean, enq

    def _begin(self, flush: bool, device: bool, sides: Optional[list[Any]]) -> float:
        """A stream rep's start: the flush, the pre-roll, the start event. Returns its clock."""
        c0 = time.perf_counter()
        if flush:
            self.flush_buf.zero_()
        cycles = self._cycles()
        if cycles:
            self.torch.cuda._sleep(cycles)
        if device:
            # The other streams start the call's work no earlier than the start event.
            self.pre.record()
            for side in sides or ():
                side.wait_event(self.pre)
        self.ev[0].record()
        return c0

    def _end(self, device: bool = False) -> float:
        """A stream rep's end: the stream's end event and the clock; with `device`, then the
        device-wide end (a synchronise and the last event) on the same thread, back to back, so
        the time to hand the call back (a thread hop) is not in the device's time."""
        self.ev[1].record()
        c1 = time.perf_counter()
        if device:
            self.torch.cuda.synchronize()
            self.ev[2].record()
        return c1

    def calibrate(self, enqueue_s: float) -> None:
        """In the exclusive section, a few milliseconds: the synchronise's cost, the flush's
        time, the pre-roll's clock (cycles a second) and its length (1.5 times the enqueueing the
        warm-up saw, less what the flush covers)."""
        torch = self.torch
        if torch is None:
            return
        s, e1, e2 = self.ev
        empty = []
        for _ in range(5):
            torch.cuda.synchronize()
            s.record()
            e1.record()
            torch.cuda.synchronize()
            e2.record()
            e2.synchronize()
            empty.append(s.elapsed_time(e2) / 1e3)
        self.overhead = st.median(empty)
        flush = []
        for _ in range(3):
            s.record()
            self.flush_buf.zero_()
            e1.record()
            e1.synchronize()
            flush.append(s.elapsed_time(e1) / 1e3)
        self.flush_s = st.median(flush)
        if self.can_sleep:
            n = 200_000
            s.record()
            torch.cuda._sleep(n)
            e1.record()
            e1.synchronize()
            t = s.elapsed_time(e1) / 1e3
            self.cycles_per_s = n / t if t > 0 else None
        self.preroll_s = min(PREROLL_MAX_S, max(0.0, 1.5 * enqueue_s + 20e-6 - self.flush_s))
        self.calibrated = True

    def graph(self, fn: Callable[[], Any], calls: int = GRAPH_CALLS) -> Any:
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
            with gpulock.held(), torch.cuda.graph(g):
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


def warm_up(timer: Timer, calls: list[Callable[[], Any]], seconds: float = WARM_S,
            device: bool = False, sides: Optional[list[Any]] = None) -> tuple[list[float], float]:
    """Outside the exclusive section: calls each of calls (zero-argument) in turn for `seconds`
    (at least twice each): compiles, caches and the allocator settle, an idle GPU's clocks come
    up. Steps out for a waiting timing sample between rounds. Returns (each call's median time,
    the 75th percentile of the CPU's enqueueing over all calls)."""
    t0 = time.monotonic()
    n = 0
    times: list[list[float]] = [[] for _ in calls]
    enq = []
    while n < 2 or time.monotonic() - t0 < seconds:
        with gpulock.held():  # the watcher's checkpoint waits for the round's end
            for k, c in enumerate(calls):
                _, t, _, _, e = timer.rep(c, flush=n % 2 == 0, device=device, sides=sides)
                times[k].append(t)
                if n % 2 == 0:
                    enq.append(e)
        gpulock.checkpoint()
        n += 1
        if n >= 1000:
            break
    enq.sort()
    return [st.median(t) for t in times], (enq[(3 * len(enq)) // 4] if enq else 0.0)


def loop(timer: Timer, calls: list[Callable[[int], Callable[[], Any]]], budget_s: float,
         opts: Json, target: float, device: bool = False,
         after_rep: Optional[Callable[[int], None]] = None, sides: Optional[list[Any]] = None
         ) -> tuple[list[list[float]], list[list[float]], str, int, int]:
    """Times calls[k](rep)() interleaved (the order turned each rep) until the stop rule: at
    least min_reps kept reps and the order-statistic interval's half width within target (of the
    median, or of the median ratio for a pair), max_reps, or the budget. A rep the timer calls
    unclean is dropped (both of a pair), at most min_reps + as many as were kept. Returns
    (device seconds per call, stream seconds per call, why it stopped, reps kept, dropped)."""
    dev: list[list[float]] = [[] for _ in calls]
    stream: list[list[float]] = [[] for _ in calls]
    t0 = time.monotonic()
    reason, rep, dropped = None, 0, 0
    while reason is None:
        order = list(range(len(calls)))
        if rep % 2:
            order.reverse()
        got = {}
        for k in order:
            s, d, _, clean, _ = timer.rep(calls[k](rep), device=device, sides=sides)
            got[k] = (s, d, clean)
        if after_rep is not None:
            after_rep(rep)
        rep += 1
        if all(g[2] for g in got.values()) or dropped >= opts["min_reps"] + len(dev[0]):
            for k, (s, d, _) in got.items():
                stream[k].append(s)
                dev[k].append(d)
        else:
            dropped += 1
        n = len(dev[0])
        hw = math.inf
        if n >= opts["min_reps"] and (n % CHECK_EVERY == 0 or n >= opts["max_reps"]):
            hw = st.stop_half_width(dev)
        reason = st.stop_reason(n, time.monotonic() - t0, hw, opts["min_reps"],
                                opts["max_reps"], budget_s, target)
    return dev, stream, reason, len(dev[0]), dropped


def graph_times(timer: Timer, graphs: list[Any]) -> list[list[float]]:
    """GRAPH_REPS replays of each graph (interleaved), per call seconds."""
    out: list[list[float]] = [[] for _ in graphs]
    for r in range(GRAPH_REPS):
        order = list(range(len(graphs)))
        if r % 2:
            order.reverse()
        for k in order:
            _, d, _, _, _ = timer.rep(graphs[k].replay)
            out[k].append(d / GRAPH_CALLS)
    return out
