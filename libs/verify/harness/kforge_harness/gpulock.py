"""The per-device exclusive section for timing (docs/VERIFIER.md, "The speed label").

The pool makes three lock files per device (`gate`, `rw` and `queue`, under its run directory)
and names them in every request of that device. Every sample's process is a reader: it holds
`rw` shared while it may use the GPU. A process about to time is a writer: it queues behind the
other writers (`queue`, exclusive), takes `gate` shared (no reader gets in after it), then
`rw` exclusive (it waits until every reader is out), times, and lets all go. Readers enter
through the gate (exclusive, held only for the instant of taking `rw` shared), so a waiting
writer is never starved. A writer holds the gate for a window (50 ms, doubling up to 1 s) and,
if readers are still in, lets it go for 5 ms (the readers queued behind it go on) before taking
it again: one reader that stays in long does not stall all the others.

Writers share the gate so that the timing sections of a device run in bursts with one stall
each: a writer that comes while another times takes the gate shared at once and queues; the
readers stay out from the first section's start to the last one's end, and each later section
begins without waiting for them (`exclusive` records how each began: "stall", "burst" or
"idle", and `stalls` counts the first kind). A burst holds only the writers that were out of the
gate when it began (every reader is stopped at its next launch or bytecode, and a writer was a
reader first), so it ends: at most one section per other process of the device.

A writer that must stop the readers first asks with the gate open (_ready): it holds a want
(WANT_BYTES) and rings, and each reader inside says at its next launch or bytecode that it saw it
(IN_BYTE to SEEN_BYTES) and goes on; only when none inside is left unseen does the writer close
the gate, so a reader in one long C call keeps only the writer waiting, not every other reader
stopped at the gate behind it (issue 54: a stall cost each other sample ten times the section).

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
The sample's code runs on the harness's runner thread (blind.py) while the main thread waits in
C for it: on Python 3.12 and later the watcher also turns sys.monitoring events on while it
asks, and a callback runs the same checkpoint on the runner thread at its next call or
jump (_arm); before 3.12 the runner steps out at launches and compiles only.
What that cannot stop: GPU work from another thread of the sample, and a thread inside one
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
import struct
import sys
import threading
import time
from typing import Any, Iterator, Optional

from .gpusync import capturing, synchronize_quietly
from .guard import GUARD
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
        self.exclusive: list[list[Any]] = []  # [start, end, how] of the exclusive sections
        self._t0 = 0.0  # the open shared section's start
        self.retries = 0  # times a writer let the gate go because readers stayed in
        self.stalls = 0  # exclusive sections that stopped the readers (opened a burst)
        self.sections_timed = 0  # exclusive sections in all
        self._how = "idle"  # how the open exclusive section began: "stall", "burst" or "idle"
        self.announced = False  # this process said it will time soon (announce())
        self.gathered_s = 0.0  # time spent gathering, the readers going on
        self.gathers = [0, 0]  # gathers begun, and skipped because no other writer was coming
        # How long the gate was closed with readers in (from each ring to that window's end, or
        # to the readers all out), summed over its stalls, and the longest: how long the stall
        # kept the others stopped before this process's exclusive section began (what a reader
        # slow to step out costs them all). Its first steps (_ready, the gate open) are not in
        # it: ready_wait_ms.
        self.stall_wait_s = 0.0
        self.stall_wait_max = 0.0
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
        # The stall's first step (_ready): a writer about to stop the others first waits, the
        # readers going on, until every reader inside has passed a bytecode or a launch since
        # it asked (none is in one long C call), so that when it then stops them they all step
        # out at once. `mark`: which byte of the queue file this process holds while inside:
        # "in" (IN_BYTE: it has not seen the want of the writer's generation), 0 or 1 (it has
        # seen generation g's: SEEN_BYTES[g]), None outside.
        self.mark: Any = None
        self.marks = False  # whether it holds one (install: where a timing sample may come)
        self._mark_lock = threading.Lock()  # the watcher moves a stale mark back to "in" too
        self.wanting: Optional[int] = None  # this process (a writer) holds WANT_BYTES[g]
        self.ready_wait_s = 0.0  # the writers' first steps, summed
        self.ready_waits = [0, 0]  # first steps made, and how many ran out (READY_MAX_S)
        self.checked_in = 0  # times this process, inside, said it had seen a writer's want
        # This process asks for, holds or lets go the device as a writer (acquire_exclusive to
        # release_exclusive): its own launches then never come in as a reader's.
        self.writing = False
        self.launched_paused = 0  # launches while paused (in a compile), each in through the gate
        # The watcher's reach into the runner thread (_arm): "on", "off: why", or "unused";
        # how often armed, and how often the runner thread stepped out at its asking.
        self.runner_watch = "unused"
        self.runner_arms = 0
        self.runner_stepped_out = 0
        # The events that ran the checkpoint on the runner thread (at most one a
        # RUNNER_RECHECK_S: _on_runner_event) and how long the events were on in all (the
        # runner's time stepped out included): while on, every call and jump of the process's
        # Python pays a callback.
        self.runner_events = 0
        self.runner_armed_s = 0.0
        # Where this process's main thread was when it kept a writer's first step waiting
        # UNREADY_NOTE_S or more (asked, not at a bytecode): "file:function:line" of its
        # innermost Python frame (the caller of the long C call) -> times, and the time those
        # waits lasted. Only where KFORGE_LOCK_WHERE=1 (a benchmark's run: reading the main
        # thread's frame makes a frame object of it).
        self.where = os.environ.get("KFORGE_LOCK_WHERE") == "1"
        self.unready: dict[str, int] = {}
        self.unready_s = 0.0
        self._unready: Optional[list[Any]] = None  # [first ask, noted] of the want under way

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
        self._set_mark(_or_in(self.wanted()))  # at a bytecode now: ready
        self._t0 = time.monotonic()
        self.waited_s += self._t0 - t0
        self.shared = True

    @_guarded
    def leave(self, why: str = "end") -> None:
        if not self.shared:
            return
        synchronize_quietly()
        end = time.monotonic()  # before the unlock: a section never reads as overlapping
        _unready_over(self)
        self._set_mark(None)
        fcntl.flock(self.rw, fcntl.LOCK_UN)
        self.shared = False
        if len(self.sections) < 64:
            self.sections.append([self._t0, end])
        if end - self._t0 > self.longest[0]:
            self.longest = (end - self._t0, why)

    @_guarded
    def pause(self) -> None:
        """Steps out for CPU-only work (a compile); resume() steps back in. A launch while
        paused (checkpoint) still comes in through the gate: what the harness marks a compile
        launches nothing, so a launch there is the sample's own, and it waits for a writer as
        any other."""
        self.paused += 1
        if self.paused == 1:
            self._resume_needed = False
        if self.shared:
            self.leave("compile")
            self._resume_needed = True

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
        watcher's asking). Returns whether it stepped out. Paused (in a compile) and out, a
        launch comes back in through the gate first (blocking while a writer holds it) and
        stays in: a sample that claims to compile and launches anyway is a reader like any
        other (docs/VERIFIER.md, "Exclusive GPU")."""
        if self.firm:
            return False
        if not self.shared:
            if self.paused and not self.writing and why == "launch":
                self.launched_paused += 1
                self.enter()
            return False
        try:
            fcntl.flock(self.gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.leave(why)
            self.enter()
            return True
        fcntl.flock(self.gate, fcntl.LOCK_UN)
        if self.queue is not None and self.marks:
            gen = self.wanted()
            if gen is not None and self.mark != gen:
                self.checked_in += 1
                _unready_over(self)
            self._set_mark(_or_in(gen))
        return False

    def _set_mark(self, which: Any) -> None:
        """Holds the queue file's byte of `which` ("in": IN_BYTE, 0 or 1: SEEN_BYTES[which]; a
        POSIX read lock, which any number of processes hold at once), or none."""
        if self.queue is None or not self.marks:
            return
        with self._mark_lock:
            if which == self.mark:
                return
            try:
                if which is not None:
                    fcntl.lockf(self.queue, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, _mark_byte(which),
                                os.SEEK_SET)
                if self.mark is not None:
                    fcntl.lockf(self.queue, fcntl.LOCK_UN, 1, _mark_byte(self.mark), os.SEEK_SET)
                self.mark = which
            except OSError:
                pass

    def wanted(self) -> Optional[int]:
        """The generation of the writer making a stall's first step (holding WANT_BYTES[g]), or
        None."""
        if self.queue is None:
            return None
        # One F_GETLK over both bytes (one writer at a time holds one): at every launch.
        probe = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, WANT_BYTES[0], 2, 0)
        try:
            got = struct.unpack(FLOCK, fcntl.fcntl(self.queue, fcntl.F_GETLK, probe)[:SIZE])
        except OSError:
            return None
        if got[0] == fcntl.F_UNLCK:
            return None
        return 1 if got[2] >= WANT_BYTES[1] else 0

    def _ready(self, deadline: float, again: bool = False) -> bool:
        """A stall's first step: with the gate open (the readers go on), holding the want of a
        new generation g (WANT_BYTES[g]; after a window that the readers did not all step out
        in, the other one), waits until no reader inside holds IN_BYTE or the other
        generation's SEEN_BYTES, that is until every one of them passed a bytecode (its
        watcher asked it: _watch) or a launch since, for at most READY_MAX_S. A reader in one
        long C call (a blocking wait, its own long kernel) then keeps only this writer
        waiting, not every other reader stopped at the gate behind it. Nothing of the device's
        exclusivity rests on it: the gate and rw come after, as without it. Returns whether it
        made the step. again: a new generation even where it holds a want already (begun
        while it gathered: _want)."""
        if (again or self.wanting is None) and not self._want():
            return False
        gen = int(self.wanting or 0)
        t0 = time.monotonic()
        end = min(deadline, t0 + READY_MAX_S)
        self.ready_waits[0] += 1
        delay = 0.0005
        while _held_by_other(self.queue, IN_BYTE) or \
                _held_by_other(self.queue, SEEN_BYTES[1 - gen]):
            if time.monotonic() >= end:
                self.ready_waits[1] += 1
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.002)
        self.ready_wait_s += time.monotonic() - t0
        return True

    def _want(self) -> bool:
        """Holds the want of a new generation (the other one than its own, else the one no
        reader still holds a mark of, from a writer before) and rings the readers' watchers."""
        if self.queue is None or READY_MAX_S <= 0:
            return False
        if self.wanting is not None:
            gen = 1 - self.wanting
        else:
            gen = 1 if _held_by_other(self.queue, SEEN_BYTES[0]) else 0
        self._unwant()
        try:
            fcntl.lockf(self.queue, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, WANT_BYTES[gen],
                        os.SEEK_SET)
        except OSError:
            return False
        self.wanting = gen
        _ring(self.gate_path)
        return True

    def _unwant(self) -> None:
        if self.wanting is not None and self.queue is not None:
            try:
                fcntl.lockf(self.queue, fcntl.LOCK_UN, 1, WANT_BYTES[self.wanting], os.SEEK_SET)
            except OSError:
                pass
            self.wanting = None

    def writer_waiting(self) -> bool:
        """Whether a writer holds the gate (from the watcher's thread; writers hold it shared,
        a reader taking rw holds it exclusively for an instant, which the watcher tells apart
        by looking twice)."""
        return not _try(self.probe, fcntl.LOCK_EX, keep=False)

    def announce(self) -> None:
        """Says that this process will ask for the device soon (its timing is being prepared,
        with the device shared): a writer that would open a burst gathers only while some
        process has said so (others_coming). A POSIX read lock on one byte of the queue file,
        which any number of processes hold at once and which goes with the process; withdrawn
        when it asks (acquire_exclusive) or gives up (withdraw)."""
        if self.queue is None or self.announced:
            return
        try:
            fcntl.lockf(self.queue, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, COMING_BYTE, os.SEEK_SET)
            self.announced = True
        except OSError:
            pass

    def withdraw(self) -> None:
        if self.announced and self.queue is not None:
            self.announced = False
            try:
                fcntl.lockf(self.queue, fcntl.LOCK_UN, 1, COMING_BYTE, os.SEEK_SET)
            except OSError:
                pass

    def others_coming(self) -> bool:
        """Whether another process has announced a timing it has not asked for yet (F_GETLK:
        this process's own lock is never the one it reports)."""
        return _held_by_other(self.queue, COMING_BYTE)

    @_guarded
    def acquire_exclusive(self, wait_s: float, gather_s: float = 0.0) -> Optional[float]:
        """Steps out as a reader, then takes the device exclusively. Returns the seconds waited,
        or None when another held it past wait_s (nothing held then).

        Timing sections of a device run in bursts: a writer that comes while another times
        joins the burst (takes the gate shared at once, so no reader gets in when the one
        timing lets go) and queues; when its turn comes the readers are still out and it times
        at once, without a stall of its own. A writer that opens a burst rings the gate and
        waits for the readers to step out (a stall, counted in `stalls`). While it holds the
        gate, every reader that reaches a launch (or whose watcher sees it) queues behind it: a
        reader that stays in long (a long C call, a kernel that runs for seconds) would stall
        them all. So the gate is held for a window (TRY_S, doubling up to 1 s): if the readers
        are not all out by then, the gate is let go for a moment (the queued readers go on) and
        taken again.

        gather_s: at most how long a writer that would open a burst first lets the readers go
        on while the writers that come meanwhile queue behind it (they join the burst): only
        while another process has announced a timing it has not asked for yet (others_coming;
        the ones already queued join the burst anyway), and not once the readers are all out
        (no stall needed). With none coming it stalls at once rather than wait idle."""
        self.writing = True  # from here its launches are the writer's, never a reader's
        got = self._acquire(wait_s, gather_s)
        self.writing = got is not None
        return got

    def _acquire(self, wait_s: float, gather_s: float) -> Optional[float]:
        """acquire_exclusive's steps (the lock's own, the watcher held off by it)."""
        self.withdraw()
        self.leave("timing")
        t0 = time.monotonic()
        deadline = t0 + wait_s
        gate = self._queue_in_burst(deadline)
        if gate is None:
            return None
        if not gate and gather_s > 0 and self.others_coming():
            self._want()  # the readers say they are ready while it gathers
        if not gate and gather_s > 0 and self._gather(min(deadline, t0 + gather_s)):
            self._how = "idle"
            self._unwant()
            self._x0 = time.monotonic()
            return self._x0 - t0
        if not gate:
            self._ready(deadline)
        joined, window = gate, TRY_S
        closed = 0.0  # how long its failed windows held the gate with readers in
        while True:
            if not gate:
                if not _lock_until(self.gate, deadline, fcntl.LOCK_SH):
                    break
                gate = True
            if _try(self.rw, fcntl.LOCK_EX):
                self._how = "burst" if joined else "stall" if closed else "idle"
                self.stalls += self._how == "stall"  # the readers it stopped left in a window
                self._x0 = time.monotonic()
                self._unwant()
                self._count_stall_wait(closed)
                return self._x0 - t0
            _ring(self.gate_path)  # readers are in: the burst's one stall
            rung = time.monotonic()
            if _lock_until(self.rw, min(deadline, time.monotonic() + window)):
                self._how, self.stalls = "stall", self.stalls + 1
                self._x0 = time.monotonic()
                self._unwant()
                self._count_stall_wait(closed + self._x0 - rung)
                return self._x0 - t0
            closed += time.monotonic() - rung
            fcntl.flock(self.gate, fcntl.LOCK_UN)
            gate, joined = False, False
            self.retries += 1
            if time.monotonic() >= deadline:
                break
            # A reader stayed in: the others go on while it comes to a bytecode (a new
            # generation's first step), else for a moment only.
            if not self._ready(deadline, again=True):
                time.sleep(STEP_ASIDE_S)
            window = min(2 * window, 1.0)
        self._unwant()
        if gate:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        if self.queue is not None:
            fcntl.flock(self.queue, fcntl.LOCK_UN)
        return None

    def _count_stall_wait(self, wait: float) -> None:
        """The stall's wait: how long the gate was closed with readers in (its windows), from
        each ring to the window's end or to the last reader out."""
        if wait > 0:
            self.stall_wait_s += wait
            self.stall_wait_max = max(self.stall_wait_max, wait)

    def _queue_in_burst(self, deadline: float) -> Optional[bool]:
        """Waits for the writers ahead (`queue`), joining their burst: whenever another writer
        times (holds rw exclusive), takes the gate shared, so that the readers it stopped stay
        out until this one has timed too. Returns whether it holds the gate, or None (nothing
        held) past the deadline. Without a queue file, no burst: the gate is taken after."""
        if self.queue is None:
            return False
        gate, delay = False, 0.0005
        while True:
            if _try(self.queue, fcntl.LOCK_EX):
                return gate
            if not gate and not _try(self.rw, fcntl.LOCK_SH, keep=False):
                gate = _try(self.gate, fcntl.LOCK_SH)  # another times: join its burst
            if time.monotonic() >= deadline:
                if gate:
                    fcntl.flock(self.gate, fcntl.LOCK_UN)
                return None
            time.sleep(delay)
            delay = min(delay * 2, 0.002)

    def _gather(self, end: float) -> bool:
        """Waits until `end`, or until no other process is coming to time (others_coming), with
        nothing but the queue held, the readers going on; returns True (rw exclusive and the
        gate shared held) as soon as no reader is in."""
        t0 = time.monotonic()
        self.gathers[0] += 1
        try:
            first = True
            while True:
                if _try(self.rw, fcntl.LOCK_EX):
                    # No reader is in. One entering holds the gate while it waits for rw: let
                    # rw go rather than wait for the gate (each would wait for the other).
                    if _try(self.gate, fcntl.LOCK_SH):
                        return True
                    fcntl.flock(self.rw, fcntl.LOCK_UN)
                if not self.others_coming():
                    self.gathers[1] += first
                    return False
                first = False
                if time.monotonic() >= end:
                    return False
                time.sleep(GATHER_POLL_S)
        finally:
            self.gathered_s += time.monotonic() - t0

    @_guarded
    def release_exclusive(self) -> None:
        """Lets the device go: rw and the queue first (a writer of the burst takes them while
        its hold on the gate keeps the readers out), then the gate."""
        synchronize_quietly()
        end = time.monotonic()
        fcntl.flock(self.rw, fcntl.LOCK_UN)
        if self.queue is not None:
            fcntl.flock(self.queue, fcntl.LOCK_UN)
        fcntl.flock(self.gate, fcntl.LOCK_UN)
        self.writing = False
        self.sections_timed += 1
        if len(self.exclusive) < 16:
            self.exclusive.append([self._x0, end, self._how])

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
                "timed_sections": self.sections_timed, "stalls": self.stalls,
                "gathered_ms": int(self.gathered_s * 1000), "gathers": self.gathers[0],
                "gathers_alone": self.gathers[1],
                "stall_wait_ms": int(self.stall_wait_s * 1000),
                "stall_wait_max_ms": int(self.stall_wait_max * 1000),
                "longest_shared_ms": int(longest[0] * 1000), "longest_ended_by": longest[1],
                "watch": self.watch, "watch_bell": self.bell is not None,
                "watch_looks": self.looks, "watch_nudges": self.nudges,
                "watch_stepped_out": self.stepped_out,
                "ready_wait_ms": int(self.ready_wait_s * 1000), "ready_waits": self.ready_waits[0],
                "ready_timeouts": self.ready_waits[1], "checked_in": self.checked_in,
                "launched_paused": self.launched_paused, "runner_watch": self.runner_watch,
                "runner_arms": self.runner_arms,
                "runner_stepped_out": self.runner_stepped_out,
                "runner_events": self.runner_events,
                "runner_armed_ms": int(self.runner_armed_s * 1000), **self._where_report()}

    def _where_report(self) -> Json:
        if not self.where:
            return {}
        top = sorted(self.unready.items(), key=lambda kv: -kv[1])[:UNREADY_SITES]
        return {"unready_at": [list(kv) for kv in top],
                "unready_ms": int(self.unready_s * 1000)}


TRY_S = 0.05  # the first window a writer holds the gate for
# announce(): the byte of the queue file a process about to time holds a POSIX read lock on,
# and struct flock as F_GETLK reads it (Linux: short type, short whence, off_t start, off_t
# len, pid_t pid).
COMING_BYTE = 0
# A writer's first step of a stall (_ready): the want of generation g, held from its ring to
# the readers out; each reader inside holds IN_BYTE until it has seen a want, then SEEN_BYTES
# of that want's generation.
WANT_BYTES = (1, 2)
IN_BYTE = 3
SEEN_BYTES = (4, 5)
READY_MAX_S = 1.0  # at most how long a writer's first step waits for the readers to be ready
FLOCK = "hhqqi"
SIZE = struct.calcsize(FLOCK)
GATHER_POLL_S = 0.005  # how often a gathering writer looks whether the readers are all out
STEP_ASIDE_S = 0.005  # how long it lets the gate go between two windows
# How often the watcher looks at the gate without a bell (no inotify), and how often while a
# writer waits and the main thread has not stepped out yet. Each look takes the GIL from a main
# thread running Python: every 3 ms all the time cost a tight loop 12% on a loaded CPU (and the
# pool's throughput with the label off 15%), every 10 ms nothing measurable.
WATCH_S = 0.01
CONFIRM_S = 0.0005  # how long after a first sighting of a writer the watcher looks again
WATCH_SIGNAL = signal.SIGUSR2  # never sent: interrupt_main runs its handler in the main thread


def _try(fd, how, keep=True):
    """flock(fd, how) without blocking: whether it was free (with keep=False let go again)."""
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except OSError:
        return False
    if not keep:
        fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _mark_byte(mark):
    return IN_BYTE if mark == "in" else SEEN_BYTES[mark]


def _or_in(gen):
    """A reader's mark at a bytecode: the want's generation it sees, else "in"."""
    return "in" if gen is None else gen


def _held_by_other(fd, byte):
    """Whether another process holds a POSIX lock on `byte` of the file (F_GETLK: this
    process's own lock is never the one it reports)."""
    if fd is None:
        return False
    probe = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, byte, 1, 0)
    try:
        got = fcntl.fcntl(fd, fcntl.F_GETLK, probe)
    except OSError:
        return False
    return struct.unpack(FLOCK, got[:SIZE])[0] != fcntl.F_UNLCK


def _lock_until(fd, deadline, how=fcntl.LOCK_EX):
    """flock(fd, how) polled without blocking until the deadline."""
    delay = 0.0005
    while True:
        if _try(fd, how):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.002)  # every reader queued behind waits as long


CURRENT = None  # the process's GpuLock, set by the worker when the request names lock files


def _on_watch_signal(signum, frame):
    """In the main thread, between two bytecodes, at the watcher's asking."""
    _watch_checkpoint(CURRENT)


def _watch_checkpoint(lk: Optional[GpuLock]) -> bool:
    """The checkpoint of a launch at the watcher's asking, on the thread that runs the sample's
    code (the main thread's handler, the runner's event), unless the lock is mid-step, out (a
    compile steps out: pause), or a graph is being captured. Returns whether it stepped out."""
    if lk is None or lk.busy or not lk.shared:
        return False
    try:
        if not capturing() and lk.checkpoint("watch"):
            lk.stepped_out += 1
            return True
    except Exception:  # noqa: BLE001 - never raised into the sample's code
        pass
    return False


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
    A writer making a stall's first step (WANT_BYTES, the gate open) makes it run the
    checkpoint too, which only says the main thread is at a bytecode (to SEEN_BYTES[g]).
    Between writers it sleeps on the bell."""
    GUARD.own_threads.add(threading.get_ident())  # its sys.monitoring and frame reads
    nudged = False
    while CURRENT is lk:
        if nudged:
            time.sleep(WATCH_S)  # a writer is there: look again soon
        else:
            _wait_for_bell(lk)
        nudged = False
        lk.looks += 1
        if not lk.shared:  # out: in a compile (pause), queued, or timing
            continue
        if not lk.writer_waiting():
            nudged = _ask_ready(lk)
            if lk.watch != "on":
                return
            continue
        time.sleep(CONFIRM_S)
        if not lk.shared or not lk.writer_waiting():
            continue
        nudged = True
        if lk.busy:
            continue  # a held stretch: asked again after it
        if not _nudge(lk, lambda: True):
            return


def _ask_ready(lk):
    """A writer's first step seen from the watcher: has the main thread say (at its next
    bytecode) that it is not in one long C call; with no writer wanting, a "seen" back to
    "in". Returns whether to look again soon: not once it has said so; the watcher then waits
    on the bell, which the writer rings as it closes the gate, and asks for the step-out at
    once rather than at a look WATCH_S later."""
    gen = lk.wanted()
    if gen is not None and lk.mark != gen:
        if lk.busy:
            return True  # a held stretch: its launches say it, else asked again after it
        _nudge(lk, lambda: lk.mark != gen)
        if lk.where and lk.shared and lk.mark != gen:
            _note_unready(lk)
        return lk.mark != gen
    _unready_over(lk)
    if gen is None and lk.mark not in (None, "in"):
        lk._set_mark("in")  # a want seen before, of a writer done since
    return False


def _note_unready(lk):
    """The main thread did not come to a bytecode when asked: from UNREADY_NOTE_S on, where it
    is (once a want)."""
    now = time.monotonic()
    if lk._unready is None:
        lk._unready = [now, False]
    if lk._unready[1] or now - lk._unready[0] < UNREADY_NOTE_S:
        return
    lk._unready[1] = True
    site = _main_site()
    lk.unready[site] = lk.unready.get(site, 0) + 1


def _unready_over(lk):
    if lk._unready is not None and lk._unready[1]:
        lk.unready_s += time.monotonic() - lk._unready[0]
    lk._unready = None


def _main_site():
    """The innermost Python frame of the main thread, or of the runner thread where the main
    thread waits for the sample's code there (blind.py): "file:function:line" (the file's base
    name)."""
    try:
        frames = sys._current_frames()
        frame = frames.get(threading.main_thread().ident)
        if frame is not None and os.path.basename(frame.f_code.co_filename) == "blind.py" and \
                RUNNER[0] in frames:
            frame = frames[RUNNER[0]]
        code = frame.f_code if frame is not None else None
        if code is None:
            return "?"
        return "%s:%s:%d" % (os.path.basename(code.co_filename), code.co_name, frame.f_lineno)
    except Exception:  # noqa: BLE001 - a diagnostic
        return "?"


def _nudge(lk, still):
    """Asks the main thread to run the checkpoint at its next bytecode, and the runner thread
    (the sample's code: blind) at its next call or jump (_arm), and waits (NUDGE_WAIT_S
    at most) while still() and it is in the same shared section. Returns False where the sample
    took the signal (the watcher stops)."""
    if signal.getsignal(WATCH_SIGNAL) is not _on_watch_signal:
        lk.watch = "stopped: the sample set its own handler for %s" % WATCH_SIGNAL.name
        return False
    lk.nudges += 1
    section = lk._t0
    _thread.interrupt_main(WATCH_SIGNAL)
    armed = _arm(lk)
    t0 = time.monotonic()
    try:
        while CURRENT is lk and lk.shared and lk._t0 == section and still() and \
                time.monotonic() - t0 < NUDGE_WAIT_S:
            time.sleep(WATCH_S)
    finally:
        if armed:
            _disarm(lk)
    return True


# The sample's code runs on the runner thread (blind.py), its main thread meanwhile waiting in
# C for the runner's result: the main thread's handler runs only once the call is over. On
# Python 3.12 and later the watcher reaches the runner thread through sys.monitoring: while it
# asks (_nudge), a callback of the harness's runs the same checkpoint on the runner thread
# before its next call or jump (a point between two bytecodes, as the main thread's handler
# is: no C call of that thread is under way; a loop jumps back, straight-line code reaches a
# call or its end in microseconds), then the events are off again. Before 3.12 (no such
# callback) only its launches and compiles step it out, as for a sample's other threads.
# RUNNER: the runner thread's ident (blind.start, per process).
# What the events cost while on (issue 54): every call and jump of the process pays the
# callback. It ran the checkpoint (three system calls) at every event, which slowed a Python
# loop on the runner 1,500-fold while armed (line events too); now the checkpoint runs at most
# once every RUNNER_RECHECK_S, without line events: 15-fold. They stay on after the runner said
# it is ready (a writer's first step) until the watcher stops asking, so that when the writer
# closes the gate a moment later the runner steps out at once: turned off at the check-in,
# each writer waited for the watcher's next look (10 ms median on the stand-in became 35). Out
# of the lock (a compile, queued) the first event turns them off.
RUNNER: list[Optional[int]] = [None]
RUNNER_TOOL_IDS = (4, 3)  # sys.monitoring tool ids tried (3 and 4 have no reserved use)
_armed: list[Optional[int]] = [None]  # the tool id while armed
_on: list[Optional[float]] = [None]  # when the events went on (monotonic), while they are on
_next = [0.0]  # the runner's next checkpoint at an event, not before (monotonic)
RUNNER_RECHECK_S = 0.001  # the runner's checkpoint at an event at most this often


def set_runner(ident: Optional[int]) -> None:
    RUNNER[0] = ident


def _runner_events():
    mon = getattr(sys, "monitoring", None)
    if mon is None:
        return None, 0
    ev = mon.events
    return mon, ev.CALL | ev.JUMP


def _arm(lk):
    """Turns the runner's callback on (every thread's calls and jumps; it acts on the
    runner thread only). Returns whether it did; where it cannot (before 3.12, no runner, or the
    sample holds the tool ids), lk.runner_watch says why."""
    mon, events = _runner_events()
    if mon is None or RUNNER[0] is None or _armed[0] is not None:
        if mon is None:
            lk.runner_watch = "off: no sys.monitoring before Python 3.12"
        return False
    for tool in RUNNER_TOOL_IDS:
        try:
            mon.use_tool_id(tool, "kforge-gpulock")
        except ValueError:
            continue
        try:
            for ev in _bits(events):
                mon.register_callback(tool, ev, _on_runner_event)
            _armed[0], _on[0], _next[0] = tool, time.monotonic(), 0.0
            mon.set_events(tool, events)
        except Exception as e:  # noqa: BLE001
            lk.runner_watch = "off: %s" % e
            _armed[0] = None
            _quiet(lk, None)
            _free(mon, tool, events)
            return False
        lk.runner_watch = "on"
        lk.runner_arms += 1
        return True
    lk.runner_watch = "off: sys.monitoring tool ids %s taken" % (RUNNER_TOOL_IDS,)
    return False


def _quiet(lk, tool):
    """The events off (the tool id stays the watcher's until _disarm frees it), from whichever
    thread is first: the runner's callback out of the lock, or the watcher. Counts how long
    they were on."""
    start, _on[0] = _on[0], None
    if start is not None and lk is not None:
        lk.runner_armed_s += time.monotonic() - start
    mon = getattr(sys, "monitoring", None)
    if mon is not None and tool is not None:
        try:
            mon.set_events(tool, 0)
        except Exception:  # noqa: BLE001 - freed meanwhile by the watcher
            pass


def _disarm(lk=None):
    mon, events = _runner_events()
    tool, _armed[0] = _armed[0], None
    _quiet(lk, tool)
    if mon is not None and tool is not None:
        _free(mon, tool, events)


def _free(mon, tool, events):
    try:
        mon.set_events(tool, 0)
        for ev in _bits(events):
            mon.register_callback(tool, ev, None)
        mon.free_tool_id(tool)
    except Exception:  # noqa: BLE001
        pass


def _bits(events):
    return [1 << i for i in range(events.bit_length()) if events >> i & 1]


def _on_runner_event(*_args, _me=threading.get_ident, _now=time.monotonic):
    """On whatever thread reaches a call or jump while armed: on the runner thread, the
    checkpoint of a launch (as _on_watch_signal on the main thread), at most once every
    RUNNER_RECHECK_S (between two, an event costs a clock reading); out of the lock (a compile,
    queued), the events off; in a held stretch, nothing (an event after it runs the checkpoint).
    The events stay on after a check-in (a writer's first step answered) until the watcher
    stops asking: the writer closes the gate a moment later, and the runner then steps out at
    once instead of at the watcher's next look."""
    lk = CURRENT
    if lk is None or _me() != RUNNER[0]:
        return None
    if not lk.shared:
        _quiet(lk, _armed[0])
        return None
    now = _now()
    if lk.busy or now < _next[0]:
        return None
    _next[0] = now + RUNNER_RECHECK_S
    lk.runner_events += 1
    if _watch_checkpoint(lk):
        lk.runner_stepped_out += 1
    return None


NUDGE_WAIT_S = 0.02  # how long the watcher waits for the main thread before asking again
UNREADY_NOTE_S = 0.1  # a first step's wait for this process from which where it is is noted
UNREADY_SITES = 8  # the sites kept in the report, most frequent first


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
    RUNNER[0] = None  # the parent's runner thread is not in the child (blind starts its own)
    if _armed[0] is not None:  # forked while the watcher asked: the child's events off too
        me = threading.get_ident()
        mine = me in GUARD.own_threads
        GUARD.own_threads.add(me)
        _disarm()
        if not mine:
            GUARD.own_threads.discard(me)


os.register_at_fork(after_in_child=_forget_in_child)


def install(paths: Optional[dict[str, Any]], watch: Optional[bool] = None) -> Optional[GpuLock]:
    """Opens the request's lock files ({"gate": path, "rw": path, "queue": path, "watch":
    bool}), enters as a reader and, where the request says a timing sample may come (the pool's
    timing on, or a run requiring a speedup), starts the watcher. `watch` overrides it."""
    global CURRENT
    if not paths:
        return None
    CURRENT = GpuLock(paths["gate"], paths["rw"], paths.get("queue"))
    watched = paths.get("watch") if watch is None else watch
    CURRENT.marks = bool(watched)  # with the label off, no F_GETLK at each launch
    CURRENT.enter()
    if watched:
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
