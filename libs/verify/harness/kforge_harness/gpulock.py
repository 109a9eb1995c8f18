"""The per-device exclusive section for timing (docs/VERIFIER.md, "The speed label").

The pool makes three lock files per device (`gate`, `rw` and `queue`, under its run directory)
and names them in every request of that device. Every sample's process is a reader: it holds
`rw` shared while it may use the GPU. A process about to time is a writer: it queues behind the
other writers (`queue`, exclusive), takes `gate` exclusive (no reader gets in after it), then
`rw` exclusive (it waits until every reader is out), times, and lets all go. Readers enter
through the gate (exclusive, held only for the instant of taking `rw` shared), so a waiting
writer is never starved. A writer holds the gate for a window (50 ms, doubling up to 1 s) and,
if readers are still in, lets it go for 5 ms (the readers queued behind it go on) before taking
it again: one reader that stays in long does not stall all the others.

A reader does not make a writer wait for its whole sample. It steps out while Triton compiles
(CPU work: `pause`/`resume` around compile()), and at each launch of its kernels it checks
whether a writer holds the gate (`checkpoint`) and, if so, synchronises its GPU work, steps out
and queues at the gate behind the writer. Between launches (a test's CPU work, its torch-only
stretches, the harness's own checks) a watcher thread does the same on its behalf: it sleeps on
an inotify watch of the gate file, which a writer rings by opening the file when it takes the
gate (polling every WATCH_S where inotify cannot be had), and when a writer waits has the main
thread run the checkpoint at its next bytecode (`_thread.interrupt_main` with a handler of ours
for WATCH_SIGNAL: no signal is sent, no system call interrupted). The main thread is then
between two Python bytecodes, not inside a torch call or a launch: it synchronises (what it
enqueued finishes before the writer times) and blocks at the gate, so nothing more of it
reaches the GPU until the writer is done. The pool starts watchers only where a writer may come
(the request's "watch").
What that cannot stop: GPU work from another thread of the sample, and a main thread inside one
long C call (a torch op on the CPU, a blocking wait) steps out only when the call returns.

flock(2) locks go with the process: a sample killed at its deadline releases them. The lock
files are read-only to samples; a hostile sample can hold the gate until its deadline (a known
limit: the writer then gives up after `wait_s` and the label says "not timed: GPU busy"). A
process the sample forks shares the lock files' open descriptions: it forgets the lock
(CURRENT is None there), so that nothing it does releases its parent's.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import fcntl
import functools
import os
import signal
import sys
import threading
import time
from typing import Any, Iterator, Optional

from .gpusync import capturing, synchronize_quietly
from .shapes import Json


def _guarded(method):
    """The lock's own steps run with the watcher's checkpoint held off (it would run between two
    of their bytecodes, with the lock half changed)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        self.busy += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self.busy -= 1
    return run


class GpuLock:
    def __init__(self, gate_path: str, rw_path: str, queue_path: Optional[str] = None) -> None:
        self.gate_path = gate_path
        self.gate = os.open(gate_path, os.O_RDONLY | os.O_CLOEXEC)
        self.rw = os.open(rw_path, os.O_RDONLY | os.O_CLOEXEC)
        # The watcher's probe of the gate: an open file description of its own (a flock on
        # self.gate from another thread would convert the main thread's lock, not test it).
        self.probe = os.open(gate_path, os.O_RDONLY | os.O_CLOEXEC)
        # Writers queue here first, so that one at a time holds or wants the gate: another
        # writer cannot take the gate in the moment the first lets it go for the readers.
        self.queue = os.open(queue_path, os.O_RDONLY | os.O_CLOEXEC) if queue_path else None
        self.shared = False
        self.paused = 0
        self.busy = 0  # >0: the watcher's checkpoint waits (the lock's own steps, a graph capture)
        self.firm = 0  # >0: a launch's checkpoint waits too (held(launches=True))
        self.waited_s = 0.0  # time spent queueing as a reader
        self.sections: list[list[float]] = []  # [t0, t1] (CLOCK_MONOTONIC s) of each shared section, at most 64
        self.exclusive: list[list[float]] = []  # the same, of exclusive sections
        self._t0 = 0.0  # the open shared section's start
        self.retries = 0  # times a writer let the gate go because readers stayed in
        # The longest shared section and what ended it ("launch": a launch let a waiting writer
        # in, "watch": the watcher did, between two launches, "compile", "timing": this
        # process's own, "open": still held at the report): what keeps a writer waiting is a
        # reader that stays in long without stepping out.
        self.longest: tuple[float, Optional[str]] = (0.0, None)
        self.watch = "off"  # the watcher: "on", "off" (not started) or why it stopped
        self.bell = None  # the watcher's inotify descriptor on the gate file (_bell_of)
        self.nudges = 0  # times the watcher asked the main thread to step out
        self.looks = 0  # times the watcher woke to look at the gate
        self.stepped_out = 0  # times the main thread did so at the watcher's asking

    @_guarded
    def enter(self) -> None:
        """Takes rw shared through the gate (blocks while a writer holds or waits)."""
        if self.shared:
            return
        t0 = time.monotonic()
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.rw, fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        self._t0 = time.monotonic()
        self.waited_s += self._t0 - t0
        self.shared = True

    @_guarded
    def leave(self, why: str = "end") -> None:
        if not self.shared:
            return
        synchronize_quietly()
        end = time.monotonic()  # before the unlock: a section never reads as overlapping
        fcntl.flock(self.rw, fcntl.LOCK_UN)
        self.shared = False
        if len(self.sections) < 64:
            self.sections.append([self._t0, end])
        if end - self._t0 > self.longest[0]:
            self.longest = (end - self._t0, why)

    @_guarded
    def pause(self) -> None:
        """Steps out for CPU-only work (a compile); resume() steps back in."""
        self.paused += 1
        if self.paused == 1 and self.shared:
            self.leave("compile")
            self._resume_needed = True
        elif self.paused == 1:
            self._resume_needed = False

    @_guarded
    def resume(self) -> None:
        self.paused -= 1
        if self.paused == 0 and getattr(self, "_resume_needed", False):
            self._resume_needed = False
            self.enter()

    @contextlib.contextmanager
    def held(self, launches: bool = False) -> Iterator[None]:
        """A stretch the watcher must not cut (a graph capture, a timed rep while preparing):
        its checkpoint waits for the end; a launch's checkpoint inside still runs, unless
        launches (a stretch whose streams' state must survive: no synchronise at all)."""
        self.busy += 1
        self.firm += bool(launches)
        try:
            yield
        finally:
            self.busy -= 1
            self.firm -= bool(launches)

    @_guarded
    def checkpoint(self, why: str = "launch") -> bool:
        """If a writer holds the gate, step out and queue behind it (at a launch, or the
        watcher's asking). Returns whether it stepped out."""
        if not self.shared or self.paused or self.firm:
            return False
        try:
            fcntl.flock(self.gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.leave(why)
            self.enter()
            return True
        fcntl.flock(self.gate, fcntl.LOCK_UN)
        return False

    def writer_waiting(self) -> bool:
        """Whether a writer holds the gate (from the watcher's thread; a reader taking rw holds
        it for an instant too, which the watcher tells apart by looking twice)."""
        try:
            fcntl.flock(self.probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(self.probe, fcntl.LOCK_UN)
        return False

    @_guarded
    def acquire_exclusive(self, wait_s: float) -> Optional[float]:
        """Steps out as a reader, then takes the device exclusively. Returns the seconds waited,
        or None when another held it past wait_s (nothing held then).

        While it holds the gate, every reader that reaches a launch (or whose watcher sees it)
        queues behind it: a reader that stays in long (a long C call, a kernel that runs for
        seconds) would stall them all. So the gate is held for a window (TRY_S, doubling up to
        1 s): if the readers are not all out by then, the gate is let go for a moment (the
        queued readers go on) and taken again."""
        self.leave("timing")
        t0 = time.monotonic()
        deadline = t0 + wait_s
        if self.queue is not None and not _lock_until(self.queue, deadline):
            return None
        window = TRY_S
        while True:
            if not _lock_until(self.gate, deadline):
                break
            _ring(self.gate_path)
            if _lock_until(self.rw, min(deadline, time.monotonic() + window)):
                self._x0 = time.monotonic()
                return self._x0 - t0
            fcntl.flock(self.gate, fcntl.LOCK_UN)
            self.retries += 1
            if time.monotonic() >= deadline:
                break
            time.sleep(STEP_ASIDE_S)
            window = min(2 * window, 1.0)
        if self.queue is not None:
            fcntl.flock(self.queue, fcntl.LOCK_UN)
        return None

    @_guarded
    def release_exclusive(self) -> None:
        synchronize_quietly()
        end = time.monotonic()
        fcntl.flock(self.rw, fcntl.LOCK_UN)
        fcntl.flock(self.gate, fcntl.LOCK_UN)
        if self.queue is not None:
            fcntl.flock(self.queue, fcntl.LOCK_UN)
        if len(self.exclusive) < 16:
            self.exclusive.append([self._x0, end])

    @_guarded
    def report(self) -> Json:
        """The sections so far (one still open counted to now: what follows the report, the
        mutant runs, is not in it)."""
        shared = list(self.sections)
        longest = self.longest
        if self.shared:
            now = time.monotonic()
            shared.append([self._t0, now])
            if now - self._t0 > longest[0]:
                longest = (now - self._t0, "open")
        return {"shared": shared, "exclusive": self.exclusive,
                "reader_waited_ms": int(self.waited_s * 1000), "writer_retries": self.retries,
                "longest_shared_ms": int(longest[0] * 1000), "longest_ended_by": longest[1],
                "watch": self.watch, "watch_bell": self.bell is not None,
                "watch_looks": self.looks, "watch_nudges": self.nudges,
                "watch_stepped_out": self.stepped_out}


TRY_S = 0.05  # the first window a writer holds the gate for
STEP_ASIDE_S = 0.005  # how long it lets the gate go between two windows
# How often the watcher looks at the gate without a bell (no inotify), and how often while a
# writer waits and the main thread has not stepped out yet. Each look takes the GIL from a main
# thread running Python: every 3 ms all the time cost a tight loop 12% on a loaded CPU (and the
# pool's throughput with the label off 15%), every 10 ms nothing measurable.
WATCH_S = 0.01
CONFIRM_S = 0.0005  # how long after a first sighting of a writer the watcher looks again
WATCH_SIGNAL = signal.SIGUSR2  # never sent: interrupt_main runs its handler in the main thread


def _lock_until(fd, deadline):
    """flock(fd, LOCK_EX) polled without blocking until the deadline."""
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.002)  # every reader queued behind waits as long


CURRENT = None  # the process's GpuLock, set by the worker when the request names lock files


def _on_watch_signal(signum, frame):
    """In the main thread, between two bytecodes, at the watcher's asking: the checkpoint of a
    launch, unless the lock is mid-step, paused, out, or a graph is being captured."""
    lk = CURRENT
    if lk is None or lk.busy or lk.paused or not lk.shared or capturing():
        return
    try:
        if lk.checkpoint("watch"):
            lk.stepped_out += 1
    except Exception:  # noqa: BLE001 - never raised into the sample's code
        pass


IN_OPEN = 0x20  # inotify: the file was opened


def _bell_of(path):
    """An inotify descriptor that becomes readable when any process opens `path` (a writer rings
    it after taking the gate: _ring), or None where inotify cannot be had (the watcher polls)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_CLOEXEC)
        if fd < 0:
            return None
        if libc.inotify_add_watch(fd, os.fsencode(path), IN_OPEN) < 0:
            os.close(fd)
            return None
        return fd
    except (OSError, AttributeError, ValueError):
        return None


def _ring(path):
    """Wakes every reader's watcher: an open of the gate file (read-only, as samples may)."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
    except OSError:
        pass


def _wait_for_bell(lk):
    """Until something happens at the gate: the bell's next event (blocking in read(2), the GIL
    let go: no cost to the main thread while no writer comes), else WATCH_S."""
    if lk.bell is not None:
        try:
            os.read(lk.bell, 4096)
            return
        except OSError:
            lk.bell = None
    time.sleep(WATCH_S)


def _watch(lk):
    """The watcher thread: while the main thread is in, a writer at the gate (seen twice) makes
    it run the checkpoint at its next bytecode; then it waits for that before looking again.
    Between writers it sleeps on the bell."""
    nudged = False
    while CURRENT is lk:
        if nudged:
            time.sleep(WATCH_S)  # a writer is there: look again soon
        else:
            _wait_for_bell(lk)
        nudged = False
        lk.looks += 1
        if not lk.shared or lk.paused or not lk.writer_waiting():
            continue
        time.sleep(CONFIRM_S)
        if not lk.shared or not lk.writer_waiting():
            continue
        nudged = True
        if lk.busy:
            continue  # a held stretch: asked again after it
        if signal.getsignal(WATCH_SIGNAL) is not _on_watch_signal:
            lk.watch = "stopped: the sample set its own handler for %s" % WATCH_SIGNAL.name
            return
        lk.nudges += 1
        section = lk._t0
        _thread.interrupt_main(WATCH_SIGNAL)
        t0 = time.monotonic()
        while CURRENT is lk and lk.shared and lk._t0 == section and \
                time.monotonic() - t0 < NUDGE_WAIT_S:
            time.sleep(WATCH_S)


NUDGE_WAIT_S = 0.02  # how long the watcher waits for the main thread before asking again


def start_watcher(lk: GpuLock) -> None:
    """Installs the handler and starts the watcher thread (from the main thread). Where either
    cannot be had (a thread limit, not the main thread), only launches and compiles step out."""
    if sys.version_info < (3, 10):
        lk.watch = "off: _thread.interrupt_main(signum) needs Python 3.10"
        return
    try:
        signal.signal(WATCH_SIGNAL, _on_watch_signal)
        lk.bell = _bell_of(lk.gate_path)
        threading.Thread(target=_watch, args=(lk,), name="kforge-gpulock-watch",
                         daemon=True).start()
        lk.watch = "on"
    except (ValueError, RuntimeError, OSError) as e:
        lk.watch = "off: %s" % e


def _forget_in_child():
    global CURRENT
    CURRENT = None


os.register_at_fork(after_in_child=_forget_in_child)


def install(paths: Optional[dict[str, Any]], watch: Optional[bool] = None) -> Optional[GpuLock]:
    """Opens the request's lock files ({"gate": path, "rw": path, "queue": path, "watch":
    bool}), enters as a reader and, where the request says a timing sample may come (the pool's
    timing on, or a run requiring a speedup), starts the watcher. `watch` overrides it."""
    global CURRENT
    if not paths:
        return None
    CURRENT = GpuLock(paths["gate"], paths["rw"], paths.get("queue"))
    CURRENT.enter()
    if paths.get("watch") if watch is None else watch:
        start_watcher(CURRENT)
    return CURRENT


def pause() -> None:
    if CURRENT is not None:
        CURRENT.pause()


def resume() -> None:
    if CURRENT is not None:
        CURRENT.resume()


def checkpoint() -> None:
    if CURRENT is not None:
        CURRENT.checkpoint()


@contextlib.contextmanager
def held(launches: bool = False) -> Iterator[None]:
    """GpuLock.held() of the process's lock, a no-op without one."""
    if CURRENT is None:
        yield
        return
    with CURRENT.held(launches):
        yield
