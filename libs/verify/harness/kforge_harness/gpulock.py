"""The per-device exclusive section for timing (docs/VERIFIER.md, "The speed label").

The pool makes three lock files per device (`gate`, `rw` and `queue`, under its run directory)
and names them in every request of that device. Every sample's process is a reader: it holds
`rw` shared while it may use the GPU. A process about to time is a writer: it queues behind the
other writers (`queue`, exclusive), takes `gate` exclusive (no reader gets in after it), then
`rw` exclusive (it waits until every reader is out), times, and lets all go. Readers enter
through the gate (exclusive, held only for the instant of taking `rw` shared), so a waiting
writer is never starved. A writer holds the gate for a window (50 ms, doubling up to 1 s) and,
if readers are still in, lets it go for 5 ms (the readers queued behind it go on) before taking
it again: one reader that stays in long without launching does not stall all the others.

A reader does not make a writer wait for its whole sample: it steps out while Triton compiles
(CPU work: `pause`/`resume` around compile()), and at each launch of its kernels it checks
whether a writer holds the gate (`checkpoint`) and, if so, synchronises its GPU work, steps out
and queues at the gate behind the writer. What runs on the GPU outside those points (a test's
own torch work between two launches) still finishes before the writer times: the writer waits
for `rw`.

flock(2) locks go with the process: a sample killed at its deadline releases them. The lock
files are read-only to samples; a hostile sample can hold the gate until its deadline (a known
limit: the writer then gives up after `wait_s` and the label says "not timed: GPU busy").
"""

import fcntl
import os
import sys
import time


def _sync():
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a broken context: the sample meets it itself
        pass


class GpuLock:
    def __init__(self, gate_path, rw_path, queue_path=None):
        self.gate = os.open(gate_path, os.O_RDONLY | os.O_CLOEXEC)
        self.rw = os.open(rw_path, os.O_RDONLY | os.O_CLOEXEC)
        # Writers queue here first, so that one at a time holds or wants the gate: another
        # writer cannot take the gate in the moment the first lets it go for the readers.
        self.queue = os.open(queue_path, os.O_RDONLY | os.O_CLOEXEC) if queue_path else None
        self.shared = False
        self.paused = 0
        self.waited_s = 0.0  # time spent queueing as a reader
        self.sections = []  # [t0, t1] (CLOCK_MONOTONIC s) of each shared section, at most 64
        self.exclusive = []  # the same, of exclusive sections
        self._t0 = None
        self.retries = 0  # times a writer let the gate go because readers stayed in
        # The longest shared section and what ended it ("launch": a launch let a waiting writer
        # in, "compile", "timing": this process's own, "open": still held at the report): what
        # keeps a writer waiting is a reader that stays in long without launching.
        self.longest = (0.0, None)

    def enter(self):
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

    def leave(self, why="end"):
        if not self.shared:
            return
        _sync()
        end = time.monotonic()  # before the unlock: a section never reads as overlapping
        fcntl.flock(self.rw, fcntl.LOCK_UN)
        self.shared = False
        if len(self.sections) < 64:
            self.sections.append([self._t0, end])
        if end - self._t0 > self.longest[0]:
            self.longest = (end - self._t0, why)

    def pause(self):
        """Steps out for CPU-only work (a compile); resume() steps back in."""
        self.paused += 1
        if self.paused == 1 and self.shared:
            self.leave("compile")
            self._resume_needed = True
        elif self.paused == 1:
            self._resume_needed = False

    def resume(self):
        self.paused -= 1
        if self.paused == 0 and getattr(self, "_resume_needed", False):
            self._resume_needed = False
            self.enter()

    def checkpoint(self):
        """At a launch: if a writer holds the gate, step out and queue behind it."""
        if not self.shared or self.paused:
            return
        try:
            fcntl.flock(self.gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.leave("launch")
            self.enter()
            return
        fcntl.flock(self.gate, fcntl.LOCK_UN)

    def acquire_exclusive(self, wait_s):
        """Steps out as a reader, then takes the device exclusively. Returns the seconds waited,
        or None when another held it past wait_s (nothing held then).

        While it holds the gate, every reader that reaches a launch queues behind it: a reader
        that stays in long without launching (CPU work in its test) would stall them all. So the
        gate is held for a window (TRY_S, doubling up to 1 s): if the readers are not all out by
        then, the gate is let go for a moment (the queued readers go on) and taken again."""
        self.leave("timing")
        t0 = time.monotonic()
        deadline = t0 + wait_s
        if self.queue is not None and not _lock_until(self.queue, deadline):
            return None
        window = TRY_S
        while True:
            if not _lock_until(self.gate, deadline):
                break
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

    def release_exclusive(self):
        _sync()
        end = time.monotonic()
        fcntl.flock(self.rw, fcntl.LOCK_UN)
        fcntl.flock(self.gate, fcntl.LOCK_UN)
        if self.queue is not None:
            fcntl.flock(self.queue, fcntl.LOCK_UN)
        if len(self.exclusive) < 16:
            self.exclusive.append([self._x0, end])

    def report(self):
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
                "longest_shared_ms": int(longest[0] * 1000), "longest_ended_by": longest[1]}


TRY_S = 0.05  # the first window a writer holds the gate for
STEP_ASIDE_S = 0.005  # how long it lets the gate go between two windows


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


def install(paths):
    """Opens the request's lock files ({"gate": path, "rw": path, "queue": path}) and enters as
    a reader."""
    global CURRENT
    if not paths:
        return None
    CURRENT = GpuLock(paths["gate"], paths["rw"], paths.get("queue"))
    CURRENT.enter()
    return CURRENT


def pause():
    if CURRENT is not None:
        CURRENT.pause()


def resume():
    if CURRENT is not None:
        CURRENT.resume()


def checkpoint():
    if CURRENT is not None:
        CURRENT.checkpoint()
